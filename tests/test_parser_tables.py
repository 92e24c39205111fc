"""The parser's tables shipped beside hb.lark (grammar/hb_tables.marshal, `make tables`): made
from the grammar as it is; a fresh process parses with them instead of building Lark's tables
(a quarter of a second of every cold start); what they parse is what tables built from the
grammar parse, every .hb file of the Prelude and the examples to the same syntax tree; and
tables that are damaged, or made from another grammar or by another Lark, are not used."""

from __future__ import annotations

import marshal
import os
import subprocess
import sys
from importlib import resources
from pathlib import Path

import lark
import pytest
from hilbert.grammar import parser, tables

ROOT = Path(__file__).resolve().parents[1]


def _shipped() -> dict:
    raw = resources.files("hilbert.grammar").joinpath(tables.SHIPPED).read_bytes()
    return marshal.loads(raw)


def test_the_shipped_tables_are_made_from_this_grammar():
    made = _shipped()["made_from"]
    assert made["grammar"] == tables.made_from()["grammar"], (
        "grammar/hb.lark changed since its tables were made: run `make tables`")


def test_a_fresh_process_parses_with_the_shipped_tables(tmp_path):
    """With an empty cache directory, no tables are built: Lark's grammar analysis (its
    `Lark(...)` constructor) never runs."""
    script = (
        "import lark\n"
        "built = []\n"
        "made = lark.Lark.__init__\n"
        "lark.Lark.__init__ = lambda self, *a, **k: (built.append(1), made(self, *a, **k))[1]\n"
        "import hilbert\n"
        "m = hilbert.compile_source('def f(a) ≔ a + 1\\nfn g(a) ↦ f(a)', name='fresh.hb')\n"
        "print(len(built), m.g(2.0))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, cwd=ROOT,
                          env={**os.environ, "HILBERT_CACHE_DIR": str(tmp_path)})
    assert done.returncode == 0, done.stderr[-2000:]
    if _shipped()["made_from"]["lark"] != lark.__version__:
        assert done.stdout.split() == ["1", "3.0"]  # (another Lark's tables: built instead)
    else:
        assert done.stdout.split() == ["0", "3.0"]


def _trees(path: Path):
    text = path.read_text(encoding="utf-8")
    return parser.parse(text, path.name)


@pytest.mark.skipif(_shipped()["made_from"]["lark"] != lark.__version__,
                    reason="the shipped tables are another Lark version's (not used here)")
def test_the_shipped_tables_parse_what_built_tables_parse(monkeypatch):
    files = sorted((ROOT / "prelude").rglob("*.hb")) + sorted((ROOT / "examples").rglob("*.hb"))
    assert len(files) > 10
    monkeypatch.setattr(tables, "_parser", [])
    assert tables.use_shipped()
    shipped = [_trees(f) for f in files]
    monkeypatch.setattr(tables, "_parser", [])
    tables.lark_parser()  # (built from hb.lark now)
    built = [_trees(f) for f in files]
    assert shipped == built


def test_tables_not_made_from_this_grammar_and_lark_are_not_used(monkeypatch):
    kept = _shipped()
    for stale in ({**kept["made_from"], "grammar": "0" * 64}, {**kept["made_from"], "lark": "0.1"}):
        monkeypatch.setattr(tables, "_parser", [])
        monkeypatch.setattr(tables.marshal, "loads", lambda raw, s=stale: {**kept, "made_from": s})
        assert not tables.use_shipped() and not tables.has_tables()


def test_damaged_tables_are_not_used(monkeypatch):
    monkeypatch.setattr(tables, "_parser", [])
    monkeypatch.setattr(tables.marshal, "loads", lambda raw: marshal.loads(b"\x00garbage"))
    assert not tables.use_shipped() and not tables.has_tables()
    monkeypatch.setattr(tables.marshal, "loads", lambda raw: {"made_from": tables.made_from(),
                                                              "tables": {"data": 1}})
    assert not tables.use_shipped() and not tables.has_tables()
