"""Float32 numerics in compiled code (docs/semantics.md, "Number types"): exp, ln, tanh and erf
are computed in float32 arithmetic (executor/numba/vmath32.py), within 1 ulp of the correctly
rounded value (measured over every float32: at most 1 ulp; 0.6–0.8% of results 1 ulp off for
exp, ln and tanh, 1.4% for erf). NumPy's
own float32 exp and log are up to 3 and 4 ulp from the correctly rounded value on this
machine, so the check against NumPy is "no further from NumPy than NumPy is from the correctly
rounded value, plus 1 ulp". Special values (±0, ±∞, NaN, subnormals, the overflow and
underflow thresholds) are NumPy's exactly; division is the processor's float32 quotient,
NumPy's to the bit; sums accumulate in float64."""

import numpy as np
import pytest
from scipy import special

import hilbert

SOURCE = """
fn e(x) ↦ exp(x)
fn l(x) ↦ ln(x)
fn t(x) ↦ tanh(x)
fn r(x) ↦ erf(x)
fn d(x, y) ↦ x / y
fn rows_sum(x) ↦ einsum("ij->i", x)
fn norm(x) ↦ einsum("ij,i->ij", x, 1 / einsum("ij->i", x))
fn p(x) ↦ x ^ 1.5
"""


@pytest.fixture(scope="module")
def compiled():
    """The functions, each built at its first call (conftest: HILBERT_COMPILE=eager)."""
    return hilbert.compile_source(SOURCE, export_all=True)


def ulps(a, b) -> np.ndarray:
    """Distance in float32 units in the last place, 0 where both are NaN (±0 apart by 0)."""
    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)

    def ordered(v):
        bits = v.view(np.int32).astype(np.int64)
        return np.where(bits < 0, -(bits & 0x7FFFFFFF), bits)

    return np.where(np.isnan(a) & np.isnan(b), 0, np.abs(ordered(a) - ordered(b)))


def grid(rng) -> np.ndarray:
    """Dense samples over float32's useful range, and its edges."""
    edges = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1e-40, 1.17549435e-38,
             88.72283, 88.72284, -87.33654, -103.97208, -103.97209, 9.0, -9.0, 3.4e38]
    return np.concatenate([np.random.default_rng(3).uniform(-110, 110, 100_000),
                           rng.uniform(-2, 2, 50_000), np.logspace(-40, 38, 5_000),
                           -np.logspace(-40, 38, 5_000), edges]).astype(np.float32)


@pytest.mark.parametrize("name, numpy, exact, domain", [
    ("e", np.exp, np.exp, "all"),
    ("l", np.log, np.log, "positive"),
    ("t", np.tanh, np.tanh, "all"),
    ("r", None, special.erf, "all"),
])
def test_functions_are_within_an_ulp_of_the_rounded_value_and_close_to_numpy(
        compiled, rng, name, numpy, exact, domain):
    # (a sweep of every 997th float32 as well: each binade, subnormals included)
    sweep = np.arange(0, 2 ** 32, 997, dtype=np.uint64).astype(np.uint32).view(np.float32)
    x = np.concatenate([grid(rng), sweep[np.isfinite(sweep)]])
    if domain == "positive":
        x = np.concatenate([np.abs(x), np.float32([0.0, -0.0, -1.0, -np.inf])])
    function = getattr(compiled, name)
    ours = function(x)
    assert function.tier == "compiled" and ours.dtype == np.float32
    with np.errstate(all="ignore"):
        rounded = exact(x.astype(np.float64)).astype(np.float32)
        assert ulps(ours, rounded).max() <= 1
        if numpy is not None:
            theirs = numpy(x)
            assert np.all(ulps(ours, theirs) <= ulps(theirs, rounded) + 1)
            special_values = ~np.isfinite(theirs) | (theirs == 0) | ~np.isfinite(x)
            np.testing.assert_array_equal(ours[special_values], theirs[special_values])
            zeros = theirs == 0
            np.testing.assert_array_equal(np.signbit(ours[zeros]), np.signbit(theirs[zeros]))


def test_erf_keeps_its_special_values_and_its_symmetry(compiled, rng):
    x = np.float32([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 4.0, 1e30])
    got = compiled.r(x)
    np.testing.assert_array_equal(got[:4], np.float32([0.0, -0.0, 1.0, -1.0]))
    assert np.signbit(got[1]) and np.isnan(got[4]) and got[7] == 1.0 and got[8] == 1.0
    assert got[5] == np.float32(1e-45) and got[6] == -got[5]
    y = rng.uniform(-5, 5, 10_000).astype(np.float32)
    np.testing.assert_array_equal(compiled.r(-y), -compiled.r(y))


def test_division_is_numpys_float32_quotient_to_the_bit(compiled, rng):
    x = np.concatenate([grid(rng), np.float32([1, -1, 0, -0.0, 1e-40, 3e38, np.nan, np.inf])])
    y = np.concatenate([rng.standard_normal(x.size - 8).astype(np.float32),
                        np.float32([0, 0, 0, -0.0, 3, 1e-38, 1, np.inf])])
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(compiled.d(x, y).view(np.int32), (x / y).view(np.int32))
    # a row's divisor (what float64 code rewrites) is the processor's quotient too
    rows = np.abs(rng.standard_normal((64, 300))).astype(np.float32)
    rows[0, :] = 1e-39  # subnormal sums and quotients
    got = compiled.norm(rows)
    assert compiled.norm.tier == "compiled"
    want = rows * (np.float32(1) / rows.astype(np.float64).sum(axis=1).astype(np.float32))[:, None]
    np.testing.assert_array_equal(got, want)


def test_float32_sums_accumulate_in_float64(compiled, rng):
    """A row of a million float32s summed in float64 and rounded once: within 1 ulp of the
    exact sum (NumPy's pairwise float32 sum is further off on such rows)."""
    x = (rng.uniform(0, 1, (2, 1 << 20)) + 1e4).astype(np.float32)
    got = compiled.rows_sum(x)
    exact = x.astype(np.float64).sum(axis=1).astype(np.float32)
    assert got.dtype == np.float32 and ulps(got, exact).max() <= 1


def test_powers_in_float32(compiled, rng):
    x = np.abs(grid(rng))
    with np.errstate(all="ignore"):
        rounded = np.power(x.astype(np.float64), 1.5).astype(np.float32)
    assert ulps(compiled.p(x), rounded).max() <= 1


def test_fast_maths_in_float32_stay_within_4_ulp(rng):
    fast = hilbert.compile_source(SOURCE, export_all=True, math="fast")
    x = grid(rng)
    fast.e.build(x)
    fast.t.build(x)
    with np.errstate(all="ignore"):
        for function, exact in ((fast.e, np.exp), (fast.t, np.tanh)):
            ours = function(x)
            assert function.tier == "compiled" and ours.dtype == np.float32
            assert ulps(ours, exact(x.astype(np.float64)).astype(np.float32)).max() <= 4
