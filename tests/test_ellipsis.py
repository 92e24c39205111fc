"""einsum's ellipsis `...` (issue 28's losses over any rank): one definition for every rank,
on every executor, under ∂, in loops, and its misuses. Expected values are NumPy's own."""

from __future__ import annotations

import numpy as np
import pytest

import hilbert
from hilbert import HilbertError

SOURCE = """
fn lastSum(x) ↦ einsum("...v->...", x)
fn dense(a, w) ↦ einsum("...p,pq->...q", a, w)
fn scaled(x, s) ↦ einsum("...v,...->...v", x, s)
fn lastFirst(x) ↦ einsum("...v->v...", x)
fn total(x) ↦ einsum("...->", x)
fn middle(x) ↦ einsum("a...b->...", x)
fn slope(a, w) ↦ ∂ einsum("...q->", exp(einsum("...p,pq->...q", a, w))) / ∂ a
fn steps(n, x, w) ↦ walk(n, x, w)
def walk(n, x, w) ≔ if n = 0 then x else walk(n − 1, tanh(einsum("...p,pq->...q", x, w)), w)
"""


@pytest.fixture(scope="module", params=["numba", "reference", "dask"])
def module(request):
    return hilbert.compile_source(SOURCE, executor=request.param)


@pytest.mark.parametrize("shape", [(5,), (3, 5), (2, 3, 5), (2, 1, 3, 5)], ids=str)
def test_one_definition_serves_every_rank(module, shape):
    rng = np.random.default_rng(len(shape))
    x, w = rng.standard_normal(shape), rng.standard_normal((5, 5))
    s = rng.standard_normal(shape[:-1])
    np.testing.assert_allclose(module.lastSum(x), x.sum(-1), rtol=1e-13)
    np.testing.assert_allclose(module.dense(x, w), x @ w, rtol=1e-13)
    np.testing.assert_allclose(module.scaled(x, s), x * s[..., None], rtol=1e-13)
    np.testing.assert_array_equal(module.lastFirst(x), np.moveaxis(x, -1, 0))
    assert module.total(x) == pytest.approx(x.sum(), rel=1e-13)
    np.testing.assert_allclose(module.slope(x, w), np.exp(x @ w) @ w.T, rtol=1e-12)
    want = x
    for _ in range(3):
        want = np.tanh(want @ w)
    np.testing.assert_allclose(module.steps(3, x, w), want, rtol=1e-12)
    if len(shape) >= 2:
        np.testing.assert_allclose(module.middle(x), np.einsum("a...b->...", x), rtol=1e-13)


def test_operands_must_give_the_ellipsis_the_same_axes():
    module = hilbert.compile_source(SOURCE)
    with pytest.raises(HilbertError) as err:
        module.scaled(np.zeros((2, 3, 4)), np.zeros(3))
    assert err.value.code == "E305" and "the ellipsis is a 2×3 matrix in operand 1" in err.value.message
    with pytest.raises(HilbertError) as err:
        module.middle(np.zeros(3))
    assert err.value.code == "E306" and "at least 2 ax(es)" in err.value.message


@pytest.mark.parametrize("spec", ["..i->..", "...i...->i", "i.j->i"])
def test_a_misspelt_ellipsis_is_E301(spec):
    with pytest.raises(HilbertError) as err:
        hilbert.compile_source(f'fn f(x) ↦ einsum("{spec}", x)')
    assert err.value.code == "E301"
