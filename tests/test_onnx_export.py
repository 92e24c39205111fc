"""Export to ONNX (hilbert/export.py, executor/onnx/): every model is valid (onnx.checker with
full checks, strict shape inference); each einsum step along the plan's path is a Gemm or
MatMul where it is a product, an Einsum otherwise; entrywise ops, reductions, concat, slices
and x[t] run in onnxruntime to NumPy's answer written here; what ONNX cannot carry yet is E600
naming it; loops are ONNX's Loop and an `if` on values its If; the command writes the model;
the original's two graph facts; a model trained by hilbert, its weights initializers, run by
a plain onnxruntime session in a process that never imports hilbert. Skipped as a whole
without onnx and onnxruntime (the `onnx` extra)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from conftest import ROOT, assert_agree  # noqa: E402
from hilbert.grammar.errors import HilbertError  # noqa: E402

import hilbert  # noqa: E402
from hilbert.cli import EXIT_OK, EXIT_USAGE, main  # noqa: E402

SOURCE = """open Prelude.Networks
open Prelude.Arithmetic
fn mlp(x, w1, w2) ↦ dense(relu(dense(x, w1)), w2)
fn errorOf(p, a) ↦ (p − a) · (p − a)
fn slopeOf(rise, run) ↦ rise / run
fn chain(a, b, c) ↦ einsum("ij,jk,kl->il", a, b, c)
fn batched(a, b) ↦ einsum("bij,bjk->bki", a, b)
fn trace(a) ↦ einsum("ii->", a)
fn outer(u, v) ↦ einsum("i,j->ij", u, v)
fn pieces(x) ↦ concat(x[1 : 3], exp(x[0 : 2]) − cumsum(x[0 : 2], 0), 0)
fn reduced(x) ↦ maximum(x, 1) + minimum(x, 1) · product(x, 1) − rows(x)
fn at(x, t) ↦ x[t] · 2 + sqrt(abs(x[t])) + (x[t] >= 0)
fn hot(labels) ↦ oneHot(labels, 3)
fn fit(t, w) ↦ if t = 0 then w else fit(t − 1, w − 0.1 · tanh(w))
def halving(a) ≔ if einsum("ij,ij->", a, a) < 1 then a else halving(a / 2)
fn halved(a) ↦ halving(a)
def twice(t, a) ≔ if t = 0 then a else twice(t − 1, tanh(a))
def around(t, a) ≔ if t = 0 then a else around(t − 1, twice(2, a) · 0.5 + a)
fn nested(t, a) ↦ around(t, a)
fn slopeGiven(t, w) ↦ ∂ einsum("ij->", fit(t, w)) / ∂ w
fn noise(k, x) ↦ gaussian(k, 1, x) + x
fn running(x) ↦ cumprod(x, 0)
fn pick(x) ↦ if einsum("i->", x) > 0 then x else 0 − x
"""
MLP = ((8, 4), (4, 16), (16, 2))


@pytest.fixture(scope="module")
def module():
    return hilbert.compile_source(SOURCE)


def checked(model):
    """`model`, once onnx.checker (every check) and strict shape inference pass on it."""
    onnx.checker.check_model(model, full_check=True)
    onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    return model


#: The NumPy dtype of each element type an exported model's inputs have.
TYPES = {"tensor(double)": np.float64, "tensor(float)": np.float32}


def run(model, *args):
    """`model` run by a plain onnxruntime session on the CPU, each argument given in the
    dtype its input has (a position is read in float64 in every call: docs/onnx.md)."""
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    inputs = session.get_inputs()
    return session.run(None, {i.name: np.asarray(a, TYPES[i.type])
                              for i, a in zip(inputs, args, strict=True)})[0]


def ops(model) -> list[str]:
    return [n.op_type for n in model.graph.node]


def test_an_mlp_exports_its_products_as_gemm(module):
    model = checked(module.mlp.onnx(*MLP))
    assert model.graph.name == "mlp"
    assert ops(model) == ["Gemm", "Max", "Gemm"]  # (relu: max(z, 0))
    assert [i.name for i in model.graph.input] == ["x", "w1", "w2"]
    assert [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim] == [8, 4]
    rng = np.random.default_rng(0)
    args = [rng.normal(size=s) for s in MLP]
    want = np.maximum(args[0] @ args[1], 0) @ args[2]
    np.testing.assert_allclose(run(model, *args), want, rtol=1e-12)
    assert module.mlp.export(*MLP, to="onnx") == model.SerializeToString()
    in32 = checked(module.mlp.onnx(*MLP, dtype="float32"))
    assert in32.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.FLOAT
    got = run(in32, *[a.astype(np.float32) for a in args])
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


def test_each_einsum_step_of_the_plans_path_is_a_product_where_it_is_one(module):
    """Three operands: two steps along the plan's path, each a Gemm; a batched product a
    MatMul (and the transpose its output order asks); a trace and an outer product, which are
    not products, an Einsum."""
    rng = np.random.default_rng(1)
    shapes = ((2, 30), (30, 40), (40, 3))
    plan = module.chain.plan(*shapes)
    (path, steps), = plan.paths.values()
    assert len(steps) == 2
    model = checked(module.chain.onnx(*shapes))
    assert ops(model) == ["Gemm", "Gemm"]
    a, b, c = (rng.normal(size=s) for s in shapes)
    np.testing.assert_allclose(run(model, a, b, c), a @ b @ c, rtol=1e-12)
    model = checked(module.batched.onnx((5, 2, 3), (5, 3, 4)))
    assert ops(model) == ["MatMul", "Transpose"]
    x, y = rng.normal(size=(5, 2, 3)), rng.normal(size=(5, 3, 4))
    np.testing.assert_allclose(run(model, x, y), np.einsum("bij,bjk->bki", x, y), rtol=1e-12)
    for f, shapes, spec in [(module.trace, ((4, 4),), "ii->"), (module.outer, ((3,), (2,)),
                                                                  "i,j->ij")]:
        model = checked(f.onnx(*shapes))
        assert ops(model) == ["Einsum"]
        args = [rng.normal(size=s) for s in shapes]
        np.testing.assert_allclose(run(model, *args), np.einsum(spec, *args), rtol=1e-12)


def test_broadcasting_ones_are_not_computed_and_a_row_sum_is_reducesum():
    """Attention: softmaxRows lifts each row's maximum and sum to the scores' shape as an
    einsum with ones (m ^ 0, docs/onnx.md): written as an Expand to the scores' Shape, no
    Pow and no ones computed; the row sum a ReduceSum; no constant left unread (the row
    maximum is NaN where the row holds one: the test below). Equal to the softmax written in
    NumPy."""
    layers = hilbert.load(str(ROOT / "examples" / "Layers.hb"))
    model = checked(layers.attend.onnx((6, 4), (5, 4), (5, 3), ()))
    assert ops(model) == ["Gemm", "Sqrt", "Div", "Shape", "ReduceMax", "IsNaN", "Cast",
                          "ReduceMax", "Greater", "Where", "Unsqueeze", "Expand", "Sub", "Exp",
                          "ReduceSum", "Unsqueeze", "Expand", "Div", "Gemm"]
    read = {name for node in model.graph.node for name in node.input}
    assert {i.name for i in model.graph.initializer} <= read
    rng = np.random.default_rng(2)
    q, k, v = rng.normal(size=(6, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 3))
    s = q @ k.T / 2.0
    e = np.exp(s - s.max(axis=1, keepdims=True))
    np.testing.assert_allclose(run(model, q, k, v, 4.0), e / e.sum(axis=1, keepdims=True) @ v,
                               rtol=1e-12)


def test_an_lstms_step_reads_its_gates_without_masks_or_powers():
    """Sequences.lstm's gates are shifts of the gate axis whose positions are all inside it
    (a Gather, no Where against a mask of ones) and its bias is lifted without computing
    ones (no Pow), in the Loop's body too; equal to the reference executor."""
    lstm = hilbert.open("Prelude.Sequences").function("lstm")
    shapes = ((3, 2, 4), (2, 5), (2, 5), (4, 5, 4), (5, 5, 4), (5, 4))
    model = checked(lstm.onnx(*shapes))

    def every(graph):
        for node in graph.node:
            yield node.op_type
            for attribute in node.attribute:
                if attribute.HasField("g"):
                    yield from every(attribute.g)
    found = list(every(model.graph))
    assert "Loop" in found and "Where" not in found and "Pow" not in found
    rng = np.random.default_rng(3)
    args = [rng.normal(size=s) for s in shapes]
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    got = session.run(None, dict(zip(lstm.entry.params, args, strict=True)))
    want = hilbert.open("Prelude.Sequences", executor="reference").function("lstm")(*args)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_a_maximum_or_minimum_of_values_holding_nan_is_nan_as_numpys(dtype):
    """onnxruntime's ReduceMax and ReduceMin skip NaN; NumPy's maximum and minimum (the
    reference executor's) give NaN, and so does the exported graph."""
    f = hilbert.compile_source("""
fn highs(x) ↦ maximum(x, 1)
fn lows(x) ↦ minimum(x, 0)
""")
    x = np.array([[1.0, np.nan, 3.0], [-np.inf, 1.0, 2.0], [4.0, 2.0, np.inf]], dtype)
    for function, want in ((f.highs, np.max(x, axis=1)), (f.lows, np.min(x, axis=0))):
        model = checked(function.onnx((3, 3), dtype=dtype))
        np.testing.assert_array_equal(run(model, x), want)


@pytest.mark.parametrize("dtype, rtol", [("float64", 1e-12), ("float32", 1e-5)])
def test_entrywise_ops_reductions_concat_slices_and_positions(module, dtype, rtol):
    rng = np.random.default_rng(2)
    x = rng.normal(size=(4, 3)).astype(dtype)
    cases = [
        (module.pieces, (x,), np.concatenate([x[1:3], np.exp(x[0:2]) - np.cumsum(x[0:2], 0)])),
        (module.reduced, (x,), x.max(1) + x.min(1) * x.prod(1) - 4),
        (module.at, (x, np.float64(2)), x[2] * 2 + np.sqrt(np.abs(x[2])) + (x[2] >= 0)),
        (module.hot, (np.array([2, 0, 1, 1], dtype),), np.eye(3)[[2, 0, 1, 1]]),
    ]
    for f, args, want in cases:
        model = checked(f.onnx(*[np.shape(a) for a in args], dtype=dtype))
        got = run(model, *args)
        assert got.dtype == np.dtype(dtype)
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)
    assert "Gather" in ops(module.at.onnx((4, 3), (), dtype=dtype))  # (t a value: read there)


def _fit(t, w):
    for _ in range(t):
        w = w - 0.1 * np.tanh(w)
    return w


def _nested(t, a):
    for _ in range(t):
        a = np.tanh(np.tanh(a)) * 0.5 + a
    return a


def _halved(a):
    while (a * a).sum() >= 1:
        a = a / 2
    return a


@pytest.mark.parametrize("dtype, rtol", [("float64", 1e-12), ("float32", 1e-5)])
def test_loops_are_onnx_loops_and_an_if_on_values_is_onnx_if(module, dtype, rtol):
    """A counted loop whose count is an argument (each count one model), a conditional loop,
    a loop inside a loop, and an `if` on a sum, against NumPy loops written here."""
    rng = np.random.default_rng(4)
    w, a = rng.normal(size=(3, 2)).astype(dtype), (4 * rng.normal(size=(2, 2))).astype(dtype)
    cases = [(module.fit, (np.float64(5), w), _fit(5, w)), (module.halved, (a,), _halved(a)),
             (module.nested, (np.float64(3), w), _nested(3, w))]
    for f, args, want in cases:
        model = checked(f.onnx(*[np.shape(x) for x in args], dtype=dtype))
        assert "Loop" in ops(model)
        np.testing.assert_allclose(run(model, *args), want, rtol=rtol, atol=rtol)
        assert "Loop" in ops(checked(f.onnx(*[np.shape(x) for x in args], dtype=dtype)))
    model = checked(module.pick.onnx((3,), dtype=dtype))
    assert ops(model)[-1] == "If"
    for x in (np.array([1.0, -0.5, 2]), np.array([-1.0, 0.5, -2])):
        x = x.astype(dtype)
        np.testing.assert_allclose(run(model, x), x if x.sum() > 0 else -x, rtol=rtol)


def test_a_derivative_through_a_loop_is_a_loop_and_a_loop_down_its_tape(module):
    """∂ Σ fit(t, w) / ∂ w, t an argument: the forward Loop keeps each step's state (its scan
    output), a second Loop runs the vjp down it; against the chain rule in NumPy, each
    step's slope 1 − 0.1 (1 − tanh² w)."""
    rng = np.random.default_rng(5)
    w = rng.normal(size=(3, 2))
    model = checked(module.slopeGiven.onnx((), (3, 2)))
    # (the compiler's program: fit once for its value, whose x ^ 0 is the seed; then fit
    # again keeping its tape, and the Loop down the tape)
    assert ops(model).count("Loop") == 3
    want, at = np.ones_like(w), w
    for _ in range(4):
        want, at = want * (1 - 0.1 * (1 - np.tanh(at) ** 2)), at - 0.1 * np.tanh(at)
    np.testing.assert_allclose(run(model, np.float64(4), w), want, rtol=1e-12)
    np.testing.assert_allclose(run(model, np.float64(0), w), np.ones_like(w), rtol=1e-12)


@pytest.mark.parametrize("name, shapes, says", [
    ("noise", ((), (5,)), "keyedgaussian (a counter-based draw"),
    ("running", ((4,),), "cumprod (a running product"),
])
def test_what_onnx_cannot_carry_yet_is_e600_naming_it(module, name, shapes, says):
    with pytest.raises(HilbertError) as raised:
        module.function(name).onnx(*shapes)
    assert raised.value.code == "E600"
    assert says in raised.value.message


def test_complex_numbers_are_refused_saying_why(module):
    with pytest.raises(HilbertError) as raised:
        module.errorOf.onnx((), (), dtype="complex128")
    assert raised.value.code == "E600"
    assert "onnxruntime has no complex arithmetic" in raised.value.message


def test_the_originals_graphs_of_errorOf_and_slopeOf(module):
    """ORIGINAL.md's facts: ErrorOfGraph is named "errorOf" and has 3 nodes (two subtractions
    and a multiply: the repeated p − a is not shared); SlopeOfGraph has 1 node. hilbert's
    graph of errorOf has 2, on purpose: its IR holds one node for the two equal expressions
    p − a (computed once by every executor), which the graph's one Sub is, read twice by the
    Mul. Its values are the original's (errorOf(5, 3) = 4, the vector and broadcast cases)."""
    graph = module.errorOf.graph()
    assert graph.name == "errorOf"
    assert [n.op_type for n in graph.node] == ["Sub", "Mul"]
    assert list(graph.node[1].input) == [graph.node[0].output[0]] * 2
    slope = module.slopeOf.graph()
    assert slope.name == "slopeOf" and [n.op_type for n in slope.node] == ["Div"]
    on_onnx = module.errorOf.using("onnx")
    assert on_onnx(5.0, 3.0) == 4.0 and on_onnx(1.0, 3.0) == on_onnx(5.0, 3.0)
    np.testing.assert_array_equal(on_onnx([1.0, 2, 3], [1.0, 4, 0]), [0, 4, 9])
    np.testing.assert_array_equal(on_onnx(3.0, [1.0, 2, 3]), [4, 1, 0])
    assert module.slopeOf.using("onnx")(4.0, 2.0) == 2.0


@pytest.mark.timeout(200)
def test_the_bytes_are_the_same_in_another_process(module, tmp_path):
    """Another interpreter (another hash seed, an empty cache of its own) writes the same
    models, byte for byte: a product, a loop and a derivative through it."""
    script = ("import hilbert, sys\n"
              f"m = hilbert.compile_source({SOURCE!r})\n"
              f"sys.stdout.buffer.write(m.mlp.export(*{MLP!r}, to='onnx'))\n"
              "sys.stdout.buffer.write(m.slopeGiven.export((), (3, 2), to='onnx'))\n")
    other = subprocess.run([sys.executable, "-c", script], capture_output=True, cwd=ROOT,
                           timeout=180, check=True,
                           env={**os.environ, "PYTHONHASHSEED": "7",
                                "HILBERT_CACHE_DIR": str(tmp_path)}).stdout
    here = module.mlp.export(*MLP, to="onnx") + module.slopeGiven.export((), (3, 2), to="onnx")
    assert other == here


def test_the_command_writes_the_model(write_hb, tmp_path, capsys, module):
    path = write_hb("Mlp.hb", SOURCE)
    shapes = ["--shape", "x=8x4", "--shape", "w1=4x16", "--shape", "w2=16x2"]
    out = tmp_path / "model.onnx"
    assert main(["export", str(path), "mlp", *shapes, "--to", "onnx", "-o", str(out)]) == EXIT_OK
    assert out.read_bytes() == module.mlp.export(*MLP, to="onnx")
    assert ops(checked(onnx.load(str(out)))) == ["Gemm", "Max", "Gemm"]
    assert main(["export", str(path), "mlp", *shapes, "--to", "onnx"]) == EXIT_USAGE
    assert "give -o OUT" in capsys.readouterr().err
    dynamic = ["--dynamic", "x:0=batch"]
    assert main(["export", str(path), "mlp", *shapes, "--to", "onnx", *dynamic, "-o",
                 str(out)]) == EXIT_OK
    assert out.read_bytes() == module.mlp.export(*MLP, to="onnx", dynamic={"x": {0: "batch"}})
    assert onnx.load(str(out)).graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    assert main(["export", str(path), "mlp", *shapes, "--to", "onnx", "--dynamic", "x=batch",
                 "-o", str(out)]) == EXIT_USAGE
    assert "write NAME:AXIS=SIZE" in capsys.readouterr().err


#: A process that loads the model with onnxruntime alone and fails if hilbert was imported.
PLAIN = """import sys
import numpy as np
import onnxruntime
session = onnxruntime.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
given = np.load(sys.argv[2])
out = session.run(None, {i.name: given[i.name] for i in session.get_inputs()})[0]
assert not any(m.split(".")[0] == "hilbert" for m in sys.modules), "hilbert was imported"
np.save(sys.argv[3], out)
"""


@pytest.mark.timeout(120)
def test_a_model_trained_by_hilbert_runs_in_a_plain_session_in_a_fresh_process(tmp_path):
    """examples/Perceptron.hb trained on XOR by hilbert; its `eval` member exported with the
    trained weights as initializers (its one input: x), run in a process that never imports
    hilbert: the same predictions as the trained net's."""
    Perceptron = hilbert.load(ROOT / "examples" / "Perceptron.hb").Perceptron
    x, y = np.array([[0.0, 0], [0, 1], [1, 0], [1, 1]]), np.array([[0.0], [1], [1], [0]])
    net = Perceptron(2, 8, seed=7)
    net.train(x, y, 0.5, steps=200)
    model = checked(net.eval.onnx(x))
    assert [i.name for i in model.graph.input] == ["x"]
    weights = {i.name: onnx.numpy_helper.to_array(i) for i in model.graph.initializer}
    assert any(np.array_equal(w, net.first) for w in weights.values())
    path, given, out = tmp_path / "xor.onnx", tmp_path / "given.npz", tmp_path / "out.npy"
    path.write_bytes(model.SerializeToString())
    np.savez(given, x=x)
    subprocess.run([sys.executable, "-c", PLAIN, str(path), str(given), str(out)],
                   cwd=tmp_path, check=True, timeout=100)
    # (to 1e-12 of the predictions' scale: the prediction for [1, 1], about 4e-14, is a sum
    # of terms near 1 that cancel, its last bits the order onnxruntime's Gemm adds them in)
    assert_agree(np.load(out), net.eval(x), 1e-12)
