"""The Pygments lexers of hilbert.lexer: .hb source and hilbert's output, their entry points,
and the colour `hilbert` gives plans and errors on a terminal (and nowhere else)."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from hilbert.compiler.ops.primitives import PRIMITIVES
from pygments.lexers import get_lexer_by_name, get_lexer_for_filename
from pygments.token import Comment, Error, Generic, Keyword, Name, Number, Operator, String

from hilbert import lexer
from hilbert.cli import main
from hilbert.lexer import HilbertLexer, HilbertOutputLexer, colour, wanted

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = sorted([*ROOT.glob("prelude/*.hb"), *ROOT.glob("examples/*.hb")])
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def tokens(text: str, reader=None) -> list[tuple]:
    return [(t, v) for t, v in (reader or HilbertLexer()).get_tokens(text) if v.strip()]


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_every_shipped_file_lexes_whole_without_errors(path):
    text = path.read_text(encoding="utf-8")
    found = list(HilbertLexer().get_tokens_unprocessed(text))
    assert [v for _, t, v in found if t is Error] == []
    assert "".join(v for _, _, v in found) == text


def test_tokens_of_each_construct():
    text = ('open Prelude.Networks\n-- a comment\nmodel Net(n) : Learner {\n'
            '  weight w : Tensor[n, 1] from gaussian(7)\n}\n'
            'fn f(x, β1) ↦ if x ≥ 0.5 then einsum("ij->", x²) else ifx := β1 |-> 2e-3\n')
    found = tokens(text)
    expected = [
        (Keyword.Namespace, "open"), (Name.Namespace, "Prelude.Networks"),
        (Comment.Single, "-- a comment"), (Keyword.Declaration, "model"), (Name.Class, "Net"),
        (Keyword.Type, "Learner"), (Keyword.Declaration, "weight"), (Name.Variable, "w"),
        (Keyword.Type, "Tensor"), (Keyword, "from"), (Name.Builtin, "gaussian"),
        (Keyword.Declaration, "fn"), (Name.Function, "f"), (Name, "β1"), (Operator, "↦"),
        (Keyword, "if"), (Operator, "≥"), (Number.Float, "0.5"), (Keyword, "then"),
        (Name.Builtin, "einsum"), (String, '"ij->"'), (Name, "x"), (Operator, "²"),
        (Keyword, "else"), (Name, "ifx"), (Operator, ":="), (Operator, "|->"),
        (Number.Float, "2e-3"),
    ]
    for pair in expected:
        assert pair in found, pair


def test_the_lexer_knows_every_primitive_and_keyword_the_compiler_does():
    assert set(lexer.PRIMITIVES) == set(PRIMITIVES) | {"einsum", "grad"}
    grammar = (ROOT / "grammar" / "hb.lark").read_text(encoding="utf-8")
    reserved = re.search(r"NAME: /\(\?!\(([a-z|]+)\)", grammar).group(1).split("|")
    # grad is reserved (it is ∂'s ASCII spelling, syntax) but coloured as the builtin it reads as
    assert set(reserved) == set(lexer.KEYWORDS) | {"open", "def", "fn", "model", "weight", "grad"}


def test_the_entry_points_register_both_lexers():
    assert isinstance(get_lexer_by_name("hb"), HilbertLexer)
    assert isinstance(get_lexer_for_filename("Layers.hb"), HilbertLexer)
    assert isinstance(get_lexer_by_name("hb-output"), HilbertOutputLexer)


def test_the_output_lexer_reads_a_diagnostic_with_its_source_line():
    text = ('m.hb:1:11: error[E306]: einsum "ij->ji": operand 1 (argument a) is a vector\n'
            '  fn t(a) ↦ einsum("ij->ji", a)\n'
            '            ^^^^^^^^^^^^^^^^^^^\n'
            '  note: in t, defined at m.hb:1:1\n')
    found = tokens(text, HilbertOutputLexer())
    assert (Name.Label, "m.hb:1:11") in found and (Generic.Error, "error") in found
    assert (Name.Builtin, "einsum") in found and (Keyword.Declaration, "fn") in found
    assert (Generic.Error, "            ^^^^^^^^^^^^^^^^^^^\n") in found
    assert (Generic.Subheading, "note: ") in found


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_colour_only_on_a_terminal_without_no_color(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert wanted(Terminal()) and not wanted(io.StringIO())
    assert wanted(io.StringIO(), "always") and not wanted(Terminal(), "never")
    monkeypatch.setenv("NO_COLOR", "1")
    assert not wanted(Terminal())
    assert colour("plan of f()", Terminal()) == "plan of f()"


@pytest.fixture
def small(write_hb):
    return write_hb("Small.hb", 'fn product(a, b) ↦ einsum("ij,jk->ik", a, b)\n')


def test_plan_is_coloured_when_asked_and_plain_otherwise(capsys, small):
    argv = ["plan", str(small), "product", "--shape", "a=4x2", "--shape", "b=2x3"]
    assert main(argv) == 0
    plain = capsys.readouterr().out
    assert main([*argv, "--color", "always"]) == 0
    painted = capsys.readouterr().out
    assert "\x1b[" not in plain and "\x1b[" in painted
    assert ANSI.sub("", painted) == plain


def test_errors_are_coloured_when_asked_and_plain_otherwise(capsys, small):
    argv = ["run", str(small), "product", "[1, 2]", "[[1]]"]
    assert main(argv) == 1
    plain = capsys.readouterr().err
    assert main([*argv, "--color", "always"]) == 1
    painted = capsys.readouterr().err
    assert "error[E306]" in plain and "\x1b[" not in plain and "\x1b[" in painted
    assert ANSI.sub("", painted) == plain
