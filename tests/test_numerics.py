"""Executor numerics on both executors: results never share memory with inputs, `x ^ y` is
NumPy's power of two float64 scalars on every special value, no NumPy warning escapes on
inf/NaN data, and an einsum over an index mask reads the shifted operand (zero padded)."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest

import hilbert

inf, nan = math.inf, math.nan

# ---------------------------------------------------------------- results are fresh arrays

VIEWS = """
fn swapped(x) ↦ einsum("ij->ji", x)
fn diagonal(x) ↦ einsum("ii->i", x)
fn same(x) ↦ einsum("ij->ij", x)
def keep(t, x) ≔ if t = 0 then x else keep(t − 1, einsum("ij->ji", einsum("ij->ji", x)))
fn kept(t, x) ↦ keep(t, x)
fn picked(c, x) ↦ if c > 0 then einsum("ij->ji", x) else 2 · einsum("ij->ji", x)
"""


def view_inputs():
    """C-ordered float64 arrays that are views of other arrays (no conversion copies them)."""
    square = np.arange(9.0).reshape(3, 3)                  # a view of arange
    rows = np.arange(12.0).reshape(4, 3)[1:3]              # a slice of rows of a view
    return {"swapped": (np.arange(6.0).reshape(2, 3),), "diagonal": (square,),
            "same": (rows,), "kept": (0.0, square), "picked": (1.0, rows)}


@pytest.mark.parametrize("name", ["swapped", "diagonal", "same", "kept", "picked"])
def test_results_never_share_memory_with_view_inputs(executor, name):
    mod = hilbert.compile_source(VIEWS, executor=executor)
    args = view_inputs()[name]
    before = [np.array(a, copy=True) for a in args]
    result = getattr(mod, name)(*args)
    for a in args:
        assert not np.shares_memory(result, a), name
    result[...] = 99.0
    for a, b in zip(args, before, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", ["swapped", "diagonal", "same", "kept", "picked"])
def test_executor_programs_return_fresh_arrays(executor, name):
    """The guarantee holds for the executor's own programs too (models call them directly)."""
    mod = hilbert.compile_source(VIEWS, executor=executor)
    args = tuple(np.asarray(a, dtype=np.float64) for a in view_inputs()[name])
    program = mod.function(name).program(tuple(a.shape for a in args))
    result = program(args)
    assert not any(np.shares_memory(result, a) for a in args)


def test_results_of_compiled_code_are_detached_without_comparing_memory(monkeypatch):
    """Compiled code's results own fresh memory (a capsule's) or are arguments themselves: an
    argument that compiled code made (its memory a capsule's) and is returned as it is comes
    back a copy, while fresh results are settled by their owner alone, with no memory
    compared (a model's step of 47 weights made 2 115 comparisons a call)."""
    from hilbert.executor import numerics

    mod = hilbert.compile_source(
        "fn twice(x) ↦ 2 · x\nfn both(x, y) ↦ (x, 3 · y)", executor="numba")
    made = mod.twice(np.arange(6.0).reshape(2, 3))  # (memory compiled code made)
    assert type(made.base).__name__ == "PyCapsule"
    kept, tripled = mod.both(made, made)
    assert not np.shares_memory(kept, made) and not np.shares_memory(tripled, made)
    np.testing.assert_array_equal(kept, made)
    np.testing.assert_array_equal(tripled, 3 * made)
    compared = []
    real = numerics._shares
    monkeypatch.setattr(numerics, "_shares", lambda a, b: compared.append(1) or real(a, b))
    inputs = tuple(mod.twice(np.full((2, 2), float(k))) for k in range(5))
    fresh = tuple(mod.twice(a) for a in inputs)
    assert numerics.detached(fresh, inputs) is not None and compared == []
    assert numerics.detached((inputs[2],), inputs)[0] is not inputs[2]


# ---------------------------------------------------------------- x ^ y

#: Special bases and exponents: infinities, signed zeros, NaN, ±1, the exponents NumPy treats
#: specially (−1, ½, 2), fractions with negative bases, overflow and underflow.
BASES = [-inf, -1e308, -3.0, -2.0, -1.0, -0.5, -5e-324, -0.0, 0.0, 5e-324, 0.5, 1.0, 2.0, 3.0,
         1e308, inf, nan, 0.7071067811865476, 1.0000000000000002, 12345.678]
EXPONENTS = [-inf, -1e308, -1075.0, -3.0, -2.0, -1.0, -0.5, -1e-300, -0.0, 0.0, 1e-300, 1 / 3,
             0.5, 1.0, 1.5, 2.0, 3.0, 1075.0, 1e308, inf, nan, 2.5]


def expected_power(bases, exponents):
    """np.power of each pair of float64 scalars (the meaning hilbert gives x ^ y)."""
    with np.errstate(all="ignore"):
        return np.array([np.power(np.float64(b), np.float64(e))
                         for b, e in zip(bases, exponents, strict=True)])


def assert_same_floats(got, want, what):
    """NaN where NaN; infinities and zeros exactly, sign included; other values to the last
    bit or two (NumPy may take pow from a vectorised library, SVML, whose last bit can differ
    from C's pow, which compiled code calls; √x, 1/x and x·x are exact everywhere)."""
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"{what}: NaN")
    special = ~np.isfinite(want) | (want == 0) | ~np.isfinite(got) | (got == 0)
    np.testing.assert_array_equal(got[special], want[special], err_msg=f"{what}: special")
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want), err_msg=f"{what}: sign")
    ordinary = ~special & ~np.isnan(want)
    ulps = np.abs(got[ordinary] - want[ordinary]) / np.spacing(np.abs(want[ordinary]))
    assert np.all(ulps <= 2), f"{what}: {ulps.max()} units in the last place apart"


def test_power_on_arrays_agrees_with_numpy_on_special_values(executor):
    pairs = list(itertools.product(BASES, EXPONENTS))
    bases = np.array([b for b, _ in pairs])
    exponents = np.array([e for _, e in pairs])
    mod = hilbert.compile_source("fn pw(x, y) ↦ x ^ y", executor=executor)
    assert_same_floats(mod.pw(bases, exponents), expected_power(bases, exponents), "arrays")
    assert_same_floats(mod.pw(bases.reshape(len(BASES), -1), exponents.reshape(len(BASES), -1)),
                       expected_power(bases, exponents).reshape(len(BASES), -1), "matrices")


def test_power_with_a_scalar_exponent_agrees_with_numpy(executor):
    mod = hilbert.compile_source("fn pw(x, y) ↦ x ^ y", executor=executor)
    bases = np.array(BASES)
    for e in EXPONENTS:
        assert_same_floats(mod.pw(bases, e), expected_power(bases, [e] * len(BASES)), f"^{e}")


def test_power_of_scalars_agrees_with_numpy(executor):
    mod = hilbert.compile_source("fn pw(x, y) ↦ x ^ y", executor=executor)
    got = [mod.pw(b, e) for b, e in itertools.product(BASES, EXPONENTS)]
    want = expected_power(*zip(*itertools.product(BASES, EXPONENTS), strict=True))
    assert_same_floats(got, want, "scalars")


LITERAL_EXPONENTS = [-3.0, -2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 2.5, 1e-300]


def test_power_with_literal_exponents_agrees_with_numpy(executor):
    """Exponents written in the source (which compiled code may specialise) on array and
    scalar bases, fused into other arithmetic or alone."""
    lines = [f"fn p{k}(x) ↦ x ^ {e!r}\nfn q{k}(x) ↦ (x + 0) ^ {e!r} · 1"
             for k, e in enumerate(LITERAL_EXPONENTS)]
    mod = hilbert.compile_source("\n".join(lines), executor=executor)
    bases = np.array(BASES)
    for k, e in enumerate(LITERAL_EXPONENTS):
        want = expected_power(bases, [e] * len(BASES))
        assert_same_floats(getattr(mod, f"p{k}")(bases), want, f"x ^ {e}")
        fused = expected_power(bases + 0.0, [e] * len(BASES)) * 1.0  # −0 + 0 is +0
        assert_same_floats(getattr(mod, f"q{k}")(bases), fused, f"(x + 0) ^ {e} · 1")
        assert_same_floats([getattr(mod, f"p{k}")(b) for b in BASES], want, f"scalar x ^ {e}")


def test_power_of_minus_infinity_to_one_half_is_nan(executor):
    """The issue's case: (−∞)^½ is NaN on both executors, as np.power gives (it is √x)."""
    mod = hilbert.compile_source("fn root(x) ↦ x ^ 0.5", executor=executor)
    assert math.isnan(mod.root(-inf))
    assert np.isnan(mod.root(np.array([-inf, 4.0]))[0])


# ---------------------------------------------------------------- no NumPy warning escapes

WARNING_PROGRAMS = """
open Prelude.Networks
open Prelude.Arithmetic
fn product(a, w) ↦ einsum("ij,jk->ik", a, w)
fn matVec(a, x) ↦ einsum("ij,j->i", a, x)
fn inner(x, y) ↦ einsum("i,i->", x, y)
fn chain(a, b, c) ↦ einsum("ij,jk,kl->il", a, b, c)
fn grand(x) ↦ einsum("ij->", x)
fn rowMax(x) ↦ maximum(x, 1)
fn power(x, y) ↦ x ^ y
fn root(x) ↦ x ^ 0.5
fn ratio(x, y) ↦ x / y
fn logs(x) ↦ ln(x)
fn grown(x) ↦ exp(x) · 0
fn roots(x) ↦ sqrt(x)
fn filtered(x, k) ↦ convolve(x, k)
fn pooled(x, k) ↦ maxPool(x, k)
fn softened(x) ↦ softmaxRows(x)
fn normalised(x) ↦ layerNorm(x)
def spin(t, a, x) ≔ if t = 0 then x else spin(t − 1, a, einsum("ij,j->i", a, x) / 0)
fn spun(t, a, x) ↦ spin(t, a, x)
fn scalar(s) ↦ s / 0 + ln(s) − ln(s) + s ^ 0.5
"""


def warning_calls():
    bad = np.array([[inf, -inf, nan], [0.0, 1.0, -1.0], [1e308, -1e308, 0.0]])
    big = np.tile(bad, (30, 30))            # BLAS-sized products
    return [("product", (bad, bad)), ("product", (big, big.T)), ("matVec", (bad, bad[0])),
            ("matVec", (big, big[0])), ("inner", (bad[0], bad[1])), ("chain", (big, big.T, big)),
            ("grand", (bad,)), ("rowMax", (bad,)), ("power", (bad, bad.T)), ("root", (bad,)),
            ("ratio", (bad, np.zeros((3, 3)))), ("logs", (bad,)), ("grown", (bad,)),
            ("roots", (bad,)), ("filtered", (bad, bad[0])), ("pooled", (bad, bad[0])),
            ("softened", (bad,)), ("normalised", (bad,)), ("spun", (3.0, bad, bad[0])),
            ("spun", (3.0, big, big[0])), ("scalar", (0.0,)), ("scalar", (-1.0,))]


def test_no_numpy_warning_escapes_on_inf_and_nan_data(executor):
    mod = hilbert.compile_source(WARNING_PROGRAMS, executor=executor)
    for name, args in warning_calls():
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            getattr(mod, name)(*args)


# ---------------------------------------------------------------- index masks on inf/NaN data

MASKS = """
open Prelude.Networks
fn filtered(x, k) ↦ convolve(x, k)
fn pooled(x, k) ↦ maxPool(x, k)
fn windows(x, k) ↦ gathered(x, k)
"""


def padded_windows(x: np.ndarray, width: int) -> np.ndarray:
    """x[i, t + j] for every t and j < width, 0 past the end of each row: b×L×K."""
    b, length = x.shape
    out = np.zeros((b, length, width))
    for t in range(length):
        for j in range(width):
            if t + j < length:
                out[:, t, j] = x[:, t + j]
    return out


def expected_convolve(x: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Σ_j x[i, t + j] k[j] with the signal read as 0 past its end (NumPy, term by term)."""
    windows = padded_windows(x, len(k))
    with np.errstate(all="ignore"):
        return np.sum(windows * k, axis=2)


MASK_DATA = [
    (np.array([[1.0, 2.0, inf, 4.0, 5.0, 6.0]]), np.array([1.0, 1.0])),
    (np.array([[1.0, nan, 3.0, 4.0], [-inf, 1.0, 2.0, inf]]), np.array([0.5, 2.0, -1.0])),
    (np.array([[1.0, 2.0, 3.0, 4.0, 5.0]]), np.array([1.0, inf])),
    (np.array([[inf, -inf, 1.0, 2.0, 3.0, nan, 0.0]]), np.array([1.0, 0.0, 2.0])),
]


@pytest.mark.parametrize("x, k", MASK_DATA)
def test_convolve_reads_only_the_window_on_inf_and_nan(executor, x, k):
    mod = hilbert.compile_source(MASKS, executor=executor)
    np.testing.assert_array_equal(mod.filtered(x, k), expected_convolve(x, k))


def test_the_issue_convolve_with_an_inf(executor):
    mod = hilbert.compile_source(MASKS, executor=executor)
    got = mod.filtered(np.array([[1.0, 2.0, inf, 4.0, 5.0, 6.0]]), np.array([1.0, 1.0]))
    np.testing.assert_array_equal(got, [[3.0, inf, inf, 9.0, 11.0, 6.0]])


@pytest.mark.parametrize("x, k", MASK_DATA)
def test_windows_and_pooling_read_only_the_window(executor, x, k):
    mod = hilbert.compile_source(MASKS, executor=executor)
    windows = padded_windows(x, len(k))
    np.testing.assert_array_equal(mod.windows(x, k), windows)
    np.testing.assert_array_equal(mod.pooled(x, k), np.max(windows, axis=2))
