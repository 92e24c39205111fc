"""What hilbert keeps as pickles in its private cache directory (compiler/directory.py):
parsed modules (compiler/parsed.py), built entries and their plans (compiler/kept.py). Each is
named by a hash of everything it depends on, hilbert's own sources among them, so an entry made
by another version is never read.

Loading a pickle runs whatever its writer chose, so only hilbert itself may have written it:
each is read and written through the cache directory's one checked reader and writer
(directory.read_kept, write_kept), which unpickle nothing someone else could have written or
that the user's key did not seal. (Pickles stay: what is kept is IR, dozens of node classes,
and a format of our own for it would be a second copy of every node to keep in step.)"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import pickle
from pathlib import Path

#: This package's folder (compiler/; grammar/ and the rest are beside it).
_HERE = Path(__file__).resolve().parent


@functools.cache
def stamp(*folders: str) -> str:
    """A hash of the .py and .lark sources of these folders of hilbert (`grammar`,
    `compiler`): what a kept pickle was made by."""
    digest = hashlib.sha256()
    for name in folders:
        folder = _HERE.parent / name
        for path in sorted(folder.rglob("*")):
            if path.suffix in (".py", ".lark"):
                where = path.relative_to(folder).as_posix()
                digest.update(f"{name}/{where}".encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def read(folder: str, digest: str, kind: type):
    """The pickle `digest` of `folder` in the private cache directory, if it is there, is
    trusted (directory.read_kept), loads, and is a `kind`; else None (a damaged entry is made
    again and rewritten)."""
    from .directory import private_folder, read_kept

    place = private_folder(folder)
    data = None if place is None else read_kept(place / f"{digest}.pickle")
    if data is None:
        return None
    try:
        found = pickle.loads(data)  # noqa: S301 (checked and sealed: hilbert wrote it, for this user)
    except Exception:  # noqa: BLE001 (a damaged entry is made again and rewritten)
        return None
    return found if isinstance(found, kind) else None


def write(folder: str, digest: str, value) -> None:
    """Keep `value` as the pickle `digest` of `folder`, written whole or not at all; a value too
    deep to pickle, or a cache that cannot be written, is simply not kept."""
    from .directory import private_folder, write_kept

    place = private_folder(folder)
    if place is None:
        return
    try:
        data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    except RecursionError:
        return
    with contextlib.suppress(OSError):
        write_kept(place / f"{digest}.pickle", data)
