"""JAX's persistent compilation cache kept in hilbert's private cache directory (its folder
`jax/`), so that a second process running the same executor="jax" program loads XLA's
executable instead of compiling it again.

JAX reads an executable from that folder and runs it, so the folder is checked as Numba's is
(compiler/directory.py, docs/security.md): a real directory of the user's alone inside the
private cache directory (else W900, and nothing is kept), every file in it a plain file of the
user's that no one else can write (else removed unread, W902). What this module changes in
JAX's configuration, only around hilbert's own compilations (JAX's thread-local scopes), is
where the cache is, when the user has not chosen one, and the thresholds below which JAX would
not keep a program (one second of compiling): hilbert's programs are kept whatever their size
and compile time. JAX opens its cache once per process, so the user's own jitted functions
compiled later are kept in the same folder when they pass JAX's own thresholds.
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

from ...compiler.directory import discard, private_folder, untrusted_folder

try:  # (JAX's thread-local settings: not public, so a JAX without them keeps nothing)
    from jax._src import config
    _SETTINGS = (config.enable_compilation_cache, config.compilation_cache_dir,  # (all there?)
                 config.persistent_cache_min_compile_time_secs,
                 config.persistent_cache_min_entry_size_bytes)
except (ImportError, AttributeError):
    config = None

#: The folder of the cache directory that holds JAX's compilation cache.
FOLDER = "jax"

_lock = threading.Lock()
_checked: list[str | None] = []  # [the folder, or None when there is none], once checked


@contextlib.contextmanager
def kept_compilations() -> Iterator[None]:
    """A scope in which what JAX compiles on this thread is kept in its persistent cache (and
    read back from it): in hilbert's folder `jax/` when the user has set no cache directory of
    their own, with no minimum compile time or size. Outside it, JAX's configuration is the
    user's. Keeps nothing when the user turned JAX's cache off or the folder is not private."""
    if config is None or not config.enable_compilation_cache.value:
        yield
        return
    chosen = config.compilation_cache_dir.value
    folder = chosen or _folder()
    if folder is None:
        yield
        return
    with config.compilation_cache_dir(folder), \
            config.persistent_cache_min_compile_time_secs(0.0), \
            config.persistent_cache_min_entry_size_bytes(-1):
        yield


def _folder() -> str | None:
    """hilbert's folder for JAX's cache, checked once per process (the folder stays private:
    no one else can add a file to a directory of the user's alone), or None."""
    with _lock:
        if not _checked:
            folder = private_folder(FOLDER)
            _checked.append(None if folder is None or not _cleared(folder) else str(folder))
        return _checked[0]


def _cleared(folder: Path) -> bool:
    """Whether `folder` holds only what the user could have written, after removing unread
    (W902) every file someone else could have: a file planted while the cache directory was
    still open to others. A folder in it that is not the user's alone refuses the whole
    folder (W900, through private_folder's check of it)."""
    for entry in os.scandir(folder):
        path = Path(entry.path)
        found = entry.stat(follow_symlinks=False)
        if stat.S_ISDIR(found.st_mode):
            if untrusted_folder(path) is not None:
                private_folder(f"{FOLDER}/{entry.name}")  # (refused: says W900)
                return False
            continue
        why = _foreign_file(found)
        if why is not None:
            discard(path, why)
    return True


def _foreign_file(found: os.stat_result) -> str | None:
    """Why a file of the folder could have been written by someone else, or None."""
    if not stat.S_ISREG(found.st_mode):
        return "it is not a plain file"
    if os.name != "posix":
        return None
    if found.st_uid != os.geteuid():
        return "it does not belong to you"
    if found.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"others can write it (mode {stat.filemode(found.st_mode)})"
    return None
