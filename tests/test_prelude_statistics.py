"""Prelude.Statistics: every definition against NumPy."""

import numpy as np
import pytest
from conftest import EXECUTORS

import hilbert


@pytest.fixture(scope="module", params=EXECUTORS)
def stats(request):
    return hilbert.open("Prelude.Statistics", executor=request.param)


@pytest.fixture
def sample():
    return np.array([2.0, -1.0, 4.5, 3.0, 0.25, 7.0])


@pytest.fixture
def data():
    return np.random.default_rng(7).standard_normal((6, 3)) * [1.0, 3.0, 0.5] + [0.0, 2.0, -1.0]


def test_total_count_mean(stats, sample):
    assert stats.total(sample) == pytest.approx(sample.sum(), rel=1e-15)
    assert stats.count(sample) == 6.0
    assert stats.mean(sample) == pytest.approx(sample.mean(), rel=1e-15)
    assert isinstance(stats.mean(sample), float)


def test_variance_and_std_are_sample_versions(stats, sample):
    assert stats.variance(sample) == pytest.approx(np.var(sample, ddof=1), rel=1e-14)
    assert stats.std(sample) == pytest.approx(np.std(sample, ddof=1), rel=1e-14)
    assert stats.variance([1.0, 3.0]) == pytest.approx(2.0, rel=1e-15)


def test_variance_of_a_constant_is_zero(stats):
    assert stats.variance([4.0, 4.0, 4.0]) == 0.0


def test_deviations_and_standardised(stats, sample):
    np.testing.assert_allclose(stats.deviations(sample), sample - sample.mean(), rtol=1e-14)
    z = (sample - sample.mean()) / np.std(sample, ddof=1)
    np.testing.assert_allclose(stats.standardised(sample), z, rtol=1e-13)


def test_covariance_and_correlation(stats, sample):
    other = np.array([1.0, 0.0, 2.0, 5.0, -1.0, 3.5])
    assert stats.covariance(sample, other) == pytest.approx(np.cov(sample, other)[0, 1], rel=1e-13)
    assert stats.correlation(sample, other) == pytest.approx(np.corrcoef(sample, other)[0, 1], rel=1e-13)
    assert stats.correlation(sample, 3 * sample + 1) == pytest.approx(1.0, rel=1e-14)


def test_mean_is_for_vectors(stats, data):
    with pytest.raises(hilbert.HilbertError):
        stats.mean(data)


def test_row_and_column_sums_and_means(stats, data):
    assert stats.grandTotal(data) == pytest.approx(data.sum(), rel=1e-14)
    np.testing.assert_allclose(stats.rowTotal(data), data.sum(axis=1), rtol=1e-14)
    np.testing.assert_allclose(stats.rowMean(data), data.mean(axis=1), rtol=1e-14)
    np.testing.assert_allclose(stats.columnTotal(data), data.sum(axis=0), rtol=1e-14)
    np.testing.assert_allclose(stats.columnMean(data), data.mean(axis=0), rtol=1e-14)


def test_column_centred_and_spreads(stats, data):
    np.testing.assert_allclose(stats.columnCentred(data), data - data.mean(axis=0), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(stats.columnVariance(data), data.var(axis=0, ddof=1), rtol=1e-13)
    np.testing.assert_allclose(stats.covarianceMatrix(data), np.cov(data, rowvar=False), rtol=1e-13)
