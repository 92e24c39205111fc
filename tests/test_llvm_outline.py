"""A large function's loop nests in LLVM functions of their own (executor/llvm/outline.py):
which nests go, what stays where it is, and that the pieces compute what the whole did
(values checked against NumPy written here)."""

from __future__ import annotations

import numpy as np
import pytest
from hilbert.executor import llvm
from hilbert.executor.codegen.loops import (
    Assign,
    Call,
    Fmt,
    For,
    If,
    Raise,
    Return,
    Store,
    Sub,
    Update,
    Var,
    number,
    sizes,
    whole,
)
from hilbert.executor.llvm import outline
from hilbert.executor.llvm.types import Array
from hilbert.executor.numba.faults import PositionError

import hilbert

ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]
NEST = 'define internal i64 @"hb_nest'


def _at(name: str):
    return Sub(Var(name), (Var("i"),))


def _body() -> list:
    """out[i] = a0[i]·a1 + Σ a0 (the sum made by a loop whose value is read after it: it stays
    in the function), then out2[i] = out[i]·u + u with u = 2·a1: the nest that makes out, the
    number u and the two nests that make out2 are one run, one piece. A negative entry below
    −100 raises PositionError(7, entry, row)."""
    check = If(Fmt("{} < -100.0", (_at("a0"),)),
               [Raise(Call("K.PositionError", (whole(7), _at("a0"), Var("i"))))], [])
    return [Assign(("n",), (Fmt("{}.shape[0]", (Var("a0"),)),)),
            Assign(("out",), (Call("K.empty", (sizes([Var("n")]),)),)),
            Assign(("out2",), (Call("K.empty", (sizes([Var("n")]),)),)),
            Assign(("s",), (number(0.0, "float64"),)),
            For("i", Var("n"), [Update("s", "+=", _at("a0"))]),
            For("i", Var("n"), [check, Assign(("t",), (Fmt("{} * {}", (_at("a0"), Var("a1"))),)),
                                Store(_at("out"), Fmt("{} + {}", (Var("t"), Var("s"))))]),
            Assign(("u",), (Fmt("2.0 * {}", (Var("a1"),)),)),
            For("i", Var("n"), [Store(_at("out2"), Fmt("{} * {}", (_at("out"), Var("u"))))]),
            For("i", Var("n"), [Assign(("v",), (Fmt("{} + {}", (_at("out2"), Var("u"))),)),
                                Store(_at("out2"), Var("v"))]),
            Return(Fmt("{}, {}, {}", (Var("out"), Var("out2"), Var("s"))))]


def _made():
    return llvm.lowered(_body(), ["a0", "a1"], [Array("float64", 1), "float64"], "float64")


def test_a_small_function_stays_whole():
    """Below outline.LARGE statements nothing is outlined: the function is as it was."""
    assert NEST not in _made().text


def test_nests_whose_values_stay_inside_are_outlined(monkeypatch, lowered_afresh):
    """The nest that sums into `s`, read after it, stays in the function (its addition);
    the run after it is one piece, never inlined (every multiplication); the answers are
    NumPy's."""
    monkeypatch.setattr(outline, "LARGE", 0)
    made = _made()
    assert made.text.count(NEST) == 1
    run, piece = _function(made.text, "hb_run"), _function(made.text, "hb_nest")
    assert "fadd" in run and "fmul" not in run
    assert piece.count("fmul") == 3 and "noinline" in piece.split("{", 1)[0]
    a = np.linspace(-3.0, 5.0, 1001)
    out, out2, s = made(a, 0.75)
    np.testing.assert_allclose(s, a.sum(), rtol=1e-13)
    np.testing.assert_allclose(out, a * 0.75 + a.sum(), rtol=1e-13)
    np.testing.assert_allclose(out2, (a * 0.75 + a.sum()) * 1.5 + 1.5, rtol=1e-13)


def test_a_raise_in_a_piece_is_the_functions(monkeypatch, lowered_afresh):
    """A raise inside an outlined nest: the function raises it with its arguments (the first
    failing row's), and the next call runs."""
    monkeypatch.setattr(outline, "LARGE", 0)
    made = _made()
    a = np.ones(50)
    a[[7, 30]] = [-200.0, -300.0]
    with pytest.raises(PositionError) as caught:
        made(a, 1.0)
    assert caught.value.args == (7, -200.0, 7)
    out, _, s = made(np.ones(50), 1.0)
    np.testing.assert_array_equal(out, np.full(50, 51.0))
    assert s == 50.0


def _function(text: str, name: str) -> str:
    """The definition in `text` of the function whose name begins with `name`."""
    for part in text.split("\ndefine ")[1:]:
        if part.split("(", 1)[0].split("@", 1)[1].strip('"').startswith(name):
            return part.split("\n}\n", 1)[0]
    raise AssertionError(f"no function {name}")


def _largest_lowered(make):
    """The largest function (call.Lowered) lowered while `make()` runs."""
    before = set(llvm._MADE)
    make()
    return max((made for key, made in llvm._MADE.items() if key not in before),
               key=lambda made: len(made.text))


def test_the_transformer_blocks_step_compiles_in_pieces():
    """The transformer block's training step (some 2000 loop-IR statements): its nests are
    functions of their own, and what stays in the function around them is a fraction of the
    module (LLVM's loop passes take a time per loop that grows with the function around it:
    outline.py); the circle classifier's step (some 750) is outlined too. Each is compiled in
    two parts (parts.py), the second defining pieces that the first declares."""
    rng = np.random.default_rng(23)
    tok = rng.integers(0, 13, size=(2, 5)).astype(float)
    block = hilbert.load(ROOT / "examples" / "Transformer.hb").Block(13, 8, 2, 4, 16, 0)
    largest = _largest_lowered(lambda: block.train(tok, tok[:, ::-1].copy()))
    assert largest.text.count(NEST) >= 20
    assert len(_function(largest.text, "hb_run")) < len(largest.text) / 2
    x = rng.uniform(-1, 1, (16, 2))
    net = hilbert.load(ROOT / "examples" / "CircleClassifier.hb").CircleClassifier(8, 0)
    circle = _largest_lowered(lambda: net.train(x, (x[:, 0] > 0).astype(float), 0.0))
    assert 'define i64 @"hb_run"' in circle.text and NEST in circle.text
    for made in (largest, circle):
        (first, _), (second, symbols) = made._parts
        assert symbols and all(f'declare i64 @"{s}"' in first for s in symbols)
        assert all(f'define i64 @"{s}"' in second for s in symbols)
