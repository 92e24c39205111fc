"""Parsed modules kept by their text: once per process, and on disk in the private cache
directory, so that loading a module parsed before (the Prelude, every time) needs neither
Lark nor the parser.

An entry is named by a hash of what the parse depends on: the parser's own sources and
grammar, the module's name (it is in every span) and its text. A text whose parse warned
(W100) is never kept, so its warnings are given at every load. Entries are pickles of the
syntax tree, kept as compiler/pickles.py keeps them.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict

from ..grammar.syntax import Module
from . import pickles

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
    made_by = pickles.stamp("grammar")
    digest = hashlib.sha256(f"{made_by}\0{name}\0{text}".encode("utf-8", "surrogatepass")
                            ).hexdigest()[:32]
    with _lock:
        found = _kept.get(digest)
        if found is not None:
            _kept.move_to_end(digest)
            return found
    found = pickles.read(FOLDER, digest, Module)
    if found is None:
        found, warned = _parse(text, name)
        if warned:
            return found
        pickles.write(FOLDER, digest, found)
    with _lock:
        _kept[digest] = found
        while len(_kept) > KEPT:
            _kept.popitem(last=False)
    return found


def _parse(text: str, name: str) -> tuple[Module, int]:
    from ..grammar.parser import parse_counting  # (Lark is imported only to parse)

    return parse_counting(text, name)
