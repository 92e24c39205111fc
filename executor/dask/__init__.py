"""The dask executor (executor.py): a call's planned IR as a dask.array graph (graph.py), its
entrywise regions as blockwise generated kernels (kernels.py), and argmax/argmin over blocks
(extremes.py). Imported only when asked for: dask is an optional dependency."""
