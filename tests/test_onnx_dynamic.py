"""Dynamic axes of an ONNX export (executor/onnx/dynamic.py, hilbert/export.py): an axis named
in `dynamic=` is written as a named size where the graph does not depend on it, and one
exported model then runs at other sizes in a plain onnxruntime session, equal to NumPy; a
program whose graph changes with the size (a count, a loop's trip count) refuses the axis
with E600 saying why. Skipped as a whole without onnx and onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
onnxruntime = pytest.importorskip("onnxruntime")

from hilbert.grammar.errors import HilbertError  # noqa: E402

import hilbert  # noqa: E402

SOURCE = """
open Prelude.Networks
open Prelude.Arithmetic
fn mlp(x, w1, w2) ↦ dense(relu(dense(x, w1)), w2)
fn meanRow(x) ↦ einsum("ij->j", x) / rows(x)
"""


@pytest.fixture(scope="module")
def module():
    return hilbert.compile_source(SOURCE)


def _dims(model) -> dict[str, list]:
    return {v.name: [d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim]
            for v in [*model.graph.input, *model.graph.output]}


def _session(model):
    onnx.checker.check_model(model, full_check=True)
    onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    return onnxruntime.InferenceSession(model.SerializeToString(),
                                        providers=["CPUExecutionProvider"])


def _sigmoid(z):
    return 1 / (1 + np.exp(-z))


def test_one_mlp_model_runs_at_two_batch_sizes(module):
    model = module.mlp.onnx((8, 4), (4, 16), (16, 2), dynamic={"x": {0: "batch"}})
    assert _dims(model) == {"x": ["batch", 4], "w1": [4, 16], "w2": [16, 2],
                            "result": ["batch", 2]}
    session = _session(model)
    rng = np.random.default_rng(0)
    w1, w2 = rng.normal(size=(4, 16)), rng.normal(size=(16, 2))
    for n in (3, 50):
        x = rng.normal(size=(n, 4))
        got, = session.run(None, {"x": x, "w1": w1, "w2": w2})
        np.testing.assert_allclose(got, np.maximum(x @ w1, 0) @ w2, rtol=1e-12, atol=1e-14)


def test_a_loop_whose_state_follows_the_batch_runs_at_two_batch_sizes():
    """Sequences.lstm with its batch axis dynamic: the Loop's carried state is batch × D;
    equal to the LSTM written in NumPy at batch sizes 3 and 7 (the export's was 2)."""
    lstm = hilbert.open("Prelude.Sequences").function("lstm")
    t, e, d = 4, 3, 5
    batch = {"x": {1: "batch"}, "h": {0: "batch"}, "c": {0: "batch"}}
    model = lstm.onnx((t, 2, e), (2, d), (2, d), (e, d, 4), (d, d, 4), (d, 4), dynamic=batch)
    assert _dims(model)["x"] == [t, "batch", e] and _dims(model)["result1"] == ["batch", d]
    session = _session(model)
    rng = np.random.default_rng(1)
    wx, wh, b = rng.normal(size=(e, d, 4)), rng.normal(size=(d, d, 4)), rng.normal(size=(d, 4))
    for n in (3, 7):
        x, h, c = rng.normal(size=(t, n, e)), rng.normal(size=(n, d)), rng.normal(size=(n, d))
        got = session.run(None, {"x": x, "h": h, "c": c, "wx": wx, "wh": wh, "b": b})
        for step in range(t):  # (gates: input, forget, cell, output)
            z = np.einsum("be,edg->bdg", x[step], wx) + np.einsum("bh,hdg->bdg", h, wh) + b
            c = _sigmoid(z[..., 1]) * c + _sigmoid(z[..., 0]) * np.tanh(z[..., 2])
            h = _sigmoid(z[..., 3]) * np.tanh(c)
        np.testing.assert_allclose(got[0], h, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(got[1], c, rtol=1e-12, atol=1e-14)


def test_a_trained_models_member_exports_with_a_dynamic_batch():
    Perceptron = hilbert.load("examples/Perceptron.hb").Perceptron
    x = np.array([[0.0, 0], [0, 1], [1, 0], [1, 1]])
    net = Perceptron(2, 8, seed=7)
    model = net.eval.onnx(x, dynamic={"x": {0: "batch"}})
    assert _dims(model) == {"x": ["batch", 2], "result": ["batch", 1]}
    session = _session(model)
    for rows in (x[:1], np.tile(x, (3, 1))):
        np.testing.assert_allclose(session.run(None, {"x": rows})[0], net.eval(rows),
                                   atol=1e-12)


@pytest.mark.parametrize("name, shapes, dynamic, why", [
    ("meanRow", [(8, 4)], {"x": {0: "batch"}}, "reads a constant made from the size"),
    ("lstm", [(5, 2, 3), (2, 4), (2, 4), (3, 4, 4), (4, 4, 4), (4, 4)], {"x": {0: "steps"}},
     "runs a number of steps that changes with the size"),
])
def test_a_program_that_depends_on_the_size_refuses_the_axis(module, name, shapes, dynamic,
                                                              why):
    """meanRow divides by the row count; lstm runs one step per row of x."""
    function = module.meanRow if name == "meanRow" else \
        hilbert.open("Prelude.Sequences").function("lstm")
    with pytest.raises(HilbertError) as raised:
        function.onnx(*shapes, dynamic=dynamic)
    assert raised.value.code == "E600"
    assert "cannot be a dynamic axis" in raised.value.message and why in raised.value.message


@pytest.mark.parametrize("dynamic, words", [
    ({"z": {0: "batch"}}, "the parameters are x, w1, w2"),
    ({"x": {2: "batch"}}, "an axis is a number from 0 to 1"),
    ({"x": {0: "n"}, "w1": {0: "n"}}, "one name is one size"),
    (["x"], "dynamic= takes {parameter: {axis: name}}"),
])
def test_an_axis_that_is_not_one_is_e600(module, dynamic, words):
    with pytest.raises(HilbertError) as raised:
        module.mlp.onnx((8, 4), (4, 16), (16, 2), dynamic=dynamic)
    assert raised.value.code == "E600" and words in raised.value.message


def test_dynamic_axes_are_for_onnx_exports(module):
    with pytest.raises(HilbertError) as raised:
        module.mlp.export((8, 4), (4, 16), (16, 2), dynamic={"x": {0: "batch"}})
    assert raised.value.code == "E600" and "ONNX" in raised.value.message
    assert isinstance(module.mlp.export((8, 4), (4, 16), (16, 2), to="onnx",
                                        dynamic={"x": {0: "batch"}}), bytes)
