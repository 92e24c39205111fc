"""Parsed modules kept by their text: once per process, and on disk in the private cache
directory, so that loading a module parsed before (the Prelude, every time) needs neither
Lark nor the parser.

An entry is named by a hash of what the parse depends on: the parser's own sources and
grammar, the module's name (it is in every span) and its text. A text whose parse warned
(W100) is never kept, so its warnings are given at every load. Entries are pickles of the
syntax tree and are read only from the private directory (compiler/directory.py): loading a
pickle runs whatever its writer chose, so only hilbert itself may have written it.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import pickle
import threading
from collections import OrderedDict
from pathlib import Path

from hilbert.grammar.syntax import Module

#: The folder of the cache directory that holds parsed modules.
FOLDER = "parsed"
#: How many parsed texts a process keeps in memory, least recently used dropped first.
KEPT = 256
_kept: OrderedDict[str, Module] = OrderedDict()
_lock = threading.Lock()


def parse_module(text: str, name: str) -> Module:
    """`parse(text, name)`, from this process's memory or the disk cache when the same text
    under the same name was parsed before (by this hilbert), else parsed now and kept."""
    if not isinstance(text, str):  # (the parser says what is wrong)
        return _parse(text, name)[0]
    digest = hashlib.sha256(f"{_stamp()}\0{name}\0{text}".encode("utf-8", "surrogatepass")
                            ).hexdigest()[:32]
    with _lock:
        found = _kept.get(digest)
        if found is not None:
            _kept.move_to_end(digest)
            return found
    found = _read(digest)
    if found is None:
        found, warned = _parse(text, name)
        if warned:
            return found
        _write(digest, found)
    with _lock:
        _kept[digest] = found
        while len(_kept) > KEPT:
            _kept.popitem(last=False)
    return found


def _parse(text: str, name: str) -> tuple[Module, int]:
    from hilbert.grammar.parser import parse_counting  # (Lark is imported only to parse)

    return parse_counting(text, name)


@functools.cache
def _stamp() -> str:
    """A hash of the parser's sources and grammar: a parse kept by another version of them is
    never read."""
    digest = hashlib.sha256()
    grammar = Path(__file__).resolve().parent.parent / "grammar"
    for path in sorted(grammar.iterdir()):
        if path.suffix in (".py", ".lark"):
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _folder() -> Path | None:
    from .directory import private_folder

    return private_folder(FOLDER)


def _read(digest: str) -> Module | None:
    folder = _folder()
    if folder is None:
        return None
    try:
        data = (folder / f"{digest}.pickle").read_bytes()
    except OSError:
        return None
    try:
        found = pickle.loads(data)  # noqa: S301 (written by hilbert, in a private directory)
    except Exception:  # noqa: BLE001 (a damaged entry is parsed again and rewritten)
        return None
    return found if isinstance(found, Module) else None


def _write(digest: str, module: Module) -> None:
    """Keep `module` on disk, written whole or not at all; a tree too deep to pickle, or a
    cache that cannot be written, is simply not kept."""
    folder = _folder()
    if folder is None:
        return
    try:
        data = pickle.dumps(module, protocol=pickle.HIGHEST_PROTOCOL)
    except RecursionError:
        return
    from .directory import write_whole

    with contextlib.suppress(OSError):
        write_whole(folder / f"{digest}.pickle", data)
