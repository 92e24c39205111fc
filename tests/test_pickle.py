"""Pickled models: a pickle carries the model's source (every module's text), its executor and
optimiser, its arguments and its weights, never compiled code; unpickling compiles it again."""

import copy
import copyreg
import io
import multiprocessing
import pickle
import shutil
import weakref
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from conftest import needs

import hilbert
from hilbert import ModelError, carried, models

ROOT = Path(__file__).resolve().parent.parent
PERCEPTRON = ROOT / "examples" / "Perceptron.hb"

XOR_X = np.array([[0, 0], [0, 1], [1, 0], [1, 1]], dtype=float)
XOR_Y = np.array([[0], [1], [1], [0]], dtype=float)

COUNTER = """\
model Counter(start) : Learner {
  weight c : Tensor[2] from start
  def step(by) {
    c ≔ c + by
  }
  def total ≔ einsum("i->", c)
}
"""


@pytest.fixture
def forget(monkeypatch):
    """forget() makes this process as another: no source compiled yet, no class made from one
    (a pickle made here has registered its class), so unpickling compiles the source again."""

    def forget() -> None:
        monkeypatch.setattr(carried, "_COMPILED", weakref.WeakValueDictionary())
        monkeypatch.setattr(models, "_CLASSES", weakref.WeakValueDictionary())
        monkeypatch.setattr(models, "_TOKENS", weakref.WeakValueDictionary())

    return forget


def perceptron(executor="reference", steps=3):
    """A Perceptron (it opens Prelude.Networks) trained a few steps from its seed."""
    net = hilbert.load(PERCEPTRON, executor=executor).Perceptron(2, 4, seed=7)
    net.train(XOR_X, XOR_Y, 0.5, steps=steps)
    return net


def assert_same_weights(got, want):
    """The same arguments and weights, bit for bit, held as private C-ordered float64."""
    assert got.weights.keys() == want.weights.keys()
    for name, value in want.weights.items():
        held = got._weights[name]
        assert held.dtype == np.float64 and held.flags.c_contiguous and held.flags.writeable
        assert held.tobytes() == value.tobytes()
    for name, value in want.arguments.items():
        np.testing.assert_array_equal(got.arguments[name], value)


def train_in_worker(net, rate, steps):
    """In a worker: train the model it was sent, then answer its loss and outputs."""
    net.train(XOR_X, XOR_Y, rate, steps=steps)
    return net, net.loss(XOR_X, XOR_Y), net.eval(XOR_X)


# -- in one process ------------------------------------------------------------------------------

def test_round_trip_in_one_process_is_of_the_same_class_with_the_same_weights():
    net = perceptron()
    again = pickle.loads(pickle.dumps(net))
    assert type(again) is type(net)  # the class made from this very source
    assert_same_weights(again, net)
    net.train(XOR_X, XOR_Y, 0.5, steps=4)
    assert again.loss(XOR_X, XOR_Y) != net.loss(XOR_X, XOR_Y)  # they train apart
    again.train(XOR_X, XOR_Y, 0.5, steps=4)
    assert_same_weights(again, net)
    assert again.loss(XOR_X, XOR_Y) == net.loss(XOR_X, XOR_Y)
    twin = perceptron()  # the same file loaded again: another class of the same source
    assert type(twin) is not type(net)
    assert type(pickle.loads(pickle.dumps(twin))) is type(twin)
    assert type(pickle.loads(pickle.dumps(net))) is type(net)


@pytest.mark.parametrize("executor", ["reference", "numba"])
def test_unpickling_compiles_the_carried_source_again(forget, executor):
    net = perceptron(executor)
    want_loss, want_eval = net.loss(XOR_X, XOR_Y), net.eval(XOR_X)
    data = pickle.dumps(net)
    forget()
    again = pickle.loads(data)
    cls = type(again)
    assert cls is not type(net) and cls.__name__ == "Perceptron"
    assert (cls._executor, cls._optimize) == (executor, "auto")
    assert all(f.executor == executor for f in cls._functions.values())
    assert cls._module is not type(net)._module  # compiled again, from the text it carried
    assert_same_weights(again, net)
    if executor == "reference":  # the same IR on the same weights: bit for bit
        assert again.loss(XOR_X, XOR_Y) == want_loss
        np.testing.assert_array_equal(again.eval(XOR_X), want_eval)
    else:
        assert again.loss(XOR_X, XOR_Y) == pytest.approx(want_loss, rel=1e-12)
        np.testing.assert_allclose(again.eval(XOR_X), want_eval, rtol=1e-12, atol=1e-12)
    net.train(XOR_X, XOR_Y, 0.5, steps=5)
    again.train(XOR_X, XOR_Y, 0.5, steps=5)
    if executor == "reference":
        assert_same_weights(again, net)
    else:
        for name, value in net.weights.items():
            np.testing.assert_allclose(again.weights[name], value, rtol=1e-12, atol=1e-12)


def test_a_model_of_an_opened_prelude_module_pickles(forget):
    lstm = hilbert.open("Prelude.Sequences", executor="reference").LSTM(3, 4, 0)
    xs, zeros = np.linspace(-1, 1, 30).reshape(5, 2, 3), np.zeros((2, 4))
    want = lstm.run(xs, zeros, zeros)
    data = pickle.dumps(lstm)
    forget()
    again = pickle.loads(data)
    assert type(again) is not type(lstm) and type(again)._module.key == "Prelude.Sequences"
    assert_same_weights(again, lstm)
    for got, expected in zip(again.run(xs, zeros, zeros), want, strict=True):
        np.testing.assert_array_equal(got, expected)


def test_the_pickle_carries_every_module_text_and_no_compiled_code():
    net = perceptron("numba")
    net.loss(XOR_X, XOR_Y)  # compiled code exists now: it must not travel
    data = pickle.dumps(net)
    names = set()

    class Recording(pickle.Unpickler):
        def find_class(self, module, name):
            names.add((module, name))
            return super().find_class(module, name)

    Recording(io.BytesIO(data)).load()
    assert ("hilbert.models", "_unpickled") in names
    allowed = {"hilbert.models", "hilbert.carried", "builtins", "copyreg", "_codecs"}  # and NumPy's
    assert all(m in allowed or m.split(".")[0] == "numpy" for m, _ in names), names
    assert {n for m, n in names if m == "hilbert.models"} <= {"_unpickled", "ModelSource"}
    assert {n for m, n in names if m == "hilbert.carried"} <= {"ModuleSource", "CarriedText"}
    source = type(net)._carried().module
    by_label = {t.label: t.text for t in source.texts}
    assert by_label[str(PERCEPTRON)] == PERCEPTRON.read_text(encoding="utf-8")
    prelude = ROOT / "prelude" / "Networks.hb"
    assert by_label["prelude/Networks.hb"] == prelude.read_text(encoding="utf-8")


MAIN = """\
open Helpers
open Util
open Prelude.Arithmetic
open Util
model Scaler(n) : Learner {
  weight w : Tensor[n] from 1
  def grow(k) {
    w ≔ relu(scaled(twice(w), k))
  }
  def total ≔ einsum("i->", w)
}
"""


def test_opened_modules_travel_in_the_pickle_not_as_files(forget, write_hb, tmp_path):
    write_hb("lib/Util.hb", "def scaled(x, k) ≔ k · x\n")
    write_hb("app/Helpers.hb", "open Util\ndef twice(x) ≔ scaled(x, 2)\n")
    main = write_hb("app/Main.hb", MAIN)
    module = hilbert.load(main, search_path=tmp_path / "lib", executor="reference")
    net = module.Scaler(3)
    net.grow(1.5, steps=2)
    data = pickle.dumps(net)
    source = type(net)._carried().module
    keys = {t.label: t.key for t in source.texts}
    util, helpers = keys[str(tmp_path / "lib" / "Util.hb")], keys[str(tmp_path / "app" / "Helpers.hb")]
    opens = {t.label: t.opens for t in source.texts}
    assert opens[str(main)] == (helpers, util, keys["prelude/Arithmetic.hb"], util)
    assert opens[str(tmp_path / "app" / "Helpers.hb")] == (util,)
    shutil.rmtree(tmp_path / "lib")
    shutil.rmtree(tmp_path / "app")  # nothing on disk now: the pickle holds every text
    forget()
    again = pickle.loads(data)
    assert type(again) is not type(net)
    assert_same_weights(again, net)
    net.grow(0.5)
    again.grow(0.5)
    assert_same_weights(again, net)
    assert again.total() == net.total()


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_every_pickle_protocol(forget, protocol):
    net = hilbert.compile_source(COUNTER, executor="reference").Counter(np.array([1.0, -0.0]))
    net.step(np.array([0.1, np.nan]), steps=3)
    data = pickle.dumps(net, protocol=protocol)
    forget()
    again = pickle.loads(data)
    assert_same_weights(again, net)  # NaN, −0.0 and all: bit for bit
    np.testing.assert_array_equal(again.arguments["start"], [1.0, -0.0])
    again.step(np.array([1.0, 2.0]))
    net.step(np.array([1.0, 2.0]))
    assert_same_weights(again, net)


def test_bound_methods_and_cloudpickle(forget):
    cloudpickle = needs("cloudpickle")  # what dask and joblib's workers use
    net = perceptron()
    loss = pickle.loads(pickle.dumps(net.loss))
    assert loss(XOR_X, XOR_Y) == net.loss(XOR_X, XOR_Y)
    data = cloudpickle.dumps(net)
    forget()
    again = cloudpickle.loads(data)
    assert type(again) is not type(net)
    assert_same_weights(again, net)
    assert again.loss(XOR_X, XOR_Y) == net.loss(XOR_X, XOR_Y)


def test_copies_keep_their_class_and_never_use_the_source():
    Counter = hilbert.compile_source(COUNTER, executor="reference").Counter
    net = Counter(2)
    for twin in (copy.copy(net), copy.deepcopy(net)):
        assert type(twin) is Counter
        twin.step(1)
    assert Counter._source is None  # no pickle asked for it
    assert net.total() == 4.0


def test_a_python_subclass_pickles_by_name_as_python_does():
    Counter = hilbert.compile_source(COUNTER, executor="reference").Counter
    Sub = type("Sub", (Counter,), {})
    assert Sub(1).__reduce__()[0] is copyreg.__newobj__


def test_a_pickle_with_other_weights_is_refused():
    net = hilbert.compile_source(COUNTER, executor="reference").Counter(1)
    source, state = net.__reduce__()[1]
    with pytest.raises(ModelError) as raised:
        models._unpickled(source, state | {"_weights": {}})
    assert raised.value.code == "E801" and "weights none" in raised.value.message
    with pytest.raises(ModelError) as raised:
        models._unpickled(source, state | {"_weights": {"c": np.zeros(3)}})
    assert raised.value.code == "E801" and "in the pickle" in raised.value.message


def test_modules_and_functions_compile_again_from_their_source(forget):
    layers = hilbert.load(ROOT / "examples" / "Layers.hb", executor="reference")
    a, w = np.arange(4.0).reshape(2, 2), np.arange(6.0).reshape(2, 3)
    data = pickle.dumps(models.module_source(layers._compiled))
    forget()
    source = pickle.loads(data)
    module = hilbert.module.module_from(source, "reference")
    assert module._compiled is not layers._compiled and module.names == layers.names
    np.testing.assert_array_equal(module.layerThrough(a, w), layers.layerThrough(a, w))
    function = models.function_from(source, "normalisedRows", "reference", "greedy")
    assert (function.executor, function.optimize) == ("reference", "greedy")
    np.testing.assert_array_equal(function(w), layers.normalisedRows(w))


# -- in another process --------------------------------------------------------------------------

def test_a_model_sent_to_a_spawned_worker_answers_as_in_the_parent():
    net = perceptron()
    here = copy.deepcopy(net)
    want = train_in_worker(here, 0.5, 5)
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=spawn) as pool:
        trained, loss, outputs = pool.submit(train_in_worker, net, 0.5, 5).result()
        assert pool.submit(net.loss, XOR_X, XOR_Y).result() == net.loss(XOR_X, XOR_Y)
    assert loss == want[1]
    np.testing.assert_array_equal(outputs, want[2])
    assert type(trained) is type(net)  # back here, of the class it left
    assert_same_weights(trained, here)
    assert_same_weights(net, perceptron())  # what was sent is unchanged
