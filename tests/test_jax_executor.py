"""The jax executor (docs/jax-executor.md): every Prelude definition equals the reference
executor and the numba executor's host tier (1e-12, float64, JAX's CPU backend); ∂ through
loops (hilbert's own reverse mode, loops run backwards from a tape) equals the reference's;
float32 and complex calls; counted, conditional and nested loops; `if` on traced conditions
(the branch not taken neither runs nor raises); draws bit for bit the reference's; runtime
errors as the other executors raise them; the device a plan names; the global x64 setting
left alone. Skipped as a whole without jax (the `jax` extra)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

jax = pytest.importorskip("jax")

from conftest import assert_agree  # noqa: E402
from hilbert.compiler import ir  # noqa: E402
from hilbert.compiler.ops.primitives import BY_OP  # noqa: E402
from hilbert.executor import NAMES, get_executor  # noqa: E402
from hilbert.executor.jax.meanings import MEANINGS  # noqa: E402
from hilbert.grammar.errors import HilbertError  # noqa: E402
from test_dask_executor import EVERY, FAILS_BY_DESIGN, MODULES, arguments  # noqa: E402
from test_limits import TAPED, taped_slope  # noqa: E402
from test_numba_executor import LOOP_CALLS, LOOPS  # noqa: E402
from test_prelude_gradients import CHECKS, gradients  # noqa: E402

import hilbert  # noqa: E402

RTOL = 1e-12


# ---------------------------------------------------------------- the op table

def test_every_op_of_the_table_has_a_jax_meaning():
    """Every op that can reach an executor (those with a NumPy meaning: the rest are written
    out before IR, as argmax and bernoulli are) has a JAX meaning, and no meaning names an op
    the table does not have."""
    in_ir = {op for op, row in BY_OP.items() if row.meaning is not None}
    assert len(in_ir) > 50
    assert sorted(in_ir - set(MEANINGS)) == []
    assert sorted(set(MEANINGS) - set(BY_OP)) == []


def test_jax_is_an_executor():
    assert "jax" in NAMES
    assert get_executor("jax").prepare


def test_without_jax_the_executor_is_a_coded_error(monkeypatch):
    for name in [m for m in sys.modules if m == "jax" or m.startswith("hilbert.executor.jax")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "jax", None)
    with pytest.raises(HilbertError) as raised:
        get_executor("jax")
    assert raised.value.code == "E600"
    assert "pip install 'hilbert[jax]'" in raised.value.message


# ---------------------------------------------------------------- every Prelude definition

@pytest.fixture(scope="module")
def prelude():
    """Each Prelude module on the jax executor, the reference and the numba executor's host
    tier (HILBERT_COMPILE=never: the planned path in NumPy, nothing compiled)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HILBERT_COMPILE", "never")
        yield {ex: {m: hilbert.open(m, executor=ex) for m in MODULES}
               for ex in ("jax", "reference", "numba")}


def _answers(function, args):
    try:
        result = function(*args)
    except HilbertError as err:
        return err
    return result if isinstance(result, tuple) else (result,)


@pytest.mark.parametrize("module, name", EVERY)
def test_every_prelude_definition_equals_the_other_executors(prelude, module, name):
    """The arguments are test_dask_executor's table (a signature per definition)."""
    args = arguments(name)
    got = _answers(prelude["jax"][module].function(name), args)
    for other in ("reference", "numba"):
        want = _answers(prelude[other][module].function(name), args)
        if name in FAILS_BY_DESIGN:
            assert isinstance(got, HilbertError) and isinstance(want, HilbertError)
            assert got.code == want.code
            continue
        assert not isinstance(got, HilbertError), str(got)
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert np.asarray(g).dtype == np.asarray(w).dtype
            assert_agree(g, w, RTOL)


#: Gradient programs of test_prelude_gradients' table that run loops backwards: a fit, a
#: recurrence, an adversarial pair, conjugate gradients, an LSTM and a GRU's steps.
BACKWARDS = [("Networks", "mlpFit"), ("Networks", "recurrent"), ("Networks", "criticLoop"),
             ("LinearAlgebra", "cgLoop"), ("Sequences", "lstm"), ("Sequences", "gruSteps")]


@pytest.mark.parametrize("module, key", BACKWARDS)
def test_derivatives_through_loops_equal_the_reference(module, key):
    """∂ Σ output · ω of each definition (test_prelude_gradients' wrappers), on the jax
    executor and on the reference: equal to 1e-12, and the program does run a loop
    backwards."""
    from test_prelude_gradients import wrapped

    body = wrapped(module, "jax").function(f"slope_{key}").entry.fused
    assert any(isinstance(n, ir.LoopGrad) for n in ir.everything(body))
    got, want = gradients(module, key, "jax"), gradients(module, key, "reference")
    assert not isinstance(got, Exception), str(got)
    assert set(got) == set(want) == set(CHECKS[module, key].wrt)
    for parameter in want:
        assert_agree(got[parameter], want[parameter], RTOL)


# ---------------------------------------------------------------- number types

@pytest.fixture(scope="module")
def nets():
    return {ex: hilbert.open("Prelude.Networks", executor=ex) for ex in ("jax", "reference")}


def test_float32_in_gives_float32_out(nets):
    rng = np.random.default_rng(3)
    a, w = rng.normal(size=(5, 4)).astype(np.float32), rng.normal(size=(4, 3)).astype(np.float32)
    got = nets["jax"].dense(a, w)
    want = nets["reference"].dense(a, w)
    assert got.dtype == want.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-6)
    x = np.array([[0, 1], [1, 1], [2, 1], [3, 1]], np.float32)
    y = np.array([[1], [3], [5], [7]], np.float32)
    w1 = np.array([[0.5, 0.3], [0.2, 0.4]], np.float32)
    w2 = np.array([[0.5], [0.5]], np.float32)
    z = np.array([[4, 1]], np.float32)
    fitted = nets["jax"].mlpPredict(np.float32(50), np.float32(0.05), x, y, w1, w2, z)
    expected = nets["reference"].mlpPredict(np.float32(50), np.float32(0.05), x, y, w1, w2, z)
    assert fitted.dtype == np.float32
    np.testing.assert_allclose(fitted, expected, rtol=1e-5)
    assert nets["jax"].function("dense").using(dtype="float32")([[1.0]], [[2.0]]).dtype == \
        np.float32


COMPLEX = """
fn phase(z) ↦ abs(z) + re(conj(z) · z)
fn turned(z, w) ↦ einsum("ij,jk->ik", z, w) · exp(w ^ 2)
def spin(t, z) ≔ if t = 0 then z else spin(t − 1, z · z / (abs(z) + 1))
fn spun(t, z) ↦ spin(t, z)
"""


def test_complex_calls_equal_the_reference():
    jx = hilbert.compile_source(COMPLEX, executor="jax")
    ref = hilbert.compile_source(COMPLEX, executor="reference")
    rng = np.random.default_rng(5)
    z = rng.normal(size=(3, 3)) + 1j * rng.normal(size=(3, 3))
    w = rng.normal(size=(3, 2)) + 1j * rng.normal(size=(3, 2))
    for name, args in (("phase", (z,)), ("turned", (z, w)), ("spun", (4.0, z))):
        got, want = getattr(jx, name)(*args), getattr(ref, name)(*args)
        assert got.dtype == want.dtype, name
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    z64 = z.astype(np.complex64)
    assert jx.turned(z64, w.astype(np.complex64)).dtype == np.complex64


# ---------------------------------------------------------------- loops

@pytest.fixture(scope="module")
def loops():
    return {ex: hilbert.compile_source(LOOPS, executor=ex) for ex in ("jax", "reference")}


@pytest.mark.parametrize("name, args", LOOP_CALLS)
def test_counted_conditional_and_nested_loops(loops, name, args):
    """test_numba_executor's loops; the steps counted equal the reference's."""
    jx, ref = getattr(loops["jax"], name), getattr(loops["reference"], name)
    shapes = tuple(np.shape(a) for a in args)
    before = jx.program(shapes).loop_steps, ref.program(shapes).loop_steps
    assert_agree(jx(*args), ref(*args))
    assert jx.program(shapes).loop_steps - before[0] == ref.program(shapes).loop_steps - before[1]


def test_a_counted_loop_count_from_a_value_runs_once_compiled(loops):
    """The step count is an argument: other counts run the same jitted program."""
    f = loops["jax"].swapped
    a, b = np.arange(6.0).reshape(2, 3), np.ones((2, 3))
    program = f.program(((), (2, 3), (2, 3)))
    for t in (1.0, 7.0, 30.0):
        assert_agree(f(t, a, b), loops["reference"].swapped(t, a, b))
    assert len(program._programs) == 1


def test_derivative_through_a_training_loop_matches_numpy_by_hand():
    """test_limits' tape program: ∂ through t steps of tanh(w x), against a NumPy run kept by
    hand (forward keeping every state, then back)."""
    module = hilbert.compile_source(TAPED, executor="jax")
    rng = np.random.default_rng(4)
    w, x = rng.normal(size=(10, 10)) * 0.3, rng.normal(size=(10, 10)) * 0.3
    for steps in (1, 5, 40):
        np.testing.assert_allclose(module.slope(steps, w, x), taped_slope(steps, w, x),
                                   rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(module.onlySlope(5, w, x),
                               hilbert.compile_source(TAPED, executor="reference").onlySlope(
                                   5, w, x), rtol=1e-12)


CONDITIONAL_BACKWARDS = """
def halve(a) ≔ if einsum("ij,ij->", a, a) < 1 then a else halve(a / 2 + a · a / 1e9)
fn slope(a) ↦ ∂ einsum("ij->", halve(a) · halve(a)) / ∂ a
def runOf(t, a) ≔ if t = 0 then a else runOf(t − 1, tanh(a) + 0.5 · a)
fn inside(t, a) ↦ if einsum("ij->", a) > 0 then ∂ einsum("ij->", runOf(t, a)) / ∂ a else a
"""


def test_a_conditional_loop_run_backwards_grows_its_tape():
    """The steps of a conditional loop are known only by running it: the first tape (16
    states) is too short for 40 halvings, so the call is traced again with a longer one; the
    same holds for a counted loop inside a branch, whose count is not taken at the call."""
    jx = hilbert.compile_source(CONDITIONAL_BACKWARDS, executor="jax")
    ref = hilbert.compile_source(CONDITIONAL_BACKWARDS, executor="reference")
    a = np.array([[3e5, -2e5], [1e5, 4e5]])
    assert_agree(jx.slope(a), ref.slope(a))
    assert len(jx.slope.program(((2, 2),))._programs) == 2
    b = np.array([[0.3, -0.2], [0.1, 0.4]])
    assert_agree(jx.inside(50.0, b), ref.inside(50.0, b))
    assert_agree(jx.inside(3.0, -b), ref.inside(3.0, -b))


# ---------------------------------------------------------------- if

BRANCHES = """
fn safe(x) ↦ if x > 0 then ln(x) else 0 · x
fn slope(x) ↦ ∂ safe(x) / ∂ x
fn pick(t, x) ↦ if t > 0 then x[t] else x[0] · 2
"""


def test_the_branch_not_taken_neither_counts_nor_raises():
    """lax.cond runs one branch: ln of a negative number in the other leaks no NaN into the
    value or its derivative, and x[t] of a t out of range raises only where it is read."""
    jx = hilbert.compile_source(BRANCHES, executor="jax")
    assert jx.safe(-2.0) == 0.0 and jx.slope(-2.0) == 0.0
    assert jx.safe(np.e) == pytest.approx(1.0) and jx.slope(2.0) == pytest.approx(0.5)
    x = np.arange(12.0).reshape(4, 3)
    np.testing.assert_array_equal(jx.pick(-5.0, x), 2 * x[0])
    np.testing.assert_array_equal(jx.pick(2.0, x), x[2])
    with pytest.raises(HilbertError) as raised:
        jx.pick(7.0, x)
    with pytest.raises(HilbertError) as expected:
        hilbert.compile_source(BRANCHES, executor="reference").pick(7.0, x)
    assert raised.value.code == expected.value.code == "E510"
    assert raised.value.message == expected.value.message


# ---------------------------------------------------------------- draws

DRAWS = """
open Prelude.Norms
fn u(k, t, x) ↦ uniform(k, t, x)
fn g(k, t, x) ↦ gaussian(k, t, x)
fn b(p, k, t, x) ↦ bernoulli(p, k, t, x)
fn order(k, t, v) ↦ permutation(k, t, v)
def walk(n, x, acc) ≔ if n = 0 then acc else
    walk(n − 1, x, acc + gaussian(7, n, x) + uniform(n, 3, x))
fn summed(n, x) ↦ walk(n, x, x ^ 0 · 0)
fn dropped(x, p, k, t) ↦ dropout(x, p, k, t)
"""


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_draws_are_bit_for_bit_the_references(dtype):
    jx = hilbert.compile_source(DRAWS, executor="jax")
    ref = hilbert.compile_source(DRAWS, executor="reference")
    x = np.zeros((7, 5), dtype)
    big = float(2 ** 63 + 2 ** 40)  # (a key past 2⁶³, whole in float32 too: top words matter)
    calls = [("u", (3.0, 11.0, x)), ("u", (big, 2.0 ** 40, x)), ("g", (5.0, 0.0, x)),
             ("b", (0.3, 9.0, 4.0, x)), ("order", (2.0, 1.0, np.zeros(33, dtype))),
             ("summed", (4.0, x)), ("dropped", (np.ones((6, 4), dtype), 0.5, 1.0, 2.0))]
    for name, args in calls:
        args = tuple(dtype(a) if np.ndim(a) == 0 else a for a in args)
        got, want = getattr(jx, name)(*args), getattr(ref, name)(*args)
        assert np.asarray(got).dtype == np.asarray(want).dtype == dtype, name
        np.testing.assert_array_equal(got, want, err_msg=name)


# ---------------------------------------------------------------- runtime errors

def _raised(module_text: str, name: str, *args) -> tuple[HilbertError, HilbertError]:
    errors = []
    for ex in ("jax", "reference"):
        with pytest.raises(HilbertError) as raised:
            getattr(hilbert.compile_source(module_text, executor=ex), name)(*args)
        errors.append(raised.value)
    return errors[0], errors[1]


@pytest.mark.parametrize("count", [-1.0, 2.5, float("nan"), float("inf")])
def test_a_bad_step_count_is_e500_as_on_the_reference(count):
    got, want = _raised(LOOPS, "swapped", count, np.ones((2, 2)), np.ones((2, 2)))
    assert got.code == want.code == "E500"
    assert got.message == want.message and str(got.span) == str(want.span)


def test_runtime_errors_inside_loops_are_raised_after_the_call():
    text = """
open Prelude.Losses
def reads(t, x, acc) ≔ if t = 0 then acc else reads(t − 1, x, acc + x[t + 1])
fn read(t, x) ↦ reads(t, x, x[0] · 0)
fn hot(labels) ↦ oneHot(labels, 3)
fn keyed(k, x) ↦ uniform(k, 0, x)
def inner(t, a) ≔ if t = 0 then a else inner(t − 1, a + 1)
def outer(n, s, a) ≔ if n = 0 then a else outer(n − 1, s, inner(s − n, a))
fn nested(n, s, a) ↦ outer(n, s, a)
"""
    for name, args, code in [("read", (3.0, np.ones((4, 2))), "E510"),
                             ("hot", (np.array([0.0, 1.0, 3.0]),), "E511"),
                             ("hot", (np.array([0.0, 1.5]),), "E511"),
                             ("keyed", (-1.0, np.ones(3)), "E512"),
                             ("keyed", (0.5, np.ones(3)), "E512"),
                             ("nested", (3.0, 1.0, np.ones(2)), "E500")]:
        got, want = _raised(text, name, *args)
        assert got.code == want.code == code, name
        assert got.message == want.message, name


def test_a_tape_over_the_memory_limit_is_e700_as_on_the_reference(monkeypatch):
    """At the call (the step count is an argument: nothing runs) and, inside a branch, when
    the call finds its tape too short (test_limits' programs)."""
    monkeypatch.setenv("HILBERT_MEMORY_LIMIT", "200K")
    module = hilbert.compile_source(TAPED, executor="jax")
    rng = np.random.default_rng(4)
    w, x = rng.normal(size=(10, 10)) * 0.3, rng.normal(size=(10, 10)) * 0.3
    program = module.slope.program(((), (10, 10), (10, 10)))
    for steps in (2000, 10 ** 9):
        with pytest.raises(HilbertError) as raised:
            module.slope(steps, w, x)
        assert raised.value.code == "E700"
        assert f"running run backwards keeps its state of every step: {steps:,} steps" in \
            raised.value.message
    assert program.loop_steps == 0
    np.testing.assert_array_equal(module.branch(10 ** 9, w, x), np.zeros((10, 10)))
    with pytest.raises(HilbertError) as raised:
        module.branch(1000, w, x)
    assert raised.value.code == "E700"


# ---------------------------------------------------------------- plans, devices, settings

def test_the_plan_names_the_executor_and_the_device(nets):
    plan = nets["jax"].function("dense").plan((4, 3), (3, 2))
    assert plan.executor == "jax"
    assert "executor jax" in str(plan)
    assert "jax: jitted for cpu:0 (XLA)" in str(plan)
    on_cpu = nets["jax"].function("dense").using(device="cpu:0")
    assert "jitted for cpu:0" in str(on_cpu.plan((4, 3), (3, 2)))
    with pytest.raises(HilbertError) as raised:
        nets["jax"].function("dense").using(device="cpu:7")
    assert raised.value.code == "E600" and "cpu:0" in raised.value.message


# ---------------------------------------------------------------- subnormal numbers on the CPU

SPECIAL = "fn special(x) ↦ (0 / x, 0 mod x, floor(x), x = 0, x · 1e-10, ln(x))"


def _special_in_numpy(x: np.ndarray) -> list[np.ndarray]:
    """SPECIAL's results in NumPy (IEEE 754)."""
    with np.errstate(all="ignore"):
        return [0 / x, np.mod(np.zeros_like(x), x), np.floor(x), (x == 0).astype(x.dtype),
                x * x.dtype.type(1e-10), np.log(x)]


def _same(got, want) -> None:
    """Equal, NaN for NaN, and each zero of the same sign."""
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got[want == 0]), np.signbit(want[want == 0]))


def _flushed(x: np.ndarray) -> np.ndarray:
    """`x` with each subnormal replaced by a zero of its sign."""
    return np.where(np.abs(x) < np.finfo(x.dtype).tiny, np.copysign(0, x), x).astype(x.dtype)


@pytest.mark.parametrize("dtype, tiny, small", [(np.float64, 1e-310, 1e-300),
                                                (np.float32, 1e-40, 1e-35)])
def test_subnormals_are_zeros_on_the_cpu_and_ieee_elsewhere(dtype, tiny, small):
    """docs/jax-executor.md, "Subnormal numbers on the CPU": XLA's CPU runtime reads a
    subnormal as ±0 and makes ±0 where a result would be subnormal (the table there); the
    numba executor keeps IEEE 754's values, NumPy's."""
    x = np.array([tiny, -tiny, small], dtype)
    module = hilbert.compile_source(SPECIAL)
    ieee = _special_in_numpy(x)
    for got, want in zip(module.special(x), ieee, strict=True):
        _same(got, want)
    on_cpu = module.special.using("jax", device="cpu")
    assert "subnormal numbers are zeros on cpu" in str(on_cpu.plan(x))
    got = on_cpu(x)
    flushed = [_flushed(r) for r in _special_in_numpy(_flushed(x))]
    for position in range(5):  # arithmetic and comparisons: NumPy's, on zeros for subnormals
        _same(got[position], flushed[position])
    assert not np.array_equal(got[0], ieee[0], equal_nan=True)  # the documented difference
    log = got[5][0]  # −∞ in float64; in float32 XLA's own logarithm of the bits, ≈ −104
    assert log == -np.inf if dtype == np.float64 else abs(log - ieee[5][0]) > 1


def test_the_global_x64_setting_is_left_alone(nets):
    before = jax.config.jax_enable_x64
    assert nets["jax"].dense(np.ones((2, 2)), np.ones((2, 2))).dtype == np.float64
    assert jax.config.jax_enable_x64 == before
    if not before:
        assert jax.numpy.zeros(2).dtype == np.float32


def test_a_program_runs_on_a_gpu_when_there_is_one(nets):
    try:
        gpus = jax.devices("gpu")
    except RuntimeError:
        gpus = []
    if not gpus:
        pytest.skip("JAX has no GPU here (jax.devices('gpu') is empty)")
    dense = nets["jax"].function("dense").using(device="gpu")
    assert "jitted for gpu:0" in str(dense.plan((64, 32), (32, 16)))
    rng = np.random.default_rng(1)
    a, w = rng.normal(size=(64, 32)), rng.normal(size=(32, 16))
    assert_agree(dense(a, w), nets["reference"].dense(a, w))
    x = np.array([[0, 1], [1, 1], [2, 1], [3, 1]], float)
    y = np.array([[1], [3], [5], [7]], float)
    fit = (200, 0.05, x, y, [[0.5, 0.3], [0.2, 0.4]], [[0.5], [0.5]], [[4, 1]])
    assert_agree(nets["jax"].function("mlpPredict").using(device="gpu")(*fit),
                 nets["reference"].mlpPredict(*fit))
