"""`match k { when 1 ↦ a  when 2 | 3 ↦ b  other ↦ c }` (docs/language.md, section 6): the ifs
it means, on every executor, under ∂ and as a loop's base case; its arms' errors; `when` and
`other` names outside a match."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hilbert.grammar.parser import parse
from hilbert.grammar.syntax import Compare, If, Number

import hilbert

EXECUTORS = ["reference", "numba", "dask", "jax"]

SOURCE = """
fn g(x, k) ↦ match k { when 1 ↦ x²  when 2 | −3 ↦ sin(x) · k  other ↦ −x }
fn dg(x, k) ↦ ∂ g(x, k) / ∂ x
def count(t, x) ≔ match t { when 0 ↦ x  other ↦ count(t − 1, x · 1.5) }
fn counted(t, x) ↦ count(t, x)
fn rows2(m, k) ↦ match k { when 0 ↦ einsum("ij->i", m)  other ↦ einsum("ij->j", m) · k }
"""


def _g(x: float, k: float) -> float:
    if k == 1:
        return x * x
    if k in (2, -3):
        return math.sin(x) * k
    return -x


def _dg(x: float, k: float) -> float:
    if k == 1:
        return 2 * x
    if k in (2, -3):
        return math.cos(x) * k
    return -1.0


def test_a_match_is_the_ifs_it_means():
    body = parse("def f(k) ≔ match k { when 1 ↦ 10  when 2 | −3 ↦ 20  other ↦ 30 }").decls[0].body
    tests, values = [], []
    while isinstance(body, If):
        assert isinstance(body.cond, Compare) and body.cond.op == "="
        tests.append(body.cond.right.value)
        values.append(body.then.value)
        body = body.orelse
    assert tests == [1.0, 2.0, -3.0] and values == [10.0, 20.0, 20.0]
    assert body == Number(30.0, None)


@pytest.mark.parametrize("executor", EXECUTORS)
def test_match_on_every_executor_and_under_derivatives(executor):
    if executor == "jax":
        pytest.importorskip("jax")
    if executor == "dask":
        pytest.importorskip("dask")
    mod = hilbert.compile_source(SOURCE)
    g, dg = mod.g.using(executor), mod.dg.using(executor)
    for k in (1, 2, -3, 3, 0):
        assert float(g(0.7, k)) == pytest.approx(_g(0.7, k), rel=1e-14)
        assert float(dg(0.7, k)) == pytest.approx(_dg(0.7, k), rel=1e-12)
        step = 1e-6  # (the derivative against a central difference of the function itself)
        assert float(dg(0.7, k)) == pytest.approx(
            (_g(0.7 + step, k) - _g(0.7 - step, k)) / (2 * step), rel=1e-7)


@pytest.mark.parametrize("executor", EXECUTORS)
def test_match_as_a_loop_s_base_case_and_on_tensors(executor):
    if executor in ("jax", "dask"):
        pytest.importorskip(executor)
    mod = hilbert.compile_source(SOURCE)
    assert float(mod.counted.using(executor)(4, 2.0)) == pytest.approx(2.0 * 1.5 ** 4, rel=1e-14)
    m = np.arange(9.0).reshape(3, 3)
    np.testing.assert_allclose(mod.rows2.using(executor)(m, 0), m.sum(axis=1), rtol=1e-15)
    np.testing.assert_allclose(mod.rows2.using(executor)(m, 2), m.sum(axis=0) * 2, rtol=1e-15)


@pytest.mark.parametrize("text, column", [
    ("def f(k) ≔ match k { when 1 ↦ 10 }", 22),                      # no other
    ("def f(k) ≔ match k { other ↦ 1  when 1 ↦ 10 }", 22),           # other first
    ("def f(k) ≔ match k { when 1 ↦ 2  other ↦ 3  other ↦ 4 }", 34),  # two others
])
def test_a_match_ends_with_one_other_arm(text, column):
    with pytest.raises(hilbert.ParseError) as err:
        parse(text)
    assert err.value.code == "E100" and "ends with one `other ↦ …` arm" in err.value.message
    assert err.value.span.column == column


def test_an_arm_holds_literal_numbers_only():
    with pytest.raises(hilbert.ParseError) as err:
        parse("def f(k, y) ≔ match k { when y ↦ 2  other ↦ 3 }")
    assert err.value.code == "E100" and "a number" in err.value.message


def test_a_match_on_a_tensor_is_refused_as_an_if_on_one_is():
    mod = hilbert.compile_source("fn f(v) ↦ match v { when 1 ↦ 2  other ↦ 3 }")
    with pytest.raises(hilbert.HilbertError) as err:
        mod.f(np.ones(3))
    assert err.value.code == "E312"


def test_when_and_other_are_names_outside_a_match_and_match_is_a_keyword():
    mod = hilbert.compile_source("def when(other) ≔ other + 1\nfn f(x) ↦ when(x)")
    assert float(mod.f(1.0)) == 2.0
    with pytest.raises(hilbert.ParseError) as err:
        parse("def match(x) ≔ x")
    assert err.value.code == "E100"


def test_a_match_written_as_other_languages_write_it_says_where_its_arms_go():
    with pytest.raises(hilbert.ParseError) as err:
        parse("fn f(x) ↦ match x with")
    assert err.value.code == "E100" and "expected one of: {" in err.value.message
