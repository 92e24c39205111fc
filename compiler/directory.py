"""hilbert's private directory on disk, checked before anything in it is trusted, and the one
reader and writer of every file kept there: what it keeps (Numba's cache of compiled code,
executor/numba/disk.py; parsed modules, built entries and plans, compiler/pickles.py) is mostly
pickles, and loading a pickle runs whatever its writer chose.

So they are read only from a directory that no one but the user (and root) can change: owned
by the user, not writable by group or others, and reached through directories no one else can
swap; each sub-folder a real directory of the user's alone; each file, checked on the open
descriptor before a byte is read, a plain file of the user's that no one else can write, and
sealed with a keyed hash (HMAC-SHA256) under a random key only the user can read
(docs/security.md). A directory that fails the check, or cannot be made or written, costs a
coded warning and work done again in memory, never a failure; a file that fails it is removed
unread (W902) and made again. This module needs no Numba.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import hmac
import os
import stat
import sys
import tempfile
from pathlib import Path

from ..grammar.errors import warn
from .settings import text

ENVIRONMENT = "HILBERT_CACHE_DIR"
#: The folder inside the cache directory that holds Numba's index (.nbi) and code (.nbc) files
#: (not __pycache__, where hilbert kept them unsealed: a hilbert of before, sharing the cache,
#: would take each other's files for damaged ones and replace them, warning, every time).
NUMBA_FOLDER = "numba"
#: The file of the cache directory that holds the key every kept file is sealed with.
KEY = "key"
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
            why = untrusted_folder(directory / NUMBA_FOLDER)
    except OSError as err:
        unusable(directory, err)
        return None
    if why is not None:
        _not_private(directory, why)
        return None
    return directory


def _not_private(directory: Path, why: str) -> None:
    """Say (W900, once) that nothing is read from or written to `directory`, and why."""
    _warn_once("W900", str(directory), f"the cache directory {directory} is not private: "
               f"{why}, so code in it could have been planted by someone else; nothing is read "
               f"from it or written to it, and code is compiled in memory (make it yours alone, "
               f"`chmod 700`, or set {ENVIRONMENT} to a directory only you can write)")


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


def untrusted_folder(folder: Path) -> str | None:
    """Why someone other than the user (or root) could have put what is in `folder`, a folder
    of the private cache directory, or None: it must be a directory itself (not a symbolic
    link to one), the user's own, writable by no one else. (Its parents are the cache
    directory's, checked by `untrusted`.)"""
    found = os.lstat(folder)
    if stat.S_ISLNK(found.st_mode):
        return f"{folder} is a symbolic link"
    if not stat.S_ISDIR(found.st_mode):
        return f"{folder} is not a directory"
    return _foreign(folder, found, strict=True) if _POSIX else None


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
    there is no private directory (after its warning), the folder cannot be made, or it is
    not private itself (W900: nothing is read from it or written to it)."""
    directory = private_dir()
    if directory is None:
        return None
    folder = directory / name
    try:
        with contextlib.suppress(FileExistsError):  # (what is there is checked)
            folder.mkdir(mode=0o700)
        why = untrusted_folder(folder)
    except OSError:
        return None
    if why is not None:
        _not_private(folder, why)
        return None
    return folder


#: How a kept file is opened: never through a symbolic link, never waiting on a pipe.
_OPENING = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
            | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))


def read_kept(path: Path) -> bytes | None:
    """What hilbert kept in `path`, a file of a folder `private_folder` gave: None when it is
    missing or cannot be read, or sealed by no key yet; after W902 and its removal unread,
    None when someone else could have written it (`read_private`) or its seal is not the
    user's key's (damaged, or not written by `write_kept`)."""
    data = read_private(path)
    key = None if data is None else _key(path.parent.parent, make=False)
    if data is None or key is None:  # (no key: the first write removes what predates it)
        return None
    seal, _, kept = data.partition(b"\n")
    if not hmac.compare_digest(seal, _seal(key, path, kept)):
        discard(path, "its seal does not match the cache's key: it is damaged, or hilbert did "
                      "not write it for you")
        return None
    return kept


def write_kept(path: Path, data: bytes) -> None:
    """Keep `data` in `path` (a file of a folder `private_folder` gave), sealed for
    `read_kept`: written whole or not at all, mode 600. OSError if it cannot."""
    key = _key(path.parent.parent, make=True)
    if key is None:
        raise PermissionError(f"the cache directory {path.parent.parent} has no key")
    write_whole(path, _seal(key, path, data) + b"\n" + data)


def _seal(key: bytes, path: Path, data: bytes) -> bytes:
    """The keyed hash (HMAC-SHA256) of `data` kept as `path`, in hexadecimal; its folder and
    name are part of what is sealed, so one kept file cannot stand in for another."""
    where = f"{path.parent.name}/{path.name}".encode("utf-8", "surrogateescape")
    seal = hmac.new(key, where + b"\0", hashlib.sha256)
    seal.update(data)
    return seal.hexdigest().encode()


def read_private(path: Path, secret: bool = False) -> bytes | None:
    """The bytes of `path` when it is a plain file only the user could have written (and,
    when `secret`, read), checked on the open file itself before a byte is read: no symbolic
    link is followed, so what is checked is what is read. None when it is missing or cannot
    be read, or, after W902 and its removal unread, when it is not such a file."""
    try:
        handle = os.open(path, _OPENING)
    except FileNotFoundError:
        return None
    except OSError as err:  # (O_NOFOLLOW refuses a symbolic link: ELOOP, EMLINK on BSD)
        if err.errno in (errno.ELOOP, errno.EMLINK) and os.path.islink(path):
            discard(path, "it is a symbolic link")
        return None
    with os.fdopen(handle, "rb") as file:
        found = os.fstat(file.fileno())
        why = None if stat.S_ISREG(found.st_mode) else "it is not a plain file"
        if why is None and _POSIX:
            why = _foreign(path, found, strict=True)
        if why is None and _POSIX and secret and found.st_mode & 0o077:
            why = f"others can read it (mode {stat.filemode(found.st_mode)})"
        if why is None:
            return file.read()
    discard(path, why)
    return None


#: How long a key is, in bytes (SHA-256's block is 64: any key up to it is used whole).
_KEY_BYTES = 32


def _key(directory: Path, make: bool) -> bytes | None:
    """The random key that seals the files kept in `directory` (its file KEY, which only the
    user can read or write); made now when there is none and `make`, else None."""
    path = directory / KEY
    key = read_private(path, secret=True)
    if key is not None and len(key) != _KEY_BYTES:
        discard(path, "it is not a key")
        key = None
    if key is None and make:
        try:
            _make_key(path)
        except FileExistsError:
            pass  # (another process made it meanwhile: that one is read)
        except OSError as err:
            unusable(directory, err)
            return None
        key = read_private(path, secret=True)
    return key if key is not None and len(key) == _KEY_BYTES else None


def _make_key(path: Path) -> None:
    """Make the key `path`, whole and private, unless there is one (FileExistsError). Files
    kept before it was made can never be read (a key that is gone sealed them, or none did),
    so every file of every folder beside it is removed."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".hb-", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(os.urandom(_KEY_BYTES))
        os.link(temporary, path)  # (unlike a rename, never replaces another process's key)
    finally:
        Path(temporary).unlink(missing_ok=True)
    for folder in os.scandir(path.parent):
        if folder.is_dir(follow_symlinks=False) and untrusted_folder(Path(folder.path)) is None:
            for kept in os.scandir(folder.path):
                if not kept.is_dir(follow_symlinks=False):
                    with contextlib.suppress(OSError):
                        os.unlink(kept.path)


def discard(path: Path | str, why: str) -> None:
    """Remove the cache file `path` unread; say (W902) that it is not used, and why. (Removed
    first: under warnings made errors, the warning ends the call, but not the file's end.)"""
    with contextlib.suppress(OSError):
        os.unlink(path)
    replacing(path, why)


def replacing(path: Path | str, why: str) -> None:
    """Say (W902) that the cache file `path` is not used, and why: it is made again."""
    warn("W902", f"the cache file {path} was unreadable or untrusted ({why}); it is ignored, "
         f"and made again when it is next needed", stacklevel=4)
