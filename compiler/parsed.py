"""Parsed modules kept by their text: once per process, and on disk in the private cache
directory, so that loading a module parsed before (the Prelude, every time) needs neither
Lark nor the parser; and Lark's parser tables, so that parsing a new text needs no grammar
analysis.

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
#: The folder of the cache directory that holds the parser's tables (`_load_tables`).
TABLES = "parser"
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
    from ..grammar import parser, tables  # (Lark is imported only to parse)

    if not tables.has_tables() and not tables.use_shipped():
        _load_tables(tables)
    return parser.parse_counting(text, name)


def _load_tables(tables) -> None:
    """Give the parser (grammar/tables.py) Lark's tables from the disk cache, where a process
    kept them before (read as every pickle of the cache is: only if hilbert wrote it for this
    user), else have it build them (a fifth of a second) and keep them: a process that parses
    a text it has not parsed before (an edited .hb file) then skips Lark's grammar analysis."""
    import lark

    made_by = f"{pickles.stamp('grammar')}\0lark {lark.__version__}"
    digest = hashlib.sha256(made_by.encode()).hexdigest()[:32]
    saved = pickles.read(TABLES, digest, bytes)
    if saved is not None:
        try:
            tables.use_tables(saved)
            return
        except Exception:  # noqa: BLE001, S110 (damaged: built again and rewritten)
            pass
    pickles.write(TABLES, digest, tables.tables())
