"""The shared kernels of float32 generated code (executor/codegen/precision.py binds `K` to this
module in it): kernels.py's, with float32 arrays, NumPy's sgemm and sgemv, and float32 results
where a kernel makes numbers. exp, ln, tanh and erf are computed in float32 arithmetic
(vmath32.py: within 1 ulp of the correctly rounded value, in twice the vector lanes of
float64's; erf about 20× faster than C's float64 erf rounded, which is not vectorised). Sums
accumulate in float64 (add_any_order), rounded once when stored."""

from __future__ import annotations

import math

import numpy as np
from numba import types

from . import kernels, vmath, vmath32
from .kernels import (  # noqa: F401 (generated code calls them)
    PYTHON_MODE,
    SMALL_PRODUCT,
    DrawError,
    LabelError,
    PositionError,
    StepCountError,
    add_any_order,
    arranged_into,
    compiled,
    contiguous,
    copy_into,
    divisor_unsafe,
    keyed_draws,
    levels,
    partials,
    push_rows,
    quotient,
    quotient_unsafe,
    shared_product,
    small_product_beta,
    small_product_into,
    stop_requested,
    total_rows,
    transposed,
    wide_vectors,
)

if PYTHON_MODE:
    def empty(shape):
        """np.empty(shape) of float32."""
        return np.empty(shape, np.float32)
else:
    @compiled
    def empty(shape):
        """np.empty(shape) of float32, on huge pages when large (kernels.fresh)."""
        return kernels.fresh(shape, np.float32)

#: A counted tensor's buffer (compiler/counting.py: positions past 2²⁴ are no float32): float64.
counted_empty = kernels.empty

if PYTHON_MODE:  # generated code runs as Python: NumPy's float32 functions
    exp = exp_fast = np.exp
    log = np.log
    tanh = tanh_fast = np.tanh
    fmax, fmin = np.maximum, np.minimum

    def erf(x):
        """erf(x) rounded to float32."""
        return np.float32(math.erf(x))

    def power(x, y):
        """np.power of float32 scalars (kernels.power's cases, in float32)."""
        return np.float32(kernels.power(x, y))
else:
    exp, log, tanh, erf = vmath32.exp, vmath32.log, vmath32.tanh, vmath32.erf  # (1 ulp)
    # math="fast": the same functions (within 1 ulp, where fast allows 4)
    exp_fast, tanh_fast = vmath32.exp, vmath32.tanh

    @compiled
    def fmax(a, b):
        """np.maximum on float32 scalars (exact: the larger one), NaN if either is NaN; on a
        float64 one (a counted value: compiler/counting.py) in float64."""
        return vmath.maximum_own(a, b)

    @compiled
    def fmin(a, b):
        """np.minimum on float32 scalars, NaN if either is NaN; in float64 as fmax."""
        return vmath.minimum_own(a, b)

    @compiled
    def power(x, y):
        """np.power on float32 scalars: x·x, √x and 1/x for the exponents 2, ½ and −1 (each
        correctly rounded), C's pow in float64 rounded otherwise."""
        return np.float32(kernels.power(np.float64(x), np.float64(y)))

#: kernels.gemm and gemm_beta take float32 matrices (through sgemm and sgemv) once NumPy's
#: BLAS is found to have them, as it has dgemm's (else Numba's np.dot, which takes float32).
if kernels.BLAS == "numba-dot" or kernels.blas_products("s", types.float32):
    gemm, gemm_beta = kernels.gemm, kernels.gemm_beta
