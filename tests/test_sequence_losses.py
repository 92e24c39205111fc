"""Prelude.Losses over rows and over sequences (issue 28): the cross-entropy from logits with
integer labels, one-hot or smoothed targets and a 0/1 mask, and accuracy, for n×k logits and
B×L×k logits, against NumPy written here (and torch's cross_entropy when torch is present)."""

from __future__ import annotations

import numpy as np
import pytest

import hilbert

B, L, K = 3, 5, 7


@pytest.fixture(scope="module", params=["numba", "reference"])
def losses(request):
    return hilbert.open("Prelude.Losses", executor=request.param)


def _log_softmax(z):
    s = z - z.max(-1, keepdims=True)
    return s - np.log(np.exp(s).sum(-1, keepdims=True))


def _data(seed=0):
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((B, L, K)) * 3
    labels = rng.integers(0, K, size=(B, L)).astype(float)
    mask = (rng.random((B, L)) < 0.7).astype(float)
    mask[0, 0] = 1.0
    return z, labels, mask


def _picked(z, labels):
    return np.take_along_axis(_log_softmax(z), labels.astype(int)[..., None], -1)[..., 0]


def test_sequence_cross_entropy_with_labels_targets_and_masks(losses):
    z, labels, mask = _data()
    picked = _picked(z, labels)
    assert losses.sequenceCrossEntropy(z, labels) == pytest.approx(-picked.mean(), rel=1e-13)
    onehot = np.eye(K)[labels.astype(int)]
    assert losses.softSequenceCrossEntropy(z, onehot) == pytest.approx(-picked.mean(), rel=1e-13)
    want = -(picked * mask).sum() / mask.sum()
    assert losses.maskedSequenceCrossEntropy(z, labels, mask) == pytest.approx(want, rel=1e-13)
    np.testing.assert_allclose(losses.sequenceLogSoftmax(z), _log_softmax(z), rtol=1e-13,
                               atol=1e-13)
    smooth = losses.smoothedSequenceLabels(labels, z, 0.1)
    np.testing.assert_allclose(smooth, 0.9 * onehot + 0.1 / K, rtol=1e-15)
    want = -(smooth * _log_softmax(z)).sum(-1).mean()
    assert losses.softSequenceCrossEntropy(z, smooth) == pytest.approx(want, rel=1e-13)


def test_row_losses_with_a_mask(losses):
    z, labels, mask = _data(1)
    z2, labels2, mask2 = z[0], labels[0], mask[0]
    picked = _picked(z2, labels2)
    assert losses.maskedCrossEntropy(z2, labels2, mask2) == \
        pytest.approx(-(picked * mask2).sum() / mask2.sum(), rel=1e-13)
    right = (z2.argmax(-1) == labels2).astype(float)
    assert losses.maskedAccuracy(z2, labels2, mask2) == \
        pytest.approx((right * mask2).sum() / mask2.sum(), rel=1e-15)


def test_sequence_accuracy_counts_the_kept_positions(losses):
    z, labels, mask = _data(2)
    labels[1] = z[1].argmax(-1)  # a sequence predicted right throughout
    right = (z.argmax(-1) == labels).astype(float)
    assert losses.sequenceAccuracy(z, labels, mask) == \
        pytest.approx((right * mask).sum() / mask.sum(), rel=1e-15)
    assert losses.sequenceAccuracy(z, labels, np.ones((B, L))) == pytest.approx(right.mean())


def test_the_masked_loss_matches_torch_ignore_index(losses):
    torch = pytest.importorskip("torch")
    z, labels, mask = _data(3)
    target = torch.tensor(np.where(mask > 0, labels, -100).astype(int))
    want = torch.nn.functional.cross_entropy(torch.tensor(z).reshape(-1, K), target.reshape(-1),
                                             ignore_index=-100)
    assert losses.maskedSequenceCrossEntropy(z, labels, mask) == pytest.approx(float(want),
                                                                              rel=1e-12)
    smoothed = torch.nn.functional.cross_entropy(torch.tensor(z).reshape(-1, K),
                                                 torch.tensor(labels.astype(int)).reshape(-1),
                                                 label_smoothing=0.1)
    got = losses.softSequenceCrossEntropy(z, losses.smoothedSequenceLabels(labels, z, 0.1))
    assert got == pytest.approx(float(smoothed), rel=1e-12)
