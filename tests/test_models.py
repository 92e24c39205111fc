"""Models: `model … : Learner` declarations as Python classes, checked against NumPy."""

import os
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

import hilbert
from hilbert import HilbertError
from hilbert.models import Learner, ModelUseError

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"

XOR_X = np.array([[0, 0], [0, 1], [1, 0], [1, 1]], dtype=float)
XOR_Y = np.array([[0], [1], [1], [0]], dtype=float)


@pytest.fixture(scope="module", params=["numba", "reference"])
def perceptron(request):
    """The example's model class, under each executor."""
    return hilbert.load(EXAMPLES / "Perceptron.hb", executor=request.param).Perceptron


@pytest.fixture(scope="module")
def Perceptron():
    return hilbert.load(EXAMPLES / "Perceptron.hb").Perceptron


# -- NumPy references ----------------------------------------------------------------------

def numpy_draw(seed, name, shape, kind="gaussian"):
    rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
    return rng.standard_normal(shape) if kind == "gaussian" else rng.random(shape)


def numpy_step(x, y, rate, w1, w2):
    """One simultaneous gradient step of relu(X W1) W2 on 1/(2n)‖Ŷ − Y‖²."""
    pre = x @ w1
    hidden = np.maximum(pre, 0)
    out_delta = (hidden @ w2 - y) / len(x)
    hid_delta = (out_delta @ w2.T) * (pre > 0)
    return w1 - rate * (x.T @ hid_delta), w2 - rate * (hidden.T @ out_delta)


def numpy_loss(x, y, w1, w2):
    return float(np.sum((np.maximum(x @ w1, 0) @ w2 - y) ** 2) / len(x))


# -- the perceptron on XOR -----------------------------------------------------------------

def test_initial_weights_are_seeded_draws_per_weight_name(Perceptron):
    net = Perceptron(2, 8, seed=7)
    np.testing.assert_array_equal(net.first, numpy_draw(7, "first", (2, 8)) * 0.5)
    np.testing.assert_array_equal(net.second, numpy_draw(7, "second", (8, 1)) * 0.5)


def test_same_seed_same_weights_different_seed_different_weights(Perceptron):
    a, b, c = Perceptron(2, 8, 7), Perceptron(inputs=2, hidden=8, seed=7), Perceptron(2, 8, 8)
    for name in ("first", "second"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
        assert not np.allclose(getattr(a, name), getattr(c, name))
    assert not np.allclose(a.first[:, :1], a.second[:2])  # two weights, one seed: other draws


def test_xor_loss_halves_in_500_steps(perceptron):
    net = perceptron(2, 8, seed=7)
    before = net.loss(XOR_X, XOR_Y)
    assert before == pytest.approx(numpy_loss(XOR_X, XOR_Y, net.first, net.second), rel=1e-12)
    net.train(XOR_X, XOR_Y, 0.5, steps=500)
    assert net.loss(XOR_X, XOR_Y) < before / 2


def test_one_train_call_is_one_simultaneous_numpy_step(perceptron):
    net = perceptron(2, 8, seed=3)
    w1, w2 = net.first, net.second
    net.train(XOR_X, XOR_Y, 0.5)
    expected1, expected2 = numpy_step(XOR_X, XOR_Y, 0.5, w1, w2)
    assert not np.allclose(net.first, w1) and not np.allclose(net.second, w2)
    np.testing.assert_allclose(net.first, expected1, rtol=0, atol=1e-12)
    np.testing.assert_allclose(net.second, expected2, rtol=0, atol=1e-12)


def test_steps_n_equals_n_calls(perceptron):
    looped, called = perceptron(2, 8, seed=11), perceptron(2, 8, seed=11)
    looped.train(XOR_X, XOR_Y, 0.5, steps=40)
    for _ in range(40):
        called.train(XOR_X, XOR_Y, 0.5)
    for name in ("first", "second"):
        np.testing.assert_allclose(getattr(looped, name), getattr(called, name), rtol=0,
                                   atol=1e-12)


def test_steps_zero_changes_nothing(Perceptron):
    net = Perceptron(2, 4, 1)
    before = net.weights
    net.train(XOR_X, XOR_Y, 0.5, steps=0)
    for name, value in net.weights.items():
        np.testing.assert_array_equal(value, before[name])


@pytest.mark.parametrize("steps", [-1, 2.5, float("nan"), "3", True])
def test_bad_step_counts_are_e500(Perceptron, steps):
    net = Perceptron(2, 4, 1)
    with pytest.raises(HilbertError) as err:
        net.train(XOR_X, XOR_Y, 0.5, steps=steps)
    assert err.value.code == "E500" and "Perceptron.train" in err.value.message


def test_numba_and_reference_executors_agree():
    fast = hilbert.load(EXAMPLES / "Perceptron.hb").Perceptron(2, 8, 5)
    slow = hilbert.load(EXAMPLES / "Perceptron.hb", executor="reference").Perceptron(2, 8, 5)
    fast.train(XOR_X, XOR_Y, 0.5, steps=25)
    slow.train(XOR_X, XOR_Y, 0.5, steps=25)
    np.testing.assert_allclose(fast.first, slow.first, rtol=0, atol=1e-12)
    np.testing.assert_allclose(fast.eval(XOR_X), slow.eval(XOR_X), rtol=0, atol=1e-12)


# -- the Python class ----------------------------------------------------------------------

def test_weights_are_read_only_copies(Perceptron):
    net = Perceptron(2, 3, 0)
    first = net.first
    assert not first.flags.writeable
    with pytest.raises(ValueError):
        first[0, 0] = 1.0
    with pytest.raises(ModelUseError) as err:
        net.first = np.zeros((2, 3))
    assert err.value.code == "E801"
    assert isinstance(err.value, AttributeError)
    outputs = net.eval(XOR_X)
    outputs[:] = 0  # a method's result belongs to the caller
    assert net.eval(XOR_X).any()


def test_class_per_module_and_instances(Perceptron):
    mod = hilbert.load(EXAMPLES / "Perceptron.hb")
    assert mod.Perceptron is mod.Perceptron
    assert "Perceptron" in mod.names and "Perceptron" in dir(mod)
    net = mod.Perceptron(2, 3, 0)
    assert isinstance(net, mod.Perceptron) and isinstance(net, Learner)
    assert net.arguments == {"inputs": 2.0, "hidden": 3.0, "seed": 0.0}
    assert set(net.weights) == {"first", "second"}


def test_repr_shows_name_parameters_and_weight_shapes(Perceptron):
    assert repr(Perceptron(2, 8, seed=7)) == \
        "<Perceptron(inputs=2, hidden=8, seed=7): first 2×8, second 8×1>"


def test_help_shows_signatures_and_doc_comments(Perceptron):
    import inspect

    assert str(inspect.signature(Perceptron)) == "(inputs, hidden, seed)"
    assert str(inspect.signature(Perceptron.train)) == "(self, x, y, rate, *, steps=1)"
    assert "One gradient step on both layers" in Perceptron.train.__doc__
    assert "The network's outputs" in Perceptron.eval.__doc__


def test_constructor_and_method_arguments_are_checked(Perceptron):
    with pytest.raises(HilbertError) as err:
        Perceptron(2, 8)
    assert err.value.code == "E600" and "seed" in err.value.message
    with pytest.raises(HilbertError) as err:
        Perceptron(2, 8, 7).eval(XOR_X, XOR_Y)
    assert err.value.code == "E600" and "Perceptron.eval" in err.value.message
    with pytest.raises(HilbertError) as err:
        Perceptron(2, 8.5, 7)
    assert err.value.code == "E801" and "hidden" in err.value.message
    with pytest.raises(HilbertError) as err:
        Perceptron(2, 8, -1)
    assert err.value.code == "E801" and "seed" in err.value.message


def test_a_shape_error_in_a_method_names_the_method(Perceptron):
    with pytest.raises(HilbertError) as err:
        Perceptron(3, 4, 0).eval(XOR_X)  # x has 2 columns, first has 3 rows
    assert err.value.code == "E305"
    assert any("Perceptron.eval" in note for note in err.value.notes)


# -- save and load ---------------------------------------------------------------------------

def test_save_load_continue_equals_training_straight_through(Perceptron, tmp_path):
    straight = Perceptron(2, 8, seed=7)
    straight.train(XOR_X, XOR_Y, 0.5, steps=60)
    halfway = Perceptron(2, 8, seed=7)
    halfway.train(XOR_X, XOR_Y, 0.5, steps=30)
    path = halfway.save(tmp_path / "net")
    assert path == tmp_path / "net.npz" and path.is_file()
    resumed = Perceptron.load(path)
    assert repr(resumed) == repr(halfway)
    np.testing.assert_array_equal(resumed.first, halfway.first)
    resumed.train(XOR_X, XOR_Y, 0.5, steps=30)
    for name in ("first", "second"):
        np.testing.assert_allclose(getattr(resumed, name), getattr(straight, name), rtol=0,
                                   atol=1e-12)


def test_load_into_an_instance_replaces_arguments_and_weights(Perceptron, tmp_path):
    saved = Perceptron(2, 5, seed=1)
    saved.save(tmp_path / "a.npz")
    other = Perceptron(2, 3, seed=2)
    assert other.load(tmp_path / "a.npz") is other
    assert other.arguments == saved.arguments
    np.testing.assert_array_equal(other.second, saved.second)


def test_loading_the_wrong_file_is_e801(Perceptron, tmp_path):
    bandit = hilbert.compile_source(BANDIT).Bandit(3)
    bandit.save(tmp_path / "bandit.npz")
    with pytest.raises(HilbertError) as err:
        Perceptron.load(tmp_path / "bandit.npz")
    assert err.value.code == "E801" and "Bandit" in err.value.message
    with pytest.raises(HilbertError) as err:
        Perceptron.load(tmp_path / "missing.npz")
    assert err.value.code == "E801"


# -- a classifier ----------------------------------------------------------------------------

CLASSIFIER = """\
open Prelude.Networks
open Prelude.Arithmetic

model Classifier(inputs, hidden, classes, seed) : Learner {
  weight first  : Tensor[inputs, hidden]  from gaussian(seed) · 0.5
  weight second : Tensor[hidden, classes] from uniform(seed) − 0.5
  def train(x, y, rate) {
    first  ≔ stepFirst(rate, x, y, first, second)
    second ≔ stepSecond(rate, x, y, first, second)
  }
  def scores(x) ≔ outputs(x, first, second)
  def shares(x) ≔ softmaxRows(scores(x))
}
"""


def test_classifier_shares_are_distributions():
    Classifier = hilbert.compile_source(CLASSIFIER).Classifier
    net = Classifier(4, 6, 3, seed=2)
    np.testing.assert_array_equal(net.second, numpy_draw(2, "second", (6, 3), "uniform") - 0.5)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((10, 4))
    y = np.eye(3)[rng.integers(0, 3, 10)]
    net.train(x, y, 0.1, steps=20)
    shares = net.shares(x)
    scores = np.maximum(x @ net.first, 0) @ net.second
    expected = np.exp(scores - scores.max(axis=1, keepdims=True))
    expected /= expected.sum(axis=1, keepdims=True)
    assert shares.shape == (10, 3)
    assert (shares >= 0).all()
    np.testing.assert_allclose(shares.sum(axis=1), 1, rtol=0, atol=1e-12)
    np.testing.assert_allclose(shares, expected, rtol=0, atol=1e-12)


# -- a bandit: nullary methods and counting state -----------------------------------------------

BANDIT = """\
model Bandit(arms) : Learner {
  weight totals : Tensor[arms] from 0
  weight counts : Tensor[arms] from 0
  -- observe(actions, rewards) · actions one-hot n×arms · rewards n
  def observe(actions, rewards) {
    totals ≔ totals + einsum("na,n->a", actions, rewards)
    counts ≔ counts + einsum("na->a", actions)
  }
  def means ≔ totals / max(counts, 1)
  def pulls ≔ einsum("a->", counts)
  def greedy ≔ means = maximum(means, 0)
  def bonus(c) ≔ means + c · sqrt(ln(max(pulls, 1)) / max(counts, 1))
  def width ≔ arms
}
"""


def test_bandit_counts_like_numpy():
    bandit = hilbert.compile_source(BANDIT).Bandit(arms=4)
    assert bandit.pulls() == 0 and not bandit.means().any()
    rng = np.random.default_rng(1)
    totals, counts = np.zeros(4), np.zeros(4)
    for _ in range(5):
        actions = np.eye(4)[rng.integers(0, 4, 6)]
        rewards = rng.random(6)
        bandit.observe(actions, rewards)
        totals += rewards @ actions
        counts += actions.sum(axis=0)
    means = totals / np.maximum(counts, 1)
    np.testing.assert_allclose(bandit.totals, totals, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(bandit.counts, counts)
    np.testing.assert_allclose(bandit.means(), means, rtol=0, atol=1e-12)
    assert bandit.pulls() == 30.0 and bandit.width() == 4.0
    np.testing.assert_array_equal(bandit.greedy(), (means == means.max()).astype(float))
    np.testing.assert_allclose(bandit.bonus(2.0), means + 2 * np.sqrt(np.log(30) / np.maximum(counts, 1)),
                               rtol=0, atol=1e-12)


def test_bandit_steps_repeat_the_same_observation():
    bandit = hilbert.compile_source(BANDIT).Bandit(3)
    actions, rewards = np.eye(3)[[0, 2, 2]], np.array([1.0, 0.5, 0.25])
    bandit.observe(actions, rewards, steps=4)
    np.testing.assert_array_equal(bandit.totals, 4 * (rewards @ actions))
    np.testing.assert_array_equal(bandit.counts, [4, 0, 8])


# -- errors in declarations -------------------------------------------------------------------

def compile_error(text: str) -> HilbertError:
    with pytest.raises(HilbertError) as err:
        hilbert.compile_source(text, "model.hb")
    return err.value


def test_weight_dimension_must_be_a_parameter_or_number():
    err = compile_error("model M(n) : Learner {\n  weight w : Tensor[n, m] from 0\n}\n")
    assert (err.code, err.span.line) == ("E800", 2)
    assert "dimension m" in err.message and "model.hb:2:" in str(err)
    err = compile_error("model M(n) : Learner {\n  weight w : Tensor[n, 2.5] from 0\n}\n")
    assert (err.code, err.span.line) == ("E800", 2)


def test_train_may_assign_only_weights():
    err = compile_error("model M(n) : Learner {\n  weight w : Tensor[n] from 0\n"
                        "  def train(x) {\n    w ≔ x\n    x ≔ w\n  }\n}\n")
    assert (err.code, err.span.line, err.span.column) == ("E800", 5, 5)
    assert "x, which is a parameter of train" in err.message
    err = compile_error("model M(n) : Learner {\n  weight w : Tensor[n] from 0\n"
                        "  def train(x) {\n    ww ≔ x\n  }\n}\n")
    assert (err.code, err.span.line) == ("E800", 4) and "did you mean w" in err.message


def test_a_weight_is_assigned_at_most_once():
    err = compile_error("model M(n) : Learner {\n  weight w : Tensor[n] from 0\n"
                        "  def train(x) {\n    w ≔ x\n    w ≔ 2 · x\n  }\n}\n")
    assert (err.code, err.span.line) == ("E800", 5)
    assert "assigns w twice (first at model.hb:4:5)" in err.message


def test_a_method_that_does_not_exist_is_e801_and_an_attribute_error(Perceptron):
    net = Perceptron(2, 3, 0)
    with pytest.raises(ModelUseError) as err:
        net.evaluate(XOR_X)
    assert err.value.code == "E801" and "did you mean eval" in err.value.message
    assert err.value.span.line == 13  # the model's declaration in examples/Perceptron.hb
    assert isinstance(err.value, AttributeError)
    assert not hasattr(net, "evaluate") and getattr(net, "evaluate", None) is None


@pytest.mark.parametrize("text, code, line", [
    ("model M(n) : Trainer {\n  weight w : Tensor[n] from 0\n}\n", "E800", 1),
    ("model M(n) : Learner {\n  weight w : Matrix[n] from 0\n}\n", "E800", 2),
    ("model M(n) : Learner {\n  weight n : Tensor[n] from 0\n}\n", "E800", 2),
    ("model M(n) : Learner {\n  weight w : Tensor[n] from 0\n  def w ≔ 1\n}\n", "E800", 3),
    ("model M(n) : Learner {\n  weight save : Tensor[n] from 0\n}\n", "E800", 2),
    ("model M(n) : Learner {\n  weight w : Tensor[n] from 0\n  def f(w) ≔ w\n}\n", "E800", 3),
    ("model M(n) : Learner {\n  weight w : Tensor[n] from 0\n  def t(steps) {\n  w ≔ w\n }\n}\n",
     "E800", 3),
    ("model M(n) : Learner {\n  weight w : Tensor[n] from 0\n  def f ≔ gaussian(1)\n}\n",
     "E207", 3),
    ("model M(n) : Learner {\n  weight w : Tensor[n] from 0\n  def f ≔ nope(w)\n}\n", "E200", 3),
    ("model M(n) : Learner {\n  weight w : Tensor[n] from 0\n  def f ≔ g(1)\n  def g ≔ w\n}\n",
     "E201", 3),
    ("model M(n) : Learner {\n  weight w : Tensor[n] from v\n  weight v : Tensor[n] from 0\n}\n",
     "E200", 2),
    ("def M ≔ 1\nmodel M(n) : Learner {\n  weight w : Tensor[n] from 0\n}\n", "E205", 2),
    ("model M(n) : Learner {\n  def f(k) ≔ if k = 0 then n else g(k − 1)\n  def g(k) ≔ f(k)\n}\n",
     "E401", 2),
])
def test_bad_declarations(text, code, line):
    err = compile_error(text)
    assert (err.code, err.span.line) == (code, line), str(err)


def test_methods_call_each_other_and_read_weights_and_parameters():
    mod = hilbert.compile_source("""\
open Prelude.Arithmetic
model Scaled(n, k) : Learner {
  weight w : Tensor[n] from k
  def total ≔ einsum("i->", w)
  def scaled(x) ≔ x · total
  def twice(x) ≔ scaled(x) + scaled(x)
  def rectified(x) ≔ relu(x − k)
}
""")
    m = mod.Scaled(3, k=2)
    np.testing.assert_array_equal(m.w, [2, 2, 2])
    assert m.total() == 6.0 and m.twice(0.5) == 6.0
    np.testing.assert_array_equal(m.rectified([1, 3]), [0, 1])


def test_an_initialiser_of_the_wrong_shape_is_e801():
    mod = hilbert.compile_source("model M(n) : Learner {\n  weight w : Tensor[n] from "
                                 "positions(gaussian(1), 0) ^ 0\n}\n")
    assert mod.M(3).w.tolist() == [1, 1, 1]
    mod = hilbert.compile_source('model M(n) : Learner {\n  weight w : Tensor[n, 2] from '
                                 'einsum("ij->i", gaussian(1))\n}\n')
    with pytest.raises(HilbertError) as err:
        mod.M(3)
    assert (err.value.code, err.value.span.line) == ("E801", 2)


# -- the example script -------------------------------------------------------------------------

def test_train_perceptron_example_runs(tmp_path):
    out = tmp_path / "loss.png"
    env = dict(os.environ, MPLBACKEND="Agg")
    done = subprocess.run([sys.executable, str(EXAMPLES / "train_perceptron.py"), "--steps", "200",
                           "--out", str(out)], capture_output=True, text=True, env=env,
                          check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "loss" in done.stdout
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert "matplotlib" in done.stdout
    else:
        assert out.is_file() and out.read_bytes()[:4] == b"\x89PNG"


def test_train_perceptron_example_without_matplotlib_says_so(tmp_path, monkeypatch, capsys):
    import importlib.util

    spec = importlib.util.spec_from_file_location("train_perceptron",
                                                  EXAMPLES / "train_perceptron.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` now fails
    assert script.main(["--steps", "20", "--every", "5", "--out", str(tmp_path / "x.png")]) == 0
    said = capsys.readouterr().out
    assert "matplotlib is not installed" in said and not (tmp_path / "x.png").exists()


# -- what a model holds is its own (issue 11, item 4) -----------------------------------------

HOLDER = """\
model Holder(n, w0) : Learner {
  weight w : Tensor[n] from w0
  def set(x) {
    w ≔ x
  }
  def get ≔ w
  def start ≔ w0
}
"""


def held_arrays(net) -> list[np.ndarray]:
    """Every array a model instance holds, wherever it keeps them."""
    found = []
    for value in vars(net).values():
        if isinstance(value, dict):
            found += [v for v in value.values() if isinstance(v, np.ndarray)]
    return found


def test_a_model_holds_copies_of_what_it_was_given(executor):
    Holder = hilbert.compile_source(HOLDER, executor=executor).Holder
    w0 = np.array([1.0, 2.0, 3.0])
    net = Holder(3, w0)
    x = np.array([4.0, 5.0, 6.0])
    other = Holder(3, w0)
    other.set(x)
    w0[0] = x[0] = 9.0  # the caller's arrays change after the model took them
    np.testing.assert_array_equal(net.w, [1, 2, 3])
    np.testing.assert_array_equal(net.start(), [1, 2, 3])
    np.testing.assert_array_equal(net.arguments["w0"], [1, 2, 3])
    np.testing.assert_array_equal(other.w, [4, 5, 6])
    for held in held_arrays(net) + held_arrays(other):
        assert not np.shares_memory(held, w0) and not np.shares_memory(held, x)
        assert held.dtype == np.float64 and held.flags.c_contiguous


def test_a_loaded_model_holds_c_ordered_float64_arrays(tmp_path):
    Grid = hilbert.compile_source("model Grid(n, g0) : Learner {\n"
                                  "  weight g : Tensor[n, n] from g0\n}\n").Grid
    grid = np.arange(6.0).reshape(2, 3)
    np.savez(tmp_path / "g.npz", model=np.array("Grid"), **{
        "argument.n": np.array(3), "argument.g0": np.asfortranarray(grid),
        "weight.g": np.asfortranarray(np.arange(9, dtype=np.int32).reshape(3, 3))})
    net = Grid.load(tmp_path / "g.npz")
    np.testing.assert_array_equal(net.g, np.arange(9).reshape(3, 3))
    np.testing.assert_array_equal(net.arguments["g0"], grid)
    for held in held_arrays(net):
        assert held.dtype == np.float64 and held.flags.c_contiguous


def test_copies_of_a_model_train_apart():
    import copy

    Counter = hilbert.compile_source(COUNTER).Counter
    net = Counter()
    shallow, deep = copy.copy(net), copy.deepcopy(net)
    shallow.step(steps=2)
    deep.step()
    assert (net.c, shallow.c, deep.c) == (0.0, 2.0, 1.0)


COUNTER = """\
model Counter : Learner {
  weight c : Tensor[] from 0
  def step {
    c ≔ c + 1
  }
}
"""


# -- a weight in another layout (issue 11, item 11) --------------------------------------------

TRANSPOSED = """\
open Prelude.Arithmetic
model Transposed(n, seed) : Learner {
  weight cube : Tensor[n, n, n] from einsum("ijk->kji", gaussian(seed))
  weight square : Tensor[n, n] from einsum("ij->ji", gaussian(seed))
  def train(rate) {
    square ≔ tanh(einsum("ijk,kl->il", cube, square)) · rate
  }
  def mixed ≔ tanh(einsum("ijk,kl->ijl", cube, square))
}
"""


def test_a_weight_initialised_in_another_layout_runs_compiled(executor):
    net = hilbert.compile_source(TRANSPOSED, executor=executor).Transposed(4, seed=1)
    cube = numpy_draw(1, "cube", (4, 4, 4)).transpose(2, 1, 0)
    square = numpy_draw(1, "square", (4, 4)).T
    assert net.cube.flags.c_contiguous and net.square.flags.c_contiguous
    np.testing.assert_array_equal(net.cube, cube)
    np.testing.assert_allclose(net.mixed(), np.tanh(np.einsum("ijk,kl->ijl", cube, square)),
                               rtol=0, atol=1e-12)
    net.train(0.5, steps=3)
    for _ in range(3):
        square = np.tanh(np.einsum("ijk,kl->il", cube, square)) * 0.5
    np.testing.assert_allclose(net.square, square, rtol=0, atol=1e-12)
    np.testing.assert_allclose(net.mixed(), np.tanh(np.einsum("ijk,kl->ijl", cube, square)),
                               rtol=0, atol=1e-12)


# -- loading what save did not write (issue 11, item 12) ----------------------------------------

SMALL = "model Small(n) : Learner {\n  weight w : Tensor[n] from 0\n  def get ≔ w\n}\n"


def saved_small(tmp_path, name="small.npz", **arrays) -> Path:
    """An .npz file like Small(3).save writes, with `arrays` replacing or adding entries."""
    content = {"model": np.array("Small"), "argument.n": np.array(3.0), "weight.w": np.zeros(3)}
    content |= {k.replace("__", "."): v for k, v in arrays.items()}
    path = tmp_path / name
    np.savez(path, **{k: v for k, v in content.items() if v is not None})
    return path


def npy_bytes(shape, descr="<f8", data=b"") -> bytes:
    """A .npy file's bytes: a header declaring `shape` and `descr`, then `data`."""
    import io

    stream = io.BytesIO()
    np.lib.format.write_array_header_1_0(stream, {"descr": descr, "fortran_order": False,
                                                  "shape": shape})
    return stream.getvalue() + data


def truncated(tmp_path) -> Path:
    path = saved_small(tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2])
    return path


def corrupted(tmp_path) -> Path:
    """A weight's data changed inside the archive: its CRC no longer matches."""
    path = saved_small(tmp_path, weight__w=np.full(3, 7.0))
    data = bytearray(path.read_bytes())
    at = data.index(np.full(3, 7.0).tobytes())
    data[at] ^= 0xFF
    path.write_bytes(bytes(data))
    return path


@pytest.mark.parametrize("make, words", [
    (truncated, "not a complete .npz archive"),
    (corrupted, "Bad CRC-32"),
    (lambda d: saved_small(d, argument__n=np.array("three")), "argument n holding text"),
    (lambda d: saved_small(d, weight__w=np.zeros(3) + 1j), "weight w holding complex numbers"),
    (lambda d: saved_small(d, weight__w=np.array([1, None, 2], dtype=object)),
     "weight w holding Python objects"),
    (lambda d: saved_small(d, weight__w=np.array(["2020-01-01"] * 3, dtype="datetime64[D]")),
     "weight w holding dates"),
    (lambda d: saved_small(d, model=None), "has no model name"),
    (lambda d: saved_small(d, model=np.array(["Small", "Small"])), "has no model name"),
    (lambda d: saved_small(d, model=np.array("Large")), "holds a saved Large, not a Small"),
    (lambda d: saved_small(d, weight__v=np.zeros(3)), "weights v, w, but a Small has w"),
    (lambda d: saved_small(d, argument__n=np.array(4.0)), "declared a vector of 4"),
    (lambda d: saved_small(d, argument__n=np.array(np.nan)), "must be a whole number"),
    (lambda d: d / "missing.npz", "No such file or directory"),
    (lambda d: (d / "folder.npz").mkdir() or d / "folder.npz", "Is a directory"),
    (lambda d: (d / "text.npz").write_text("hello") and d / "text.npz",
     "not a complete .npz archive"),
    (lambda d: np.save(d / "one.npy", np.zeros(3)) or d / "one.npy", "not a complete .npz archive"),
])
def test_loading_a_bad_file_is_e801(tmp_path, make, words):
    Small = hilbert.compile_source(SMALL).Small
    path = make(tmp_path)
    with pytest.raises(HilbertError) as err:
        Small.load(path)
    assert err.value.code == "E801", str(err.value)
    assert words in err.value.message


def test_loading_a_bad_file_leaves_the_instance_as_it_was(tmp_path):
    net = hilbert.compile_source(SMALL).Small(2)
    with pytest.raises(HilbertError):
        net.load(saved_small(tmp_path, weight__w=np.zeros(3) + 1j))
    assert net.arguments == {"n": 2.0} and net.w.tolist() == [0, 0]


def with_header_only(path: Path, key: str, shape) -> Path:
    """`path` with one more array `key` whose header claims `shape` and which holds no data."""
    import zipfile

    with zipfile.ZipFile(path, "a") as archive:
        archive.writestr(f"{key}.npy", npy_bytes(shape))
    return path


def test_a_file_claiming_huge_arrays_is_refused_before_reading_them(tmp_path):
    huge_weight = with_header_only(saved_small(tmp_path, argument__n=np.array(1e12),
                                               weight__w=None), "weight.w", (10**12,))
    with pytest.raises(HilbertError) as err:
        hilbert.compile_source(SMALL).Small.load(huge_weight)
    assert err.value.code == "E802" and "loading Small from" in err.value.message
    assert "weight w alone is 1000000000000" in err.value.message
    Holder = hilbert.compile_source(HOLDER).Holder
    path = tmp_path / "holder.npz"
    np.savez(path, model=np.array("Holder"), **{"argument.n": np.array(2.0),
                                                "weight.w": np.zeros(2)})
    with pytest.raises(HilbertError) as err:
        Holder.load(with_header_only(path, "argument.w0", (10**6, 10**6)))
    assert err.value.code == "E802" and "argument w0 alone is 1000000×1000000" in err.value.message


@pytest.mark.parametrize("weight, arguments", [
    (np.array([True, False, True]), np.array(3)),        # booleans and integers are numbers
    (np.array([np.nan, np.inf, -1.0]), np.array(3.0)),   # NaN and infinity are kept as they are
])
def test_numbers_of_any_real_kind_load_as_float64(tmp_path, weight, arguments):
    net = hilbert.compile_source(SMALL).Small.load(
        saved_small(tmp_path, weight__w=weight, argument__n=arguments))
    np.testing.assert_array_equal(net.w, weight.astype(np.float64))
    assert net.w.dtype == np.float64


@pytest.mark.parametrize("path", [None, 3, b"small.npz"])
def test_save_and_load_take_file_names(path):
    net = hilbert.compile_source(SMALL).Small(3)
    for call in (net.save, net.load, type(net).load):
        with pytest.raises(HilbertError) as err:
            call(path)
        assert err.value.code == "E801" and "give a file name" in err.value.message


def test_saving_where_nothing_can_be_written_is_e801(tmp_path):
    net = hilbert.compile_source(SMALL).Small(3)
    with pytest.raises(HilbertError) as err:
        net.save(tmp_path / "missing" / "small.npz")
    assert err.value.code == "E801" and "cannot save Small" in err.value.message


# -- member names the Python class owns (issue 11, item 13) ---------------------------------

OWNED_BY_PYTHON = ["_model", "_state", "_weights", "_lock", "_", "__init__", "__repr__",
                   "__bool__", "__del__", "__getattr__", "__class__"]


@pytest.mark.parametrize("name", OWNED_BY_PYTHON)
@pytest.mark.parametrize("template, line", [
    ("model M(n) : Learner {{\n  weight w : Tensor[n] from 0\n  def {name} ≔ w\n}}\n", 3),
    ("model M(n) : Learner {{\n  weight {name} : Tensor[n] from 0\n}}\n", 2),
    ("model M(n) : Learner {{\n  weight w : Tensor[n] from 0\n  def {name}(x) {{\n"
     "    w ≔ x\n  }}\n}}\n", 3),
    ("model M({name}) : Learner {{\n  weight w : Tensor[2] from 0\n}}\n", 1),
])
def test_names_starting_with_an_underscore_are_refused(name, template, line):
    err = compile_error(template.format(name=name))
    assert (err.code, err.span.line) == ("E800", line), str(err)
    assert f"called {name}:" in err.message and "starting with _" in err.message


def test_every_public_attribute_of_learner_is_reserved():
    from hilbert.compiler.models import RESERVED

    public = {name for name in dir(Learner) if not name.startswith("_")}
    assert public == RESERVED


# -- the memory limit (issue 11, item 15) --------------------------------------------------------

HUGE = "model Huge(n, seed) : Learner {\n  weight w : Tensor[n, n] from gaussian(seed)\n}\n"


def test_weights_over_the_memory_limit_are_refused_before_allocating(monkeypatch):
    monkeypatch.setenv("HILBERT_MEMORY_LIMIT", "16G")  # (the default, half of RAM, may be more)
    Huge = hilbert.compile_source(HUGE).Huge
    with pytest.raises(HilbertError) as err:
        Huge(10**5, seed=1)  # 74.5 GiB: over the limit
    assert err.value.code == "E802" and err.value.span.line == 2
    assert "100000×100000" in err.value.message and "HILBERT_MEMORY_LIMIT" in err.value.message
    with pytest.raises(HilbertError) as err:
        Huge(2**40, seed=1)  # sizes are added up in Python integers: no overflow
    assert err.value.code == "E802"


def test_the_weight_limit_is_hilbert_memory_limit(monkeypatch):
    Huge = hilbert.compile_source(HUGE).Huge
    monkeypatch.setenv("HILBERT_MEMORY_LIMIT", "1M")
    assert Huge(300, seed=1).w.shape == (300, 300)  # 0.7 MiB
    with pytest.raises(HilbertError) as err:
        Huge(400, seed=1)  # 1.2 MiB
    assert err.value.code == "E802" and "over the limit of 1.0 MiB" in err.value.message


def test_a_weight_or_parameter_called_steps_is_refused_when_the_model_trains():
    for text in ("model M : Learner { weight steps : Tensor[] from 0  def train() { steps ≔ steps + 1 } }",
                 "model M(steps) : Learner { weight w : Tensor[] from 0  def train() { w ≔ w + 1 } }"):
        with pytest.raises(hilbert.HilbertError) as raised:
            hilbert.compile_source(text)
        assert raised.value.code == "E800" and "steps" in raised.value.message


# -- plans of members ----------------------------------------------------------------------

def test_a_member_gives_its_plan_for_a_call_on_the_model(Perceptron):
    net = Perceptron(2, 8, seed=7)
    plan = net.train.plan(XOR_X, XOR_Y, 0.5, steps=25)
    assert str(plan).startswith("plan of Perceptron.train(first: 2×8, second: 8×1")
    loop = next(line for line in str(plan).splitlines() if line.strip().startswith("Perceptron"))
    assert loop.split()[1] == "25"  # the loop's trips: the steps asked for
    # the loss's plan: the forward pass's two products, 4×2·2×8 and 4×8·8×1, then the sum
    assert [e.flops for e in net.loss.plan(XOR_X, XOR_Y).einsums] == [128, 64, 8]
    with pytest.raises(HilbertError) as err:  # a method has no steps: an unknown argument
        net.loss.plan(XOR_X, XOR_Y, steps=3)
    assert err.value.code == "E600" and "steps" in err.value.message
    with pytest.raises(HilbertError) as err:
        net.train.plan(XOR_X, XOR_Y)
    assert err.value.code == "E600"


def test_a_built_member_plan_gives_the_size_of_its_generated_code(Perceptron):
    net = Perceptron(2, 4, seed=1)
    plan = net.loss.build(XOR_X, XOR_Y)
    [region] = plan.schedule.regions
    assert region.compiled and region.lines > 10
    assert f"(compiled, {region.lines} lines)" in str(plan)
    assert net.loss(XOR_X, XOR_Y) == pytest.approx(numpy_loss(XOR_X, XOR_Y, net.first,
                                                               net.second), rel=1e-12)


def test_a_bound_member_behaves_as_a_bound_method(Perceptron):
    import inspect
    import pickle

    net = Perceptron(2, 8, seed=7)
    assert net.loss == net.loss and net.loss != Perceptron(2, 8, seed=7).loss
    assert net.train.__self__ is net and net.train.__name__ == "train"
    assert str(inspect.signature(net.train)) == "(x, y, rate, *, steps=1)"
    assert "One gradient step on both layers" in net.train.__doc__
    again = pickle.loads(pickle.dumps(net.loss))
    assert again(XOR_X, XOR_Y) == net.loss(XOR_X, XOR_Y)


def test_hilbert_plan_shows_a_model_member(capsys):
    from hilbert.cli import main

    path = str(EXAMPLES / "Perceptron.hb")
    code = main(["plan", path, "Perceptron.train", "--value", "inputs=2", "--value", "hidden=8",
                 "--value", "seed=1", "--shape", "x=4x2", "--shape", "y=4x1", "--value",
                 "rate=0.5", "--steps", "3"])
    out = capsys.readouterr().out
    assert code == 0 and out.startswith("plan of Perceptron.train(first: 2×8, second: 8×1")
    assert "x: 4×2, y: 4×1, rate: scalar, steps: scalar)" in out.splitlines()[0]
    assert main(["plan", path, "Perceptron.first", "--value", "inputs=2", "--value", "hidden=8",
                 "--value", "seed=1"]) == 2
    assert main(["plan", path, "Perceptron.train", "--value", "inputs=2", "--value", "hidden=8",
                 "--value", "seed=1", "--shape", "z=3"]) == 2
    assert "has no parameter(s) z" in capsys.readouterr().err


def test_a_method_plan_passes_its_own_parameter_called_steps():
    module = hilbert.compile_source("""
model Counter : Learner {
  weight c : Tensor[] from 0
  def ahead(steps) ≔ c + steps
}
""")
    net = module.Counter()
    assert str(net.ahead.plan(steps=4)).startswith("plan of Counter.ahead(c: scalar, steps: scalar)")
    assert net.ahead(steps=4) == 4.0


MOMENTUM = """\
open Prelude.Optimisers

model Fit(n, seed) : Learner {
  weight a : Tensor[n] from gaussian(seed)
  weight b : Tensor[n] from gaussian(seed)
  state v like weights from 0
  def train(x, y) {
    (weights, v) ≔ momentum(weights, v, ∂ loss(x, y) / ∂ weights, 0.1, 0.9)
  }
  def loss(x, y) ≔ einsum("i->", (a · x + b − y)²)
}
"""


def test_a_train_block_differentiates_each_gradient_once(monkeypatch, tmp_path):
    """Four assignments (a, b and their velocities) read one `∂ loss / ∂ weights`: the block
    is expanded assignment by assignment, and the gradient of each weight is swept once,
    not once per assignment that reads it; the step is still momentum's (NumPy's here)."""
    from hilbert.compiler.passes import inline

    monkeypatch.setenv("HILBERT_CACHE_DIR", str(tmp_path / "cache"))  # (nothing kept: built)
    sweeps = []
    differentiate = inline.differentiate
    monkeypatch.setattr(inline, "differentiate",
                        lambda *args: sweeps.append(args[1]) or differentiate(*args))
    net = hilbert.compile_source(MOMENTUM).Fit(3, 4)
    a, b = net.a.copy(), net.b.copy()
    x, y = np.array([1.0, 2.0, -1.0]), np.array([0.5, 0.0, 2.0])
    net.train(x, y)
    assert len(sweeps) == 2
    residual = 2 * (a * x + b - y)
    np.testing.assert_allclose(net.a, a - 0.1 * residual * x, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(net.b, b - 0.1 * residual, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(net.v["a"], residual * x, rtol=1e-12, atol=1e-12)


def test_a_train_blocks_components_of_one_right_hand_side_are_written_out_once(monkeypatch,
                                                                               tmp_path):
    """`(weights, v) ≔ momentum(…)` is four assignments, two components of each weight's
    step (`momentum(a, v.a, …)`, `momentum(b, v.b, …)`): each step is written out (inlined)
    once, not once per component (with the train block's body: three write-outs, not five);
    the step is still momentum's (NumPy's here)."""
    from hilbert.compiler.passes import inline

    monkeypatch.setenv("HILBERT_CACHE_DIR", str(tmp_path / "cache"))  # (nothing kept: built)
    written = []
    write_out = inline.Inliner._write_out
    monkeypatch.setattr(inline.Inliner, "_write_out",
                        lambda self, owner, *rest: written.append(owner) or write_out(
                            self, owner, *rest))
    net = hilbert.compile_source(MOMENTUM).Fit(3, 5)
    a, b = net.a.copy(), net.b.copy()
    x, y = np.array([0.5, -2.0, 1.0]), np.array([1.0, 1.0, 0.0])
    net.train(x, y)
    assert written.count("Fit.train") == 3
    residual = 2 * (a * x + b - y)
    np.testing.assert_allclose(net.a, a - 0.1 * residual * x, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(net.b, b - 0.1 * residual, rtol=1e-12, atol=1e-12)
