"""Machine code compiled code calls by address: NumPy's own BLAS routines, and hilbert's kernels
compiled once as C functions (kernels.py's product kernel, panels.py's large products)."""

from __future__ import annotations

import ctypes
from pathlib import Path

import llvmlite.binding as llvm
import numpy as np
from numba import config, types

from . import disk

#: The C functions compiled code calls by address (kept alive here: their machine code lives
#: while the CFunc does).
_NATIVE: list = []


def _numpy_blas_libraries() -> list[ctypes.CDLL]:
    """The BLAS libraries NumPy's wheel carries (numpy.libs on Linux and Windows, .dylibs on
    macOS), loaded (they are already, by NumPy: this finds their handles)."""
    if getattr(config, "DISABLE_JIT", False):
        return []
    root = Path(np.__file__).parent
    found = []
    for library in [*root.parent.glob("numpy.libs/*blas*"), *root.glob(".dylibs/*blas*")]:
        try:
            found.append(ctypes.CDLL(str(library)))
        except OSError:
            continue
    return found


def numpy_cblas(routine: str) -> tuple[int, bool] | None:
    """The address of NumPy's own cblas_<routine> (dgemm, dgemv) and whether its integers are
    64-bit, or None. Compiled code multiplies through it, so NumPy and hilbert share one BLAS
    and one thread pool: two OpenBLAS pools in one process (NumPy's, and SciPy's that Numba's
    np.dot uses) make each other's threads wait, which turns a 1 ms product into tens of
    milliseconds."""
    try:
        blas = np.__config__.CONFIG["Build Dependencies"]["blas"]
        ilp64 = "64BITINT" in blas.get("openblas configuration", "").upper()
    except (AttributeError, KeyError, TypeError):
        return None
    for handle in _numpy_blas_libraries():
        for name, wide in ((f"scipy_cblas_{routine}64_", True), (f"cblas_{routine}64_", True),
                           (f"scipy_cblas_{routine}", ilp64), (f"cblas_{routine}", ilp64)):
            function = getattr(handle, name, None)
            if function is not None:
                return ctypes.cast(function, ctypes.c_void_p).value, wide
    return None


def c_function(function, signature, stamp: str) -> int:
    """`function` compiled for `signature` (numbers and addresses only) as a C function, its
    machine code kept in the disk cache under `stamp` (a hash of what it depends on): its
    address, valid for the process."""
    from numba.core.ccallback import CFunc

    native = CFunc(function, (signature.args, signature.return_type), locals={},
                   options={"nopython": True, "error_model": "numpy", "boundscheck": False})
    native._cache = disk.cache_for(function, stamp) or native._cache
    native.compile()
    _NATIVE.append(native)
    return native.address


def at_address(function, signature, symbol: str, stamp: str):
    """`function` compiled as `c_function` does, callable from compiled code as `symbol`: a call
    by address, so its code is never linked into (and optimised again in) its callers."""
    llvm.add_symbol(symbol, c_function(function, signature, stamp))
    return types.ExternalFunction(symbol, signature)
