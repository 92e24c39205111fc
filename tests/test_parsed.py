"""Parsed modules kept by their text (compiler/parsed.py): a text parsed before is not parsed
again, in this process or in the next (from the private cache directory), and what comes back
is the tree the parser gives. Checked by counting parses and by what a fresh process imports,
never by timing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
from hilbert.compiler import parsed
from hilbert.grammar import parser, tables
from hilbert.grammar.errors import HilbertWarning

import hilbert

TEXT = 'def dense(a, w) ≔ einsum("np,pq->nq", a, w)\nfn f(a, w) ↦ tanh(dense(a, w))\n'


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """An empty cache directory and no parse kept in memory; counts the parser's parses."""
    monkeypatch.setenv("HILBERT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(parsed, "_kept", type(parsed._kept)())
    counted = []
    original = parser.parse_counting

    def counting(text, name="<string>"):
        counted.append(name)
        return original(text, name)

    monkeypatch.setattr(parser, "parse_counting", counting)
    return counted


def test_a_text_is_parsed_once_then_read_back(fresh):
    first = parsed.parse_module(TEXT, "first.hb")
    assert fresh == ["first.hb"]
    assert parsed.parse_module(TEXT, "first.hb") is first  # this process: from memory
    parsed._kept.clear()
    again = parsed.parse_module(TEXT, "first.hb")  # from the disk
    assert fresh == ["first.hb"] and again == first and again is not first
    assert again == parser.parse(TEXT, "first.hb")  # the tree the parser gives, spans and all
    assert again.decls[1].span.source.name == "first.hb"


def test_the_name_is_part_of_the_key(fresh):
    parsed.parse_module(TEXT, "a.hb")
    other = parsed.parse_module(TEXT, "b.hb")
    assert fresh == ["a.hb", "b.hb"] and other.decls[0].span.source.name == "b.hb"


def test_a_text_that_warns_is_never_kept(fresh):
    text = "def а(x) ≔ x\ndef a(x) ≔ x\n"  # Cyrillic а, then Latin a: W100
    for _ in range(2):
        with pytest.warns(HilbertWarning, match="look alike"):
            parsed.parse_module(text, "alike.hb")
    assert fresh == ["alike.hb", "alike.hb"]


def test_a_damaged_entry_is_parsed_again(fresh, tmp_path):
    parsed.parse_module(TEXT, "d.hb")
    (entry,) = (tmp_path / "cache" / parsed.FOLDER).glob("*.pickle")
    entry.write_bytes(b"not a pickle")
    parsed._kept.clear()
    with pytest.warns(HilbertWarning) as caught:  # (its seal does not match: W902)
        again = parsed.parse_module(TEXT, "d.hb")
    assert [w.message.code for w in caught] == ["W902"]
    assert fresh == ["d.hb", "d.hb"]
    assert again == parser.parse(TEXT, "d.hb")


def test_nothing_is_read_from_a_cache_dir_others_can_write(fresh, tmp_path):
    parsed.parse_module(TEXT, "e.hb")
    os.chmod(tmp_path / "cache", 0o777)
    parsed._kept.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (W900, said once per process)
        parsed.parse_module(TEXT, "e.hb")
    assert fresh == ["e.hb", "e.hb"]
    os.chmod(tmp_path / "cache", 0o700)


def test_a_second_process_loads_a_module_without_the_parser_or_numba(tmp_path):
    """What a warm start costs: no Lark (the parse is read back) and no Numba (the first calls
    run on the host tier) until something compiles."""
    source = tmp_path / "Model.hb"
    source.write_text("open Prelude.Arithmetic\nfn f(x, w) ↦ relu(einsum(\"np,pq->nq\", x, w))\n",
                      encoding="utf-8")
    script = (
        "import json, sys, numpy as np, hilbert\n"
        f"m = hilbert.load({str(source)!r})\n"
        "loaded = sorted(k for k in ('lark', 'numba') if k in sys.modules)\n"
        "value = m.f(np.ones((2, 3)), np.ones((3, 2)))\n"
        "print(json.dumps({'loaded': loaded, 'value': value.tolist(),\n"
        "                  'after': sorted(k for k in ('lark', 'numba') if k in sys.modules)}))\n")
    env = dict(os.environ, HILBERT_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("HILBERT_COMPILE", None)  # the default: the first call runs on the host
    env.pop("NUMBA_DISABLE_JIT", None)
    reports = []
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              env=env, timeout=300)
        assert done.returncode == 0, done.stderr
        reports.append(json.loads(done.stdout.splitlines()[-1]))
    assert reports[0]["loaded"] == ["lark"]  # the first process parses
    assert reports[1]["loaded"] == [] and reports[1]["after"] == []
    for report in reports:
        np.testing.assert_array_equal(report["value"], np.full((2, 2), 3.0))


def test_the_prelude_is_parsed_once_per_process(fresh):
    hilbert.compile_source("open Prelude.Arithmetic\nfn f(x) ↦ relu(x)")
    prelude = [name for name in fresh if "prelude/" in name]
    assert prelude == ["prelude/Arithmetic.hb"]  # parsed once, in this empty cache
    hilbert.compile_source("open Prelude.Arithmetic\nfn g(x) ↦ relu(x) + 1")
    assert [name for name in fresh if "prelude/" in name] == prelude


def test_the_parser_tables_are_kept_and_read_back(fresh, monkeypatch, tmp_path):
    """Where the shipped tables cannot be used (another Lark's, as here), a process that
    parses a text it has not parsed before reads Lark's tables from the cache directory (kept
    by the first such process) instead of building them; a table file someone else planted
    is never loaded, and the parses are the parser's own."""
    monkeypatch.setattr(tables, "use_shipped", lambda: tables.has_tables())
    built = []

    class Counted(tables.Lark):
        def __init__(self, *args, **kwargs):
            built.append(1)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(tables, "Lark", Counted)
    monkeypatch.setattr(tables, "_parser", [])  # (a new process: no parser made yet)
    first = parsed.parse_module(TEXT, "first.hb")
    assert built == [1]
    kept = list((tmp_path / "cache").rglob("*.pickle"))
    found = [p for p in kept if p.parent.name == parsed.TABLES]
    assert len(found) == 1
    monkeypatch.setattr(tables, "_parser", [])
    other = TEXT.replace("tanh", "sigmoid")
    second = parsed.parse_module(other, "second.hb")
    assert built == [1] and tables.has_tables()  # (the tables read back: nothing built)
    assert fresh == ["first.hb", "second.hb"]
    monkeypatch.setattr(tables, "_parser", [])
    assert parser.parse(other, "second.hb") == second and built == [1, 1]
    assert parser.parse(TEXT, "first.hb") == first
    found[0].write_bytes(b"planted")  # (not sealed by the user's key: removed unread)
    monkeypatch.setattr(tables, "_parser", [])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HilbertWarning)  # (W902 says it was removed)
        third = parsed.parse_module(TEXT.replace("tanh", "exp"), "third.hb")
    assert built == [1, 1, 1] and third == parser.parse(TEXT.replace("tanh", "exp"), "third.hb")
