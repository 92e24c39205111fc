"""hilbert's own large products (executor/numba/panels.py, microkernel.py, own_products.py): each
agrees with NumPy in every layout and at every edge of its tiles and blocks, gives the same bits
whatever rows a thread gets, runs only where own_products chooses it, and is kept in the disk
cache."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hilbert.executor.numba import kernels, kernels32, own_products, panels

pytestmark = pytest.mark.skipif(kernels.PYTHON_MODE, reason="compiled kernels only")

#: Shapes (m, k, n) beside and across the tiles (8 × 24 float64, 6 × 64 float32 with AVX-512;
#: 6 × 8 and 6 × 16 with AVX2) and blocks (k cut at 512 or 256, b's columns at 120–256).
SHAPES = [(1, 1, 1), (7, 13, 5), (8, 64, 24), (6, 3, 64), (9, 65, 200), (37, 300, 53),
          (130, 70, 129), (100, 513, 250), (61, 1031, 277)]
TOLERANCE = {np.float64: 1e-14, np.float32: 1e-6}


def _layouts(rng, shape, dtype):
    """The same kind of values as a C array, a transposed copy, a reversed view and a strided
    view."""
    base = rng.normal(size=shape).astype(dtype)
    yield base
    yield np.asfortranarray(base)
    yield rng.normal(size=shape).astype(dtype)[::-1, ::-1]
    yield rng.normal(size=tuple(2 * s for s in shape)).astype(dtype)[::2, ::2]


def _check(got, a, b, before, beta, dtype):
    """got against a · b + beta · before in float64, to the rounding of sums of k products."""
    want = a.astype(np.float64) @ b.astype(np.float64) + beta * before.astype(np.float64)
    scale = (np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)
             + abs(beta) * np.abs(before))
    assert np.all(np.abs(got - want) <= TOLERANCE[dtype] * (a.shape[1] + 2) * scale + 1e-300)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("m, k, n", SHAPES)
def test_own_products_agree_with_numpy_in_every_layout(dtype, m, k, n):
    rng = np.random.default_rng(m * 1000 + k * 10 + n)
    for a in _layouts(rng, (m, k), dtype):
        for b in _layouts(rng, (k, n), dtype):
            for out in _layouts(rng, (m, n), dtype):
                before = out.copy()
                for beta in (0.0, 1.0, 0.5):
                    out[...] = np.nan if beta == 0.0 else before  # beta 0: out never read
                    own_products.multiply(a, b, out, beta)
                    assert out.dtype == dtype
                    _check(out, a, b, before, beta, dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_nothing_summed_or_nothing_to_write(dtype):
    rng = np.random.default_rng(1)
    a, b = np.empty((5, 0), dtype), np.empty((0, 4), dtype)
    out = rng.normal(size=(5, 4)).astype(dtype)
    before = out.copy()
    own_products.multiply(a, b, out, 1.0)
    np.testing.assert_array_equal(out, before)
    own_products.multiply(a, b, out, 0.5)
    np.testing.assert_array_equal(out, (before * dtype(0.5)).astype(dtype))
    out[...] = np.nan
    own_products.multiply(a, b, out, 0.0)
    np.testing.assert_array_equal(out, np.zeros((5, 4), dtype))
    for m, k, n in ((0, 3, 4), (3, 4, 0), (0, 0, 0)):
        out = np.empty((m, n), dtype)
        own_products.multiply(np.ones((m, k), dtype), np.ones((k, n), dtype), out)
        assert out.shape == (m, n)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_large_product_agrees_with_numpy(dtype):
    """Several blocks of k, of b's columns and of a's rows, tiles at every edge."""
    rng = np.random.default_rng(2)
    a = rng.normal(size=(1100, 1030)).astype(dtype)
    b = rng.normal(size=(1030, 301)).astype(dtype)
    out = np.full((1100, 301), np.nan, dtype)
    own_products.multiply(a, b, out)
    _check(out, a, b, np.zeros_like(out), 0.0, dtype)
    before = out.copy()
    own_products.multiply(a, b, out, 1.0)  # beta 1: the product added to what out holds
    _check(out, a, b, before, 1.0, dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_same_bits_every_time_and_whatever_rows_a_thread_gets(dtype):
    """Each entry's sum runs over k in one fixed order, whichever tile or block holds it: the
    whole product, its rows in blocks of any size, or its columns in blocks, give one result
    to the bit, call after call, and shared_product's blocks (by rows or by columns) too."""
    rng = np.random.default_rng(3)
    a = rng.normal(size=(203, 1100)).astype(dtype)
    b = rng.normal(size=(1100, 517)).astype(dtype)
    whole = np.empty((203, 517), dtype)
    own_products.multiply(a, b, whole)
    again = np.empty_like(whole)
    own_products.multiply(a, b, again)
    np.testing.assert_array_equal(again, whole)
    for cuts in ((0, 1, 101, 203), (0, 64, 200, 203)):
        pieces = np.empty_like(whole)
        for lo, hi in zip(cuts, cuts[1:], strict=False):
            own_products.multiply(a[lo:hi], b, pieces[lo:hi])
        np.testing.assert_array_equal(pieces, whole)
    columns = np.empty_like(whole)
    for lo, hi in ((0, 300), (300, 517)):
        own_products.multiply(a, b[:, lo:hi], columns[:, lo:hi])
    np.testing.assert_array_equal(columns, whole)
    for by_rows in (True, False):
        np.testing.assert_array_equal(own_products.shared_product(a, b, by_rows), whole)


def test_own_products_are_chosen_by_size_and_shape():
    def chosen(m, k, n, dtype):
        return own_products.chosen(m, n, k, dtype(0))

    assert chosen(1024, 1024, 1024, np.float64) and chosen(1024, 1024, 1024, np.float32)
    assert not chosen(64, 64, 64, np.float64)  # (2¹⁸: the register tiles' size)
    assert chosen(128, 128, 128, np.float64)  # 2²¹
    assert not chosen(128, 128, 128, np.float32) and chosen(256, 256, 256, np.float32)
    assert not chosen(4096, 4, 4096, np.float64)  # k too short to pay for packing
    assert not chosen(8, 4096, 4096, np.float64)  # m: most of each tile's rows idle
    assert chosen(4096, 2048, 32, np.float64)
    assert not chosen(4096, 2048, 32, np.float32)  # 64-column float32 tiles, half idle
    assert chosen(4096, 2048, 256, np.float32)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_product_kernel_runs_own_products_only_where_chosen(dtype):
    """kernels.gemm (the product kernel of generated code) runs a large product as an own
    product inside own_products.used (a call whose products hilbert's threads share out), and
    BLAS or the register tiles everywhere else: counted by panels.runs."""
    module = kernels if dtype == np.float64 else kernels32
    rng = np.random.default_rng(4)
    large = [rng.normal(size=s).astype(dtype) for s in ((300, 200), (200, 400))]  # 2²⁴·1.43
    small = [rng.normal(size=s).astype(dtype) for s in ((40, 30), (30, 50))]
    runs = panels.runs()
    for a, b in (large, small):
        out = np.full((a.shape[0], b.shape[1]), np.nan, dtype)
        module.gemm(a, b, out)
        _check(out, a, b, np.zeros_like(out), 0.0, dtype)
    assert panels.runs() == runs  # (outside `used`: BLAS and tiles)
    with own_products.used(dtype):
        for a, b in (large, small):
            out = np.full((a.shape[0], b.shape[1]), np.nan, dtype)
            module.gemm(a, b, out)
            _check(out, a, b, np.zeros_like(out), 0.0, dtype)
    expected = 1 if own_products.OWN.get(np.dtype(dtype).itemsize * 8) else 0
    assert panels.runs() == runs + expected  # the large one only
    module.gemm(*large, np.empty((300, 400), dtype))
    assert panels.runs() == runs + expected  # (left `used`: BLAS again)


def test_used_does_nothing_where_own_products_are_not_used(monkeypatch):
    """On a CPU where own products lost to BLAS (OWN), `used` enters nothing."""
    monkeypatch.setitem(own_products.OWN, 64, False)
    a, b = np.ones((300, 200)), np.ones((200, 400))
    runs = panels.runs()
    with own_products.used(np.float64):
        kernels.gemm(a, b, np.empty((300, 400)))
    assert panels.runs() == runs


_CACHED = textwrap.dedent("""\
    import json
    import numpy as np
    from hilbert.executor.numba import native, own_products
    x = np.ones((3, 4))
    out = np.empty((3, 3))
    own_products.multiply(x, x.T, out)
    made = native._NATIVE[-1]
    print(json.dumps({"hits": made.cache_hits, "right": bool((out == 4.0).all())}))
""")


@pytest.mark.timeout(900)
def test_a_second_process_loads_own_products_from_the_disk_cache(tmp_path):
    env = dict(os.environ, HILBERT_CACHE_DIR=str(tmp_path))
    seen = []
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", _CACHED], env=env, capture_output=True,
                              text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        seen.append(json.loads(done.stdout.splitlines()[-1]))
    assert seen == [{"hits": 0, "right": True}, {"hits": 1, "right": True}]
