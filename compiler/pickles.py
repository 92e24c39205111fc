"""What hilbert keeps as pickles in its private cache directory (compiler/directory.py):
parsed modules (compiler/parsed.py) and built entries (compiler/kept.py). Each is named by a
hash of everything it depends on, hilbert's own sources among them, so an entry made by
another version is never read. Pickles are read only from the private directory: loading one
runs whatever its writer chose, so only hilbert itself may have written it."""

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
    """The pickle `digest` of `folder` in the private cache directory, if it is there, loads,
    and is a `kind`; else None (a damaged entry is made again and rewritten)."""
    from hilbert.compiler.directory import private_folder

    place = private_folder(folder)
    if place is None:
        return None
    try:
        data = (place / f"{digest}.pickle").read_bytes()
    except OSError:
        return None
    try:
        found = pickle.loads(data)  # noqa: S301 (written by hilbert, in a private directory)
    except Exception:  # noqa: BLE001 (a damaged entry is made again and rewritten)
        return None
    return found if isinstance(found, kind) else None


def write(folder: str, digest: str, value) -> None:
    """Keep `value` as the pickle `digest` of `folder`, written whole or not at all; a value too
    deep to pickle, or a cache that cannot be written, is simply not kept."""
    from hilbert.compiler.directory import private_folder, write_whole

    place = private_folder(folder)
    if place is None:
        return
    try:
        data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    except RecursionError:
        return
    with contextlib.suppress(OSError):
        write_whole(place / f"{digest}.pickle", data)
