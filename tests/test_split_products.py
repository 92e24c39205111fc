"""Large products of a loop-free function shared out among hilbert's threads, one BLAS product
per block of rows or columns, NumPy's BLAS on one thread for the call
(executor/blas_threads.py, codegen/products.py `_shared_out`)."""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import pytest
from hilbert.compiler.plan.layout import SPLIT_PRODUCT
from hilbert.executor import blas_threads, threads

import hilbert

SOURCE = """\
open Prelude.Networks
fn attend(q, k, v, d) ↦ attentionOf(q, k, v, d)
fn wide(a, w) ↦ tanh(einsum("np,pq->nq", a, w))
fn plain(a, w) ↦ einsum("np,pq->nq", a, w)
fn fit(t, a, w) ↦ let m ≔ einsum("np,pq->nq", a, w) in repeated(t, m)
def repeated(t, m) ≔ if t = 0 then m else repeated(t − 1, tanh(m))
"""


@pytest.fixture(scope="module")
def module():
    return hilbert.compile_source(SOURCE)


def _shares() -> bool:
    """Whether this machine and process share products out at all."""
    return threads.count() >= 2 and threads.layer() == "workqueue" and blas_threads.controllable()


def _region(function):
    program = function._last[1]
    assert program.tier == "compiled"
    return program._fast.region


def _attention(q, k, v, d):
    s = q @ k.T / np.sqrt(d)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)) @ v


@pytest.mark.parametrize("dtype, rtol", [("float64", 1e-12), ("float32", 2e-5)])
def test_attention_shares_out_its_products_and_agrees_with_numpy(module, rng, dtype, rtol):
    n, e = 1024, 64
    assert n * e * n >= SPLIT_PRODUCT  # (both products are large enough to share out)
    q, k, v = (rng.standard_normal((n, e)).astype(dtype) for _ in range(3))
    got = module.attend(q, k, v, 64.0)
    assert got.dtype == np.dtype(dtype)
    want = _attention(*(a.astype(np.float64) for a in (q, k, v)), 64.0)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)
    generated = _region(module.attend).generated
    assert generated.split is _shares()
    assert (generated.source.count("K.gemm(") == 2 and ("[lo" in generated.source)) is _shares()
    assert generated.parallel is _shares()  # (its softmax nest, beside the products)


@pytest.mark.parametrize("rows, columns", [(2048, 2048), (8, 1 << 18)])
def test_a_product_is_shared_by_its_longer_side(module, rng, rows, columns):
    a, w = rng.standard_normal((rows, 32)), rng.standard_normal((32, columns))
    assert rows * 32 * columns >= SPLIT_PRODUCT
    np.testing.assert_allclose(module.wide(a, w), np.tanh(a @ w), rtol=1e-12, atol=1e-12)
    source = _region(module.wide).generated.source
    if _shares():
        assert ("[:, lo" in source) is (columns > rows)


@pytest.mark.parametrize("dtype, rtol", [("float64", 1e-12), ("float32", 2e-5)])
def test_a_lone_large_product_is_shared_out_from_plain_numpy_code(module, rng, dtype, rtol):
    """A function that is one product compiles nothing (its code is plain NumPy calls); a
    large one is still shared out among hilbert's threads (K.shared_product: a block per
    thread, each hilbert's own packed product or BLAS's on one thread)."""
    a, w = (rng.standard_normal(s).astype(dtype) for s in ((512, 256), (256, 640)))
    assert 512 * 256 * 640 >= SPLIT_PRODUCT
    got = module.plain(a, w)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_allclose(got, a.astype(np.float64) @ w.astype(np.float64), rtol=rtol,
                               atol=rtol * 16)
    program = module.plain._last[1]
    generated = program._fast.region.generated
    assert not generated.compiled
    assert ("K.shared_product(" in generated.source) is _shares()
    assert generated.split is _shares()


def test_small_products_and_loops_keep_blas_whole(module, rng):
    a, w = rng.standard_normal((16, 16)), rng.standard_normal((16, 16))
    np.testing.assert_allclose(module.wide(a, w), np.tanh(a @ w), rtol=1e-12, atol=1e-12)
    assert not _region(module.wide).generated.split
    a, w = rng.standard_normal((512, 256)), rng.standard_normal((256, 512))
    want = a @ w
    for _ in range(3):
        want = np.tanh(want)
    np.testing.assert_allclose(module.fit(3, a, w), want, rtol=1e-12, atol=1e-12)
    assert not _region(module.fit).generated.split  # (a function with loops)


def test_a_shared_call_runs_blas_on_one_thread_and_sets_it_back(module, rng, monkeypatch):
    """A call that shares its products out runs under `single` once, BLAS on one thread
    there and as it was after; where nothing is shared out, BLAS is never touched."""
    before = [c.get_num_threads() for c in blas_threads._numpy_blas()]
    seen = []
    real = blas_threads.single

    @contextmanager
    def watched():
        with real():
            seen.append([c.get_num_threads() for c in blas_threads._numpy_blas()])
            yield

    monkeypatch.setattr(blas_threads, "single", watched)
    n, e = 1024, 64
    q, k, v = (rng.standard_normal((n, e)) for _ in range(3))
    module.attend(q, k, v, 64.0)
    assert seen == ([[1] * len(before)] if _shares() else [])
    assert [c.get_num_threads() for c in blas_threads._numpy_blas()] == before


def test_single_sets_blas_back_when_the_call_raises():
    before = [c.get_num_threads() for c in blas_threads._numpy_blas()]
    with pytest.raises(RuntimeError), blas_threads.single():
        assert all(c.get_num_threads() == 1 for c in blas_threads._numpy_blas())
        raise RuntimeError
    assert [c.get_num_threads() for c in blas_threads._numpy_blas()] == before
