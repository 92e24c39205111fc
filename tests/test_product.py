"""product(x, k): the product of x's entries along axis k, added as one row of the op table
(compiler/ops/primitives.py): on every executor (reference, the host tier, compiled code, dask,
JAX where installed) it is NumPy's np.prod; its gradient is the finite difference, and exact
where x holds zeros; its jvp (the reduce family's tangent rule, from the row's derivative) is
the finite difference along a direction. Expected values are NumPy's, finite differences, or
products of the other entries written out entry by entry here."""

import warnings

import numpy as np
import pytest
from conftest import assert_agree
from test_prelude_networks import central_difference

import hilbert

SOURCE = """
fn along(x) ↦ product(x, 1)
fn down(x) ↦ product(x, 0)
fn last(x) ↦ product(x, 2)
fn mixed(x) ↦ product(exp(x) − 1, 0) + maximum(x, 0)
def total(x) ≔ einsum("i->", product(x, 1))
fn slope(x) ↦ ∂ total(x) / ∂ x
"""

#: Each executor, and the numba executor's host tier (HILBERT_COMPILE=never: NumPy's meaning).
WAYS = ("reference", "host", "numba", "dask", "jax")


@pytest.fixture(scope="module", params=WAYS)
def way(request):
    if request.param == "jax":
        pytest.importorskip("jax")
    with pytest.MonkeyPatch.context() as patch:
        if request.param == "host":
            patch.setenv("HILBERT_COMPILE", "never")
        executor = "numba" if request.param == "host" else request.param
        yield request.param, hilbert.compile_source(SOURCE, executor=executor)


def _other_entries(x):
    """∏_{j ≠ i} x_j along axis 1, entry by entry."""
    return np.array([[np.prod(np.delete(row, i)) for i in range(len(row))] for row in x])


def test_products_along_each_axis_are_numpys(way):
    name, module = way
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 5))
    x[2, 3] = 0.0
    cube = rng.uniform(-2.0, 2.0, (2, 3, 4))
    assert_agree(module.along(x), np.prod(x, axis=1))
    assert_agree(module.down(x), np.prod(x, axis=0))
    assert_agree(module.last(cube), np.prod(cube, axis=2))
    assert_agree(module.down(x[:, 0]), np.prod(x[:, 0]))  # a vector's: a scalar
    assert_agree(module.mixed(x), np.prod(np.exp(x) - 1, axis=0) + np.max(x, axis=0))
    assert_agree(module.along(np.ones((3, 0))), np.prod(np.ones((3, 0)), axis=1))  # ones
    if name == "numba":
        assert module.along.tier == module.mixed.tier == "compiled"


def test_compiled_code_computes_it_without_falling_back_to_the_host():
    """The compiled reduction comes from the table's combine and start (no W903 and the
    compiled tier), in float64 and in float32 calls."""
    module = hilbert.compile_source(SOURCE, executor="numba")
    x = np.random.default_rng(1).uniform(0.5, 1.5, (6, 7))
    with warnings.catch_warnings():
        warnings.simplefilter("error", hilbert.HilbertWarning)
        got, single = module.along(x), module.along(x.astype(np.float32))
    assert module.along.tier == "compiled"
    assert_agree(got, np.prod(x, axis=1))
    assert single.dtype == np.float32
    np.testing.assert_allclose(single, np.prod(x.astype(np.float32), axis=1), rtol=1e-6)


def test_the_gradient_is_the_finite_difference(way):
    _, module = way
    x = np.random.default_rng(2).uniform(0.5, 1.5, (3, 4))
    want = central_difference(lambda v: np.sum(np.prod(v, axis=1)), x, 1e-6)
    np.testing.assert_allclose(module.slope(x), want, rtol=1e-6, atol=1e-8)


def test_over_an_empty_axis_the_product_is_one_and_its_gradient_empty(way):
    _, module = way
    assert_agree(module.along(np.zeros((3, 0))), np.ones(3))
    assert module.slope(np.zeros((3, 0))).shape == (3, 0)


def test_the_gradient_is_exact_where_x_holds_zeros(way):
    """Where x_i = 0 the product vanishes, yet its slope in x_i is the product of the others
    (a derivative written as product / x would give NaN); with two zeros every slope is 0."""
    _, module = way
    x = np.array([[2.0, 0.0, 3.0, -1.0], [0.0, 0.0, 1.5, 2.0], [1.0, 2.0, 0.5, 4.0]])
    got = module.slope(x)
    assert np.isfinite(got).all()
    assert_agree(got, _other_entries(x))
    assert got[0, 1] == -6.0


def test_the_jvp_is_the_finite_difference_along_a_direction(way):
    _, module = way
    rng = np.random.default_rng(3)
    x, v = rng.uniform(0.5, 1.5, (3, 4)), rng.standard_normal((3, 4))
    value, tangent = module.along.jvp((x,), (v,))
    h = 1e-6
    want = (np.prod(x + h * v, axis=1) - np.prod(x - h * v, axis=1)) / (2 * h)
    assert_agree(value, np.prod(x, axis=1))
    np.testing.assert_allclose(tangent, want, rtol=1e-6, atol=1e-9)
    x[1, 2] = 0.0  # exact where x holds a zero: Σ_i v_i ∏_{j ≠ i} x_j
    _, tangent = module.along.jvp((x,), (v,))
    assert_agree(tangent, np.sum(v * _other_entries(x), axis=1))


@pytest.mark.parametrize("text, code", [
    ("fn f(x) ↦ product(x, 2)", "E314"),      # a matrix has no axis 2
    ("fn f(x, k) ↦ product(x, k)", "E314"),   # the axis must be a literal
    ("fn f(x) ↦ product(x)", "E201"),         # two arguments
])
def test_misuse_is_a_coded_error(text, code):
    with pytest.raises(hilbert.HilbertError) as caught:
        hilbert.compile_source(text).f(np.ones((2, 3)))
    assert caught.value.code == code
    assert caught.value.span is not None
