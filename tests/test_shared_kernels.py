"""The shared kernels for products and copies (executor/numba/kernels.py): each agrees with NumPy
in every layout."""

from __future__ import annotations

import numpy as np
import pytest
from hilbert.executor.numba import kernels
from numba import njit

pytestmark = pytest.mark.skipif(kernels.PYTHON_MODE, reason="compiled kernels only")


def _layouts(rng, shape):
    """The same values as a C array, a transposed copy, a reversed view and a strided view."""
    base = rng.normal(size=shape)
    yield base
    yield np.asfortranarray(base)
    yield rng.normal(size=shape)[::-1, ...]
    wide = rng.normal(size=tuple(2 * s for s in shape))
    yield wide[tuple(slice(None, None, 2) for _ in shape)]


@pytest.mark.parametrize("m,k,n", [(5, 4, 3), (1, 6, 4), (4, 6, 1), (3, 0, 2), (70, 40, 30)])
@pytest.mark.parametrize("beta", [0.0, 1.0, 0.5])
def test_products_in_any_layout_agree_with_numpy(m, k, n, beta):
    rng = np.random.default_rng(m * 100 + k * 10 + n)
    for a in _layouts(rng, (m, k)):
        for b in _layouts(rng, (k, n)):
            for out in _layouts(rng, (m, n)):
                before = out.copy()
                want = a @ b + beta * before
                got = kernels.gemm_beta(a, b, out, beta)
                np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)
                out[...] = before
                if beta == 0.0:
                    out[...] = np.nan  # never read when nothing is added to it
                    np.testing.assert_allclose(kernels.gemm(a, b, out), a @ b,
                                               rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("shape", [(7,), (4, 5), (3, 4, 5), (2, 3, 1, 4), (0, 3), (1, 1, 1)])
def test_contiguous_copies_any_layout_as_numpy_does(shape):
    rng = np.random.default_rng(len(shape))
    for x in _layouts(rng, shape):
        got = kernels.contiguous(x)
        assert got.flags.c_contiguous and got.shape == x.shape
        np.testing.assert_array_equal(got, x)


def test_transposed_views_agree_with_numpy():
    @njit
    def relaid(x):
        return kernels.contiguous(kernels.transposed(x, "2,0,1"))

    @njit
    def view(x):
        return kernels.transposed(x, "1,2,0")

    x = np.random.default_rng(3).normal(size=(4, 5, 6))
    np.testing.assert_array_equal(relaid(x), np.ascontiguousarray(x.transpose(2, 0, 1)))
    seen = view(x)
    np.testing.assert_array_equal(seen, x.transpose(1, 2, 0))
    seen[1, 2, 3] = 42.0  # a view: it writes into x
    assert x[3, 1, 2] == 42.0
