"""NumPy's BLAS on one thread for the length of a call whose products hilbert's own threads
share out (codegen/products.py, "split products").

OpenBLAS's threads spin for about a tenth of a second after each product before they sleep,
so a parallel loop nest right after a multi-threaded product shares its cores with them and
runs at about its serial speed. A loop-free function with large products therefore splits
each of them into row blocks, one per thread of its own, each block a product of NumPy's BLAS
on the calling thread: for the call, NumPy's BLAS is set to one thread (threadpoolctl's
controller for the library compiled code multiplies through), and set back after it, so
nothing of OpenBLAS's spins and hilbert's threads and BLAS's never outnumber the cores.
"""

from __future__ import annotations

import functools
from contextlib import contextmanager
from pathlib import Path

import numpy as np


@functools.cache
def _numpy_blas():
    """threadpoolctl's controllers of NumPy's own OpenBLAS (the library kernels.py calls), or
    () when there is none to control."""
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # pragma: no cover (a dependency)
        return ()
    own = Path(np.__file__).resolve().parent.parent
    return tuple(c for c in ThreadpoolController().select(internal_api="openblas").lib_controllers
                 if Path(c.filepath).resolve().parent.parent == own)


def controllable() -> bool:
    """Whether NumPy's BLAS is an OpenBLAS whose threads can be set for a call."""
    return bool(_numpy_blas())


@contextmanager
def single():
    """NumPy's BLAS on one thread inside, as it was after (also when the call raises)."""
    controllers = _numpy_blas()
    before = [c.get_num_threads() for c in controllers]
    for c, n in zip(controllers, before, strict=True):
        if n != 1:
            c.set_num_threads(1)
    try:
        yield
    finally:
        for c, n in zip(controllers, before, strict=True):
            if n != 1:
                c.set_num_threads(n)
