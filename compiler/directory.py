"""hilbert's private directory on disk, checked before anything in it is trusted: what it keeps
there (Numba's cache of compiled code, executor/numba/disk.py; parsed modules, compiler/parsed.py)
is pickles, and loading a pickle runs whatever its writer chose.

So they are read only from a directory that no one but the user (and root) can change: owned
by the user, not writable by group or others, and reached through directories no one else can
swap (docs/security.md). A directory that fails the check, or cannot be made or written, costs
a coded warning and work done again in memory, never a failure. This module needs no Numba.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import tempfile
from pathlib import Path

from hilbert.compiler.settings import text
from hilbert.grammar.errors import warn

ENVIRONMENT = "HILBERT_CACHE_DIR"
#: The folder inside the cache directory that holds Numba's index (.nbi) and code (.nbc) files.
NUMBA_FOLDER = "__pycache__"
_POSIX = os.name == "posix"
_warned: set[tuple[str, str]] = set()


def cache_dir() -> Path:
    """Where generated code and Numba's cache files go: HILBERT_CACHE_DIR, else the user's cache
    directory (~/.cache/hilbert on Linux)."""
    chosen = text(ENVIRONMENT)
    if chosen:  # (made absolute: Numba's file paths must not move when the process changes directory)
        return Path(os.path.abspath(Path(chosen).expanduser()))
    home = Path.home()
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or home / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = home / "Library" / "Caches"
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or home / ".cache")
    return base / "hilbert"


def private_dir() -> Path | None:
    """The cache directory, made (0700) if missing, when it can be trusted with code; else None,
    after a warning: W900 when others could change it, W901 when it cannot be made."""
    directory = cache_dir()
    try:
        _make(directory)
        why = untrusted(directory)
        if why is None:  # (nothing is made inside a directory that is not private)
            _make(directory / NUMBA_FOLDER)
            why = untrusted(directory / NUMBA_FOLDER)
    except OSError as err:
        unusable(directory, err)
        return None
    if why is not None:
        _warn_once("W900", str(directory), f"the cache directory {directory} is not private: "
                   f"{why}, so code in it could have been planted by someone else; nothing is read "
                   f"from it or written to it, and code is compiled in memory (make it yours alone, "
                   f"`chmod 700`, or set {ENVIRONMENT} to a directory only you can write)")
        return None
    return directory


def unusable(directory: Path, err: Exception) -> None:
    """Say (W901, once) that `directory` cannot hold the disk cache, so code compiles in memory."""
    _warn_once("W901", str(directory), f"cannot use the cache directory {directory} ({err}); "
               f"compiling in memory (set {ENVIRONMENT} to a writable directory to start warm "
               f"next time)")


def _make(directory: Path) -> None:
    """Make `directory` and any missing parents, each one readable and writable by the user
    alone (os.makedirs gives parents the default mode)."""
    missing = []
    while not os.path.lexists(directory):
        missing.append(directory)
        directory = directory.parent
    for level in reversed(missing):
        with contextlib.suppress(FileExistsError):  # made meanwhile by another process
            level.mkdir(mode=0o700)


def untrusted(directory: Path) -> str | None:
    """Why someone other than the user (or root) could change what is in `directory`, or None.
    It must be the user's own, writable by no one else, and every directory above it (along
    its path and its real path) owned by the user or root and not writable by others, unless
    sticky like /tmp or group-writable only for the user's private group. (Elsewhere than
    POSIX only its being a directory is checked; its access list is the user's to keep.)"""
    found = os.stat(directory)
    if not stat.S_ISDIR(found.st_mode):
        return f"{directory} is not a directory"
    if not _POSIX:
        return None
    why = _foreign(directory, found, strict=True)
    if why is not None:
        return why
    absolute, real = Path(os.path.abspath(directory)), Path(os.path.realpath(directory))
    for above in dict.fromkeys([*absolute.parents, *real.parents]):
        why = _foreign(above, os.stat(above), strict=False)
        if why is not None:
            return why
    return None


def _foreign(path: Path, found: os.stat_result, strict: bool) -> str | None:
    """Why another user could change `path` (a directory, or a file when `strict`), or None."""
    user = os.geteuid()
    if found.st_uid != user and (strict or found.st_uid != 0):
        return f"{path} belongs to {_owner(found.st_uid)}"
    writable = found.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    if not writable or (not strict and found.st_mode & stat.S_ISVTX):
        return None
    if not strict and writable == stat.S_IWGRP and _own_group(found.st_gid):
        return None
    return f"{path} can be written by other users (mode {stat.filemode(found.st_mode)})"


def _owner(uid: int) -> str:
    try:
        import pwd
        return f"user {pwd.getpwuid(uid).pw_name}, not to you"
    except (ImportError, KeyError):
        return f"user id {uid}, not to you"


def _own_group(gid: int) -> bool:
    """Whether `gid` is the user's private group (a user private group: named after the user,
    with no other members), whose members can write nothing the user cannot."""
    try:
        import grp
        import pwd
        user = pwd.getpwuid(os.geteuid())
        group = grp.getgrgid(gid)
    except (ImportError, KeyError):
        return False
    return gid == user.pw_gid and group.gr_name == user.pw_name and set(group.gr_mem) <= {user.pw_name}


def trusted_file(path: str) -> bool:
    """Whether `path` (if it exists) is a plain file only the user could have written: a file
    planted before the directory became private is never unpickled."""
    try:
        found = os.lstat(path)
    except FileNotFoundError:
        return True
    if not stat.S_ISREG(found.st_mode):
        return False
    return not _POSIX or _foreign(Path(path), found, strict=True) is None


def _warn_once(code: str, key: str, message: str) -> None:
    if (code, key) not in _warned:
        _warned.add((code, key))
        warn(code, message, stacklevel=4)


def write_whole(path: Path, data: bytes) -> None:
    """Write `data` to `path` whole or not at all: into a fresh private file (mode 600) beside
    it, then renamed into place, so a reader never sees half a file. OSError if it cannot."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".hb-", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def private_folder(name: str) -> Path | None:
    """The folder `name` of the private cache directory, made (0700) if missing; None when
    there is no private directory (after its warning) or the folder cannot be made."""
    directory = private_dir()
    if directory is None:
        return None
    folder = directory / name
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
    except OSError:
        return None
    return folder
