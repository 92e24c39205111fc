"""Prelude.Losses along the last axis for any leading axes (issue 28): the cross-entropy from
logits with integer labels, one-hot or smoothed targets and a 0/1 mask, and accuracy, for
logits of rank 1 to 4, against NumPy written here (and torch's cross_entropy, with
ignore_index and label_smoothing, when torch is present). They are written with einsum's
ellipsis, so one definition serves every rank."""

from __future__ import annotations

import numpy as np
import pytest

import hilbert

K = 7
LEADING = [(), (4,), (3, 5), (2, 3, 4)]


@pytest.fixture(scope="module", params=["numba", "reference", "dask"])
def losses(request):
    return hilbert.open("Prelude.Losses", executor=request.param)


def _log_softmax(z):
    s = z - z.max(-1, keepdims=True)
    return s - np.log(np.exp(s).sum(-1, keepdims=True))


def _data(leading, seed=0):
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((*leading, K)) * 3
    labels = rng.integers(0, K, size=leading).astype(float)
    mask = (rng.random(leading) < 0.7).astype(float)
    mask.reshape(-1)[0] = 1.0
    return z, labels, mask


def _picked(z, labels):
    return np.take_along_axis(_log_softmax(z), labels.astype(int)[..., None], -1)[..., 0]


@pytest.mark.parametrize("leading", LEADING, ids=str)
def test_cross_entropy_with_labels_targets_and_masks(losses, leading):
    z, labels, mask = _data(leading)
    picked = _picked(z, labels)
    np.testing.assert_allclose(losses.logSoftmaxLast(z), _log_softmax(z), rtol=1e-13, atol=1e-13)
    assert losses.crossEntropyLast(z, labels) == pytest.approx(-picked.mean(), rel=1e-13)
    onehot = np.eye(K)[labels.astype(int)]
    assert losses.softCrossEntropyLast(z, onehot) == pytest.approx(-picked.mean(), rel=1e-13)
    want = -(picked * mask).sum() / mask.sum()
    assert losses.maskedCrossEntropy(z, labels, mask) == pytest.approx(want, rel=1e-13)
    smooth = losses.smoothedLabelsLast(labels, z, 0.1)
    np.testing.assert_allclose(smooth, 0.9 * onehot + 0.1 / K, rtol=1e-15)
    want = -(smooth * _log_softmax(z)).sum(-1).mean()
    assert losses.softCrossEntropyLast(z, smooth) == pytest.approx(want, rel=1e-13)


@pytest.mark.parametrize("leading", LEADING, ids=str)
def test_accuracy_counts_the_rows_predicted_right(losses, leading):
    z, labels, mask = _data(leading, 2)
    labels.reshape(-1)[:1] = z.reshape(-1, K)[:1].argmax(-1)  # at least one right
    right = (z.argmax(-1) == labels).astype(float)
    assert losses.accuracyLast(z, labels) == pytest.approx(right.mean(), rel=1e-15)
    assert losses.maskedAccuracy(z, labels, mask) == \
        pytest.approx((right * mask).sum() / mask.sum(), rel=1e-15)


def test_rank_two_agrees_with_the_row_losses(losses):
    z, labels, _ = _data((6,), 4)
    assert losses.crossEntropyLast(z, labels) == pytest.approx(losses.crossEntropy(z, labels),
                                                               rel=1e-14)
    assert losses.accuracyLast(z, labels) == losses.accuracy(z, labels)


def test_gradients_are_softmax_minus_targets(losses):
    module = hilbert.compile_source("""
open Prelude.Losses
fn slope(z, labels, mask) ↦ ∂ maskedCrossEntropy(z, labels, mask) / ∂ z
""")
    z, labels, mask = _data((3, 5), 5)
    p = np.exp(_log_softmax(z))
    want = (p - np.eye(K)[labels.astype(int)]) * mask[..., None] / mask.sum()
    np.testing.assert_allclose(module.slope(z, labels, mask), want, rtol=1e-12, atol=1e-15)


def test_the_masked_loss_matches_torch():
    torch = pytest.importorskip("torch")
    losses = hilbert.open("Prelude.Losses")
    z, labels, mask = _data((3, 5), 3)
    target = torch.tensor(np.where(mask > 0, labels, -100).astype(int))
    want = torch.nn.functional.cross_entropy(torch.tensor(z).reshape(-1, K), target.reshape(-1),
                                             ignore_index=-100)
    assert losses.maskedCrossEntropy(z, labels, mask) == pytest.approx(float(want), rel=1e-12)
    smoothed = torch.nn.functional.cross_entropy(torch.tensor(z).reshape(-1, K),
                                                 torch.tensor(labels.astype(int)).reshape(-1),
                                                 label_smoothing=0.1)
    got = losses.softCrossEntropyLast(z, losses.smoothedLabelsLast(labels, z, 0.1))
    assert got == pytest.approx(float(smoothed), rel=1e-12)
