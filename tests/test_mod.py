"""`a mod b` and `a div b` (issue 28): NumPy's floored remainder and quotient (np.mod,
np.floor_divide) entry by entry, on every executor and dtype, in indices, under ∂, and
printed back as written. Expected values are NumPy's own functions on the same arrays."""

from __future__ import annotations

import numpy as np
import pytest
from hilbert.grammar.parser import parse
from hilbert.grammar.printer import print_module

import hilbert
from hilbert import HilbertError

SOURCE = """
fn remainder(a, b) ↦ a mod b
fn quotient(a, b) ↦ a div b
fn whole(a, b) ↦ b · (a div b) + a mod b
fn cycled(xb, t) ↦ xb[t mod rows(xb)]
fn slope(a, b) ↦ (∂ einsum("i->", a mod b) / ∂ a, ∂ einsum("i->", a mod b) / ∂ b)
fn mod(div) ↦ div + 1
"""

A = np.array([7, -7, 7, -7, 0, -0.0, 5.5, -5.5, np.inf, 3, np.nan, -7, 2 ** 53 - 1, 1e300])
B = np.array([3, 3, -3, -3, 3, 3, 2, 2, 3, 0, 2, 0, 3, 7])


@pytest.fixture(scope="module", params=["numba", "reference", "dask"])
def module(request):
    return hilbert.compile_source(SOURCE, executor=request.param)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_remainder_and_quotient_are_numpys_entry_by_entry(module, dtype):
    a, b = A.astype(dtype), B.astype(dtype)
    with np.errstate(all="ignore"):
        want_r, want_q = np.mod(a, b), np.floor_divide(a, b)
    r, q = module.remainder(a, b), module.quotient(a, b)
    assert r.dtype == dtype and q.dtype == dtype
    np.testing.assert_array_equal(r, want_r)  # NaN where NumPy has NaN, −0.0 included
    np.testing.assert_array_equal(q, want_q)
    assert np.array_equal(np.signbit(r), np.signbit(want_r))


def test_whole_numbers_split_exactly(module):
    rng = np.random.default_rng(5)
    a = rng.integers(-10 ** 12, 10 ** 12, size=200).astype(float)
    b = rng.integers(1, 1000, size=200).astype(float) * rng.choice([-1, 1], size=200)
    np.testing.assert_array_equal(module.whole(a, b), a)
    assert module.remainder(17, 5) == 2.0 and module.quotient(-17, 5) == -4.0


def test_a_cycled_index_reads_row_t_mod_n(module):
    xb = np.arange(12.0).reshape(4, 3)
    for t in (0, 3, 4, 9, 401):
        np.testing.assert_array_equal(module.cycled(xb, t), xb[t % 4])


def test_the_derivative_is_one_in_a_and_minus_the_quotient_in_b(module):
    a, b = np.array([7.5, -7.5, 2.25]), np.array([2.0, 2.0, -0.5])
    da, db = module.slope(a, b)
    np.testing.assert_array_equal(da, np.ones(3))
    np.testing.assert_array_equal(db, -np.floor_divide(a, b))
    h = 1e-6  # central differences away from the jumps
    numeric = (np.mod(a, b + h) - np.mod(a, b - h)) / (2 * h)
    np.testing.assert_allclose(db, numeric, rtol=1e-6)


def test_minibatches_cycle_in_a_trained_model():
    module = hilbert.compile_source("""
model Mean : Learner {
  weight w : Tensor[2] from 0
  state t : Tensor[] from 0
  def train(xb, rate) {
    w ≔ w − rate · ∂ einsum("i->", (w − xb[t mod rows(xb)])²) / ∂ w
    t ≔ t + 1
  }
}
""")
    xb = np.array([[1.0, 2.0], [3.0, 5.0], [-1.0, 0.5]])
    net = module.Mean()
    net.train(xb, 0.1, steps=10)
    w = np.zeros(2)
    for t in range(10):
        w = w - 0.1 * 2 * (w - xb[t % 3])
    np.testing.assert_allclose(net.w, w, rtol=1e-14)


def test_mod_and_div_stay_names_and_print_back():
    module = hilbert.compile_source(SOURCE)
    assert module.mod(2) == 3.0
    tree = parse("def f(a, b, mod) ≔ a mod b div mod · 2 + (a mod b) ^ 2")
    assert parse(print_module(tree)) == tree
    assert parse(print_module(tree, unicode=True)) == tree
    body = tree.decls[0].body  # ((a mod b) div mod) · 2 + …: one precedence, to the left
    assert body.left.op == "*" and body.left.left.op == "div" and body.left.left.left.op == "mod"


def test_a_complex_remainder_is_refused():
    module = hilbert.compile_source(SOURCE)
    with pytest.raises(HilbertError) as err:
        module.remainder(np.array([1 + 2j]), np.array([2.0]))
    assert err.value.code == "E325" and "mod" in err.value.message
