"""Complex matrix products in LLVM IR (products.py's calls on complex128 or complex64
matrices): out = a · b + beta · out, by NumPy's own cblas_zgemm (cgemm) where BLAS reads the
layout and the product is larger than SMALL_PRODUCT (what np.matmul calls), else loops that
sum each entry's terms in order from 0 (or from beta · out where beta is not 0), each term
complex.py's product. One function per dtype in each module that multiplies, called with the
matrices' addresses, sizes and steps in entries, and beta's parts."""

from __future__ import annotations

from llvmlite import ir

from ...compiler.plan.layout import SMALL_PRODUCT
from ..numba import product_parts as parts
from . import complex as cplx
from .product_kernel import PLAIN, ROW_MAJOR, Kernel, _Code
from .runtime import I64, LLVM
from .unsupported import Unsupported

I32 = ir.IntType(32)


def multiply(lowering, a, b, c, beta: tuple | None) -> None:
    """c = a · b (+ beta · c) for complex matrices `a`, `b`, `c` (ArrayValues) of one dtype."""
    if not a.dtype == b.dtype == c.dtype:
        raise Unsupported("a product of mixed dtypes")
    t = c.dtype
    builder = lowering.builder
    factor = lowering.cast(*beta, t) if beta is not None else cplx.constant(0j, t)
    function = _function(lowering.module, t)
    builder.call(function, [
        builder.ptrtoint(a.data, I64), *a.shape, *a.strides,
        builder.ptrtoint(b.data, I64), b.shape[1], *b.strides,
        builder.ptrtoint(c.data, I64), *c.strides, *cplx.parts(builder, factor)])


def _function(module: ir.Module, t: str) -> ir.Function:
    name = f"hb_complex_product.{t}"
    found = module.globals.get(name)
    if found is not None:
        return found
    part = LLVM[cplx.PARTS[t]]
    kind = ir.FunctionType(ir.VoidType(), [I64] * 12 + [part, part])
    function = ir.Function(module, kind, name)
    function.linkage = "internal"
    function.attributes.add("nounwind")
    function.attributes.add("noinline")
    _Product(function, t).write()
    return function


class _Product(_Code):
    """The body of one dtype's complex product function."""

    def __init__(self, function: ir.Function, t: str):
        super().__init__(function)
        self.t = t
        (self.a, self.m, self.k, self.a0, self.a1, self.bm, self.n, self.b0, self.b1,
         self.c, self.c0, self.c1, beta_re, beta_im) = function.args
        self.beta = cplx.made(self.b, beta_re, beta_im, t)
        self.items = [self.b.inttoptr(x, LLVM[t].as_pointer()) for x in
                      (self.a, self.bm, self.c)]
        self._done = function.append_basic_block("done")

    # (the product kernel's own: its cases, and blas._blas_layout's reading of a layout)
    _w, _case, _layout = Kernel._w, Kernel._case, Kernel._layout

    def write(self) -> None:
        b, w = self.b, self._w
        m, n = self.m, self.n
        self._case(b.or_(b.icmp_signed("==", m, w(0)), b.icmp_signed("==", n, w(0))),
                   lambda: None)
        self._blas()
        self._loop(w(0), m, 1, lambda i: self._loop(w(0), n, 1, lambda j: self._sum_into(i, j)))
        b.branch(self._done)
        b.position_at_end(self._done)
        b.ret_void()

    def _blas(self) -> None:
        """NumPy's ?gemm where the product is large and a, b and c are laid out for BLAS."""
        found = parts.numpy_cblas(("z" if self.t == "complex128" else "c") + "gemm")
        if found is None:
            return
        b, w = self.b, self._w
        m, n, k = self.m, self.n, self.k
        ta, lda = self._layout(m, k, self.a0, self.a1)
        tb, ldb = self._layout(k, n, self.b0, self.b1)
        tc, ldc = self._layout(m, n, self.c0, self.c1)
        large = b.icmp_signed(">", b.mul(b.mul(m, n), k), w(SMALL_PRODUCT))
        readable = b.and_(b.and_(b.icmp_signed(">", k, w(0)), b.icmp_signed("!=", ta, w(0))),
                          b.and_(b.icmp_signed("!=", tb, w(0)),
                                 b.icmp_signed("==", tc, w(PLAIN))))
        self._case(b.and_(large, readable),
                   lambda: self._gemm(found, ta, lda, tb, ldb, ldc))

    def _gemm(self, found: tuple[int, bool], ta, lda, tb, ldb, ldc) -> None:
        import llvmlite.binding as llvm

        b = self.b
        letter = "z" if self.t == "complex128" else "c"
        symbol = f"hilbert_numpy_cblas_{letter}gemm"
        llvm.add_symbol(symbol, found[0])
        whole = I64 if found[1] else I32
        pointer = LLVM[self.t].as_pointer()
        kind = ir.FunctionType(ir.VoidType(), [I32, I32, I32, whole, whole, whole, pointer,
                                               pointer, whole, pointer, whole, pointer,
                                               pointer, whole])
        gemm = self.function.module.globals.get(symbol) or ir.Function(
            self.function.module, kind, symbol)
        one, beta = self._slot(LLVM[self.t]), self._slot(LLVM[self.t])
        b.store(cplx.constant(1 + 0j, self.t), one)
        b.store(self.beta, beta)

        def sized(v):
            return v if whole == I64 else b.trunc(v, whole)

        a, bm, c = self.items
        b.call(gemm, [ir.Constant(I32, ROW_MAJOR), b.trunc(ta, I32), b.trunc(tb, I32),
                      sized(self.m), sized(self.n), sized(self.k), one, a, sized(lda), bm,
                      sized(ldb), beta, c, sized(ldc)])

    def _sum_into(self, i: ir.Value, j: ir.Value) -> None:
        """c[i, j] = beta · c[i, j] (0 where beta is 0) + Σ_p a[i, p] · b[p, j], in order."""
        b, t = self.b, self.t
        a, bm, c = self.items
        at = b.gep(c, [b.add(b.mul(i, self.c0), b.mul(j, self.c1))])
        zero = cplx.constant(0j, t)
        given = cplx.arithmetic(b, "!=", self.beta, zero, t)
        with b.if_then(given):  # (c read only where beta is given: it may be uninitialised)
            b.store(cplx.arithmetic(b, "*", self.beta, b.load(at), t), at)
        total = self._slot(LLVM[t])
        b.store(b.select(given, b.load(at), zero), total)

        def term(p: ir.Value) -> None:
            x = b.load(b.gep(a, [b.add(b.mul(i, self.a0), b.mul(p, self.a1))]))
            y = b.load(b.gep(bm, [b.add(b.mul(p, self.b0), b.mul(j, self.b1))]))
            b.store(cplx.arithmetic(b, "+", b.load(total), cplx.arithmetic(b, "*", x, y, t),
                                    t), total)

        self._loop(self._w(0), self.k, 1, term)
        b.store(b.load(total), at)
