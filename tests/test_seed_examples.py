"""Every example of the Networks seed reproduces its verified output to six decimals."""

from pathlib import Path

import numpy as np
import pytest
from conftest import EXECUTORS

import hilbert

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.fixture(scope="module", params=EXECUTORS)
def layers(request):
    return hilbert.load(str(EXAMPLES / "Layers.hb"), executor=request.param)


@pytest.fixture(scope="module", params=EXECUTORS)
def fits(request):
    return hilbert.load(str(EXAMPLES / "Fits.hb"), executor=request.param)


def same_to_six_decimals(actual, expected):
    """The seed prints results rounded to six decimals; compare at exactly that precision."""
    actual = np.asarray(actual, dtype=float)
    expected = np.asarray(expected, dtype=float)
    assert actual.shape == expected.shape
    np.testing.assert_array_equal(np.round(actual, 6) + 0.0, expected)


# The line-fit data of "Fit a small network to a line".
LINE_X = [[0, 1], [1, 1], [2, 1], [3, 1]]
LINE_Y = [[1], [3], [5], [7]]
LINE_W1 = [[0.5, 0.3], [0.2, 0.4]]
LINE_W2 = [[0.5], [0.5]]

# The points of "Compress points on a line through one unit".
POINTS = [[1, 1], [2, 2], [-1, -1]]
ENCODER = [[0.5], [0.1]]
DECODER = [[0.3, 0.4]]

IDENTITY3 = [[1, 0, 0], [0, 1, 0], [0, 0, 1]]


def test_dense_layer(layers):
    layer = layers.layerThrough([[1, 2], [3, 4]], [[1, 0, 1], [0, 1, 1]])
    same_to_six_decimals(layer, [[1, 2, 3], [3, 4, 7]])


def test_layer_norm(layers):
    normal = layers.normalisedRows([[1, 2, 3], [10, 10, 40]])
    same_to_six_decimals(normal, [[-1.224736, 0, 1.224736], [-0.707107, -0.707107, 1.414214]])


def test_attention_without_mask(layers):
    attended = layers.attend(IDENTITY3, IDENTITY3, [[1], [2], [3]], 1.0)
    same_to_six_decimals(attended, [[1.635825], [2], [2.364175]])


def test_attention_with_causal_mask(layers):
    attended = layers.attendCausally(IDENTITY3, IDENTITY3, [[1], [2], [3]], 1.0)
    same_to_six_decimals(attended, [[1], [1.731059], [2.364175]])


def test_dropout_with_explicit_draws(layers):
    kept = layers.kept([[1, 2], [3, 4]], [[0.1, 0.7], [0.9, 0.3]], 0.5)
    same_to_six_decimals(kept, [[0, 4], [6, 0]])


def test_convolve_difference_kernel(layers):
    diff = layers.filtered([[1, 2, 3, 4]], np.array([1.0, -1.0]))
    same_to_six_decimals(diff, [[-1, -1, -1, 4]])


def test_max_pool(layers):
    pooled = layers.pooledMax([[1, 5, 2, 4]], np.array([1.0, 1.0]))
    same_to_six_decimals(pooled, [[5, 5, 4, 4]])


def test_fit_before_training(fits):
    before = fits.trainedOutputs(0.0, 0.05, LINE_X, LINE_Y, LINE_W1, LINE_W2)
    same_to_six_decimals(before, [[0.3], [0.7], [1.1], [1.5]])


def test_fit_after_500_steps(fits):
    after = fits.trainedOutputs(500.0, 0.05, LINE_X, LINE_Y, LINE_W1, LINE_W2)
    same_to_six_decimals(after, [[1], [3], [5], [7]])


def test_fit_extrapolates(fits):
    ahead = fits.trainedQuery(500.0, 0.05, LINE_X, LINE_Y, LINE_W1, LINE_W2, [[4, 1]])
    same_to_six_decimals(ahead, [[9]])


def test_recurrent_state(fits):
    h = fits.unrolled([[1, 0, 0]], [[0.5]], np.array([1.0]), [[0]])
    same_to_six_decimals(h, [[0.179726]])


def test_autoencoder_before_training(fits):
    start = fits.squeezed(0.0, 0.1, POINTS, ENCODER, DECODER)
    same_to_six_decimals(start, [[0.18, 0.24], [0.36, 0.48], [-0.18, -0.24]])


def test_autoencoder_after_300_steps(fits):
    fitted = fits.squeezed(300.0, 0.1, POINTS, ENCODER, DECODER)
    same_to_six_decimals(fitted, [[1, 1], [2, 2], [-1, -1]])


def test_critic_loss_zero_weights(fits):
    undecided = fits.criticLossOf([[1, 2], [3, 4]], [[0, 1]], np.array([0.0, 0.0]))
    assert isinstance(undecided, float)
    assert round(undecided, 6) == 1.386294


def test_critic_loss_sharp_weights(fits):
    sharp = fits.criticLossOf([[1, 0]], [[0, 1]], np.array([2.0, -2.0]))
    assert isinstance(sharp, float)
    assert round(sharp, 6) == 0.253856
