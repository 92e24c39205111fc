"""Long sums in compiled loop nests are added pairwise above blocks (executor/codegen/sums.py):
their rounding error grows as log n, as NumPy's pairwise sums' does, not as n. NumPy's own
test: the mean of 10⁶ copies of 1 + 8196·eps was 8.6e-13 off on the compiled tier, where NumPy
is 5e-16 off. Expected values are exact sums (math.fsum) of the same numbers; the bound is a
few units in the last place of the result (`ULPS` of its dtype's eps). Row sums, column sums,
a matrix's total, a mean inside fused nests (centring rows) and a sum in a loop's body are
checked compiled; the host tier (NumPy's own sums) where NumPy sums pairwise."""

from __future__ import annotations

import math

import numpy as np
import pytest

import hilbert

SOURCE = """
fn mean(x) ↦ einsum("i->", x) / rows(x)
fn rowSums(x) ↦ einsum("ij->i", x)
fn columnSums(x) ↦ einsum("ij->j", x)
fn total(x) ↦ einsum("ij->", x)
fn centred(x) ↦ x − einsum("i,j->ij", einsum("ij->i", x) / columns(x), x[0] ^ 0)
fn means(t, x, a) ↦ if t = 0 then a else means(t − 1, x, a + einsum("i->", x) / rows(x))
"""

#: How many units of the dtype's eps a long sum may be off, relative to its exact value.
ULPS = 4
#: NumPy's test value: 1 + 8196·eps, whose running sums round at every step.
ODD = 1 + 8196 * np.finfo(np.float64).eps
#: Such a number of each dtype (float32's running sums past 2¹⁴ lose its 2⁻¹⁰ entirely).
ODDS = {np.float64: ODD, np.float32: np.float32(1 + 2 ** -10)}


@pytest.fixture(scope="module")
def module():
    return hilbert.compile_source(SOURCE, export_all=True)


def off(got, want: float) -> float:
    """The relative error of `got` against the exact `want`, in units of got's eps."""
    got = np.asarray(got)
    return float(abs(got.astype(np.float64) - want) / abs(want) / np.finfo(got.dtype).eps)


@pytest.mark.parametrize("tier", ["compiled", "host"])
def test_numpys_mean_of_a_million_copies(module, tier, monkeypatch):
    monkeypatch.setenv("HILBERT_COMPILE", "eager" if tier == "compiled" else "never")
    f = hilbert.compile_source(SOURCE, export_all=True).mean
    x = np.full(10 ** 6, ODD)
    got = f(x)
    assert f.tier == tier
    assert off(got, math.fsum(x) / x.size) <= ULPS


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_long_mean_is_a_few_ulps_off(module, dtype):
    x = np.full(10 ** 6, 1 + 3 * np.finfo(dtype).eps, dtype)
    got = module.mean(x)
    assert module.mean.tier == "compiled"
    assert off(got, math.fsum(x.astype(np.float64)) / x.size) <= ULPS


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_long_row_sums(module, dtype):
    x = np.full((3, 10 ** 6), ODDS[dtype], dtype)
    x[1] *= 1 + 2 ** -10  # (rows of other numbers)
    x[2] = np.random.default_rng(3).random(10 ** 6)
    got = module.rowSums(x)
    for row, value in zip(x, got, strict=True):
        assert off(value, math.fsum(row.astype(np.float64))) <= ULPS


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_long_column_sums(module, dtype):
    """Column sums of a tall, narrow matrix: each entry of the result sums a long column
    (NumPy's own `x.sum(axis=0)` adds row after row here: 1.5e-12 off in float64)."""
    x = np.full((250_000, 4), ODDS[dtype], dtype)
    got = module.columnSums(x)
    want = math.fsum(x[:, 0].astype(np.float64))
    assert max(off(v, want) for v in got) <= ULPS


def test_a_total_over_short_rows(module):
    x = np.full((250_000, 4), ODD)
    assert off(module.total(x), math.fsum(x.ravel())) <= ULPS


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_mean_inside_fused_nests_centres_long_rows(module, dtype):
    """x minus its rows' means, for rows of one repeated number: exactly 0 where the mean is
    the number; a mean off by n·eps leaves n·eps of it."""
    value = np.asarray(ODD, dtype) if dtype == np.float64 else np.float32(1 + 2 ** -20)
    x = np.full((2, 500_000), value, dtype)
    got = module.centred(x)
    assert float(np.max(np.abs(got))) <= ULPS * np.finfo(dtype).eps * float(value)


def test_a_long_sum_in_a_loops_body(module):
    x = np.full(10 ** 6, ODD)
    got = module.means(2, x, 0.0)
    assert off(got, 2 * (math.fsum(x) / x.size)) <= ULPS


@pytest.mark.parametrize("tier", ["compiled", "host"])
def test_long_row_sums_on_both_tiers(tier, monkeypatch):
    monkeypatch.setenv("HILBERT_COMPILE", "eager" if tier == "compiled" else "never")
    f = hilbert.compile_source(SOURCE, export_all=True).rowSums
    x = np.full((2, 10 ** 6), ODD)
    got = f(x)
    assert f.tier == tier
    assert max(off(v, math.fsum(x[0])) for v in got) <= ULPS
