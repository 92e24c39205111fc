"""executor/numba/tiles.py: small products computed in vector registers agree with NumPy for
every block kind (whole tiles, narrow tiles, single columns, leftover rows), both float types,
any a layout, reversed and strided rows, a beta that keeps or ignores the old values, and
special values; the tiles compile to packed FMA instructions."""

from __future__ import annotations

import re

import llvmlite.binding as llvm
import numpy as np
import pytest
from hilbert.executor.numba import kernels, kernels32, tiles
from numba import njit

pytestmark = pytest.mark.skipif(kernels.PYTHON_MODE, reason="compiled kernels only")

GEMM = {np.float64: (kernels.gemm, kernels.gemm_beta), np.float32: (kernels32.gemm,
                                                                  kernels32.gemm_beta)}
#: Sizes that reach every block: rows 1, 3, 4, 5, 9 (whole tiles of 4 and leftovers), columns
#: below one vector, one vector, between one and two, two, and beyond, with every leftover of
#: half, a quarter and an eighth of a vector (4 or 8 float64s, 8 or 16 float32s to a vector,
#: as the CPU has 256- or 512-bit vectors), and sums of 0, 1 and 33 terms.
ROWS = (1, 3, 4, 5, 9)
COLUMNS = (1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 15, 16, 17, 24, 31, 32, 33, 47, 64, 65)
TERMS = (0, 1, 33)


def _tolerance(dtype, k: int) -> float:
    return 4 * np.finfo(dtype).eps * max(k, 1)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("k", TERMS)
def test_every_block_agrees_with_numpy(dtype, k):
    rng = np.random.default_rng(k)
    gemm, _ = GEMM[dtype]
    for m in ROWS:
        for n in COLUMNS:
            a = rng.standard_normal((m, k)).astype(dtype)
            b = rng.standard_normal((k, n)).astype(dtype)
            out = np.full((m, n), np.nan, dtype)  # never read: beta is 0
            want = a.astype(np.float64) @ b.astype(np.float64)
            got = gemm(a, b, out)
            assert got.dtype == dtype
            scale = np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)
            assert np.all(np.abs(got - want) <= _tolerance(dtype, k) * scale), (m, k, n)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("beta", [0.0, 1.0, -0.5])
def test_layouts_and_beta(dtype, beta):
    """a row-major, column-major, reversed or strided; b and out reversed in their rows and
    strided between rows (their columns adjacent, as tiles need); beta adds the old values."""
    rng = np.random.default_rng(7)
    _, gemm_beta = GEMM[dtype]
    m, k, n = 13, 21, 19
    wide_a = rng.standard_normal((2 * m, 2 * k)).astype(dtype)
    a_views = [wide_a[:m, :k].copy(), np.asfortranarray(wide_a[:m, :k]), wide_a[:m, :k][::-1],
               wide_a[::2, ::2]]
    wide_b = rng.standard_normal((2 * k, n)).astype(dtype)
    b_views = [wide_b[:k].copy(), wide_b[::2], wide_b[:k][::-1]]
    for a in a_views:
        for b in b_views:
            backing = rng.standard_normal((2 * m, n)).astype(dtype)
            for out in (backing[::2], backing[:m][::-1]):
                before = out.astype(np.float64)
                want = a.astype(np.float64) @ b.astype(np.float64) + beta * before
                got = gemm_beta(a, b, out, dtype(beta))
                scale = (np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)
                         + abs(beta) * np.abs(before))
                assert np.all(np.abs(got - want) <= _tolerance(dtype, k) * scale)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_special_values_spread_as_in_numpy(dtype):
    rng = np.random.default_rng(3)
    gemm, _ = GEMM[dtype]
    a = rng.standard_normal((9, 6)).astype(dtype)
    b = rng.standard_normal((6, 11)).astype(dtype)
    a[0, 2], a[5, 0], b[3, 4], b[1, 10] = np.nan, np.inf, -np.inf, np.nan
    got = gemm(a, b, np.empty((9, 11), dtype))
    with np.errstate(invalid="ignore"):
        want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    infinite = np.isinf(want)
    np.testing.assert_array_equal(got[infinite], want[infinite])
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=_tolerance(dtype, 6), atol=1e-6)


def test_products_above_the_threshold_still_agree():
    """Just above TILED_PRODUCT the product goes to BLAS; just below, to tiles: both agree."""
    rng = np.random.default_rng(11)
    for m in (63, 65):
        k = n = 64
        assert (m * k * n <= tiles.TILED_PRODUCT) == (m == 63)
        a, b = rng.standard_normal((m, k)), rng.standard_normal((k, n))
        np.testing.assert_allclose(kernels.gemm(a, b, np.empty((m, n))), a @ b,
                                   rtol=1e-12, atol=1e-12)


def test_tiles_compile_to_packed_fmas():
    """The tiled product's machine code multiplies and adds whole vectors of the CPU's own
    width, 512 bits (zmm) with AVX-512 and 256 (ymm) without (compiled here in memory: the
    disk cache's code cannot be inspected)."""
    features = llvm.get_host_cpu_features().flatten()
    if "+avx2" not in features or "+fma" not in features:
        pytest.skip("no AVX2 and FMA on this CPU")

    @njit
    def product(a, b, out):
        tiles.tiled_product(a.ctypes.data, a.shape[0], a.shape[1], a.shape[1], 1,
                            b.ctypes.data, b.shape[1], b.shape[1], out.ctypes.data,
                            out.shape[1], 0.0)
        return out

    a, b = np.ones((8, 5)), np.ones((5, 8))
    np.testing.assert_array_equal(product(a, b, np.empty((8, 8))), np.full((8, 8), 5.0))
    assembly = "\n".join(product.inspect_asm().values())
    register = "zmm" if "+avx512f" in features else "ymm"
    assert re.search(rf"vfmadd\w+pd\s+%{register}", assembly)
