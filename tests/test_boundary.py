"""The Python boundary: every class of bad argument is a HilbertError that names the function,
the parameter, what was expected and what came; NaN and infinity in data follow IEEE."""

import fractions
import math
import subprocess
import sys

import numpy as np
import pytest
from conftest import EXECUTORS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hilbert

SOURCE = """
fn layer(a, w) ↦ einsum("np,pq->nq", a, w)
fn scale(x, k) ↦ k · x
fn width(m) ↦ columns(m)
fn largest(m) ↦ maximum(m, 1)
fn residual(y, p) ↦ y − p
def count(t, x) ≔ if t = 0 then x else count(t − 1, x + 1)
fn run(t, x) ↦ count(t, x)
fn chosen(c, x) ↦ if c then x else 0 − x
fn ratio(x, y) ↦ x / y
fn logs(x) ↦ ln(x)
fn compare(x, y) ↦ (x < y) + 2 · (x = y) + 4 · (x > y)
fn ones(x) ↦ x ^ 0
fn larger(x, y) ↦ max(x, y)
fn rowMax(x) ↦ maximum(x, 1)
fn total(x) ↦ einsum("i->", x)
"""


@pytest.fixture(scope="module", params=EXECUTORS)
def mod(request):
    return hilbert.compile_source(SOURCE, name="boundary.hb", executor=request.param)


class Opaque:
    """An object that is not a number."""


#: (name of the class of bad input, the call, words the error must contain): the function,
#: the parameter, what was expected and what came.
BAD_VALUES = [
    ("string", lambda m: m.scale("3", 1.0), ["scale", "argument x", "a number", "a string ('3')"]),
    ("bytes", lambda m: m.scale(b"3", 1.0), ["scale", "argument x", "a number", "a string"]),
    ("bytearray", lambda m: m.scale(bytearray(b"3"), 1.0), ["scale", "argument x", "a string"]),
    ("None", lambda m: m.scale(1.0, None), ["scale", "argument k", "a number", "None"]),
    ("object", lambda m: m.scale(Opaque(), 1.0), ["scale", "argument x", "a number", "a Opaque"]),
    ("dict", lambda m: m.scale({"a": 1}, 1.0), ["scale", "argument x", "a dict"]),
    ("set", lambda m: m.scale({1, 2}, 1.0), ["scale", "argument x", "a set"]),
    ("function", lambda m: m.scale(print, 1.0), ["scale", "argument x", "a number"]),
    ("ragged list", lambda m: m.scale([[1, 2], [3]], 1.0),
     ["scale", "argument x", "a number", "a ragged list"]),
    ("deeper ragged list", lambda m: m.scale([[1, 2], [3, [4]]], 1.0), ["argument x", "ragged"]),
    ("None inside a list", lambda m: m.scale([1.0, None], 1.0),
     ["scale", "argument x", "a list containing None"]),
    ("text inside a list", lambda m: m.scale([1.0, "2"], 1.0), ["argument x", "text"]),
    ("complex to a float32 call", lambda m: m.scale.using(dtype="float32")(1 + 2j, 1.0),
     ["scale", "argument x", "complex", "computes in float32"]),
    ("complex array to a float64 call", lambda m: m.scale.using(dtype=np.float64)(
        np.array([1j]), 1.0), ["argument x", "complex", "dtype=float64"]),
    ("string array", lambda m: m.scale(np.array(["a"]), 1.0), ["argument x", "text"]),
    ("datetime array", lambda m: m.scale(np.array(["2020"], dtype="datetime64[Y]"), 1.0),
     ["argument x", "datetime64"]),
    ("huge integer", lambda m: m.scale(10**400, 1.0), ["argument x", "too large for float64"]),
    ("huge integer in a list", lambda m: m.scale([1, 10**400], 1.0), ["argument x", "too large"]),
    ("masked array", lambda m: m.scale(np.ma.masked_array([1.0, 2.0], mask=[0, 1]), 1.0),
     ["argument x", "masked"]),
]


@pytest.mark.parametrize("label, call, words", BAD_VALUES, ids=[b[0] for b in BAD_VALUES])
def test_bad_values(mod, label, call, words):
    with pytest.raises(hilbert.ArgumentError) as raised:
        call(mod)
    err = raised.value
    assert err.code == "E601"
    for word in words:
        assert word in str(err), (word, str(err))
    assert ("must be a number or an array of numbers, but it is" in err.message
            or "is complex, but the call computes in" in err.message)


#: Shapes that break a rule: the error names the function, the parameter and both shapes.
BAD_SHAPES = [
    ("rank too low", lambda m: m.layer([1.0, 2.0], [[1.0]]), "E306",
     ["layer", "argument a", "a vector of 2", "np has 2 letter(s)"]),
    ("rank too high", lambda m: m.layer(np.ones((2, 2, 2)), np.ones((2, 2))), "E306",
     ["layer", "argument a", "a 2×2×2 rank-3 tensor"]),
    ("scalar for a matrix", lambda m: m.layer(3.0, np.ones((2, 2))), "E306",
     ["layer", "argument a", "a scalar"]),
    ("mismatched sizes", lambda m: m.layer(np.ones((2, 3)), np.ones((4, 5))), "E305",
     ["layer", "argument w", "letter p is 3", "but 4"]),
    ("n×1 minus n", lambda m: m.residual(np.ones((3, 1)), np.ones(3)), "E310",
     ["residual", "argument y", "a 3×1 matrix", "argument p", "a vector of 3"]),
    ("entrywise sizes differ", lambda m: m.residual(np.ones(3), np.ones(4)), "E310",
     ["residual", "a vector of 3", "a vector of 4"]),
    ("primitive rank", lambda m: m.width(np.ones(4)), "E311",
     ["width", "columns needs at least 2 axes", "argument m", "a vector of 4"]),
    ("axis out of range", lambda m: m.largest(np.ones(4)), "E314",
     ["largest", "maximum reduces axis 1", "argument m", "a vector of 4"]),
    ("empty reduction", lambda m: m.largest(np.ones((3, 0))), "E317",
     ["largest", "argument m", "a 3×0 matrix", "empty"]),
    ("condition not scalar", lambda m: m.chosen(np.ones(2), 1.0), "E312",
     ["chosen", "argument c", "a vector of 2"]),
    ("loop state rank", lambda m: m.run(np.array([3.0]), 0.0), "E312", ["run", "a vector of 1"]),
]


@pytest.mark.parametrize("label, call, code, words", BAD_SHAPES, ids=[b[0] for b in BAD_SHAPES])
def test_bad_shapes(mod, label, call, code, words):
    with pytest.raises(hilbert.CheckError) as raised:
        call(mod)
    assert raised.value.code == code
    for word in words:
        assert word in str(raised.value), (word, str(raised.value))


@pytest.mark.parametrize("count, why", [
    (-1, "negative"), (-0.5, "negative"), (2.5, "not whole"), (1e-9, "not whole"),
    (math.inf, "not finite"), (-math.inf, "not finite"), (math.nan, "not finite"),
])
def test_bad_step_counts(mod, count, why):
    with pytest.raises(hilbert.RuntimeHilbertError) as raised:
        mod.run(count, 0.0)
    err = raised.value
    assert err.code == "E500"
    assert err.message.startswith("count runs a counted loop, so its step count must be a "
                                  "non-negative whole number, but it was given")
    assert why in err.message
    assert "run(t: scalar, x: scalar)" in str(err)


_HUGE_COUNT = """
import hilbert
m = hilbert.compile_source("def c(t, x) ≔ if t = 0 then x else c(t − 1, x + 1)\\nfn r(t, x) ↦ c(t, x)",
                           executor="{executor}")
try:
    m.r(2.0 ** 60, 0.0)
except hilbert.RuntimeHilbertError as err:
    print(err.code, err.message)
"""


@pytest.mark.parametrize("executor", EXECUTORS)
def test_step_count_beyond_2_53_is_refused(executor):
    """Past 2^53 a float64 count cannot go down by one exactly; run in a subprocess so an
    executor that loops anyway fails the test instead of hanging it."""
    script = _HUGE_COUNT.format(executor=executor)
    try:
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              timeout=12)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{executor} ran a loop of 2^60 steps instead of refusing it")
    assert done.stdout.startswith("E500 ") and "too large to count down by one" in done.stdout


@pytest.mark.parametrize("count", [0, -0.0, 3, 3.0, np.float32(3), np.int64(3), True,
                                   fractions.Fraction(6, 2), np.array(3.0)])
def test_good_step_counts_of_every_numeric_type(mod, count):
    assert mod.run(count, 0.0) == float(count)


def test_argument_count_and_keywords(mod):
    for call, words in [(lambda: mod.scale(1.0), "scale is missing argument(s) k"),
                        (lambda: mod.scale(1.0, 2.0, 3.0), "scale takes 2 argument(s) (x, k)"),
                        (lambda: mod.scale(1.0, z=2.0), "scale has no parameter 'z'"),
                        (lambda: mod.scale(1.0, 2.0, x=1.0), "scale was given parameter x twice")]:
        with pytest.raises(hilbert.ArgumentError) as raised:
            call()
        assert raised.value.code == "E600" and words in raised.value.message


def test_good_values_of_every_kind(mod):
    expected = np.array([2.0, 4.0])
    for value in ([1, 2], (1, 2), np.array([1, 2], dtype=np.int8), np.array([1, 2], np.uint64),
                  np.array([1.0, 2.0], np.float16), np.array([True, True]) * np.array([1, 2]),
                  range(1, 3), np.ma.masked_array([1.0, 2.0]), [np.float32(1), 2],
                  [fractions.Fraction(1), 2], np.array([[1.0], [2.0]])[:, 0]):
        np.testing.assert_array_equal(mod.scale(value, 2), expected)
    assert mod.scale(np.longdouble(1.5), 2) == 3.0
    assert mod.scale([[10**30]], 1.0)[0, 0] == 1e30


# IEEE arithmetic inside data


def test_nan_and_infinity_follow_ieee(mod):
    inf, nan = math.inf, math.nan
    assert mod.ratio(1.0, 0.0) == inf and mod.ratio(-1.0, 0.0) == -inf
    assert math.isnan(mod.ratio(0.0, 0.0))
    assert mod.logs(0.0) == -inf and math.isnan(mod.logs(-1.0))
    # Comparisons with NaN are false, so all three flags are 0.
    assert mod.compare(nan, 1.0) == 0.0 and mod.compare(1.0, 2.0) == 1.0
    assert mod.compare(inf, inf) == 2.0
    np.testing.assert_array_equal(mod.ones(np.array([nan, inf, 0.0])), [1.0, 1.0, 1.0])
    assert math.isnan(mod.larger(nan, 1.0)) and math.isnan(mod.larger(1.0, nan))
    np.testing.assert_array_equal(mod.rowMax(np.array([[1.0, nan], [2.0, inf]])), [nan, inf])
    assert math.isnan(mod.total(np.array([1.0, nan])))
    assert math.isnan(mod.total(np.array([inf, -inf])))
    np.testing.assert_array_equal(mod.scale(np.array([inf, nan]), 0.0), [nan, nan])


SCALAR_EDGES = """
fn quotient(x) ↦ max(x, 1) / 0
fn nothing(x) ↦ max(x, 0) / 0 − max(x, 0) / 0
fn huge(x) ↦ max(x, 2) ^ 1e6
fn pole(x) ↦ max(x, 0) ^ (0 − 1)
fn logZero(x) ↦ ln(max(x, 0))
"""


@pytest.mark.parametrize("executor", EXECUTORS)
def test_scalar_ieee_edge_cases_on_every_executor(executor):
    """Scalar-only programs (which an executor may run without compiling) are IEEE too."""
    mod = hilbert.compile_source(SCALAR_EDGES, executor=executor)
    assert mod.huge(0.0) == math.inf and mod.pole(-1.0) == math.inf
    assert mod.logZero(-1.0) == -math.inf
    assert mod.quotient(0.0) == math.inf
    assert math.isnan(mod.nothing(0.0))


def test_nan_condition_counts_as_true(mod):
    # `if c` takes the first branch when c ≠ 0, and NaN ≠ 0 (docs/semantics.md).
    assert mod.chosen(math.nan, 2.0) == 2.0
    assert mod.chosen(0.0, 2.0) == -2.0 and mod.chosen(-0.0, 2.0) == -2.0


def test_nan_and_infinity_pass_through_the_boundary(mod):
    out = mod.scale(np.array([math.nan, math.inf, -math.inf]), 1.0)
    assert math.isnan(out[0]) and out[1] == math.inf and out[2] == -math.inf


def test_float32_inputs_stay_float32_and_a_float64_array_widens_them(mod):
    """A Python number is weak (JAX's rule): 1e-300 is a float32 zero in a float32 call. A
    NumPy float64 (an array of one number, or a NumPy scalar) promotes the call to float64."""
    small = np.array([1e-30], dtype=np.float32)
    result = mod.scale(small, 1e-300)
    assert result.dtype == np.float32 and result[0] == 0.0
    assert mod.scale(small, 3.0)[0] == np.float32(1e-30) * np.float32(3.0)
    wide = mod.scale(small, np.float64(1e-300))
    assert wide.dtype == np.float64 and wide[0] == pytest.approx(float(small[0]) * 1e-300)


# Any Python value at all: a result or a HilbertError, never another exception


values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.complex_numbers(),
              st.text(max_size=3), st.binary(max_size=3), st.just(Opaque()),
              st.fractions(), st.decimals(allow_nan=False)),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.tuples(inner, inner),
                            st.dictionaries(st.text(max_size=1), inner, max_size=2)),
    max_leaves=8)


@settings(max_examples=150, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(values, values)
def test_any_python_value_gives_a_result_or_a_hilbert_error(mod, x, k):
    """On every executor (`mod` is compiled once per executor)."""
    try:
        result = mod.scale(x, k)
    except hilbert.HilbertError as err:
        assert err.code in ("E310", "E601"), str(err)
        assert "scale" in str(err)
    else:
        assert isinstance(result, (float, complex, np.ndarray))
