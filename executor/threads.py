"""Whether generated loop nests may run on several threads, and on how many.

A large loop nest whose outer iterations are independent is written with Numba's `prange`
(where the plan says: compiler/plan/threads.py) and compiled with `parallel=True`, restricted to those loops.
Threads are on by default: HILBERT_THREADS unset or `auto` lets large nests use all of Numba's
threads (NUMBA_NUM_THREADS, the number of cores), N caps them at N, 0 or 1 keeps every nest
serial (and then no threading layer is loaded).

The threads come from Numba's `workqueue` layer unless the user chose another
(NUMBA_THREADING_LAYER, or parallel code of their own that ran first): its idle threads sleep
on a condition variable instead of spinning, and it loads no OpenMP and changes no setting, so
torch's threads and NumPy's BLAS run exactly as they would without hilbert. (OpenMP with the
wait policy passive also sleeps, but the policy is process-wide and made torch's own LSTMs 15%
to 2.6× slower: issue 23's notes.) workqueue is not thread-safe, it ends the process when two
threads launch parallel code at once, and hilbert's functions are called from several threads
(models, the background builder, dask's workers), so every launch of hilbert's parallel code
holds one lock (`launched`): a second thread's nest waits for the first's, which also keeps
the threads running nests at most the cores. The other layers are thread-safe; GNU OpenMP is not
safe across `fork()`, so in a process forked from one that made parallel code on it `usable`
is False, new code is serial, and code already generated with threads runs as a serial twin
(executor/llvm/threads.py; executor/numba/regions.py lowers it afresh). Both the code generator
(which writes `prange`) and the numba runtime (which launches it) read this module, so it sits
below both.

The count is worked out without loading Numba (a third of a second) where its settings are
plain (no .numba_config.yaml, NUMBA_NUM_THREADS unset or a plain number, workqueue the layer
and installed): read from the environment and the cores as Numba reads them, so code the LLVM
back end generates never loads Numba: one with parallel nests starts workqueue's library
itself when it is compiled (executor/llvm/threads.py's `start`, executor/workqueue.py). Once
Numba is imported, or where a setting only Numba reads, its own answers are used, as before.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import sys
import threading
from pathlib import Path

from ..compiler.settings import text, whole_number
from . import workqueue
from .numba.loading import load, python_mode

#: Numba's parallel options for generated code: only explicit prange loops run in parallel
#: (no array expressions or NumPy calls rewritten behind the code's back).
PRANGE_ONLY = {"comprehension": False, "reduction": False, "inplace_binop": False,
               "setitem": False, "numpy": False, "stencil": False, "fusion": False,
               "prange": True}

#: The environment variable that sets the threads.
ENVIRONMENT = "HILBERT_THREADS"
#: The layers tried for each of Numba's NUMBA_THREADING_LAYER settings, in order.
_LAYERS = {"default": ("workqueue",), "workqueue": ("workqueue",), "omp": ("omp",),
           "tbb": ("tbb",), "safe": ("tbb",), "threadsafe": ("tbb", "omp"),
           "forksafe": ("tbb", "workqueue")}
#: The module each layer is loaded from.
_POOLS = {"workqueue": "workqueue", "omp": "omppool", "tbb": "tbbpool"}
#: The layer hilbert's parallel code runs on, once chosen ("" when none loads).
_LAYER: str | None = None
#: The process that made parallel code on GNU OpenMP (None: none did).
_OWNER: int | None = None
#: Held while hilbert's parallel code runs on workqueue (one launch at a time).
_LAUNCH = threading.Lock()


def count() -> int:
    """How many threads a parallel loop nest may use; 1 when nests run serially
    (HILBERT_THREADS 0 or 1; one core; NUMBA_DISABLE_JIT; no layer loads; a process forked
    from one that made parallel code on GNU OpenMP). A setting that is neither a whole number
    nor `auto` is an ArgumentError (E600). Worked out once per setting and process."""
    return _count(checked(), os.getpid())


def checked() -> str:
    """The HILBERT_THREADS setting, checked (E600 if it cannot be read) without loading Numba:
    "auto" (also when unset), or a whole number as text."""
    cap = text(ENVIRONMENT).lower()
    if cap in ("", "auto"):
        return "auto"
    return str(whole_number(ENVIRONMENT, "a whole number of threads (0 or 1: serial) or auto "
                            "(every core, the default)"))


def usable() -> bool:
    """Whether parallel code may run in this process: not in a child forked from a process
    that made parallel code on GNU OpenMP."""
    return _OWNER is None or _OWNER == os.getpid()


def own() -> None:
    """Note that this process makes parallel code (so may start the layer's threads): on GNU
    OpenMP a process forked from it may not run parallel code (`usable`)."""
    global _OWNER
    if _LAYER == "omp":
        _OWNER = os.getpid()


def launched(function):
    """`function` (compiled parallel code) as it is to be called: on workqueue, under the
    launch lock; on a thread-safe layer, as it is."""
    return _OneLaunch(function) if layer() == "workqueue" else function


class _OneLaunch:
    """A parallel function whose every call holds the launch lock (workqueue aborts when two
    threads launch at once). Everything else (compile, stats, …) is the function's own."""

    __slots__ = ("_function",)

    def __init__(self, function) -> None:
        self._function = function

    def __call__(self, *args):
        with _LAUNCH:
            return self._function(*args)

    def __getattr__(self, name: str):
        return getattr(self._function, name)


def why_serial() -> str | None:
    """Why nests run serially though threads are allowed (for the plan), or None."""
    if not _asked(checked()) or count() > 1:
        return None  # serial as asked (or one core), or not serial
    if not usable():
        return "this process was forked from one that ran parallel code on GNU OpenMP"
    if _LAYER == "":
        return "no Numba threading layer loads here"
    return None


def _asked(cap: str) -> bool:
    """Whether the setting `checked` gives asks for threads (auto, or 2 and more)."""
    return cap == "auto" or int(cap) >= 2


def forget() -> None:
    """Work out `count` afresh (the setting or the process changed)."""
    _count.cache_clear()


@functools.cache
def _count(cap: str, pid: int) -> int:
    if not _asked(cap):
        return 1  # (decided without loading Numba)
    if not usable() or python_mode():
        return 1
    cores = _numba_threads()
    wanted = cores if cap == "auto" else min(cores, int(cap))
    if wanted < 2 or not expected_layer():
        return 1
    return wanted


def _numba_threads() -> int:
    """Numba's NUMBA_NUM_THREADS: read as Numba reads it (the setting, else the cores this
    process may run on) without loading Numba, unless Numba is loaded already or the setting
    is one only Numba reads (not a plain number, or in a .numba_config.yaml here)."""
    setting = os.environ.get("NUMBA_NUM_THREADS")
    if "numba.core.config" in sys.modules or os.path.isfile(".numba_config.yaml") or (
            setting is not None and not (setting.isascii() and setting.strip().isdigit())):
        return load("numba").config.NUMBA_NUM_THREADS
    if setting is not None:
        return int(setting)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # (as Numba: where there is no affinity, the CPU's count)
        return max(1, os.cpu_count() or 1)


def expected_layer() -> str:
    """The layer hilbert's parallel code will run on (`layer`'s answer): "workqueue", without
    loading Numba, where nothing chooses another (NUMBA_THREADING_LAYER unset, default or
    workqueue; Numba not loaded, so no parallel code of the user's chose one) and its library
    is installed; else `layer()`."""
    if _LAYER is None and _workqueue_expected():
        return "workqueue"
    return layer()


def _workqueue_expected() -> bool:
    if "numba.core.config" in sys.modules or os.path.isfile(".numba_config.yaml"):
        return False
    chosen = os.environ.get("NUMBA_THREADING_LAYER", "default").lower()
    if _LAYERS.get(chosen, ("workqueue",)) != ("workqueue",):
        return False
    spec = importlib.util.find_spec("numba")  # (finds the package without importing it)
    folders = [] if spec is None else list(spec.submodule_search_locations or [])
    return any(any((Path(f) / "np" / "ufunc").glob("workqueue*")) for f in folders)


def launch_unloaded() -> bool:
    """workqueue's threads launched without importing Numba (executor/workqueue.py), where it
    is the layer expected without asking Numba (`expected_layer`); whether they were (False:
    ask Numba, `layer`)."""
    global _LAYER  # (its caller, executor/llvm/threads.py's `start`, holds its lock)
    if _LAYER is None and _workqueue_expected() and workqueue.launch(_numba_threads()):
        _LAYER = "workqueue"
    return _LAYER == "workqueue" and "numba.np.ufunc.parallel" not in sys.modules


def layer() -> str:
    """The layer hilbert's parallel code runs on, loaded and chosen once: "workqueue", "omp",
    "tbb", or "" when none loads (see the module's doc)."""
    global _LAYER
    if _LAYER is None:
        _LAYER = _choose_layer()
    return _LAYER


def _choose_layer() -> str:
    numba = load("numba")
    config, parallel = numba.config, load("numba.np.ufunc.parallel")
    if getattr(parallel, "_is_initialized", False):  # already launched: it chose its layer
        try:
            return numba.threading_layer()
        except ValueError:
            return ""
    for name in _LAYERS.get(str(config.THREADING_LAYER).lower(), ("workqueue",)):
        try:
            load(f"numba.np.ufunc.{_POOLS[name]}")
        except (ImportError, OSError):
            continue
        config.THREADING_LAYER = name
        return name
    return ""
