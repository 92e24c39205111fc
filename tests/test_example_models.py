"""The model examples of issue 28, run as a user runs them (on the host tier, so no test waits
for a compile): examples/iris.py (an MLP with Adam over the group `weights`, with and without
dropout, on Fisher's iris data) and examples/copy_task.py (the transformer block learns to
copy). One Iris step is checked against NumPy written here: the forward pass, the dropout mask
from the draws' definition, the gradients by hand and Adam's formula."""

from __future__ import annotations

import numpy as np
import pytest
from hilbert.compiler.ops import draws

from tests.conftest import example_script

pytestmark = pytest.mark.usefixtures("on_the_host")  # (tests/conftest.py)


def test_one_iris_step_is_adam_on_the_dropped_out_network():
    iris = example_script("iris")
    x, labels, _, _ = iris.iris()
    net = iris.trained(0.25, 0, 0.05, 6)  # not trained yet: its initial weights
    w = {k: np.array(net.weights[k]) for k in ("w1", "b1", "w2", "b2")}
    net.train(x, labels, 0.05)
    z1 = x @ w["w1"] + w["b1"]
    h = np.maximum(z1, 0)
    mask = (draws.uniform(3, 0, h.shape) < 0.75) / 0.75  # key = seed 3, step = taken = 0
    hd = h * mask
    z2 = hd @ w["w2"] + w["b2"]
    p = np.exp(z2 - z2.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    dz2 = (p - np.eye(3)[labels.astype(int)]) / len(x)
    dh = dz2 @ w["w2"].T * mask * (z1 > 0)
    grads = {"w2": hd.T @ dz2, "b2": dz2.sum(0), "w1": x.T @ dh, "b1": dh.sum(0)}
    for k, g in grads.items():
        m, v = 0.1 * g, 0.001 * g ** 2
        want = w[k] - 0.05 / 0.1 * m / (np.sqrt(v) / np.sqrt(0.001) + 1e-8)
        np.testing.assert_allclose(net.weights[k], want, rtol=1e-10, atol=1e-13, err_msg=k)
        np.testing.assert_allclose(net.m[k], m, rtol=1e-12, atol=1e-15)
    assert float(net.taken) == 1.0


def test_iris_trains_to_classify_held_out_flowers_reproducibly(capsys):
    iris = example_script("iris")
    results = iris.main(["--steps", "150"])
    for loss, right in results.values():
        assert right >= 0.9 and loss < 0.3
    assert "held-out loss" in capsys.readouterr().out
    _, _, held_x, held_labels = iris.iris()
    again = iris.trained(0.2, 150, 0.05, 16)
    assert again.correct(held_x, held_labels) == results[0.2][1]  # the same masks, step by step


def test_the_transformer_block_learns_to_copy():
    copy = example_script("copy_task")
    _, curve = copy.train(300, 4, 8, 32, every=150)
    (_, loss0, right0), *_, (_, loss, right) = curve
    assert right0 < 0.1 and right >= 0.95 and loss < loss0 / 10
