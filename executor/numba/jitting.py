"""How hilbert's shared kernels are compiled (kernels.py, blas.py): Numba's options for all of
hilbert's code, the BLAS compiled code multiplies with, and the stamp their machine code is
cached under (executor/numba/disk.py)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
from numba import config, njit

from .. import threads
from . import disk, native, vmath


def _digest(name: str) -> str:
    """The start of the SHA-256 of a file of this folder."""
    return hashlib.sha256(Path(__file__).with_name(name).read_bytes()).hexdigest()[:16]


#: NUMBA_DISABLE_JIT=1: everything runs as plain Python (slowly), for debugging and tests.
PYTHON_MODE = bool(getattr(config, "DISABLE_JIT", False))


def jit(function, parallel: bool = False):
    """`function` compiled the way all of hilbert's code is: NumPy's error model (x/0 is inf,
    not an exception), no GIL (threads run compiled code at once), no bounds checks (indices
    come from the planner). `parallel`: its prange loops run on several threads (nothing
    else is parallelised: executor/threads.py). In memory: disk.keep gives it the disk cache."""
    return njit(function, nogil=True, error_model="numpy", boundscheck=False,
                parallel=threads.PRANGE_ONLY if parallel else False)


_DGEMM = None if PYTHON_MODE else native.numpy_cblas("dgemm")
_DGEMV = None if PYTHON_MODE else native.numpy_cblas("dgemv")
if _DGEMM is None or _DGEMV is None or _DGEMV[1] != _DGEMM[1]:  # NumPy's BLAS, both or none
    _DGEMM = _DGEMV = None
#: Which BLAS compiled code multiplies with (part of the disk cache's key).
BLAS = ("numpy-cblas" + ("-ilp64" if _DGEMM[1] else "") + "-gemv"
        if _DGEMM else "numba-dot")
#: What the kernels' machine code depends on: kernels.py, vmath.py, the float32 kernels
#: (kernels32.py, vmath32.py: read, not imported, as they import kernels.py), the product tiles
#: (tiles.py), the long sums (pairwise.py), when own products run (own_products.py: they are
#: called by address, cached under their own key), this file and the BLAS products (blas.py),
#: NumPy and the BLAS.
STAMP = (f"{_digest('kernels.py')} {vmath.STAMP} "
         + " ".join(_digest(name) for name in ("kernels32.py", "vmath32.py", "tiles.py",
                                               "pairwise.py", "own_products.py", "jitting.py",
                                               "blas.py"))
         + f" {np.__version__} {BLAS}")


def compiled(function):
    """`function` compiled by `jit`, its machine code cached in hilbert's private cache
    directory (executor/numba/disk.py) when there is one, never beside this file."""
    return disk.keep(jit(function), STAMP)
