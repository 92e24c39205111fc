"""Division by a value the innermost loop does not change (executor/codegen/division.py): multiplied by
its reciprocal and corrected, to the bit of NumPy's division, with a second, dividing run of
the loop wherever a number leaves the range the correction holds in. Every expected value is
NumPy's own division written here."""

from __future__ import annotations

import re

import numba
import numpy as np
import pytest
from hilbert.executor import threads
from hilbert.executor.numba import vmath

import hilbert

SOURCE = """open Prelude.Arithmetic
fn over(a, d) ↦ a / lifted(a, d)
fn shares(a, s) ↦ (a / s) / lifted(a, einsum("ij->i", a / s))
fn apart(a, b) ↦ a / b
fn total(a, d) ↦ einsum("ij->", a / lifted(a, d))
fn both(a, d) ↦ a / lifted(a, d) + lifted(a, d) / 3
"""

#: Numerators and divisors at and past every edge of the fast path's range.
EDGES = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -5e-324, 2.2250738585072014e-308,
                  1e-310, 2.0 ** -968, 2.0 ** -951, 2.0 ** -900, 1e-300, 1e300, 1.7976931348623157e308,
                  -1.7976931348623157e308, 2.0 ** 951, 1.0, -3.0, 7.0, 0.1, 2.0 ** -100, 2.0 ** 100,
                  2.0 ** -101, 2.0 ** 101, 3.0 * 2.0 ** 99])


def _module():
    return hilbert.compile_source(SOURCE)


def _source(f, *args) -> str:
    f(*args)
    return f.program(tuple(np.shape(a) for a in args)).region.source


def _same_bits(got, want) -> None:
    """Equal to the bit, NaN where NumPy has NaN."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    mismatched = np.flatnonzero((got.view(np.int64) != want.view(np.int64)) & ~nan)
    assert mismatched.size == 0, (got.ravel()[mismatched[:5]], want.ravel()[mismatched[:5]])


@numba.njit(error_model="numpy")
def _quotients(a, d, q, trusted):
    for i in range(a.size):
        q[i] = vmath.quotient(a[i], d[i], 1.0 / d[i])
        trusted[i] = vmath.divisor_unsafe(d[i]) + vmath.quotient_unsafe(a[i], q[i]) == 0


def test_quotient_is_numpys_division_wherever_it_is_trusted():
    """vmath.quotient against a / d on 10⁶ pairs across the whole exponent range and near-2
    mantissas; where neither check objects, every bit agrees."""
    rng = np.random.default_rng(0)
    n = 1_000_000
    a = rng.standard_normal(n) * np.exp2(rng.uniform(-1074, 1022, n))
    a[: n // 4] = 2.0 - rng.integers(1, 2 ** 20, n // 4) * 2.0 ** -52
    d = rng.uniform(-1, 1, n) * np.exp2(rng.uniform(-120, 120, n))
    d[n // 8: n // 2] = 2.0 - rng.integers(1, 2 ** 20, n // 2 - n // 8) * 2.0 ** -52
    q, trusted = np.empty(n), np.empty(n, dtype=np.bool_)
    _quotients(a, d, q, trusted)
    with np.errstate(all="ignore"):
        _same_bits(q[trusted], a[trusted] / d[trusted])
    assert trusted.sum() > n // 2  # (the checks let ordinary numbers through)


def test_the_checks_refuse_what_the_correction_cannot_promise():
    for d in (0.0, -0.0, np.inf, np.nan, 5e-324, 2.0 ** -101, 2.0 ** 101):
        assert vmath.divisor_unsafe(d) == 1, d
    for d in (2.0 ** -100, 2.0 ** 100, 1.0, -3.0, 1e-30):
        assert vmath.divisor_unsafe(d) == 0, d
    with np.errstate(all="ignore"):
        for a in (np.inf, -np.inf, np.nan, 5e-324, 1e-300, 1e300, 2.0 ** 900):
            assert vmath.quotient_unsafe(a, vmath.quotient(a, 3.0, 1 / 3.0)) == 1, a
    for a in (0.0, -0.0, 1.0, -2.5, 1e-200, 1e200):
        assert vmath.quotient_unsafe(a, vmath.quotient(a, 3.0, 1 / 3.0)) == 0, a


def test_rows_divided_by_one_number_each_multiply_and_agree_with_numpy_to_the_bit():
    """Every edge numerator against every edge divisor (one divisor per row), beside ordinary
    rows: the rows the correction cannot promise are divided again."""
    f = _module().over
    rng = np.random.default_rng(1)
    a = np.vstack([np.tile(EDGES, (EDGES.size, 1)), rng.standard_normal((40, EDGES.size))])
    d = np.concatenate([EDGES, rng.uniform(0.5, 3, 40)])
    source = _source(f, a, d)
    assert "K.quotient(" in source and re.search(r"rec\d+ = 1\.0 / den\d+", source), source
    assert not re.search(r"row\d+ = K\.empty", source), source  # (a new array: no scratch)
    with np.errstate(all="ignore"):
        _same_bits(f(a, d), a / d[:, None])


def test_a_division_written_over_its_numerators_keeps_them_for_a_second_run():
    """The quotients go over the numerators' own array, so the first run writes a scratch row;
    a row with a number out of range is divided again from the numerators it left intact.
    Integers (and tiny numbers beside them) sum exactly in any order, so the divisors are
    NumPy's too."""
    f = _module().shares
    rng = np.random.default_rng(2)
    a = rng.integers(1, 9, (12, 300)).astype(float)
    a[1, 5] = 2.0 ** -1000      # quotient subnormal: divided again
    a[2, 7] = 5e-324
    a[3, 9] = 2.0 ** -960       # remainder would be subnormal
    a[4, 11] = np.inf           # divisor inf
    a[5, 13] = np.nan
    a[6, 17] = -0.0
    source = _source(f, a, 1.0)
    assert "K.quotient(" in source and re.search(r"row\d+ = K\.empty", source), source
    t = a / 1.0
    with np.errstate(all="ignore"):
        _same_bits(f(a, 1.0), t / t.sum(1, keepdims=True))


def test_a_divisor_that_changes_along_the_row_is_divided_by():
    f = _module().apart
    a, b = np.random.default_rng(3).normal(size=(2, 30, 40))
    source = _source(f, a, b)
    assert "K.quotient(" not in source and " / den" in source, source
    _same_bits(f(a, b), a / b)


def test_a_total_kept_across_rows_is_not_counted_twice():
    """A sum over the whole array carries its total from row to row: a second run of one row
    would add that row twice, so such a nest keeps its divisions."""
    f = _module().total
    rng = np.random.default_rng(4)
    a, d = rng.normal(size=(50, 60)), rng.uniform(1, 2, 50)
    source = _source(f, a, d)
    assert "K.quotient(" not in source, source
    np.testing.assert_allclose(f(a, d), (a / d[:, None]).sum(), rtol=1e-12)


def test_parallel_nests_keep_their_divisions(monkeypatch):
    """A nest on several threads would share its scratch row: it divides."""
    if not threads.layer():
        pytest.skip("no thread-safe Numba threading layer (TBB or OpenMP) on this machine")
    monkeypatch.setattr(threads, "count", lambda: 2)
    f = _module().over
    rng = np.random.default_rng(5)
    a, d = rng.normal(size=(2048, 600)), rng.uniform(1, 2, 2048)
    source = _source(f, a, d)
    assert "in prange(" in source and "K.quotient(" not in source, source
    _same_bits(f(a, d), a / d[:, None])


@pytest.mark.parametrize("text,name", [
    ("open Prelude.Networks\nfn normed(a) ↦ layerNorm(a)\n", "normed"),
    ("open Prelude.Arithmetic\nfn soft(m) ↦ softmaxRows(m)\n", "soft"),
])
def test_rows_with_a_scratch_row_still_run_as_one_loop(text, name):
    """executor/codegen/rows.py merges a layer norm's or a softmax's nests into one loop over the rows
    with the division multiplied (its scratch row is private to the row)."""
    f = hilbert.compile_source(text).function(name)
    source = _source(f, np.random.default_rng(6).normal(size=(300, 70)))
    assert "K.quotient(" in source, source
    assert len(re.findall(r"^    for i0 in range\(", source, flags=re.M)) == 1, source


def test_a_quotient_the_row_does_not_change_is_computed_once_before_it():
    """d / 3 is the same along a row: it moves before the row's loop as a true division (the
    loop's first line would read a reciprocal not yet made), and a / d in the loop is
    multiplied."""
    f = _module().both
    rng = np.random.default_rng(7)
    a, d = rng.normal(size=(40, 50)), rng.uniform(1, 2, 40)
    source = _source(f, a, d)
    assert "K.quotient(" in source, source
    assert re.search(r"^        quo\d+ = \(num\d+ / den\d+\)$", source, flags=re.M), source
    _same_bits(f(a, d), a / d[:, None] + (d / 3)[:, None])
