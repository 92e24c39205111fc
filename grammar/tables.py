"""The LALR parser of hb.lark (Lark's): loaded from the tables shipped beside the grammar
(`hb_tables.marshal`, made by `python -m hilbert.grammar.tables`) when they were made from this
grammar by this Lark, else from the tables a process before it saved (compiler/parsed.py keeps
them in the private cache directory), else built (a quarter of a second).

The shipped tables are plain data (Lark's `memo_serialize`: dicts, tuples, strings and
numbers) in Python's `marshal` format, read as a module's compiled code is: a file installed
with hilbert, never one from the cache directory. (Lark numbers its states in an order that
differs between builds, so the file's bytes differ at each `make tables`; what they parse
does not: tests/test_parser_tables.py.)"""

from __future__ import annotations

import hashlib
import io
import marshal
from importlib import resources

import lark
from lark import Lark

#: The tables shipped beside hb.lark.
SHIPPED = "hb_tables.marshal"

#: The parser, once made or loaded (`lark_parser`, `use_tables`).
_parser: list[Lark] = []


def lark_parser() -> Lark:
    """The parser: Lark's LALR tables for hb.lark, built on first use (a fifth of a second)
    unless `use_tables` gave them."""
    if not _parser:
        made = Lark(_grammar(), parser="lalr", propagate_positions=True,
                    maybe_placeholders=True, start=["start", "expression"])
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


def use_shipped() -> bool:
    """Parse with the shipped tables when they were made from this grammar by this Lark (or
    the parser is made already); whether it does."""
    if _parser:
        return True
    try:
        kept = marshal.loads(resources.files("hilbert.grammar").joinpath(SHIPPED).read_bytes())
        if not isinstance(kept, dict) or kept.get("made_from") != made_from():
            return False
        loaded = Lark.load(kept["tables"])
    except Exception:  # noqa: BLE001 (missing, damaged or another Lark's: built instead)
        return False
    _parser[:] = [loaded]
    return True


def made_from() -> dict:
    """What the parser's tables depend on: the grammar's text and Lark's version."""
    return {"grammar": hashlib.sha256(_grammar().encode()).hexdigest(),
            "lark": lark.__version__}


def shipped_tables() -> bytes:
    """The tables to ship, built now."""
    data, memo = lark_parser().memo_serialize([lark.lexer.TerminalDef, lark.grammar.Rule])
    return marshal.dumps({"made_from": made_from(), "tables": {"data": data, "memo": memo}})


def _grammar() -> str:
    return resources.files("hilbert.grammar").joinpath("hb.lark").read_text(encoding="utf-8")


def main() -> int:
    """Write the shipped tables beside hb.lark (`make tables` after an edit of the grammar)."""
    target = resources.files("hilbert.grammar").joinpath(SHIPPED)
    with open(str(target), "wb") as out:
        out.write(shipped_tables())
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
