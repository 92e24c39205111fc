"""Complex matrix products in LLVM IR (products.py's calls on complex128 or complex64
matrices): out = a · b + beta · out, by tiles of up to 8 columns of a row of out whose sums,
started from beta · out (0 where beta is 0), add the terms a[i, p] · b[p, j] in order of p
(complex.py's product and sum, lane by lane, in vectors of the real and the imaginary parts),
or, for a product over BLAS_WORK that BLAS reads the layout of, NumPy's own cblas_zgemm
(cgemm), what np.matmul calls. One function per dtype, in a module of its own compiled once
per process at level 3 (shared.py, as the real product kernel), called by its symbol
with the matrices' data, sizes and steps in entries, and beta's parts. As BLAS does, it takes
out to share no memory with a or b."""

from __future__ import annotations

from llvmlite import ir

from ..numba import product_parts as parts
from . import complex as cplx
from . import shared
from .product_kernel import PLAIN, ROW_MAJOR, Kernel, _Code
from .runtime import I64, LLVM
from .unsupported import Unsupported

I32 = ir.IntType(32)
#: The work (m·n·k) above which a product is BLAS's: below it, loops (a network's products,
#: QAOA's at most 131 072, run in them without waking OpenBLAS's threads, which on a loaded
#: machine made some calls 50 ms where most took 0.4 ms).
BLAS_WORK = 1 << 20
#: The columns of c a tile sums side by side, widest first (then one at a time).
WIDTHS = (8, 4, 2, 1)
#: The alignment of a complex entry's parts (what a vector read from any entry may assume).
_ALIGN = {"complex128": 8, "complex64": 4}


def multiply(lowering, a, b, c, beta: tuple | None) -> None:
    """c = a · b (+ beta · c) for complex matrices `a`, `b`, `c` (ArrayValues) of one dtype."""
    if not a.dtype == b.dtype == c.dtype:
        raise Unsupported("a product of mixed dtypes")
    t = c.dtype
    builder = lowering.builder
    factor = lowering.cast(*beta, t) if beta is not None else cplx.constant(0j, t)
    function = _function(lowering.module, t)
    builder.call(function, [a.data, *a.shape, *a.strides, b.data, b.shape[1], *b.strides,
                            c.data, *c.strides, *cplx.parts(builder, factor)])


def _function(module: ir.Module, t: str) -> ir.Function:
    """The product function of `t` declared in `module`: a module of its own, compiled at
    level 3 once per process (shared.py), as the real product kernel is."""

    name, kind = _name(t), _kind(t)
    return shared.declared(t, name, kind, module, lambda own: _written(own, name, kind, t))


def begin(t: str) -> None:
    """The product function of `t` begun on a thread of its own before a module declares it
    (shared.py: a function whose record says it calls it)."""
    name, kind = _name(t), _kind(t)
    shared.begin(t, name, lambda own: _written(own, name, kind, t))


def _name(t: str) -> str:
    return f"hb_complex_product.{t}"


def _kind(t: str) -> ir.FunctionType:
    part, items = LLVM[cplx.PARTS[t]], LLVM[t].as_pointer()
    return ir.FunctionType(ir.VoidType(), [items, *[I64] * 4, items, *[I64] * 3, items, I64, I64,
                                           part, part])


def _written(module: ir.Module, name: str, kind: ir.FunctionType, t: str) -> None:
    function = ir.Function(module, kind, name)
    for k in (0, 5, 9):  # (out shares no memory with a or b, as BLAS's; a and b are read only:
        function.args[k].add_attribute("noalias")  # LLVM then vectorises without checks)
    function.attributes.add("nounwind")
    function.attributes.add("noinline")
    _Product(function, t).write()


class _Product(_Code):
    """The body of one dtype's complex product function."""

    def __init__(self, function: ir.Function, t: str):
        super().__init__(function)
        self.t = t
        (self.a, self.m, self.k, self.a0, self.a1, self.bm, self.n, self.b0, self.b1,
         self.c, self.c0, self.c1, beta_re, beta_im) = function.args
        self.beta = cplx.made(self.b, beta_re, beta_im, t)
        self.items = [self.a, self.bm, self.c]
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
        """Row i of c by tiles of WIDTHS columns (then single columns), each `_tile`; b's and
        c's rows read as vectors where their entries are adjacent."""
        b, w = self.b, self._w
        unit = b.and_(b.icmp_signed("==", self.b1, w(1)), b.icmp_signed("==", self.c1, w(1)))
        with b.if_else(unit) as (adjacent, strided):
            for block, together in ((adjacent, True), (strided, False)):
                with block:
                    start = w(0)
                    for width in WIDTHS:
                        stop = b.sub(self.n, b.srem(self.n, w(width))) if width > 1 else self.n
                        self._loop(start, stop, width, lambda j, x=width, y=together:
                                   self._tile(i, j, x, y))
                        start = stop

    def _tile(self, i: ir.Value, j: ir.Value, width: int, adjacent: bool) -> None:
        """c[i, j … j + width − 1] = beta · c (0 where beta is 0) + Σ_p a[i, p] · b[p, j …],
        the terms added in order of p to sums held in vectors of their real and imaginary
        parts: complex.py's product and sum, lane by lane."""
        b, t, w = self.b, self.t, self._w
        real = LLVM[cplx.PARTS[t]]
        lanes = ir.VectorType(real, width)
        zero = cplx.constant(0j, t)
        sums = [self._slot(lanes), self._slot(lanes)]
        for total in sums:
            b.store(ir.Constant(lanes, None), total)
        c_at = b.add(b.mul(i, self.c0), b.mul(j, self.c1))
        with b.if_then(cplx.arithmetic(b, "!=", self.beta, zero, t)):
            # (c read only where beta is given: it may be uninitialised)
            old = [cplx.arithmetic(b, "*", self.beta, x, t)
                   for x in self._entries(self.items[2], c_at, self.c1, width, adjacent)]
            for part, total in enumerate(sums):
                b.store(self._vector(lanes, [b.extract_value(x, part) for x in old]), total)

        def term(p: ir.Value) -> None:
            x = b.load(b.gep(self.items[0], [b.add(b.mul(i, self.a0), b.mul(p, self.a1))]))
            xr, xi = (self._vector(lanes, [v] * width) for v in cplx.parts(b, x))
            yr, yi = self._parts(self.items[1], b.add(b.mul(p, self.b0), b.mul(j, self.b1)),
                                 self.b1, width, adjacent)
            re = b.fsub(b.fmul(xr, yr), b.fmul(xi, yi))
            im = b.fadd(b.fmul(xr, yi), b.fmul(xi, yr))
            for total, made in zip(sums, (re, im), strict=True):
                b.store(b.fadd(b.load(total), made), total)

        self._loop(w(0), self.k, 1, term)
        re, im = (b.load(total) for total in sums)
        if adjacent and width > 1:  # (the parts interleaved again: one store)
            pointer = b.bitcast(b.gep(self.items[2], [c_at]),
                                ir.VectorType(real, 2 * width).as_pointer())
            b.store(b.shuffle_vector(re, im, ir.Constant(ir.VectorType(I32, 2 * width), [
                lane // 2 + width * (lane % 2) for lane in range(2 * width)])), pointer,
                align=_ALIGN[t])
            return
        for lane in range(width):
            value = cplx.made(b, *(b.extract_element(v, w(lane)) for v in (re, im)), t)
            b.store(value, b.gep(self.items[2], [b.add(c_at, b.mul(w(lane), self.c1))]))

    def _entries(self, items, first, step, width: int, adjacent: bool) -> list:
        """The `width` complex entries at first, first + step, …"""
        b, w = self.b, self._w
        return [b.load(b.gep(items, [b.add(first, w(lane) if adjacent else
                                           b.mul(w(lane), step))])) for lane in range(width)]

    def _parts(self, items, first, step, width: int, adjacent: bool) -> tuple:
        """The vectors of the real and the imaginary parts of `_entries` (adjacent entries:
        one load of 2·width reals, split by shuffles)."""
        b = self.b
        real = LLVM[cplx.PARTS[self.t]]
        if not adjacent or width == 1:
            found = self._entries(items, first, step, width, adjacent)
            return tuple(self._vector(ir.VectorType(real, width),
                                      [b.extract_value(x, part) for x in found])
                         for part in (0, 1))
        pointer = b.bitcast(b.gep(items, [first]), ir.VectorType(real, 2 * width).as_pointer())
        both = b.load(pointer, align=_ALIGN[self.t])
        return tuple(b.shuffle_vector(both, ir.Constant(both.type, None), ir.Constant(
            ir.VectorType(I32, width), [2 * lane + part for lane in range(width)]))
            for part in (0, 1))

    def _vector(self, lanes: ir.VectorType, values: list) -> ir.Value:
        made = ir.Constant(lanes, ir.Undefined)
        for lane, value in enumerate(values):
            made = self.b.insert_element(made, value, self._w(lane))
        return made
