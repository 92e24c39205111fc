"""Whether generated loop nests may run on several threads, and on how many.

A large loop nest whose outer iterations are independent is written with Numba's `prange`
(codegen/entrywise.py, _parallel) and compiled with `parallel=True`, restricted to those loops.
Threads are asked for, not given by default: HILBERT_THREADS=auto lets large nests use all of
Numba's threads (NUMBA_NUM_THREADS, the number of cores), N caps them at N; unset, 0 or 1 keeps
every nest serial, and hilbert then loads no threading layer and changes no setting. Not by
default because the only layer whose idle threads leave torch alone when hilbert and torch
alternate is an OpenMP both share with the wait policy passive, and that policy made torch's
own LSTMs 15% (T = 100) to 2.8× (T = 400, float32) slower in the same process: a default no
user of torch should pay for importing hilbert (issue 23's note has the measurements).

The threads come from Numba's threading layer, which must be thread-safe: hilbert's functions
are called from several Python threads at once (models, the background builder), and Numba's
own fallback layer, `workqueue`, aborts the process when two threads launch parallel code
together. The layer is OpenMP (TBB where OpenMP cannot load), and its idle threads must sleep:
spinning, they take the cores from whatever runs next, the BLAS threads of a product (an LSTM
step ran four times slower so) or torch's. So with threads asked for, `import hilbert` sets
OMP_WAIT_POLICY=passive unless it is set (`prepare_openmp`), before anything loads OpenMP:
hilbert's runtime and the one torch shares with it then both sleep when idle (on TBB, whose
workers spin a while, torch lost 30% beside hilbert's nests). The price is torch's own speed
(above); set OMP_WAIT_POLICY yourself (`active`) to keep torch's, and hilbert's nests then
stay serial. If an OpenMP runtime was loaded before hilbert was imported (torch imported first)
with another policy, nests stay serial too (a layer norm ran 1.6 times slower on two spinning
threads than on one), and the plan says why. GNU OpenMP is not safe across `fork()`: in a
process forked from one that made parallel code on it, `usable` is False, new code is serial,
and code already generated with threads runs as a serial twin (cache.py).
"""

from __future__ import annotations

import ctypes
import functools
import importlib
import os

from hilbert.compiler.settings import text, whole_number
from hilbert.grammar.errors import ArgumentError

#: Numba's parallel options for generated code: only explicit prange loops run in parallel
#: (no array expressions or NumPy calls rewritten behind the code's back).
PRANGE_ONLY = {"comprehension": False, "reduction": False, "inplace_binop": False,
               "setitem": False, "numpy": False, "stencil": False, "fusion": False,
               "prange": True}

_SAFE_LAYERS = ("tbb", "omp")
#: The environment variable that asks for threads.
ENVIRONMENT = "HILBERT_THREADS"
#: The layer hilbert's parallel code runs on, once chosen ("" when there is none).
_LAYER: str | None = None
#: Whether an OpenMP runtime was loaded, its idle threads spinning, before `prepare_openmp`
#: could set the policy (None: not yet looked).
_SPUN_BEFORE: bool | None = None
#: The process that made parallel code on GNU OpenMP (None: none did).
_OWNER: int | None = None


def prepare_openmp() -> None:
    """At `import hilbert`, when threads are asked for (HILBERT_THREADS auto or ≥ 2): note
    whether an OpenMP runtime is already loaded with a policy that spins, then ask every
    runtime loaded from now on to sleep when idle (OMP_WAIT_POLICY, unless set). Loads
    nothing, changes nothing when nests are serial, and never raises (a setting it cannot
    read is an E600 at the first call)."""
    global _SPUN_BEFORE
    try:
        if not _asked(checked()):
            return
    except ArgumentError:
        return  # (an E600 at the first call)
    if _SPUN_BEFORE is None:
        _SPUN_BEFORE = _spins_when_idle()
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")


def count() -> int:
    """How many threads a parallel loop nest may use; 1 when nests run serially
    (HILBERT_THREADS unset, 0 or 1; one core; NUMBA_DISABLE_JIT; no thread-safe layer;
    only an OpenMP runtime set up to spin; a process forked from one that made parallel code
    on GNU OpenMP). A setting that is neither a whole number nor `auto` is an ArgumentError
    (E600). Worked out once per setting and process."""
    return _count(checked(), os.getpid())


def checked() -> str:
    """The HILBERT_THREADS setting, checked (E600 if it cannot be read) without loading Numba:
    "auto", or a whole number as text ("1" when unset: serial)."""
    cap = text(ENVIRONMENT).lower()
    if cap == "auto":
        return "auto"
    return str(whole_number(ENVIRONMENT, "a whole number of threads (0 or 1: serial, the "
                            "default) or auto (every core)") or 1)


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


def why_serial() -> str | None:
    """Why nests run serially though threads are allowed (for the plan), or None."""
    if not _asked(checked()) or count() > 1:
        return None  # serial as asked, or not serial
    if not usable():
        return "this process was forked from one that ran parallel code on GNU OpenMP"
    if _spinning():
        return ("OpenMP's idle threads spin here (loaded before hilbert, torch imported "
                "first?, or OMP_WAIT_POLICY set so): import hilbert first, or set "
                "OMP_WAIT_POLICY=passive")
    if _LAYER == "":
        return "no thread-safe threading layer (OpenMP or TBB) loads here"
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
    if not usable():
        return 1
    from numba import config

    if getattr(config, "DISABLE_JIT", False):
        return 1
    wanted = config.NUMBA_NUM_THREADS if cap == "auto" else min(config.NUMBA_NUM_THREADS, int(cap))
    if wanted < 2 or not layer():
        return 1
    return wanted


def layer() -> str:
    """The thread-safe layer hilbert's parallel code runs on, loaded and chosen once: "tbb",
    "omp", or "" when there is none (see the module's doc)."""
    global _LAYER
    if _LAYER is None:
        _LAYER = _choose_layer()
    return _LAYER


def _choose_layer() -> str:
    import numba
    from numba import config
    from numba.np.ufunc import parallel

    if getattr(parallel, "_is_initialized", False):  # already launched: it chose its layer
        try:
            chosen = numba.threading_layer()
        except ValueError:
            return ""
        return chosen if chosen in _SAFE_LAYERS else ""
    asked = config.THREADING_LAYER
    if asked not in ("default", "threadsafe", "safe", *_SAFE_LAYERS):
        return ""  # the user asked for workqueue (or for "forksafe"): respect it
    if asked in ("default", "threadsafe", "omp"):
        if _spinning():  # (the policy is read when OpenMP loads)
            return ""
        os.environ.setdefault("OMP_WAIT_POLICY", "passive")
        try:
            importlib.import_module("numba.np.ufunc.omppool")
            config.THREADING_LAYER = "omp"
            return "omp"
        except (ImportError, OSError):
            pass
    if asked in ("default", "threadsafe", "safe", "tbb") and _load_tbb():
        config.THREADING_LAYER = "tbb"
        return "tbb"
    return ""


def _load_tbb() -> bool:
    """Whether Numba's TBB layer loads (where OpenMP does not)."""
    try:
        importlib.import_module("numba.np.ufunc.tbbpool")
    except (ImportError, OSError):
        return False
    return True


def _spinning() -> bool:
    """Whether OpenMP's idle threads spin here: a runtime loaded before `prepare_openmp` set the
    policy, or one loaded with a policy other than passive."""
    return bool(_SPUN_BEFORE) or _spins_when_idle()


def _spins_when_idle() -> bool:
    """Whether an OpenMP runtime is loaded with idle threads that spin (its wait policy not
    passive)."""
    return os.environ.get("OMP_WAIT_POLICY", "").strip().lower() != "passive" and _openmp_loaded()


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
