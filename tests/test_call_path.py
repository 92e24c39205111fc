"""A call's own cost: positional arguments bound on the fast path exactly as the checked path
binds them, and compiled results handed back without checks they do not need (counted, never
timed)."""

from __future__ import annotations

import numpy as np
import pytest
from hilbert.compiler import arguments, results
from hilbert.executor import numerics
from hilbert.grammar.errors import HilbertError

import hilbert

SOURCE = """\
fn scaled(t, r, x, w) ↦ einsum("ij,jk->ik", x, w) · r + t
fn flipped(x) ↦ einsum("ij->ji", x)
fn twice(x) ↦ (x, x)
"""


@pytest.fixture(scope="module")
def module():
    return hilbert.compile_source(SOURCE)


def _checked(entry, args, dtype):
    """The checked path's binding of `args` (keywords never take the fast path)."""
    return arguments.bind_arguments(entry, (), dict(zip(entry.params, args, strict=True)), dtype)


X32 = np.arange(6, dtype=np.float32).reshape(3, 2)
W32 = np.ones((2, 2), np.float32)
#: Argument lists for `scaled(t, r, x, w)`: Python numbers weak beside arrays of each dtype,
#: ints of every size, mixed and awkward arrays (those leave the fast path).
CALLS = [
    (0.5, 2, X32, W32),
    (0.1, 1e300, X32, W32),  # (a float beyond float32's range, rounded as the checked path does)
    (2 ** 62 + 1, -(2 ** 63), X32, W32),
    (2 ** 60 + 2 ** 36 + 1, 0.5, X32, W32),  # (rounded once to float32, not twice via float64)
    (2 ** 63, 2 ** 70, X32, W32),  # (ints past int64: the checked path reads them)
    (True, 0.5, X32, W32),
    (0.5, 2.0, X32.astype(np.float64), W32.astype(np.float64)),
    (0.5, 2.0, X32.astype(np.complex64), W32.astype(np.complex64)),
    (0.5, 2.0, X32, W32.astype(np.float64)),  # (mixed: promoted by the checked path)
    (0.5, 2.0, np.asfortranarray(X32), W32),
    (np.float32(0.5), 2.0, X32, W32),
    (0.5, 2.0, X32.astype(np.int64), W32),
    (0.5j, 2.0, X32, W32),
    (0.5, 2.0, [[1.0, 2.0]] * 3, W32),
]


@pytest.mark.parametrize("dtype", [None, "float32", "float64", "complex128"])
@pytest.mark.parametrize("number", range(len(CALLS)))
def test_the_fast_path_binds_as_the_checked_path(module, number, dtype):
    entry = module.scaled.entry
    args = CALLS[number]
    with np.errstate(over="ignore"):
        try:
            want = _checked(entry, args, dtype)
        except HilbertError as refused:  # (a complex argument to a forced real call)
            with pytest.raises(HilbertError) as fast:
                arguments.bind_arguments(entry, args, {}, dtype)
            assert str(fast.value) == str(refused)
            return
        got = arguments.bind_arguments(entry, args, {}, dtype)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert type(g) is np.ndarray and g.dtype == w.dtype and g.shape == w.shape
        assert g.flags.c_contiguous
        np.testing.assert_array_equal(g, w)


def test_python_numbers_beside_arrays_take_the_fast_path(module, monkeypatch):
    read = []
    monkeypatch.setattr(arguments, "to_array", lambda *a: read.append(a))
    bound = arguments.bind_arguments(module.scaled.entry, (3, 0.5, X32, W32), {})
    assert read == [] and [b.dtype for b in bound] == [np.float32] * 4
    assert module.scaled(3, 0.5, X32, W32).dtype == np.float32
    assert read == []


def test_a_compiled_calls_fresh_result_is_handed_back_unchecked(module, monkeypatch):
    args = (3.0, 0.5, X32, W32)
    want = (X32.astype(np.float64) @ W32 * 0.5 + 3).astype(np.float32)
    np.testing.assert_allclose(module.scaled(*args), want, rtol=1e-6)
    assert module.scaled.tier == "compiled"
    compared = []
    real = numerics._may_share_memory

    def counted(a, b):
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(numerics, "_may_share_memory", counted)
    monkeypatch.setattr(results.np, "may_share_memory", counted)
    result = module.scaled(*args)
    np.testing.assert_allclose(result, want, rtol=1e-6)
    # the program detaches its result from the arguments by its memory's owner alone (a
    # capsule of compiled code's, no argument's: numerics._owner), so no memory is compared;
    # the call adds no comparison either
    assert compared == []
    assert result.flags.writeable and not np.shares_memory(result, X32)


def test_a_result_that_views_an_argument_is_still_copied(module):
    x = np.arange(6.0).reshape(2, 3)
    flipped = module.flipped(x)
    np.testing.assert_array_equal(flipped, x.T)
    assert not np.shares_memory(flipped, x) and flipped.flags.writeable
    first, second = module.twice(x)
    assert first is not second and not np.shares_memory(first, second)
    assert not np.shares_memory(first, x)
