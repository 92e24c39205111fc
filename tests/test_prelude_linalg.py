"""Prelude.LinearAlgebra: every definition against NumPy, and the conjugate-gradient solver."""

import numpy as np
import pytest
from conftest import EXECUTORS

import hilbert


@pytest.fixture(scope="module", params=EXECUTORS)
def linalg(request):
    return hilbert.open("Prelude.LinearAlgebra", executor=request.param)


@pytest.fixture
def rng():
    return np.random.default_rng(11)


def spd(rng, n):
    """A symmetric positive definite n×n matrix with condition number in the tens."""
    q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    return q @ np.diag(np.linspace(1.0, 20.0, n)) @ q.T


def test_products(linalg, rng):
    a = rng.standard_normal((3, 4))
    b = rng.standard_normal((4, 2))
    u = rng.standard_normal(4)
    v = rng.standard_normal(3)
    np.testing.assert_allclose(linalg.mul(a, b), a @ b, rtol=1e-13)
    np.testing.assert_allclose(linalg.mulVec(a, u), a @ u, rtol=1e-13)
    np.testing.assert_allclose(linalg.vecMul(v, a), v @ a, rtol=1e-13)
    assert linalg.dot(u, u) == pytest.approx(u @ u, rel=1e-14)
    np.testing.assert_array_equal(linalg.outer(v, u), np.outer(v, u))
    np.testing.assert_allclose(linalg.gram(a), a.T @ a, rtol=1e-13)


def test_mul_checks_inner_sizes(linalg, rng):
    with pytest.raises(hilbert.HilbertError):
        linalg.mul(np.ones((3, 4)), np.ones((3, 4)))


def test_transpose_trace_diagonal(linalg, rng):
    a = rng.standard_normal((3, 5))
    s = rng.standard_normal((4, 4))
    np.testing.assert_array_equal(linalg.transpose(a), a.T)
    assert linalg.trace(s) == pytest.approx(np.trace(s), rel=1e-14)
    np.testing.assert_array_equal(linalg.diagonal(s), np.diag(s))
    np.testing.assert_array_equal(linalg.diagonalOf(np.array([1.0, -2.0, 3.0])), np.diag([1.0, -2.0, 3.0]))


def test_identity(linalg, rng):
    np.testing.assert_array_equal(linalg.identity(rng.standard_normal((4, 4))), np.eye(4))
    np.testing.assert_array_equal(linalg.identity([[7.0]]), np.eye(1))
    np.testing.assert_array_equal(linalg.identityOf(np.array([5.0, 0.0, -1.0])), np.eye(3))
    np.testing.assert_array_equal(linalg.sameIndex(np.zeros(2)), np.eye(2))


def test_norms(linalg, rng):
    v = rng.standard_normal(5)
    a = rng.standard_normal((3, 2))
    assert linalg.norm(v) == pytest.approx(np.linalg.norm(v), rel=1e-14)
    assert linalg.frobenius(a) == pytest.approx(np.linalg.norm(a), rel=1e-14)


def test_solve_matches_numpy(linalg, rng):
    a = spd(rng, 6)
    b = rng.standard_normal(6)
    x = linalg.solve(a, b)
    np.testing.assert_allclose(x, np.linalg.solve(a, b), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(a @ x, b, rtol=1e-9, atol=1e-12)


def test_solve_small_and_trivial_systems(linalg):
    assert linalg.solve([[4.0]], [2.0]) == pytest.approx([0.5], rel=1e-15)
    np.testing.assert_allclose(linalg.solve(np.diag([2.0, 4.0]), np.array([1.0, 1.0])), [0.5, 0.25], rtol=1e-14)
    np.testing.assert_array_equal(linalg.solve(np.eye(3) * 2, np.zeros(3)), np.zeros(3))


def test_cg_loop_with_zero_steps_answers_the_start(linalg, rng):
    a = spd(rng, 3)
    x0 = rng.standard_normal(3)
    r = rng.standard_normal(3)
    np.testing.assert_array_equal(linalg.cgLoop(0, a, x0, r, r, 0.0), x0)


def test_cg_building_blocks(linalg, rng):
    a = spd(rng, 4)
    r = rng.standard_normal(4)
    p = rng.standard_normal(4)
    alpha = (r @ r) / (p @ a @ p)
    r1 = r - alpha * a @ p
    assert linalg.cgStepSize(a, r, p) == pytest.approx(alpha, rel=1e-13)
    np.testing.assert_allclose(linalg.cgResidual(a, r, p), r1, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(linalg.cgDirection(a, r, p), r1 + (r1 @ r1) / (r @ r) * p, rtol=1e-12, atol=1e-12)


def test_least_squares(linalg, rng):
    x = np.column_stack([rng.standard_normal(10), np.ones(10)])
    y = 3.0 * x[:, 0] - 1.0 + 0.01 * rng.standard_normal(10)
    expected, *_ = np.linalg.lstsq(x, y, rcond=None)
    np.testing.assert_allclose(linalg.leastSquares(x, y), expected, rtol=1e-9)


def test_solve_an_ill_conditioned_system(linalg, rng):
    """Condition number 1e4: rows(a) steps are not enough in float64; the step cap absorbs it."""
    n = 30
    q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    a = q @ np.diag(np.geomspace(1.0, 1e4, n)) @ q.T
    a = (a + a.T) / 2
    b = rng.standard_normal(n)
    np.testing.assert_allclose(linalg.solve(a, b), np.linalg.solve(a, b), rtol=1e-9, atol=1e-9)
