"""Arguments beyond float32's range in a float32 (complex64) call: converted as IEEE rounds
them (±∞ past the largest finite number and half an ulp), with no NumPy warning escaping the
call, so that `warnings.simplefilter("error")` stays safe around it (docs/semantics.md)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import hilbert

SOURCE = "fn scale(x, s) ↦ x · s\nfn shift(x, s) ↦ x + s"
#: A float64 just past float32's largest finite number that still rounds down to it.
NEAR = float(np.finfo(np.float32).max) * (1 + 2.0 ** -30)


def as_float32(values) -> np.ndarray:
    """`values` converted to float32 as IEEE rounding gives them (NumPy's cast, its warning
    off)."""
    with np.errstate(over="ignore"):
        return np.asarray(values, dtype=np.float64).astype(np.float32)


def strictly(call):
    """`call()` with every warning an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return call()


@pytest.mark.parametrize("number", [1e300, -1e300, 1e39, NEAR, float("inf"), 2.5])
def test_a_python_float_beyond_float32s_range(executor, number):
    scale = hilbert.compile_source(SOURCE, executor=executor).scale
    x = np.array([1.0, 2.0], dtype=np.float32)
    got = strictly(lambda: scale(x, number))
    assert got.dtype == np.float32
    with np.errstate(over="ignore"):  # (2 × the largest float32 is ∞)
        np.testing.assert_array_equal(got, x * as_float32(number))


def test_a_float64_array_beyond_float32s_range_in_a_forced_float32_call(executor):
    scale = hilbert.compile_source(SOURCE, executor=executor).scale.using(dtype="float32")
    s = np.array([1e300, -1e300, NEAR, 3.0])
    got = strictly(lambda: scale(np.ones(4), s))
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, as_float32(s))
    np.testing.assert_array_equal(got[:2], [np.inf, -np.inf])


def test_a_complex128_array_beyond_complex64s_range(executor):
    shift = hilbert.compile_source(SOURCE, executor=executor).shift.using(dtype="complex64")
    s = np.array([1e300 + 1j, 2.0 - 1e300j])
    got = strictly(lambda: shift(np.zeros(2), s))
    assert got.dtype == np.complex64
    np.testing.assert_array_equal(got.real, as_float32(s.real))
    np.testing.assert_array_equal(got.imag, as_float32(s.imag))
