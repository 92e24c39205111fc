"""One dtype per call (docs/semantics.md, "Number types"): promotion of the arguments, weak
Python numbers, forced dtypes, results in the call's dtype on every executor, complex values
and the operations refused on them (E325). Expected values are NumPy's, computed here in the
same dtype."""

import numpy as np
import pytest
from conftest import needs

import hilbert

EXECUTORS = ("numba", "reference", "dask")


@pytest.fixture(params=EXECUTORS)
def every_executor(request) -> str:
    if request.param == "dask":
        needs("dask")
    return request.param


F32, F64, C64, C128 = (np.dtype(n) for n in ("float32", "float64", "complex64", "complex128"))

SOURCE = """
fn add(x, y) ↦ x + y
fn dense(a, w) ↦ tanh(einsum("np,pq->nq", a, w)) · 0.5 + 1
fn smooth(x) ↦ exp(x) / (1 + exp(x)) − ln(abs(x) + 1) · sqrt(abs(x))
fn total(x) ↦ einsum("ij->", x · x)
fn parts(z) ↦ re(z) · 2 − im(z) + abs(z)
fn conjugated(z) ↦ conj(z) · z
fn rotate(z, w) ↦ einsum("ij,jk->ik", z, w) ^ 2 / (z + 3)
fn count(x, t) ↦ if t = 0 then x else count(x · 0.5 + t / (t + 1), t − 1)
fn loss(w) ↦ einsum("i,i->", tanh(w), tanh(w))
fn grad_loss(w) ↦ ∂ loss(w) / ∂ w
fn clipped(z) ↦ max(z, 1)
fn ordered(z) ↦ if z < 1 then 1 else 2
fn tested(z) ↦ if z then 1 else 2
fn floored(z) ↦ floor(z)
fn largest(z) ↦ maximum(z, 0)
fn same(z) ↦ if z = 1 then z else 2 · z
fn modulus(z) ↦ if abs(z) > 1 then z else 2 · z
"""


@pytest.fixture(scope="module")
def source_module():
    return hilbert.compile_source(SOURCE, export_all=True)


def function(module, name: str, executor: str, **options):
    return getattr(module, name).using(executor, **options)


def array(rng, shape, dtype):
    dtype = np.dtype(dtype)
    values = rng.standard_normal(shape)
    if dtype.kind == "c":
        values = values + 1j * rng.standard_normal(shape)
    return values.astype(dtype)


def close(got, want, dtype, ulps: float = 64):
    """Equal to NumPy's result in the same dtype, within `ulps` of that dtype's epsilon
    relative to the result's scale."""
    eps = np.finfo(np.dtype(dtype)).eps
    got, want = np.asarray(got), np.asarray(want)
    scale = max(1.0, float(np.max(np.abs(want))) if want.size else 1.0)
    np.testing.assert_allclose(got, want, rtol=ulps * eps, atol=ulps * eps * scale)


# ---------------------------------------------------------------- which dtype a call takes

#: (arguments' dtypes, the call's dtype): NumPy's promotion, integers and booleans as float64,
#: float16 as float32.
PROMOTIONS = [
    (("float32", "float32"), "float32"),
    (("float32", "float64"), "float64"),
    (("float32", "complex64"), "complex64"),
    (("float64", "complex64"), "complex128"),
    (("complex64", "complex64"), "complex64"),
    (("complex128", "float32"), "complex128"),
    (("float16", "float16"), "float32"),
    (("float16", "float64"), "float64"),
    (("int32", "float32"), "float64"),
    (("bool", "float32"), "float64"),
    (("int64", "int64"), "float64"),
]


@pytest.mark.parametrize("given, expected", PROMOTIONS)
def test_the_call_takes_the_promotion_of_its_arrays(source_module, every_executor, given,
                                                   expected, rng):
    x, y = (np.ones(3, dtype=d) for d in given)
    result = function(source_module, "add", every_executor)(x, y)
    assert result.dtype == np.dtype(expected)
    np.testing.assert_array_equal(result, np.full(3, 2.0))


@pytest.mark.parametrize("number, expected", [(0.5, "float32"), (2, "float32"),
                                              (True, "float32"), (1j, "complex64"),
                                              (np.float64(0.5), "float64"),
                                              (np.float32(0.5), "float32"),
                                              (np.complex128(1j), "complex128")])
def test_python_numbers_are_weak_and_numpy_scalars_are_not(source_module, every_executor,
                                                          number, expected):
    x = np.ones(2, np.float32)
    result = function(source_module, "add", every_executor)(x, number)
    assert result.dtype == np.dtype(expected)
    np.testing.assert_array_equal(result, np.ones(2) + complex(number))


def test_python_numbers_alone_compute_in_float64_or_complex128(source_module):
    assert source_module.add(1.0, 2) == 3.0 and type(source_module.add(1.0, 2)) is float
    result = source_module.add(1.0, 2j)
    assert type(result) is complex and result == 1 + 2j


def test_a_scalar_result_keeps_its_dtype(source_module, every_executor):
    x = np.arange(4.0).reshape(2, 2)
    total = function(source_module, "total", every_executor)
    assert type(total(x)) is float
    single = total(x.astype(np.float32))
    assert type(single) is np.float32 and single == np.float32(14.0)
    z = total(x.astype(np.complex64))
    assert type(z) is np.complex64 and z == 14


@pytest.mark.parametrize("forced", ["float32", np.float32, np.dtype("complex128"), "float64"])
def test_a_forced_dtype_converts_every_argument(source_module, every_executor, forced, rng):
    name = np.dtype(forced).name
    a, w = array(rng, (3, 4), "float64"), array(rng, (4, 2), "float32")
    dense = function(source_module, "dense", every_executor, dtype=forced)
    result = dense(a, w)
    assert result.dtype == np.dtype(name)
    a_, w_ = a.astype(name), w.astype(name)
    close(result, np.tanh(a_ @ w_) * np.asarray(0.5, name) + np.asarray(1, name), name)
    assert dense.plan((3, 4), (4, 2)).dtype == name


def test_a_forced_dtype_is_carried_by_load_and_pickles(tmp_path):
    import pickle

    path = tmp_path / "m.hb"
    path.write_text("fn twice(x) ↦ 2 · x\n", encoding="utf-8")
    module = hilbert.load(path, dtype="float32")
    assert module.twice(np.ones(2)).dtype == np.float32
    again = pickle.loads(pickle.dumps(module))
    assert again.twice(np.ones(2)).dtype == np.float32
    function_again = pickle.loads(pickle.dumps(module.twice))
    assert function_again(np.ones(2)).dtype == np.float32
    assert module.twice.using("reference")(np.ones(2)).dtype == np.float32  # kept across


@pytest.mark.parametrize("bad", ["float16", "int32", "half", None, object])
def test_a_dtype_hilbert_does_not_compute_in_is_refused(source_module, bad):
    with pytest.raises(hilbert.ArgumentError) as raised:
        source_module.add.using(dtype=bad)
    assert raised.value.code == "E600" and "float32, float64, complex64 or complex128" in str(
        raised.value)


def test_a_complex_argument_to_a_real_forced_call_is_refused(source_module):
    with pytest.raises(hilbert.ArgumentError) as raised:
        source_module.add.using(dtype="float32")(np.ones(2), np.array([1j, 2]))
    assert raised.value.code == "E601" and "complex" in str(raised.value)


# ---------------------------------------------------------------- the plan

def test_the_plan_shows_the_dtype_and_counts_its_bytes(source_module, rng):
    dense = source_module.dense
    plans = {d: dense.using(dtype=d).plan((100, 50), (50, 20))
             for d in ("float32", "float64", "complex64", "complex128")}
    for name, plan in plans.items():
        assert plan.dtype == name
        assert f"executor numba · {name} · path optimiser auto" in str(plan)
        assert plan.to_dict()["dtype"] == name
    entries = plans["float64"].peak_bytes / 8
    assert plans["float32"].peak_bytes == entries * 4
    assert plans["complex64"].peak_bytes == entries * 8
    assert plans["complex128"].peak_bytes == entries * 16
    a32, w32 = array(rng, (100, 50), "float32"), array(rng, (50, 20), "float32")
    assert dense.plan(a32, w32).dtype == "float32"  # values: their dtype


def test_each_dtype_of_a_signature_gets_its_own_program(source_module, rng):
    dense = source_module.dense.using("numba")
    before = dense.plans_made
    a, w = array(rng, (3, 4), "float64"), array(rng, (4, 2), "float64")
    dense(a, w), dense(a, w)
    dense(a.astype(np.float32), w.astype(np.float32))
    dense(a.astype(np.float32), w.astype(np.float32))
    assert dense.plans_made - before == 2


def test_a_float32_call_on_the_numba_executor_runs_float32_compiled_code(source_module,
                                                                         monkeypatch, rng):
    monkeypatch.setenv("HILBERT_COMPILE", "eager")
    dense = source_module.dense.using("numba")
    a, w = array(rng, (30, 4), "float32"), array(rng, (4, 20), "float32")
    result = dense(a, w)
    assert dense.tier == "compiled" and result.dtype == np.float32
    close(result, np.tanh(a @ w) * np.float32(0.5) + np.float32(1), "float32", ulps=4)
    source = dense.program(((30, 4), (4, 20)), "float32").region.source
    assert source.startswith("import hilbert.executor.numba.kernels32 as K")
    assert "np.float32(0.5)" in source and "np.float64" not in source


# ---------------------------------------------------------------- values in each dtype

@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
def test_programs_agree_with_numpy_in_each_dtype(source_module, every_executor, dtype, rng):
    a, w = array(rng, (5, 3), dtype), array(rng, (3, 4), dtype)
    got = function(source_module, "dense", every_executor)(a, w)
    assert got.dtype == np.dtype(dtype)
    close(got, np.tanh(a @ w) * 0.5 + 1, dtype)

    z = array(rng, (4, 4), dtype)
    got = function(source_module, "rotate", every_executor)(z, z)
    assert got.dtype == np.dtype(dtype)
    close(got, (z @ z) ** 2 / (z + 3), dtype, ulps=256)

    x = array(rng, (6,), dtype)
    got = function(source_module, "smooth", every_executor)(x)
    close(got, np.exp(x) / (1 + np.exp(x)) - np.log(np.abs(x) + 1) * np.sqrt(np.abs(x)), dtype)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_conj_re_im_and_abs_of_complex_values(source_module, every_executor, dtype, rng):
    z = array(rng, (3, 5), dtype)
    real = np.dtype(dtype).type(0).real.dtype
    parts = function(source_module, "parts", every_executor)(z)
    assert parts.dtype == real
    close(parts, z.real * 2 - z.imag + np.abs(z), real)
    conjugated = function(source_module, "conjugated", every_executor)(z)
    assert conjugated.dtype == np.dtype(dtype)
    close(conjugated, np.conj(z) * z, dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_conj_re_im_of_real_values(source_module, every_executor, dtype, rng):
    x = array(rng, (4,), dtype)
    close(function(source_module, "parts", every_executor)(x), x * 2 + np.abs(x), dtype)
    close(function(source_module, "conjugated", every_executor)(x), x * x, dtype)


@pytest.mark.parametrize("dtype", ["float32", "complex64"])
def test_a_loop_keeps_the_call_dtype(source_module, every_executor, dtype, rng):
    x = array(rng, (3,), dtype)
    got = function(source_module, "count", every_executor)(x, 4)
    assert got.dtype == np.dtype(dtype)
    want = x.copy()
    for t in range(4, 0, -1):
        want = want * np.asarray(0.5, dtype) + np.asarray(t, dtype) / np.asarray(t + 1, dtype)
    close(got, want, dtype)


def test_the_gradient_in_float32_matches_central_differences_in_float64(source_module,
                                                                        every_executor, rng):
    w = rng.standard_normal(5)
    grad = function(source_module, "grad_loss", every_executor)(w.astype(np.float32))
    assert grad.dtype == np.float32
    step = 1e-6
    numeric = np.array([(np.sum(np.tanh(w + step * e) ** 2) - np.sum(np.tanh(w - step * e) ** 2))
                        / (2 * step) for e in np.eye(5)])
    eps32 = np.finfo(np.float32).eps
    np.testing.assert_allclose(grad, numeric, rtol=64 * eps32, atol=64 * eps32)


# ---------------------------------------------------------------- what needs real numbers

@pytest.mark.parametrize("name, words", [
    ("clipped", "max picks the larger or smaller number"),
    ("ordered", "the operator < orders numbers"),
    ("tested", "an if tests a complex value"),
    ("floored", "floor rounds a real number down"),
    ("largest", "maximum picks the larger or smaller number"),
    ("grad_loss", "∂ is taken here through complex values"),
])
def test_what_needs_real_numbers_refuses_a_complex_value_before_running(
        source_module, every_executor, name, words):
    shape = (3,) if name in ("clipped", "floored", "largest", "grad_loss") else ()
    z = np.ones(shape, np.complex128) * (1 + 1j)
    with pytest.raises(hilbert.CheckError) as raised:
        function(source_module, name, every_executor)(z)
    assert raised.value.code == "E325" and words in str(raised.value)
    # the same function of real numbers runs
    function(source_module, name, every_executor)(np.ones(shape))


def test_equality_and_real_parts_may_be_tested_in_a_complex_call(source_module,
                                                                  every_executor):
    same = function(source_module, "same", every_executor)
    assert same(1 + 0j) == 1 and same(2j) == 4j
    modulus = function(source_module, "modulus", every_executor)
    assert modulus(3j) == 3j and modulus(0.5j) == 1j


# ---------------------------------------------------------------- models

@pytest.fixture(scope="module")
def classifier():
    return hilbert.load(hilbert_example("Classifier.hb")).Classifier


def hilbert_example(name: str):
    from conftest import ROOT

    return ROOT / "examples" / name


def test_a_float32_model_trains_in_float32_from_its_float64_twins_draws(classifier, rng):
    x = rng.standard_normal((20, 3))
    y = np.eye(2)[rng.integers(0, 2, 20)]
    wide, single = classifier(3, 8, 2, 7), classifier(3, 8, 2, 7, dtype=np.float32)
    assert (wide.dtype, single.dtype) == ("float64", "float32")
    np.testing.assert_array_equal(single.first, wide.first.astype(np.float32))
    wide.train(x, y, 0.05, steps=20)
    single.train(x, y, 0.05, steps=20)
    assert single.first.dtype == np.float32 and single.eval(x).dtype == np.float32
    loss = single.loss(x, y)
    assert type(loss) is np.float32
    # float32 follows the float64 run (checked against NumPy in test_models.py) to within
    # float32's rounding over 20 steps
    eps32 = np.finfo(np.float32).eps
    np.testing.assert_allclose(single.first, wide.first, rtol=0, atol=4096 * eps32)
    assert abs(float(loss) - wide.loss(x, y)) <= 4096 * eps32 * max(1.0, wide.loss(x, y))


def test_a_float32_model_is_saved_loaded_and_pickled_as_float32(classifier, tmp_path):
    import pickle

    net = classifier(3, 4, 2, 1, dtype="float32")
    again = classifier.load(net.save(tmp_path / "net.npz"))
    assert again.dtype == "float32" and again.second.dtype == np.float32
    np.testing.assert_array_equal(again.second, net.second)
    copied = pickle.loads(pickle.dumps(net))
    assert copied.dtype == "float32"
    np.testing.assert_array_equal(copied.first, net.first)
    assert classifier.load(classifier(3, 4, 2, 1).save(tmp_path / "wide.npz")).dtype == "float64"


@pytest.mark.parametrize("bad", ["complex64", "int8"])
def test_a_model_dtype_is_float32_or_float64(classifier, bad):
    with pytest.raises(hilbert.HilbertError) as raised:
        classifier(3, 4, 2, 1, dtype=bad)
    assert raised.value.code in ("E600", "E801")


# ---------------------------------------------------------------- random programs in each dtype

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from test_properties import einsum_source, einsums  # noqa: E402

DTYPE_PROPERTY = settings(max_examples=8, deadline=None, derandomize=True, database=None,
                          suppress_health_check=[HealthCheck.too_slow,
                                                 HealthCheck.data_too_large,
                                                 HealthCheck.function_scoped_fixture])
#: Smooth entrywise operations, defined on complex values too (no comparisons, no floor): a
#: float32 rounding cannot flip a branch, so results agree to a tolerance scaled by epsilon.
SMOOTH = {"exp": np.exp, "tanh": np.tanh, "sin": np.sin, "cos": np.cos}
ARITHMETIC = {"+": np.add, "−": np.subtract, "·": np.multiply}


def smooth_expressions():
    leaves = st.one_of(st.sampled_from([("x",), ("y",)]),
                       st.sampled_from([0.5, 1.0, 2.0]).map(lambda v: ("const", v)))
    return st.recursive(leaves, lambda inner: st.one_of(
        st.tuples(st.just("bin"), st.sampled_from(sorted(ARITHMETIC)), inner, inner),
        st.tuples(st.just("un"), st.sampled_from(sorted(SMOOTH)), inner),
    ), max_leaves=6)


def smooth_source(e) -> str:
    match e:
        case (name,):
            return name
        case ("const", v):
            return repr(v)
        case ("bin", op, left, right):
            return f"({smooth_source(left)} {op} {smooth_source(right)})"
        case ("un", f, a):
            return f"{f}({smooth_source(a)})"
    raise AssertionError(e)


def smooth_value(e, env, dtype):
    """NumPy's value in `dtype` (constants weak: of the call's real type)."""
    match e:
        case (name,):
            return env[name]
        case ("const", v):
            return np.asarray(v, np.dtype(dtype).type(0).real.dtype)[()]
        case ("bin", op, left, right):
            return ARITHMETIC[op](smooth_value(left, env, dtype), smooth_value(right, env, dtype))
        case ("un", f, a):
            return SMOOTH[f](smooth_value(a, env, dtype))
    raise AssertionError(e)


@pytest.mark.parametrize("dtype", ["float32", "complex64", "complex128"])
@DTYPE_PROPERTY
@given(case=einsums())
def test_random_einsums_agree_with_numpy_in_each_dtype(every_executor, dtype, case):
    spec, operands = case
    values = [np.asarray(o * (1 + 0.5j) if dtype.startswith("complex") else o).astype(dtype)
              for o in operands]
    want = np.einsum(spec, *values)
    module = hilbert.compile_source(einsum_source(spec, len(values)), executor=every_executor)
    got = module.f(*values)
    assert np.asarray(got).dtype == np.dtype(dtype)
    close(got, want, dtype)


@pytest.mark.parametrize("dtype", ["float32", "complex64"])
@DTYPE_PROPERTY
@given(expression=smooth_expressions(), seed=st.integers(0, 2**32 - 1))
def test_random_entrywise_programs_agree_with_numpy_in_each_dtype(every_executor, dtype,
                                                                  expression, seed):
    rng = np.random.default_rng(seed)
    env = {"x": array(rng, (3, 4), dtype) * 0.5, "y": array(rng, (3, 4), dtype) * 0.5}
    text = f"fn f(x, y) ↦ {smooth_source(expression)} + 0 · x"
    got = hilbert.compile_source(text, executor=every_executor).f(env["x"], env["y"])
    with np.errstate(all="ignore"):
        want = smooth_value(expression, env, dtype) + 0 * env["x"]
    assert np.asarray(got).dtype == np.dtype(dtype)
    close(got, want, dtype, ulps=256)


def test_a_literal_beyond_float32s_range_is_its_largest_number_not_infinity(every_executor,
                                                                           rng):
    """The Prelude's causal mask lowers scores by 1e300 (the seed's definition): in float32
    that literal is 3.4028235e38, so the masked weights are 0, not 0 · ∞ = NaN."""
    layers = hilbert.load(hilbert_example("Layers.hb"), executor=every_executor)
    q, v = array(rng, (32, 8), "float32"), array(rng, (32, 8), "float32")
    got = layers.attendCausally(q, q, v, 8.0)
    assert got.dtype == np.float32 and not np.isnan(got).any()
    q64, v64 = q.astype(np.float64), v.astype(np.float64)
    scores = q64 @ q64.T / np.sqrt(8.0)
    scores[np.triu_indices(32, 1)] = -np.inf
    weights = np.exp(scores - scores.max(1, keepdims=True))
    close(got, weights / weights.sum(1, keepdims=True) @ v64, "float32", ulps=64)
    huge = hilbert.compile_source("fn f(x) ↦ x · 0 + 1e300 − 1e300 · (x = x)",
                                  executor=every_executor).f(np.ones(2, np.float32))
    np.testing.assert_array_equal(huge, np.float32([0, 0]))


def test_argmax_in_float32_marks_the_first_largest(every_executor, rng):
    x = array(rng, (6, 9), "float32")
    x[2, 3] = x[2, 7] = 50  # a tie: the first is marked
    got = hilbert.compile_source("fn f(x) ↦ argmax(x, 1)", executor=every_executor).f(x)
    want = np.zeros_like(x)
    want[np.arange(6), np.argmax(x, 1)] = 1
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, want)
