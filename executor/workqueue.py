"""Numba's workqueue threading layer started without importing Numba: its library loaded as the
module Numba itself loads it as, its threads launched and its functions put in LLVM's symbol
table, as Numba's `_launch_threads` does for it.

Why: importing Numba takes 0.2–0.3 s of one core, and code the LLVM back end builds needs
nothing of Numba but this layer (executor/llvm/threads.py: its machine code calls
`numba_parallel_for` and `get_num_threads` by name). On a 2-core machine that import ran beside
the LLVM compile of the very program that needed the threads (start-mlp's step), taking a core
from it.

What stays true. The library is registered as `numba.np.ufunc.workqueue`, so a Numba imported
later (the user's parallel code, or hilbert's Numba-built code) finds it loaded: its
`_launch_threads` adds the same addresses and calls `launch_threads` again, which the library
ignores once its queues exist (one pool, never two). Numba's own choice of layer is made
workqueue when Numba's settings are read (`_Chosen`: the setting executor/threads.py's
`_choose_layer` writes when it loads Numba itself), so the user's parallel code shares the pool
rather than start OpenMP's or TBB's beside it. Only where executor/threads.py expects workqueue
without asking Numba (`expected_layer`: its settings plain, Numba not imported) is this used;
anywhere else Numba is imported and asked, as before."""

from __future__ import annotations

import ctypes
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from pathlib import Path

import llvmlite.binding as llvm

#: The name Numba imports the layer's library by.
NAME = "numba.np.ufunc.workqueue"
#: The library's functions Numba's `_launch_threads` puts in LLVM's symbol table, by the name
#: it gives them (the library's own names, but `parallel_for`).
SYMBOLS = {"numba_parallel_for": "parallel_for", "do_scheduling_signed": "do_scheduling_signed",
           "do_scheduling_unsigned": "do_scheduling_unsigned",
           "allocate_sched": "allocate_sched", "deallocate_sched": "deallocate_sched",
           "get_num_threads": "get_num_threads", "set_num_threads": "set_num_threads",
           "get_thread_id": "get_thread_id", "set_parallel_chunksize": "set_parallel_chunksize",
           "get_parallel_chunksize": "get_parallel_chunksize",
           "get_sched_size": "get_sched_size"}


def library() -> Path | None:
    """The workqueue library of the installed Numba (found without importing it), or None."""
    spec = importlib.util.find_spec("numba")
    for folder in [] if spec is None else list(spec.submodule_search_locations or []):
        for found in sorted((Path(folder) / "np" / "ufunc").glob("workqueue*")):
            if found.suffix in (".so", ".pyd"):
                return found
    return None


def launch(threads: int) -> bool:
    """The layer's library loaded (once: as Numba would), `threads` threads launched, its
    functions in LLVM's symbol table, and Numba's choice of layer, when Numba is imported,
    made workqueue; False (nothing done) where the library is not there or Numba is imported
    already (it is asked instead)."""
    if "numba.core.config" in sys.modules:
        return False
    lib = sys.modules.get(NAME)
    if lib is None:
        path = library()
        if path is None:
            return False
        loader = importlib.machinery.ExtensionFileLoader(NAME, str(path))
        spec = importlib.util.spec_from_file_location(NAME, path, loader=loader)
        if spec is None:
            return False
        lib = importlib.util.module_from_spec(spec)
        loader.exec_module(lib)
        sys.modules[NAME] = lib
    sys.meta_path.insert(0, _Chosen())
    for symbol, name in SYMBOLS.items():
        llvm.add_symbol(symbol, getattr(lib, name))
    ctypes.CFUNCTYPE(None, ctypes.c_int)(lib.launch_threads)(threads)
    ctypes.CFUNCTYPE(None, ctypes.c_int)(lib.set_num_threads)(threads)
    return True


class _Chosen(importlib.abc.MetaPathFinder):
    """Numba's settings module, when imported, with workqueue as its threading layer (after its
    own reading of the environment); then this finder goes."""

    def find_spec(self, name, path=None, target=None):
        if name != "numba.core.config":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def chosen(module) -> None:
            run(module)
            module.THREADING_LAYER = "workqueue"

        spec.loader.exec_module = chosen  # type: ignore[method-assign]
        return spec
