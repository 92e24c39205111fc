"""cumsum(x, k) and cumprod(x, k): running sums and products along an axis, on every executor,
differentiable (cumprod exactly where x holds zeros), each added as one row of the op table
(compiler/ops/primitives.py). Expected values are NumPy's, and derivatives finite differences or
the adjoint written out entry by entry here."""

import numpy as np
import pytest
from conftest import EXECUTORS, assert_agree
from hilbert.grammar.errors import CheckError
from test_prelude_networks import central_difference

import hilbert

SOURCE = """
fn runningSum(x) ↦ cumsum(x, 0)
fn runningSumAcross(x) ↦ cumsum(x, 2)
fn runningProduct(x) ↦ cumprod(x, 1)
def mixed(x) ≔ einsum("ij->", cumprod(x, 1) · cumsum(x, 0))
fn mixedSlope(x) ↦ ∂ mixed(x) / ∂ x
def weighted(x, g) ≔ einsum("ij,ij->", cumprod(x, 1), g)
fn productSlope(x, g) ↦ ∂ weighted(x, g) / ∂ x
fn balance(t, b, d) ↦ if t = 0 then b else balance(t − 1, cumsum(b · 0.5 + d, 0), d)
"""

ALL = (*EXECUTORS, "dask")


@pytest.fixture(scope="module", params=ALL)
def module(request):
    return hilbert.compile_source(SOURCE, executor=request.param)


def test_running_sums_and_products_are_numpys(module):
    x = np.random.default_rng(0).standard_normal((4, 5, 3))
    assert_agree(module.runningSum(x), np.cumsum(x, axis=0))
    assert_agree(module.runningSumAcross(x), np.cumsum(x, axis=2))
    assert_agree(module.runningProduct(x), np.cumprod(x, axis=1))


def test_the_derivative_of_a_mix_of_both_is_the_finite_difference(module):
    x = np.random.default_rng(1).uniform(0.5, 1.5, (3, 4))
    want = central_difference(lambda v: np.sum(np.cumprod(v, 1) * np.cumsum(v, 0)), x, 1e-6)
    np.testing.assert_allclose(module.mixedSlope(x), want, rtol=1e-6, atol=1e-8)


def _product_adjoint_by_entries(x, g):
    """Σ_{j ≥ i} g_j ∏_{l ≤ j, l ≠ i} x_l along axis 1, entry by entry."""
    out = np.zeros_like(x)
    for r in range(x.shape[0]):
        for i in range(x.shape[1]):
            out[r, i] = sum(g[r, j] * np.prod([x[r, l] for l in range(j + 1) if l != i])
                            for j in range(i, x.shape[1]))
    return out


def test_cumprods_derivative_is_exact_where_x_holds_zeros(module):
    """Where x_i = 0 the later products vanish, yet their slope in x_i does not: a derivative
    written as (running product) / x would give NaN there."""
    x = np.array([[2.0, 0.0, 3.0, -1.0], [0.0, 0.0, 1.5, 2.0], [1.0, 2.0, 0.5, 0.0]])
    g = np.random.default_rng(2).standard_normal(x.shape)
    got = module.productSlope(x, g)
    assert np.isfinite(got).all()
    assert_agree(got, _product_adjoint_by_entries(x, g))
    assert got[0, 1] != 0.0  # x_1 = 0 there, and the products after it still move with it


def test_a_loop_with_a_running_sum_agrees_with_numpy(module):
    rng = np.random.default_rng(3)
    b, d = rng.standard_normal((6, 2)), rng.standard_normal((6, 2))
    want = b.copy()
    for _ in range(7):
        want = np.cumsum(want * 0.5 + d, axis=0)
    assert_agree(module.balance(7.0, b, d), want)


@pytest.mark.parametrize("text, code", [
    ("fn f(x) ↦ cumsum(x, 2)", "E314"),      # a matrix has no axis 2
    ("fn f(x, k) ↦ cumprod(x, k)", "E314"),  # the axis must be a literal
    ("fn f(x) ↦ cumsum(x)", "E201"),         # two arguments
])
def test_misuse_is_a_coded_error(text, code):
    with pytest.raises(hilbert.HilbertError) as caught:
        module = hilbert.compile_source(text)
        module.f(np.ones((2, 3)))
    assert caught.value.code == code
    assert caught.value.span is not None


def test_an_axis_out_of_range_names_the_op_and_the_shape():
    module = hilbert.compile_source("fn f(x) ↦ cumsum(x, 2)")
    with pytest.raises(CheckError, match=r"cumsum runs along axis 2, but argument x is a 2×3 "
                                         r"matrix"):
        module.f(np.ones((2, 3)))


def test_both_are_rows_of_the_op_table_and_words_of_the_lexer():
    from hilbert.compiler.ops.primitives import PRIMITIVES

    from hilbert import lexer

    for name in ("cumsum", "cumprod"):
        row = PRIMITIVES[name]
        assert row.derivative is not None and row.shape is not None and row.meaning is not None
        assert name in lexer.PRIMITIVES
