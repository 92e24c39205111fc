"""Products of matrices through NumPy's BLAS from compiled code: NumPy's cblas_?gemm and ?gemv
called by address, and one product kernel per number type (`_product_at`, compiled by address)
that picks register tiles (tiles.py), hilbert's own products (own_products.py), BLAS, or plain
loops for a layout BLAS cannot read; `gemm` and `gemm_beta` are what generated code calls
(as `K.gemm`)."""

from __future__ import annotations

import llvmlite.binding as llvm
import numpy as np
from numba import carray, types
from numba.extending import intrinsic

from . import native, own_products, tiles
from .jitting import PYTHON_MODE, STAMP, compiled, jit


def _number_type(like):
    """The Numba number type `like` stands for: an array's .dtype, or a number of that type."""
    if isinstance(like, types.DType):
        return like.dtype
    return like if isinstance(like, types.Float) else None


if not PYTHON_MODE:
    @intrinsic
    def _items(typingctx, address, like):
        """The items of `like`'s type (an array's .dtype, or a number) at an address (a
        uintp), as a pointer carray can read."""
        number = _number_type(like)
        if not isinstance(address, types.Integer) or number is None:
            return None

        def codegen(context, builder, signature, args):
            return builder.inttoptr(args[0], context.get_value_type(signature.return_type))

        return types.CPointer(number)(address, like), codegen

    @intrinsic
    def _item_bytes(typingctx, like):
        """Bytes per item of `like`'s type (a constant)."""
        number = _number_type(like)
        if number is None:
            return None

        def codegen(context, builder, signature, args):
            return context.get_constant(types.intp, number.bitwidth // 8)

        return types.intp(like), codegen

    @intrinsic
    def _cast_like(typingctx, value, array):
        """`value` as a number of `array`'s dtype."""
        if not (isinstance(value, (types.Float, types.Integer)) and isinstance(array, types.Array)):
            return None

        def codegen(context, builder, signature, args):
            return context.cast(builder, args[0], signature.args[0], array.dtype)

        return array.dtype(value, array), codegen


#: NumPy's CBLAS routines compiled code calls, by routine and Numba type of the numbers
#: ("gemm", types.float64): dgemm, dgemv, sgemm, sgemv.
_CBLAS: dict = {}
#: The product kernel (`_product_at`, compiled by address) for each Numba number type.
_PRODUCTS: dict = {}


def _cblas_routines(letter: str, scalar) -> bool:
    """NumPy's cblas_<letter>gemm and cblas_<letter>gemv as Numba functions in _CBLAS (d:
    float64, s: float32); whether NumPy's BLAS has both, with one integer width."""
    gemm_at, gemv_at = native.numpy_cblas(f"{letter}gemm"), native.numpy_cblas(f"{letter}gemv")
    if gemm_at is None or gemv_at is None or gemm_at[1] != gemv_at[1]:
        return False
    whole = types.int64 if gemm_at[1] else types.int32
    llvm.add_symbol(f"hilbert_numpy_cblas_{letter}gemm", gemm_at[0])
    _CBLAS["gemm", scalar] = types.ExternalFunction(f"hilbert_numpy_cblas_{letter}gemm", types.void(
        types.int32, types.int32, types.int32, whole, whole, whole, scalar, types.uintp, whole,
        types.uintp, whole, scalar, types.uintp, whole))
    llvm.add_symbol(f"hilbert_numpy_cblas_{letter}gemv", gemv_at[0])
    _CBLAS["gemv", scalar] = types.ExternalFunction(f"hilbert_numpy_cblas_{letter}gemv", types.void(
        types.int32, types.int32, whole, whole, scalar, types.uintp, whole, types.uintp, whole,
        scalar, types.uintp, whole))
    return True


def _cblas_gemm(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):
    """cblas_?gemm for the type of beta (compiled code only: `_gemm_of`)."""


def _cblas_gemv(order, flip, rows, cols, alpha, a, lda, x, step, beta, y, ystep):
    """cblas_?gemv for the type of beta (compiled code only: `_gemv_of`)."""


def _product(a, m, k, a0, a1, b, n, b0, b1, c, c0, c1, beta):
    """The product kernel for the type of beta (compiled code only: `_product_of`)."""




if not PYTHON_MODE:
    from numba.extending import overload

    @overload(_cblas_gemm)
    def _gemm_of(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):
        call = _CBLAS.get(("gemm", beta))
        if call is None:
            return None
        return lambda order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc: call(
            order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)

    @overload(_cblas_gemv)
    def _gemv_of(order, flip, rows, cols, alpha, a, lda, x, step, beta, y, ystep):
        call = _CBLAS.get(("gemv", beta))
        if call is None:
            return None
        return lambda order, flip, rows, cols, alpha, a, lda, x, step, beta, y, ystep: call(
            order, flip, rows, cols, alpha, a, lda, x, step, beta, y, ystep)

    @overload(_product)
    def _product_of(a, m, k, a0, a1, b, n, b0, b1, c, c0, c1, beta):
        call = _PRODUCTS.get(beta)
        if call is None:
            return None
        return lambda a, m, k, a0, a1, b, n, b0, b1, c, c0, c1, beta: call(
            a, m, k, a0, a1, b, n, b0, b1, c, c0, c1, beta)

    def _product_at(a, m, k, a0, a1, b, n, b0, b1, c, c0, c1, beta):
        """out = a · b + beta · out on raw matrices of beta's type: each an address and its
        steps between rows and between columns in items, any sign (a is m×k, b k×n, out m×n).
        One machine-code function per type for every layout, called by address (never linked
        into its callers), so a program compiles only `gemm`'s few lines per layout."""
        if m == 0 or n == 0:
            return
        if b1 == 1 and c1 == 1 and m * n * k <= tiles.TILED_PRODUCT:
            # small, b and out row-major: vector registers beat a BLAS call (tiles.py)
            tiles.tiled_product(a, m, k, a0, a1, b, n, b0, c, c0, beta)
            return
        own = own_products.entry(beta)
        if own != 0 and own_products.chosen(m, n, k, beta):
            # a block of a product hilbert's threads share out, BLAS on one thread: ours is
            # faster there (own_products.py)
            own_products.call_at(own, a, m, k, a0, a1, b, n, b0, b1, c, c0, c1, beta)
            return
        ta, lda = _blas_layout(m, k, a0, a1)
        tb, ldb = _blas_layout(k, n, b0, b1)
        tc, ldc = _blas_layout(m, n, c0, c1)
        one = beta * 0 + 1
        if k > 0 and ta != 0 and tb != 0 and tc == 111:
            # (no copies here: BLAS gets raw addresses, so every array outlives the call)
            if n == 1:  # y = A x: A stored row-major (ta 111) or as its transpose; x strided
                rows, cols, flip = (m, k, 111) if ta == 111 else (k, m, 112)
                _cblas_gemv(101, flip, rows, cols, one, a, lda, b, b0 if k > 1 else 1,
                            beta, c, c0)
            elif m == 1:  # yᵀ = Bᵀ xᵀ: B stored row-major (tb 111) or as its transpose
                rows, cols, flip = (k, n, 112) if tb == 111 else (n, k, 111)
                _cblas_gemv(101, flip, rows, cols, one, b, ldb, a, a1 if k > 1 else 1,
                            beta, c, c1)
            else:
                _cblas_gemm(101, ta, tb, m, n, k, one, a, lda, b, ldb, beta, c, ldc)
            return
        # plain loops (no BLAS layout, or nothing summed): never made by generated code for
        # large products, but correct for any steps
        sa, la = _span(a, m, k, a0, a1, beta)
        sb, lb = _span(b, k, n, b0, b1, beta)
        sc, lc = _span(c, m, n, c0, c1, beta)
        for i in range(m):
            for j in range(n):
                at = i * c0 + j * c1 - lc
                total = sc[at] * beta if beta != 0.0 else 0.0
                for p in range(k):
                    total += sa[i * a0 + p * a1 - la] * sb[p * b0 + j * b1 - lb]
                sc[at] = total

    @jit
    def _blas_layout(rows, cols, s0, s1):
        """(CBLAS transpose flag, leading dimension) reading a rows×cols matrix with steps s0,
        s1 as row-major (111) or column-major (112), or (0, 0) when it is neither."""
        if (s1 == 1 or cols == 1) and s0 >= max(1, cols):
            return 111, s0
        if (s0 == 1 or rows == 1) and s1 >= max(1, rows):
            return 112, s1
        return 0, 0

    @jit
    def _span(address, rows, cols, s0, s1, like):
        """(items, lowest offset): a flat view over every item of `like`'s type a rows×cols
        matrix at `address` with steps s0, s1 reaches, and the offset of its lowest item from
        item [0, 0]."""
        low = min(0, (rows - 1) * s0) + min(0, (cols - 1) * s1)
        high = max(0, (rows - 1) * s0) + max(0, (cols - 1) * s1)
        return carray(_items(address + _item_bytes(like) * low, like), (high - low + 1,)), low


def blas_products(letter: str, scalar) -> bool:
    """The product kernel for numbers of `scalar` (d: types.float64, s: types.float32) through
    NumPy's BLAS, made once; whether NumPy's BLAS has its routines."""
    if scalar in _PRODUCTS:
        return True
    if PYTHON_MODE or not _cblas_routines(letter, scalar):
        return False
    _PRODUCTS[scalar] = native.at_address(_product_at, types.void(
        types.uintp, types.intp, types.intp, types.intp, types.intp, types.uintp, types.intp,
        types.intp, types.intp, types.uintp, types.intp, types.intp, scalar),
        f"hilbert_{letter}product_at", STAMP)
    return True


if blas_products("d", types.float64):
    @compiled
    def gemm_beta(a, b, out, beta):
        """out = a · b + beta · out through NumPy's BLAS (float64 or float32 matrices, beta of
        their type): a, b row- or column-major views (either side may be a strided unit axis),
        out a row-major view (rows may be strided); plain loops for any other layout."""
        item = a.itemsize
        _product(a.ctypes.data, a.shape[0], a.shape[1], a.strides[0] // item,
                 a.strides[1] // item, b.ctypes.data, b.shape[1], b.strides[0] // item,
                 b.strides[1] // item, out.ctypes.data, out.strides[0] // item,
                 out.strides[1] // item, _cast_like(beta, out))
        return out

    @compiled
    def gemm(a, b, out):
        """out = a · b through NumPy's BLAS (out C-ordered; a, b row- or column-major)."""
        return gemm_beta(a, b, out, 0.0)
else:
    @compiled
    def gemm(a, b, out):
        """out = a · b through BLAS (Numba's np.dot)."""
        np.dot(a, b, out)
        return out

    @compiled
    def gemm_beta(a, b, out, beta):
        """out = a · b + beta · out (Numba's np.dot, then the sum)."""
        if beta == 0.0:
            out[:, :] = np.dot(np.ascontiguousarray(a), np.ascontiguousarray(b))
        else:
            out[:, :] += np.dot(np.ascontiguousarray(a), np.ascontiguousarray(b))
        return out
