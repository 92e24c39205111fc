"""Machine code compiled code calls by address: NumPy's own BLAS routines, and hilbert's kernels
compiled once as C functions (kernels.py's product kernel, panels.py's large products)."""

from __future__ import annotations

import llvmlite.binding as llvm
from numba import types

from . import disk
from .product_parts import numpy_cblas as numpy_cblas  # (where compiled code finds it)

#: The C functions compiled code calls by address (kept alive here: their machine code lives
#: while the CFunc does).
_NATIVE: list = []


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
