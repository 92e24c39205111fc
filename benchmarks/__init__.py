"""The benchmark suite: hilbert against NumPy, opt_einsum, PyTorch and JAX, in the same run.

Run it with `hilbert bench [CASE…] [--quick] [--executor …]` or `make bench`; see README.md.
"""
