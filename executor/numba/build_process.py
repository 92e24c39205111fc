"""Builds in a process of their own: a background build's code is generated and compiled by a
child process, which writes the machine code to the disk cache (executor/numba/cache.py) and
ends; the user's process loads it from there at its next call or step boundary. So no thread of
the user's process is inside Numba or LLVM while its calls run, and its exit waits for no
build: a child still compiling is left to finish on its own, for the next process.

The child is `python -P -m hilbert.executor.numba.build_child JOBS`, in a session of its own
(a Ctrl-C at the terminal does not reach it), its output thrown away and no descriptor of the
parent's kept (a pipe the user reads from the parent ends with the parent). JOBS is a pickle
the parent wrote whole before starting it, in the cache directory's folder `builds/`, sealed
(compiler/directory.py's write_kept; a pipe would lose what a parent ending meanwhile had not
written yet); the child reads it through the checked reader and removes it. Whatever the child
keeps goes through the same checked, sealed writers, and the parent reads only those.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import secrets
import subprocess
import sys
import threading
from dataclasses import dataclass

from ...compiler import settings
from ...compiler.directory import private_dir, private_folder, write_kept
from ...compiler.driver import Specialised
from .. import threads

#: Environment variable saying where background builds run (docs/settings.md).
ENVIRONMENT = "HILBERT_BUILDS"
#: Its values: a process of their own (the default), or a thread of the user's process.
PROCESS, THREAD = "process", "thread"
#: The folder of the cache directory that holds the jobs given to child processes.
FOLDER = "builds"
#: The module a child process runs.
CHILD = "hilbert.executor.numba.build_child"


@dataclass(frozen=True)
class Job:
    """One program to build: its plan for one signature (without what the parent derived from
    it) and the settings its code is generated under (tiers.Tiers')."""

    ready: Specialised
    optimize: str
    forced: frozenset[str]
    fast: bool


def wanted() -> bool:
    """Whether background builds run in a process of their own (HILBERT_BUILDS), or an
    ArgumentError (E600)."""
    chosen = settings.text(ENVIRONMENT).lower()
    if chosen in ("", PROCESS):
        return True
    if chosen == THREAD:
        return False
    raise settings.not_understood(ENVIRONMENT, chosen, f"{PROCESS} or {THREAD}")


def usable() -> bool:
    """Whether a child's build can reach this process: through a private cache directory (else
    nothing is kept for it to load), in a process whose parallel code is the child's (not one
    forked from a process that ran parallel code: threads.usable)."""
    return bool(sys.executable) and threads.usable() and private_dir() is not None


_lock = threading.Lock()
_running: list[subprocess.Popen] = []  # children started, not known to have ended


def start(jobs: list[Job]) -> subprocess.Popen | None:
    """A child process building `jobs` one after another, started now; None when it cannot be
    (the jobs cannot be pickled or kept, or no process can be started)."""
    folder = private_folder(FOLDER)
    if folder is None:
        return None
    path = folder / f"{secrets.token_hex(16)}.pickle"
    try:
        write_kept(path, pickle.dumps(jobs, protocol=pickle.HIGHEST_PROTOCOL))
    except (RecursionError, pickle.PicklingError, TypeError, AttributeError, OSError):
        return None
    safe = ["-P"] if sys.version_info >= (3, 11) else []  # (not the working directory's modules)
    try:
        child = subprocess.Popen(
            [sys.executable, *safe, "-m", CHILD, str(path)], stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=True,
            start_new_session=os.name == "posix")
    except OSError:
        path.unlink(missing_ok=True)
        return None
    with _lock:
        _running.append(child)
    return child


def ended_well(child: subprocess.Popen) -> bool:
    """Wait here for `child` (`start`'s) to end: whether it built all its jobs (their code is
    then in the disk cache)."""
    status = child.wait()
    with _lock, contextlib.suppress(ValueError):
        _running.remove(child)
    return status == 0


def leave() -> None:
    """At exit: leave the children still building to finish on their own. (Marked ended, so that
    Python, finalising, does not warn that they still run: they are meant to.)"""
    with _lock:
        for child in _running:
            if child.poll() is None:
                child.returncode = 0
        _running.clear()
