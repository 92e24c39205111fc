"""Named axes, continued (docs/language.md, "Named axes"): a tuple result declared one shape
per component (`: (B×R, B×R)`, an LSTM step's pair of states) and checked like a single
result; every declared value's sizes checked at a call, however the compiler rewrote or
inlined it (E331); and no broadcast the names do not allow (E330)."""

from __future__ import annotations

import numpy as np
import pytest
from hilbert.grammar.errors import CheckError, ParseError
from hilbert.grammar.parser import parse
from hilbert.grammar.printer import print_module

import hilbert

#: A peephole-free LSTM-like step over inputs E and states R (the seed's names): it gives
#: the pair of new states, (h, c), both B×R.
STEP = """
fn step(x : B×E, h : B×R, c : B×R, w : E×R, u : R×R) : (B×R, B×R) ↦
  let z ≔ einsum("be,er->br", x, w) + einsum("bs,sr->br", h, u),
      c2 ≔ c · tanh(z)
  in (tanh(c2), c2)
fn total(x : B×E, h : B×R, c : B×R, w : E×R, u : R×R) : B×R ↦
  let (h2, c2) ≔ step(x, h, c, w, u) in h2 + c2
"""


def refused(text: str, code: str = "E330") -> CheckError:
    with pytest.raises(CheckError) as err:
        hilbert.compile_source(text)
    assert err.value.code == code, str(err.value)
    return err.value


# Tuple results


def test_a_tuple_result_declares_each_component_and_prints_back():
    module = parse(STEP)
    step = module.decls[0]
    assert step.axes.result is None
    assert [r.names for r in step.axes.results] == [("B", "R"), ("B", "R")]
    for unicode in (True, False):
        assert parse(print_module(module, unicode)) == module
    assert parse("def f(x) : (B*R, T') := (x, x)").decls[0].axes.results[1].names == ("T′",)
    with pytest.raises(ParseError) as err:
        parse("fn f(x) ↦ let y : (B, B) ≔ (x, x) in y")
    assert err.value.code == "E100" and "take the tuple apart" in err.value.message


def test_a_declared_pair_of_states_computes_what_numpy_does():
    module = hilbert.compile_source(STEP)
    assert module.step.__doc__.startswith(
        "step(x : B×E, h : B×R, c : B×R, w : E×R, u : R×R) : (B×R, B×R)  [fn at")
    rng = np.random.default_rng(1)
    x, h, c = (rng.standard_normal(s) for s in ((2, 3), (2, 4), (2, 4)))
    w, u = rng.standard_normal((3, 4)), rng.standard_normal((4, 4))
    c2 = c * np.tanh(x @ w + h @ u)
    got_h, got_c = module.step(x, h, c, w, u)
    np.testing.assert_allclose(got_h, np.tanh(c2), rtol=1e-12)
    np.testing.assert_allclose(got_c, c2, rtol=1e-12)
    np.testing.assert_allclose(module.total(x, h, c, w, u), np.tanh(c2) + c2, rtol=1e-12)


def test_a_component_of_other_axes_is_refused_naming_both():
    """The mistake: the new cell state given over the inputs' axis E, not R."""
    err = refused(STEP.replace("in (tanh(c2), c2)", "in (tanh(c2), x)"))
    assert err.message.startswith("step's value 2 of (B×R, B×R) is declared B×R, but its "
                                  "body gives B×E: axis E (named at 2:15) where axis R "
                                  "(named at 2:64) is declared")
    assert (err.span.line, err.span.column) == (5, 17)  # the x written as the second value
    err = refused(STEP.replace(": (B×R, B×R) ↦", ": (B×R, B×R, B×R) ↦"))
    assert "declared to give 3 values (B×R, B×R, B×R), but its body gives 2" in err.message


def test_a_declared_tuples_parts_keep_their_axes_where_taken_apart():
    err = refused(STEP.replace("in h2 + c2", "in h2 + x"))
    assert "the operator + joins axis R (named at 6:25) with axis E (named at 6:16)" in err.message
    branches = ("fn f(a : B×R, b : B×D, t) ↦ let (p, q) ≔ if t > 0 then (a, a) else (a, b) "
                "in p")
    assert "if … then … else joins axis R" in refused(branches).message


def test_a_train_blocks_tuple_update_takes_each_part_of_a_declared_result():
    text = ("model M(E, R) : Learner {\n  weight w : Tensor[E, R] from 0\n"
            "  weight v : Tensor[R, E] from 0\n"
            '  def pair(g : E×R) : (E×R, R×E) ≔ (g, einsum("er->re", g))\n'
            "  def train(g) { (w, v) ≔ G }\n}")
    hilbert.compile_source(text.replace("G", "pair(w)"))
    err = refused(text.replace("G", "(v, w)"))  # each part the other weight's axes
    assert "w is a weight of axes E×R, but its update gives R×E" in err.message
    err = refused(text.replace("G", "pair(w)").replace(
        ': (E×R, R×E) ≔ (g, einsum("er->re", g))', ": (E×R, E×R) ≔ (g, g)"))  # (v's part E×R)
    assert "v is a weight of axes R×E, but its update gives E×R" in err.message


# Every declared value's sizes, checked at a call


@pytest.mark.parametrize("text, says", [
    # a let whose value is a call: inlined, its node is the callee's
    ('fn g(x, w) ↦ einsum("be,ef->bf", x, w)\nfn f(x : B×E, w) ↦ let y : B×E ≔ g(x, w) in y',
     "axis E has 3 entries in x but 4 in y"),
    # a let whose value is a parameter: shared with every other read of it
    ('fn f(x : B×E, w) ↦ let y : B×E ≔ w in einsum("bf->", y) + einsum("be->", x)',
     "axis E has 3 entries in x but 4 in y"),
    # a declared definition inlined into an undeclared one: its arguments
    ('fn g(x : B×E, w : E×E) ↦ einsum("be,ef->bf", x, w)\nfn f(x, w) ↦ g(x, w)',
     "axis E has 3 entries in x but 4 in w"),
    # and its lets
    ('fn g(x : B×E, w) ↦ let y : B×E ≔ einsum("be,ef->bf", x, w) in y\nfn f(x, w) ↦ g(x, w)',
     "axis E has 3 entries in x but 4 in y"),
    # a declared let of an undeclared callee, given a value of another rank
    ('fn g(x, w) ↦ let y : B×E ≔ w[0] in y\nfn f(x, w) ↦ g(x, w)',
     "y is declared B×E, 2 axes, but this call gives it 1 axis (shape 4)"),
])
def test_every_declared_value_is_size_checked_at_calls(text, says):
    """Each ran before, silently, when a law, sharing or inlining had moved the value."""
    module = hilbert.compile_source(text)
    x, w = np.ones((2, 3)), np.arange(12.0).reshape(3, 4)
    if "≔ w in" in text:
        w = np.ones((2, 4))
    with pytest.raises(CheckError) as err:
        module.f(x, w)
    assert err.value.code == "E331" and says in err.value.message, str(err.value)


def test_an_inlined_calls_sizes_are_its_own_and_say_where_it_was_called():
    module = hilbert.compile_source(
        'fn g(x : B×E) ↦ x · 2\nfn f(x, w) ↦ einsum("be->", g(x)) + einsum("ef->", g(w))\n'
        'fn h(x, w) ↦ einsum("be,ef->", g(x), w)\nfn k(x, w) ↦ g(einsum("be,ef->bfe", x, w))')
    x, w = np.ones((2, 3)), np.arange(12.0).reshape(3, 4)
    np.testing.assert_allclose(module.f(x, w), 2 * (x.sum() + w.sum()))  # B, E per call
    np.testing.assert_allclose(module.h(x, w), 2 * np.einsum("be,ef->", x, w))
    with pytest.raises(CheckError) as err:
        module.k(x, w)
    assert err.value.code == "E331"
    assert "x is declared B×E, 2 axes, but this call gives it 3 axes" in err.value.message
    assert any("called at <string>:4:14" in note for note in err.value.notes)


# Broadcasts the names do not allow


@pytest.mark.parametrize("text", [
    "fn f(x : B×R, b : R) ↦ x + b",
    "fn f(x : B×R, b : R) ↦ max(x, b)",
    "fn f(x : B×R, b : R, t) ↦ if t > 0 then x else b",
    "fn f(x : B×R, b : R) : B×R ↦ b",
])
def test_a_broadcast_the_names_do_not_allow_is_refused(text):
    assert "B×R" in refused(text).message


def test_a_size_one_axis_does_not_broadcast_by_name():
    """B is one coordinate set in a call: a 1-row b is not repeated to x's 4 rows."""
    module = hilbert.compile_source("fn f(x : B×R, b : B×R) ↦ x + b")
    with pytest.raises(CheckError) as err:
        module.f(np.ones((4, 3)), np.ones((1, 3)))
    assert err.value.code == "E331" and "axis B has 4 entries in x but 1 in b" in \
        err.value.message
