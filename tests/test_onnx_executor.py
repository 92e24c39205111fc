"""executor="onnx" (executor/onnx/executor.py): every Prelude definition equals the reference
executor (1e-12 in float64, 1e-5 relative in float32) or is refused with E600 naming what ONNX
cannot carry yet or what onnxruntime cannot run, never a raw onnxruntime error; every
exported Prelude definition passes onnx.checker; sessions are kept per signature; the plan
names the provider. Skipped as a whole without onnx and onnxruntime (the `onnx` extra)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from conftest import assert_agree  # noqa: E402
from hilbert.executor import NAMES, get_executor  # noqa: E402
from hilbert.grammar.errors import HilbertError  # noqa: E402
from test_dask_executor import EVERY, FAILS_BY_DESIGN, MODULES, arguments  # noqa: E402
from test_prelude_gradients import CHECKS, gradients, wrapped  # noqa: E402

import hilbert  # noqa: E402

#: Definitions refused, by what the refusal names: a draw (dropout) and erf in float64 (gelu:
#: onnxruntime's CPU Erf is float32 only).
REFUSALS = ("a counter-based draw", "Erf(")


@pytest.fixture(scope="module")
def prelude():
    return {ex: {m: hilbert.open(m, executor=ex) for m in MODULES}
            for ex in ("onnx", "reference")}


def _answers(function, args):
    try:
        result = function(*args)
    except HilbertError as err:
        return err
    return result if isinstance(result, tuple) else (result,)


def _agree(prelude, module, name, args, rtol):
    got = _answers(prelude["onnx"][module].function(name), args)
    if isinstance(got, HilbertError) and name not in FAILS_BY_DESIGN:
        assert got.code == "E600" and any(r in got.message for r in REFUSALS), str(got)
        return
    want = _answers(prelude["reference"][module].function(name), args)
    if name in FAILS_BY_DESIGN:
        assert isinstance(got, HilbertError) and got.code == want.code
        return
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert np.asarray(g).dtype == np.asarray(w).dtype
        assert_agree(g, w, rtol)


def _checked(function, args, dtype: str) -> None:
    """The model of `function` for these arguments' shapes (the program the call ran, kept
    per signature) passes onnx.checker and strict shape inference, where there is one."""
    try:
        model = function.onnx(*[np.shape(a) for a in args], dtype=dtype)
    except HilbertError as err:
        assert err.code in ("E600", "E311"), str(err)  # (meanPool: the seed's rank error)
        return
    onnx.checker.check_model(model, full_check=True)
    onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)


@pytest.mark.parametrize("module, name", EVERY)
def test_every_prelude_definition_equals_the_reference(prelude, module, name):
    """test_dask_executor's arguments (a signature per definition), in float64."""
    args = arguments(name)
    _agree(prelude, module, name, args, 1e-12)
    _checked(prelude["onnx"][module].function(name), args, "float64")


#: The modules also run in float32 (a third of the Prelude, for the suite's time): entrywise
#: ops, reductions, and loops whose counters stay float64 in a float32 call.
IN_FLOAT32 = ("Prelude.Arithmetic", "Prelude.Norms", "Prelude.Sequences")


@pytest.mark.parametrize("module, name", [(m, n) for m, n in EVERY if m in IN_FLOAT32])
def test_prelude_definitions_in_float32(prelude, module, name):
    """The same in float32 (positions and labels stay float64, as a call reads them)."""
    args = [a.astype(np.float32) if isinstance(a, np.ndarray) else a for a in arguments(name)]
    _agree(prelude, module, name, args, 1e-5)
    _checked(prelude["onnx"][module].function(name), args, "float32")


def test_most_of_the_prelude_runs(prelude):
    """The refusals above stay the exception: a count, so a new refusal is seen."""
    ran = sum(not isinstance(_answers(prelude["onnx"][m].function(n), arguments(n)),
                             HilbertError) for m, n in EVERY)
    assert ran >= 250 and len(EVERY) - ran <= 3  # (dropout, gelu, meanPool)


#: Gradient programs of test_prelude_gradients' table that run loops backwards: a fit, a
#: recurrence, an adversarial pair, conjugate gradients, an LSTM (x[t] in the loop: its
#: derivative writes at a computed row) and a GRU's steps.
BACKWARDS = [("Networks", "mlpFit"), ("Networks", "recurrent"), ("Networks", "criticLoop"),
             ("LinearAlgebra", "cgLoop"), ("Sequences", "lstm"), ("Sequences", "gruSteps")]


@pytest.mark.parametrize("module, key", BACKWARDS)
def test_derivatives_through_loops_equal_the_reference(module, key):
    """∂ Σ output · ω of each definition (test_prelude_gradients' wrappers): a Loop forward
    keeping its states, a Loop back down them; equal to the reference to 1e-12."""
    from hilbert.compiler import ir

    body = wrapped(module, "onnx").function(f"slope_{key}").entry.fused
    assert any(isinstance(n, ir.LoopGrad) for n in ir.everything(body))
    got, want = gradients(module, key, "onnx"), gradients(module, key, "reference")
    assert not isinstance(got, Exception), str(got)
    assert set(got) == set(want) == set(CHECKS[module, key].wrt)
    for parameter in want:
        assert_agree(got[parameter], want[parameter], 1e-12)


def test_onnx_is_an_executor_keeping_a_session_per_signature():
    assert "onnx" in NAMES and get_executor("onnx").prepare
    f = hilbert.compile_source("fn f(a, w) ↦ tanh(einsum(\"np,pq->nq\", a, w))",
                               executor="onnx").f
    np.testing.assert_allclose(f(np.ones((2, 3)), np.ones((3, 4))), np.tanh(np.full((2, 4), 3.0)))
    program = f.program(((2, 3), (3, 4)))
    session = program.session()
    f(np.ones((2, 3)), np.ones((3, 4)))
    assert f.program(((2, 3), (3, 4))) is program and program.session() is session
    assert f.program(((5, 3), (3, 4))) is not program
    assert "onnx: run by onnxruntime" in str(f.plan((2, 3), (3, 4)))
    assert "CPUExecutionProvider" in str(f.plan((2, 3), (3, 4)))


def test_a_provider_onnxruntime_lacks_is_e600():
    module = hilbert.compile_source("fn f(x) ↦ x + 1")
    assert module.f.using("onnx", provider="CPUExecutionProvider")(1.0) == 2.0
    with pytest.raises(HilbertError) as raised:
        module.f.using("onnx", provider="NoSuchExecutionProvider")
    assert raised.value.code == "E600" and "CPUExecutionProvider" in raised.value.message


def test_a_position_onnxruntime_refuses_is_the_hosts_e510():
    """x[7] of 4 rows: onnxruntime's Gather refuses it, and the call raises the reference
    executor's error, in its words."""
    source = "fn at(x, t) ↦ x[t] · 2"
    f = hilbert.compile_source(source, executor="onnx").at
    np.testing.assert_array_equal(f(np.ones((4, 2)), 3), [2.0, 2.0])
    with pytest.raises(HilbertError) as raised:
        f(np.ones((4, 2)), 7)
    with pytest.raises(HilbertError) as reference:
        hilbert.compile_source(source, executor="reference").at(np.ones((4, 2)), 7)
    assert raised.value.code == reference.value.code == "E510"
    assert raised.value.message == reference.value.message


def test_without_onnx_the_executor_is_a_coded_error(monkeypatch):
    """onnxruntime hidden (not unloaded: onnx and onnxruntime hold native state that a second
    import in one process would register twice)."""
    monkeypatch.delitem(sys.modules, "hilbert.executor.onnx.executor", raising=False)
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(HilbertError) as raised:
        get_executor("onnx")
    assert raised.value.code == "E600"
    assert "pip install 'hilbert[onnx]'" in raised.value.message


def test_a_contiguous_input_of_the_calls_dtype_is_bound_not_copied():
    """The session reads the caller's own buffer: an array changed after it was bound (and
    before the run) is read as changed. An array that must be converted first (float32 into
    a float64 program, a Fortran-ordered array) is bound as its copy, which the change misses. The
    output is written straight into the array the call returns."""
    f = hilbert.compile_source("fn f(a, w) ↦ einsum(\"np,pq->nq\", a, w) · 2",
                               executor="onnx").f
    rng = np.random.default_rng(1)
    a, w = rng.normal(size=(3, 4)), rng.normal(size=(4, 2))
    program = f.program(((3, 4), (4, 2)))
    session = program.session()
    arrays = program.arrays((a, w))
    assert arrays[0] is a and arrays[1] is w
    binding, outputs = program.bound(session, arrays)
    a[0, 0] += 1.0  # (after binding: read only where the buffer itself is bound)
    session.run_with_iobinding(binding)
    np.testing.assert_allclose(outputs[0], 2 * (a @ w), rtol=1e-12)

    for converted in (a.astype(np.float32), np.asfortranarray(a)):
        arrays = program.arrays((converted, w))
        assert arrays[0] is not converted
        binding, outputs = program.bound(session, arrays)
        before = 2 * (np.asarray(converted, np.float64) @ w)
        converted[0, 0] += 1.0
        session.run_with_iobinding(binding)
        np.testing.assert_allclose(outputs[0], before, rtol=1e-12)


def test_bound_calls_give_the_same_results_as_numpy():
    """Through the binding: a tuple of results, a scalar argument and result, float32."""
    module = hilbert.compile_source("""
fn pair(x, s) ↦ (x · s, einsum("ij->", x))
fn half(x) ↦ x / 2
""", executor="onnx")
    x = np.arange(6.0).reshape(2, 3)
    got = module.pair(x, 3.0)
    np.testing.assert_array_equal(got[0], x * 3)
    assert np.asarray(got[1]).shape == () and float(got[1]) == 15.0
    single = module.half(x.astype(np.float32))
    assert single.dtype == np.float32
    np.testing.assert_array_equal(single, x.astype(np.float32) / 2)
