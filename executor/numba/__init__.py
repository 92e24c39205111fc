"""The numba executor (executor.py) and what it stands on: calls in tiers (tiers.py, scope.py,
placement.py, regions.py, programs.py), generated code compiled and kept on disk (cache.py,
disk.py, built.py, builder.py), the kernels and vector maths generated code calls (kernels.py,
vmath.py; its constants, without Numba, in vmath_constants.py; the product kernels' sizes,
entries and NumPy's cblas routines, without Numba, in product_parts.py), Numba imported by one thread at a time (loading.py), Ctrl-C (interrupt.py) and the errors compiled code raises (faults.py). The code itself is generated
by executor/codegen/; whether its nests run on threads is executor/threads.py."""
