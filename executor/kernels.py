"""Shared compiled kernels the generated code calls: small or BLAS products, NaN-aware max/min.

These are generic in shape (one compilation per rank and layout, cached on disk), so every
program shares them instead of compiling its own.
"""

from __future__ import annotations

import sys
import warnings

import numpy as np
from numba import config, njit, types

#: NUMBA_DISABLE_JIT=1: everything runs as plain Python (slowly), for debugging and tests.
PYTHON_MODE = bool(getattr(config, "DISABLE_JIT", False))

#: Below this many multiply-adds a product runs as a plain loop: a BLAS call costs more.
SMALL_PRODUCT = 4096


class StepCountError(Exception):
    """Raised by compiled code when a counted loop's step count is bad: args (loop, value).
    The executor turns it into the HilbertError the reference executor raises."""


def jit(function, cache: bool = False):
    """`function` compiled the way all of hilbert's code is: NumPy's error model (x/0 is inf,
    not an exception), no GIL (threads run compiled code at once), no bounds checks (indices
    come from the planner); on disk too when `cache`."""
    return njit(function, cache=cache, nogil=True, error_model="numpy", boundscheck=False)


def compiled(function):
    """`function` compiled by `jit`, cached on disk when Numba can find a cache directory."""
    try:
        return jit(function, cache=True)
    except (RuntimeError, OSError) as err:  # no writable cache location for this file
        warnings.warn(f"hilbert: Numba cannot cache kernels ({err}); compiling in memory",
                      RuntimeWarning, stacklevel=2)
        return jit(function)


#: Arrays of at least this many bytes ask the kernel for huge pages, as NumPy's own do: with
#: 4 KiB pages, first touching a fresh 32 MiB buffer costs more than computing into it.
HUGE = 1 << 22
_MADV_HUGEPAGE = 14

if sys.platform.startswith("linux") and not PYTHON_MODE:
    _madvise = types.ExternalFunction("madvise", types.intc(types.uintp, types.uintp, types.intc))

    @compiled
    def empty(shape):
        """np.empty(shape), on huge pages when large (Linux; elsewhere plain np.empty)."""
        out = np.empty(shape)
        size = out.size * 8
        if size >= HUGE:
            start = out.ctypes.data
            skip = 4096 - start % 4096
            _madvise(start + skip, size - skip, _MADV_HUGEPAGE)
        return out
else:
    def empty(shape):
        """np.empty(shape), on huge pages when large (Linux; elsewhere plain np.empty)."""
        return np.empty(shape)


@compiled
def fmax(a, b):
    """np.maximum on scalars: NaN if either is NaN."""
    return a if (a >= b or a != a) else b


@compiled
def fmin(a, b):
    """np.minimum on scalars: NaN if either is NaN."""
    return a if (a <= b or a != a) else b


@compiled
def small_product_into(a, b, out):
    """out = a · b for small matrices (either possibly a transposed view), as plain loops."""
    for i in range(a.shape[0]):
        for j in range(b.shape[1]):
            total = 0.0
            for p in range(a.shape[1]):
                total += a[i, p] * b[p, j]
            out[i, j] = total
    return out


@compiled
def product_into(a, b, out):
    """out = a · b for matrices (either possibly a transposed view): BLAS (np.dot into out)
    when large, plain loops when small."""
    if a.shape[0] * a.shape[1] * b.shape[1] > SMALL_PRODUCT:
        np.dot(a, b, out)
        return out
    return small_product_into(a, b, out)


@compiled
def product(a, b):
    """a · b for matrices, in a new C-ordered array (see product_into)."""
    return product_into(a, b, empty((a.shape[0], b.shape[1])))


@compiled
def copy_into(out, x):
    """out[...] = x for C-ordered arrays of one shape."""
    flat_out = out.reshape(out.size)
    flat_x = x.reshape(x.size)
    for i in range(flat_x.size):
        flat_out[i] = flat_x[i]
    return out
