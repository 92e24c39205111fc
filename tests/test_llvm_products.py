"""Matrix products in the LLVM back end (executor/llvm/products.py): K.gemm and K.gemm_beta call
the product kernel written in LLVM IR (product_kernel.py: blas.py's, case for case), and
K.small_product_into and K.small_product_beta LLVM loops summing each entry's terms in
kernels.py's order; each gives NumPy's product (in
float64, computed here) and the Numba-built kernel's bits, on every layout generated code
hands them (a transposed view, a strided one, rows left over from the tiles, empty sides),
and real programs of products are built by llvm.

Tolerance: a sum of k products rounded in the result's dtype (or better: float32 small
products add in float64) is within (k + 2)·ε of the sum of the terms' magnitudes (each term
and partial sum rounded once, and the store), the bound `_assert_within_bound` checks entry
by entry. The programs' results (a dense layer's tanh, exp of a Gram matrix: sums of at most
40 terms, then one function within an ulp or two) are held to 1e-12 (float64) and 1e-4
(float32) relative, far above those bounds at their sizes."""

from __future__ import annotations

import numpy as np
import pytest
from hilbert.executor import llvm
from hilbert.executor.codegen.loops import Call, Do, Fmt, Return, Var, View, number
from hilbert.executor.llvm.types import KERNEL_CONSTANTS, Array
from hilbert.executor.numba import kernels, kernels32

import hilbert

#: m, k, n: a single entry, tiles with columns left over, an empty sum and an empty result,
#: a whole tile, several tiles, a matrix-vector and a vector-matrix product, sizes past
#: K.SMALL_PRODUCT (the product kernel's register tiles), and past its tiles' 2¹⁸
#: multiply-adds (BLAS's gemm, and its gemv for one column or one row).
SIZES = [(1, 1, 1), (3, 5, 7), (4, 0, 9), (0, 3, 2), (5, 4, 8), (7, 3, 17), (3, 100, 1),
         (1, 50, 30), (16, 16, 16), (64, 32, 40), (80, 64, 65), (300, 1000, 1),
         (1, 1000, 300)]
CALLS = ["K.small_product_into", "K.small_product_beta", "K.gemm", "K.gemm_beta"]


def _lowered(fn: str, dtype: str, transposed: bool, beta: float | None):
    """fn(a0 (its transpose where `transposed`), a1, a2[, beta]) as a lowered function."""
    a = View(Var("a0"), "{0}.T") if transposed else Var("a0")
    args = (a, Var("a1"), Var("a2")) + (() if beta is None else (number(beta, dtype),))
    body = [Do(Call(fn, args)), Return(Fmt("{}, {}", (Var("a2"), Var("a2"))))]
    return llvm.lowered(body, ["a0", "a1", "a2"], [Array(dtype, 2)] * 3, dtype)


def _numba_kernel(fn: str, dtype: str, a, b, out, beta: float | None) -> None:
    kernel = getattr(kernels if dtype == "float64" else kernels32, fn[2:])
    if beta is None:
        kernel(a, b, out)
    else:
        kernel(a, b, out, np.dtype(dtype).type(beta))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("fn", CALLS)
def test_products_are_numpys_and_the_numba_kernels_bits(fn, dtype):
    rng = np.random.default_rng(11)
    for transposed in (False, True):
        for beta in ([None] if "beta" not in fn else [0.0, 1.0]):
            made = _lowered(fn, dtype, transposed, beta)
            for (m, k, n) in SIZES:
                a = rng.normal(size=(k, m) if transposed else (m, k)).astype(dtype)
                seen = a.T if transposed else a
                wide = rng.normal(size=(k, 2 * n)).astype(dtype)
                old = rng.normal(size=(m, n)).astype(dtype)
                # (b's rows adjacent; strided, which BLAS cannot read; transposed)
                for b in (wide[:, :n].copy(), wide[:, ::2], wide[:, :n].T.copy().T):
                    got, want = old.copy(), old.copy()
                    made(a, b, got)
                    _numba_kernel(fn, dtype, seen, b, want, beta)
                    case = (m, k, n, transposed, beta, b.strides)
                    assert np.array_equal(got.view(np.uint8), want.view(np.uint8)), case
                    _assert_within_bound(got, seen, b, old if beta else None, case)


def _assert_within_bound(got, a, b, old, case) -> None:
    """got = a · b (+ old) as NumPy computes it in float64, within the rounding a sum of k
    terms may make in got's dtype: (k + 2)·ε of the sum of the terms' magnitudes."""
    wide = [x.astype(np.float64) for x in (a, b)]
    exact = wide[0] @ wide[1] + (0.0 if old is None else old.astype(np.float64))
    sizes = np.abs(wide[0]) @ np.abs(wide[1]) + (0.0 if old is None else np.abs(old))
    bound = (a.shape[1] + 2) * np.finfo(got.dtype).eps * sizes
    assert np.all(np.abs(got.astype(np.float64) - exact) <= bound), case


def test_the_small_product_bound_is_the_kernels():
    """Generated code's test `… > K.SMALL_PRODUCT` reads the bound kernels.py holds."""
    assert KERNEL_CONSTANTS["K.SMALL_PRODUCT"] == kernels.SMALL_PRODUCT


SOURCE = """
open Prelude.Networks
fn layer(x, w, v) ↦ tanh(dense(hiddenOf(x, w), v))
fn gram(x) ↦ exp(einsum("ni,nj->ij", x, x))
"""


@pytest.fixture(scope="module")
def module():
    return hilbert.compile_source(SOURCE, name="llvm_products.hb")


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("n", [3, 40])  # (small products, and ones past K.SMALL_PRODUCT)
def test_programs_of_products_are_built_by_llvm(module, n, dtype):
    rng = np.random.default_rng(5)
    x = rng.normal(scale=0.3, size=(n, 12)).astype(dtype)
    w = rng.normal(size=(12, 20)).astype(dtype)
    v = rng.normal(size=(20, 6)).astype(dtype)
    x64 = x.astype(np.float64)
    hidden = np.maximum(x64 @ w.astype(np.float64), 0.0)
    wanted = {"layer": (np.tanh(hidden @ v.astype(np.float64)), (x, w, v)),
              "gram": (np.exp(x64.T @ x64), (x,))}
    tolerance = 1e-4 if dtype == "float32" else 1e-12
    for name, (want, args) in wanted.items():
        function = module.function(name)
        got = function(*args)
        assert got.dtype == np.dtype(dtype)
        np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance, err_msg=name)
        built = [note for note in function.plan(*(a.shape for a in args)).all_notes
                 if "built by" in note]
        assert built and all("built by llvm" in note for note in built), (name, built)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_own_products_are_called_as_numba_code_calls_them(dtype):
    """Inside own_products.used (a product hilbert's threads share out), a large product runs
    as hilbert's own where own_products.py says so (AVX-512 CPUs; elsewhere BLAS): the
    product kernel reads the same entry, so the bits are the Numba-built kernel's."""
    from hilbert.executor.numba import own_products

    rng = np.random.default_rng(2)
    m, k, n = 64, 256, 512  # (past both widths' WORK and SIDES)
    a, b = (rng.normal(size=s).astype(dtype) for s in ((m, k), (k, n)))
    made = _lowered("K.gemm", dtype, False, None)
    got, want = np.empty((m, n), dtype), np.empty((m, n), dtype)
    with own_products.used(dtype):
        made(a, b, got)
        _numba_kernel("K.gemm", dtype, a, b, want, None)
    assert np.array_equal(got.view(np.uint8), want.view(np.uint8))
    _assert_within_bound(got, a, b, None, "own")


def test_the_product_kernel_is_a_module_of_its_own_called_by_its_symbol():
    """Functions that multiply declare the product kernel and call it by its symbol: its
    machine code is made once per process (and kept on disk), not compiled again into every
    module (it was most of their compile time); what they compute is still NumPy's product."""
    from hilbert.executor.llvm import shared

    rng = np.random.default_rng(5)
    a, b = rng.normal(size=(6, 9)), rng.normal(size=(9, 5))
    made = [_lowered("K.gemm", "float64", transposed, None) for transposed in (False, True)]
    for function in made:
        assert 'declare void @"hb_product.float64"' in function.text
        assert 'define void @"hb_product.float64"' not in function.text
    kernels = []
    for function, first in zip(made, (a, np.ascontiguousarray(a.T)), strict=True):
        out = np.zeros((6, 5))
        function(first, b, out)
        np.testing.assert_allclose(out, a @ b, rtol=1e-13, atol=1e-13)
        kernels.append(shared.KERNELS["float64"])  # (made by the first call, if not before)
    assert kernels[0] is kernels[1]
