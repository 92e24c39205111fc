"""Numba, and this executor's modules that import it, imported by one thread at a time.

Numba's modules import each other in circles. Two threads that import them at once can each
hold a module the other waits for; Python then hands one of them a module half made, and the
call ends in `ImportError: cannot import name 'NullCache' from partially initialized module`
(first calls from several threads, or one while a build imports Numba in the background). So
the first import of Numba, or of kernels.py or cache.py (which import it), goes through `load`,
under one lock; once a module is whole, `load` takes no lock.
"""

from __future__ import annotations

import importlib
import os
import sys
import threading
from types import ModuleType

#: Held while a module is imported through `load` (re-entrant: importing kernels.py chooses
#: the threading layer, which loads Numba's).
_IMPORTING = threading.RLock()


def load(name: str) -> ModuleType:
    """The module `name`, imported now, under the lock, unless it is whole already.

    >>> load("hilbert.executor.numba.kernels").PYTHON_MODE in (True, False)
    True
    """
    module = sys.modules.get(name)
    spec = getattr(module, "__spec__", None)
    if module is not None and not getattr(spec, "_initializing", False):
        return module  # (whole: another thread's import of it has ended)
    with _IMPORTING:
        return importlib.import_module(name)


def python_mode() -> bool:
    """Whether NUMBA_DISABLE_JIT=1 runs compiled code as Python (kernels.PYTHON_MODE), read
    from Numba's settings without loading the kernels, whose import compiles the BLAS calls
    (seconds with an empty cache) that only code Numba builds needs. Before Numba is imported
    (a process whose code the LLVM back end built may never need it: its import takes a
    third of a second) it is read as Numba would read it, from the environment, unless the
    setting is one Numba alone can read (a number it parses, a .numba_config.yaml here)."""
    config = sys.modules.get("numba.core.config")
    if config is None and not os.path.isfile(".numba_config.yaml"):
        setting = os.environ.get("NUMBA_DISABLE_JIT", "0").strip()
        if setting.isascii() and setting.isdigit():  # (int() takes these; a sign or "_": Numba)
            return int(setting) != 0
    return bool(getattr(load("numba.core.config"), "DISABLE_JIT", False))
