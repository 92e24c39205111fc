"""A watched training run (`net.train.watched(watch, every=…)`, hilbert/history.py): the watch's
values before the first step and after every `every` steps, against gradient descent written
in NumPy here; the weights as an unwatched run leaves them; the History's plot; its errors."""

from __future__ import annotations

import numpy as np
import pytest

import hilbert

SOURCE = """
model Line(n) : Learner {
  weight w : Tensor[n, 1] from 0
  def train(x, y, rate) { w ≔ w − rate · ∂ einsum("ij->", (einsum("ij,jk->ik", x, w) − y)²) / ∂ w }
  def loss(x, y) ≔ einsum("ij->", (einsum("ij,jk->ik", x, w) − y)²)
}
"""


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(20, 3))
    y = x @ np.array([[1.0], [-2.0], [0.5]]) + 0.01 * rng.normal(size=(20, 1))
    return x, y


def _descent(x, y, rate: float, steps: int, every: int) -> list[float]:
    """The loss before the first step and after every `every` steps, as NumPy computes it."""
    w, losses = np.zeros((x.shape[1], 1)), []
    for step in range(steps + 1):
        if step % every == 0 or step == steps:
            losses.append(float(((x @ w - y) ** 2).sum()))
        w = w - rate * 2 * x.T @ (x @ w - y)
    return losses


def test_the_watch_is_recorded_every_so_many_steps(data):
    x, y = data
    Line = hilbert.compile_source(SOURCE).Line
    net = Line(3)
    run = net.train.watched(lambda: net.loss(x, y), every=7)(x, y, 0.01, steps=30)
    assert run.steps == [0, 7, 14, 21, 28, 30]
    np.testing.assert_allclose(run.values, _descent(x, y, 0.01, 30, 7), rtol=1e-10)
    assert run.last == pytest.approx(net.loss(x, y), rel=1e-15)
    unwatched = Line(3)
    unwatched.train(x, y, 0.01, steps=30)
    np.testing.assert_allclose(net.w, unwatched.w, rtol=1e-12)


def test_by_default_about_a_hundred_values_are_recorded(data):
    x, y = data
    net = hilbert.compile_source(SOURCE).Line(3)
    run = net.train.watched(lambda: net.loss(x, y))(x, y, 0.01, steps=250)
    assert run.steps[:3] == [0, 2, 4] and run.steps[-1] == 250 and len(run.values) == 126


def test_the_history_plots_in_one_line(data):
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    x, y = data
    net = hilbert.compile_source(SOURCE).Line(3)
    ax = net.train.watched(lambda: net.loss(x, y), every=5)(x, y, 0.01, steps=20).plot(log=True)
    (line,) = ax.get_lines()
    np.testing.assert_array_equal(line.get_xdata(), [0, 5, 10, 15, 20])
    np.testing.assert_allclose(line.get_ydata(), _descent(x, y, 0.01, 20, 5), rtol=1e-10)
    assert ax.get_yscale() == "log" and ax.get_title() == "Line.train"


@pytest.mark.parametrize("watch, every, says", [
    (lambda: 0.0, 0, "every= must be a whole number, at least 1"),
    (lambda: 0.0, 2.5, "every= must be a whole number, at least 1"),
    (3.0, 1, "takes a function of no arguments"),
])
def test_a_watch_that_cannot_run_is_refused(data, watch, every, says):
    x, y = data
    net = hilbert.compile_source(SOURCE).Line(3)
    with pytest.raises(hilbert.ArgumentError) as err:
        net.train.watched(watch, every=every)(x, y, 0.01, steps=4)
    assert err.value.code == "E600" and says in err.value.message


def test_only_a_train_block_is_watched(data):
    net = hilbert.compile_source(SOURCE).Line(3)
    with pytest.raises(hilbert.ArgumentError) as err:
        net.loss.watched(lambda: 0.0)
    assert err.value.code == "E600" and "not a train block" in err.value.message
