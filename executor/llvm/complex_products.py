"""Complex matrix products in LLVM IR (products.py's calls on complex128 or complex64
matrices): out = a · b + beta · out, by loops that start each entry from beta · out (0 where
beta is 0) and add its terms a[i, p] · b[p, j] in order of p (complex.py's product and sum),
row by row along j so that LLVM vectorises them, or, for a product over BLAS_WORK that BLAS
reads the layout of, NumPy's own cblas_zgemm (cgemm), what np.matmul calls. One function per
dtype in each module that multiplies, called with the matrices' addresses, sizes and steps in
entries, and beta's parts. Like BLAS, it takes out to share no memory with a or b."""

from __future__ import annotations

from llvmlite import ir

from ..numba import product_parts as parts
from . import complex as cplx
from .product_kernel import PLAIN, ROW_MAJOR, Kernel, _Code
from .runtime import I64, LLVM
from .unsupported import Unsupported

I32 = ir.IntType(32)
#: The work (m·n·k) above which a product is BLAS's: below it, loops (a network's products,
#: QAOA's at most 131 072, run in them without waking OpenBLAS's threads, which on a loaded
#: machine made some calls 50 ms where most took 0.4 ms).
BLAS_WORK = 1 << 20


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
        self._loop(w(0), m, 1, self._row)
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
        large = b.icmp_signed(">", b.mul(b.mul(m, n), k), w(BLAS_WORK))
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

    def _row(self, i: ir.Value) -> None:
        """Row i of c: each entry beta · c[i, j] (0 where beta is 0), then a[i, p] · b[p, j]
        added for p = 0, 1, … in order (the row of b and c along j: LLVM vectorises it, its
        parts read as pairs of reals, where b's and c's rows are adjacent)."""
        b, t, w = self.b, self.t, self._w
        c_row = b.mul(i, self.c0)
        zero = cplx.constant(0j, t)
        given = cplx.arithmetic(b, "!=", self.beta, zero, t)

        def start(j: ir.Value) -> None:
            at = b.gep(self.items[2], [b.add(c_row, b.mul(j, self.c1))])
            with b.if_else(given) as (scaled, cleared):
                with scaled:  # (c read only where beta is given: it may be uninitialised)
                    b.store(cplx.arithmetic(b, "*", self.beta, b.load(at), t), at)
                with cleared:
                    b.store(zero, at)

        self._loop(w(0), self.n, 1, start)
        unit = b.and_(b.icmp_signed("==", self.b1, w(1)), b.icmp_signed("==", self.c1, w(1)))
        with b.if_else(unit) as (adjacent, strided):
            for block, steps in ((adjacent, (w(1), w(1))), (strided, (self.b1, self.c1))):
                with block:
                    self._loop(w(0), self.k, 1, lambda p, s=steps: self._terms(i, p, c_row, *s))

    def _terms(self, i: ir.Value, p: ir.Value, c_row: ir.Value, b1, c1) -> None:
        """c[i, j] += a[i, p] · b[p, j] for every j, as complex.py multiplies and adds."""
        b, w = self.b, self._w
        x = b.load(b.gep(self.items[0], [b.add(b.mul(i, self.a0), b.mul(p, self.a1))]))
        xr, xi = cplx.parts(b, x)
        b_row = b.mul(p, self.b0)
        real = LLVM[cplx.PARTS[self.t]].as_pointer()
        bm, c = (b.bitcast(v, real) for v in self.items[1:])

        def term(j: ir.Value) -> None:
            bj, cj = (b.mul(b.add(row, b.mul(j, step)), w(2))
                      for row, step in ((b_row, b1), (c_row, c1)))
            yr, yi = (b.load(b.gep(bm, [b.add(bj, w(k))])) for k in (0, 1))
            re, im = (b.gep(c, [b.add(cj, w(k))]) for k in (0, 1))
            b.store(b.fadd(b.load(re), b.fsub(b.fmul(xr, yr), b.fmul(xi, yi))), re)
            b.store(b.fadd(b.load(im), b.fadd(b.fmul(xr, yi), b.fmul(xi, yr))), im)

        self._loop(w(0), self.n, 1, term)
