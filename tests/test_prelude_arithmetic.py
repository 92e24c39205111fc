"""Prelude.Arithmetic: every definition against NumPy, with its edges."""

import numpy as np
import pytest
from conftest import EXECUTORS

import hilbert


@pytest.fixture(scope="module", params=EXECUTORS)
def arith(request):
    return hilbert.open("Prelude.Arithmetic", executor=request.param)


@pytest.fixture
def rng():
    return np.random.default_rng(20240611)


def test_relu_and_its_slope(arith):
    z = np.array([[-2.0, -0.0, 0.0], [1e-300, 3.5, -1e-300]])
    np.testing.assert_array_equal(arith.relu(z), np.maximum(z, 0))
    np.testing.assert_array_equal(arith.reluSlope(z), (z > 0).astype(float))
    assert arith.reluSlope(0.0) == 0.0


def test_sigmoid(arith, rng):
    z = rng.standard_normal((3, 4)) * 5
    np.testing.assert_allclose(arith.sigmoid(z), 1 / (1 + np.exp(-z)), rtol=1e-14)
    assert arith.sigmoid(0.0) == 0.5
    # Far tails reach the limits exactly; nothing turns into nan.
    tails = arith.sigmoid(np.array([-1000.0, 1000.0]))
    np.testing.assert_array_equal(tails, [0.0, 1.0])


def test_softplus_is_stable(arith, rng):
    z = rng.standard_normal(7) * 4
    np.testing.assert_allclose(arith.softplus(z), np.log1p(np.exp(z)), rtol=1e-13)
    big = arith.softplus(np.array([800.0, -800.0]))
    np.testing.assert_allclose(big, [800.0, 0.0], atol=1e-300)


def test_clipped_and_sign(arith):
    z = np.array([-3.0, -0.5, 0.0, 0.5, 3.0])
    np.testing.assert_array_equal(arith.clipped(z, -1, 1), np.clip(z, -1, 1))
    np.testing.assert_array_equal(arith.signOf(z), np.sign(z))


def test_softmax_rows(arith, rng):
    m = rng.standard_normal((4, 5)) * 3
    e = np.exp(m - m.max(axis=1, keepdims=True))
    expected = e / e.sum(axis=1, keepdims=True)
    got = arith.softmaxRows(m)
    np.testing.assert_allclose(got, expected, rtol=1e-13)
    np.testing.assert_allclose(got.sum(axis=1), np.ones(4), rtol=1e-14)


def test_softmax_rows_has_no_overflow(arith):
    got = arith.softmaxRows([[1000.0, 999.0, 998.0]])
    e = np.exp([0.0, -1.0, -2.0])
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, [e / e.sum()], rtol=1e-14)


def test_log_sum_exp_rows(arith, rng):
    m = rng.standard_normal((3, 4))
    np.testing.assert_allclose(arith.logSumExpRows(m), np.log(np.exp(m).sum(axis=1)), rtol=1e-13)
    np.testing.assert_allclose(arith.logSumExpRows([[1000.0, 1000.0]]), [1000.0 + np.log(2.0)])


def test_row_shifted(arith, rng):
    m = rng.standard_normal((3, 4))
    got = arith.rowShifted(m)
    np.testing.assert_array_equal(got, m - m.max(axis=1, keepdims=True))
    np.testing.assert_array_equal(got.max(axis=1), np.zeros(3))


def test_descend(arith, rng):
    w = rng.standard_normal((2, 3))
    g = rng.standard_normal((2, 3))
    np.testing.assert_allclose(arith.descend(w, g, 0.25), w - 0.25 * g, rtol=1e-15)
    np.testing.assert_allclose(arith.descend(w=w, g=g, r=0.0), w)


def test_floor_of(arith):
    p = np.array([0.0, 1e-15, 1e-12, 0.3, 1.0])
    np.testing.assert_array_equal(arith.floorOf(p), np.maximum(p, 1e-12))
    assert np.all(np.isfinite(np.log(arith.floorOf(p))))


def test_lifted_repeats_across_columns(arith, rng):
    a = rng.standard_normal((3, 4))
    v = np.array([1.0, -2.0, 5.0])
    np.testing.assert_array_equal(arith.lifted(a, v), np.repeat(v[:, None], 4, axis=1))


def test_lifted_needs_matching_rows(arith):
    with pytest.raises(hilbert.HilbertError):
        arith.lifted(np.ones((3, 4)), np.ones(4))


def test_stacked_repeats_down_rows(arith):
    v = np.array([1.0, -2.0, 5.0, 0.5])
    np.testing.assert_array_equal(arith.stacked(np.zeros((2, 4)), v), np.tile(v, (2, 1)))


def test_ones_and_zeros(arith):
    x = np.array([[0.0, -3.0], [2.0, 7.0], [1.0, 1.0]])
    np.testing.assert_array_equal(arith.ones(x), np.ones((3, 2)))
    np.testing.assert_array_equal(arith.zeros(x), np.zeros((3, 2)))


def test_no_silent_broadcasting(arith):
    """An n×1 and a vector of n do not broadcast into n×n."""
    with pytest.raises(hilbert.HilbertError):
        arith.descend(np.ones((3, 1)), np.ones(3), 0.1)
