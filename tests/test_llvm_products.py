"""Matrix products in the LLVM back end (executor/llvm/products.py): K.gemm and K.gemm_beta call
the product kernel Numba-built code calls, K.small_product_into and K.small_product_beta are
LLVM loops summing each entry's terms in kernels.py's order; each gives NumPy's product (in
float64, computed here) and the Numba-built kernel's bits, on every layout generated code
hands them (a transposed view, a strided one, rows left over from the tiles, empty sides),
and real programs of products are built by llvm.

Tolerance: an entry of a product of k ≤ 100 terms of magnitude ≤ 4 (normal draws) rounds each
term and each partial sum once (≤ 2k·ε of the sum of magnitudes, ~ 400 ε for float64); 1e-12
absolute (4500 ε) and, in float32, 1e-4 (840 ε₃₂) bound it with a margin."""

from __future__ import annotations

import numpy as np
import pytest
from hilbert.executor import llvm
from hilbert.executor.codegen.loops import Call, Do, Fmt, Return, Var, View, number
from hilbert.executor.llvm.types import KERNEL_CONSTANTS, Array
from hilbert.executor.numba import kernels, kernels32

import hilbert

#: m, k, n: a single entry, tiles with columns left over, an empty sum and an empty result,
#: a whole tile, several tiles, a matrix-vector and a vector-matrix product, and sizes past
#: K.SMALL_PRODUCT (BLAS's or the register tiles' in the product kernel).
SIZES = [(1, 1, 1), (3, 5, 7), (4, 0, 9), (0, 3, 2), (5, 4, 8), (7, 3, 17), (3, 100, 1),
         (1, 50, 30), (16, 16, 16), (64, 32, 40)]
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
    tolerance = 1e-4 if dtype == "float32" else 1e-12
    for (m, k, n) in SIZES:
        for transposed in (False, True):
            for beta in ([None] if "beta" not in fn else [0.0, 1.0]):
                made = _lowered(fn, dtype, transposed, beta)
                a = rng.normal(size=(k, m) if transposed else (m, k)).astype(dtype)
                seen = a.T if transposed else a
                wide = rng.normal(size=(k, 2 * n)).astype(dtype)
                old = rng.normal(size=(m, n)).astype(dtype)
                for b in (wide[:, :n].copy(), wide[:, ::2]):  # (rows adjacent, and strided)
                    got, want = old.copy(), old.copy()
                    made(a, b, got)
                    _numba_kernel(fn, dtype, seen, b, want, beta)
                    case = (m, k, n, transposed, beta, b.strides)
                    assert np.array_equal(got.view(np.uint8), want.view(np.uint8)), case
                    exact = seen.astype(np.float64) @ b.astype(np.float64)
                    if beta:
                        exact += old
                    np.testing.assert_allclose(got, exact, rtol=tolerance, atol=tolerance,
                                               err_msg=str(case))


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
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HILBERT_CODEGEN", "llvm")
        yield hilbert.compile_source(SOURCE, name="llvm_products.hb")


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
        built = [note for note in function.plan(*(a.shape for a in args)).notes
                 if "built by" in note]
        assert built and all("built by llvm" in note for note in built), (name, built)
