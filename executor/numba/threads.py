"""Whether generated loop nests may run on several threads, and on how many.

A large loop nest whose outer iterations are independent is written with Numba's `prange`
(codegen/entrywise.py, _parallel) and compiled with `parallel=True`, restricted to those loops. Its
threads come from Numba's threading layer, which must be thread-safe: hilbert's functions are
called from several Python threads at once (models, the background builder), and Numba's own
fallback layer, `workqueue`, aborts the process when two threads launch parallel code together.
So nests run in parallel only when a thread-safe layer (TBB, or OpenMP) loads, and Numba is
then told to use only such a layer. OpenMP's threads are asked to sleep when idle
(OMP_WAIT_POLICY=passive unless set): spinning, they would take the cores from the BLAS
threads of the matrix products between nests (an LSTM step ran four times slower so). That
setting is read when OpenMP is loaded; if an OpenMP runtime is already loaded (torch imported
first, say) and OMP_WAIT_POLICY is not `passive`, nests stay serial: a layer norm then ran
1.6 times slower on two threads than on one, and twice as slow beside a NumPy product. Set
OMP_WAIT_POLICY=passive before importing torch to keep them parallel. GNU OpenMP is not safe
across `fork()`: a forked child must not call parallel code (use the `spawn` start method, or
HILBERT_THREADS=1).

Threads are asked for, not given by default: HILBERT_THREADS=N lets large nests use up to N
threads (`auto`: all of Numba's, NUMBA_NUM_THREADS, the number of cores); unset, 0 or 1, every
nest runs serially and hilbert loads no OpenMP. Not by default because OpenMP is shared with
the rest of the process: torch, imported after hilbert's first parallel nest, runs on the
same OpenMP runtime with its threads asleep when idle (its float64 LSTM over 400 steps ran
about 10% slower so), and imported before it, it keeps hilbert's nests serial (above).
"""

from __future__ import annotations

import ctypes
import functools
import importlib
import os

from hilbert.compiler.settings import text, whole_number

#: Numba's parallel options for generated code: only explicit prange loops run in parallel
#: (no array expressions or NumPy calls rewritten behind the code's back).
PRANGE_ONLY = {"comprehension": False, "reduction": False, "inplace_binop": False,
               "setitem": False, "numpy": False, "stencil": False, "fusion": False,
               "prange": True}

_SAFE_LAYERS = ("tbb", "omp")
#: The environment variable that asks for threads.
ENVIRONMENT = "HILBERT_THREADS"


def count() -> int:
    """How many threads a parallel loop nest may use; 1 when nests run serially (the default:
    HILBERT_THREADS unset, or 1; one core; NUMBA_DISABLE_JIT; no thread-safe threading layer;
    an OpenMP runtime already set up to spin). A setting that is neither a whole number nor
    `auto` is an ArgumentError (E600). Worked out once per setting."""
    return _count(text(ENVIRONMENT).lower())


def forget() -> None:
    """Work out `count` afresh (the threading layer or OpenMP's state changed)."""
    _count.cache_clear()


@functools.cache
def _count(cap: str) -> int:
    if cap != "auto":
        cap = whole_number(ENVIRONMENT, "a whole number of threads (0 or 1: serial, the "
                           "default) or auto (every core)") or 1
        if cap < 2:
            return 1  # (decided without loading Numba)
    from numba import config

    if getattr(config, "DISABLE_JIT", False):
        return 1
    wanted = config.NUMBA_NUM_THREADS if cap == "auto" else min(config.NUMBA_NUM_THREADS, cap)
    if wanted < 2 or not _safe_layer():
        return 1
    return wanted


def _safe_layer() -> bool:
    """Whether Numba's parallel code runs on a thread-safe layer whose threads sleep when
    idle."""
    return not _spins_when_idle() and thread_safe_layer()


def thread_safe_layer() -> bool:
    """Whether Numba's parallel code runs on a thread-safe layer (and will keep doing so)."""
    import numba
    from numba import config
    from numba.np.ufunc import parallel

    if getattr(parallel, "_is_initialized", False):  # already launched: it chose its layer
        try:
            return numba.threading_layer() in _SAFE_LAYERS
        except ValueError:
            return False
    if config.THREADING_LAYER not in ("default", "threadsafe", "safe", *_SAFE_LAYERS):
        return False  # the user asked for workqueue (or for "forksafe"): respect it
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")  # (read when OpenMP loads, below)
    for layer in _SAFE_LAYERS:
        try:
            importlib.import_module(f"numba.np.ufunc.{layer}pool")
        except (ImportError, OSError):
            continue
        if config.THREADING_LAYER == "default":
            config.THREADING_LAYER = "threadsafe"
        return True
    return False


def _spins_when_idle() -> bool:
    """Whether an OpenMP runtime was loaded before its wait policy could be set to passive
    (torch imported first, say): its idle threads then spin (see the module's doc)."""
    passive = os.environ.get("OMP_WAIT_POLICY", "").strip().lower() == "passive"
    return not passive and _openmp_loaded()


#: The names an OpenMP runtime is loaded under (GNU's, LLVM's, Intel's).
_OPENMP_LIBRARIES = ("libgomp.so.1", "libgomp.so.1.0.0", "libomp.so", "libiomp5.so",
                     "libomp.dylib", "libiomp5.dylib")


def _openmp_loaded() -> bool:
    """Whether an OpenMP runtime is already loaded in this process (its settings then fixed)."""
    mode = getattr(os, "RTLD_NOLOAD", None)
    if mode is None:
        return False
    for name in _OPENMP_LIBRARIES:
        try:
            ctypes.CDLL(name, mode=mode)  # (finds a loaded library only; loads nothing)
        except OSError:
            continue
        return True
    return False
