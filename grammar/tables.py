"""The LALR parser of hb.lark (Lark's): built once per process, or loaded from the tables a
process before it saved (compiler/parsed.py keeps them in the private cache directory)."""

from __future__ import annotations

import io
from importlib import resources

from lark import Lark

#: The parser, once made or loaded (`lark_parser`, `use_tables`).
_parser: list[Lark] = []


def lark_parser() -> Lark:
    """The parser: Lark's LALR tables for hb.lark, built on first use (a fifth of a second)
    unless `use_tables` gave them."""
    if not _parser:
        grammar = resources.files("hilbert.grammar").joinpath("hb.lark").read_text(
            encoding="utf-8")
        made = Lark(grammar, parser="lalr", propagate_positions=True, maybe_placeholders=True,
                    start=["start", "expression"])
        _parser[:] = [made]  # (two threads may both build: either parser serves)
    return _parser[0]


def has_tables() -> bool:
    """Whether this process's parser is made (or loaded) already."""
    return bool(_parser)


def tables() -> bytes:
    """The parser's tables as Lark saves them (its `save`: a pickle), for `use_tables` in
    another process; compiler/parsed.py keeps them in the private cache directory."""
    saved = io.BytesIO()
    lark_parser().save(saved)
    return saved.getvalue()


def use_tables(saved: bytes) -> None:
    """Parse with the tables `tables` gave (Lark's `load`: unpickled, so `saved` must come
    from a file only hilbert could have written, as compiler/pickles.py reads them)."""
    if not _parser:
        _parser[:] = [Lark.load(io.BytesIO(saved))]
