"""The product functions of a module in LLVM IR: the product kernel (`Kernel`: executor/numba/
blas.py's `_product_at` written again, one function per dtype) and kernels.py's small-product
loops (`SmallProduct`, one function per dtypes).

The kernel computes out = a · b + beta · out on matrices given by address, sizes and steps
in entries, by `_product_at`'s cases in its order, each computing what Numba's does: register
tiles (tiles.py's sums, one fused multiply-add per term in order, then beta · out added by
one more), hilbert's own products by their entry's address (own_products.py, inside `used`),
NumPy's own cblas_?gemv and ?gemm (the routines blas.py calls, by their address), or plain
loops for a layout BLAS cannot read (`SmallProduct`'s, which sum as those do). So its bits are
the Numba path's, and no Numba compilation is needed: blas.py's kernel takes seconds to
compile on an empty cache, this one milliseconds with its caller. Its symbols
(hilbert_numpy_cblas_?gemm and ?gemv, hilbert_own_product_f64 and f32) are registered with
LLVM while a function is lowered (`_cblas`) and when executor/numba/product_parts.py (the
sizes and entries it reads, without Numba) is imported.

A tile's vectors may differ in width from tiles.py's (which entries are computed side by side),
never an entry's operations."""

from __future__ import annotations

import llvmlite.binding as llvm
from llvmlite import ir

from ..numba import product_parts as parts
from .entries import counted
from .runtime import DOUBLE, I64, LLVM
from .unsupported import Unsupported

I32 = ir.IntType(32)
#: Columns of a small product's tile: each row's sums over 8 columns held in one vector of
#: float64 (two AVX2 registers or one AVX-512 register) while the terms are added.
LANES = 8
#: An entry's size in bytes (a vector of them read from any entry is aligned as one entry).
_ITEMSIZE = {"float64": 8, "float32": 4}
#: CBLAS's constants (row-major; no transpose, transpose).
ROW_MAJOR, PLAIN, TRANSPOSED = 101, 111, 112




def symbol(dtype: str) -> str:
    """The name the product kernel for `dtype` is called by (products.py: a module of its own)."""
    return f"hb_product.{dtype}"


def kind(dtype: str) -> ir.FunctionType:
    """The product kernel's type: void(a, m, k, a0, a1, b, n, b0, b1, c, c0, c1: i64, beta),
    addresses as integers."""
    return ir.FunctionType(ir.VoidType(), [I64] * 12 + [LLVM[dtype]])


def function(module: ir.Module, dtype: str, small) -> ir.Function:
    """The product kernel for `dtype` written into `module` (once), as `symbol(dtype)`, for
    other modules to call; `small(t)` gives the plain loops."""
    name = symbol(dtype)
    found = module.globals.get(name)
    if found is not None:
        return found
    cblas = _cblas(module, dtype)
    made = ir.Function(module, kind(dtype), name)
    made.attributes.add("nounwind")
    made.attributes.add("noinline")
    set.add(made.attributes, f'"min-legal-vector-width"="{parts.VECTOR_BITS}"')
    Kernel(made, dtype, cblas, small(dtype)).write()
    return made


def _cblas(module: ir.Module, dtype: str) -> tuple[ir.Function, ir.Function, ir.Type]:
    """NumPy's cblas_?gemm and ?gemv declared in the module (their symbols registered with
    LLVM, as blas.py registers them), and the width of their whole numbers."""
    letter = "d" if dtype == "float64" else "s"
    found = [parts.numpy_cblas(f"{letter}{r}") for r in ("gemm", "gemv")]
    if any(f is None for f in found) or found[0][1] != found[1][1]:  # type: ignore[index]
        raise Unsupported("a product without NumPy's BLAS (Numba's np.dot)")
    whole = I64 if found[0][1] else I32  # type: ignore[index]
    real = LLVM[dtype]
    kinds = {"gemm": [I32, I32, I32, whole, whole, whole, real, I64, whole, I64, whole, real,
                      I64, whole],
             "gemv": [I32, I32, whole, whole, real, I64, whole, I64, whole, real, I64, whole]}
    made = []
    for routine, (address, _) in zip(("gemm", "gemv"), found, strict=True):  # type: ignore[misc]
        symbol = f"hilbert_numpy_cblas_{letter}{routine}"
        llvm.add_symbol(symbol, address)
        made.append(module.globals.get(symbol) or ir.Function(
            module, ir.FunctionType(ir.VoidType(), kinds[routine]), symbol))
    return made[0], made[1], whole


class _Code:
    """What a product function's body is written with: its builder, loops counted in stack
    slots (LLVM makes them registers), conversions and vectors."""

    def __init__(self, function: ir.Function):
        self.function = function
        self._entry = function.append_basic_block("entry")
        self.b = ir.IRBuilder(self._entry)

    def _slot(self, kind: ir.Type) -> ir.Value:
        with self.b.goto_block(self._entry):
            self.b.position_at_start(self._entry)
            return self.b.alloca(kind)

    def _loop(self, start: ir.Value, stop: ir.Value, step: int, body) -> None:
        """body(j) for j = start, start + step, … below stop."""
        counted(self.b, self._slot(I64), start, stop, step, body)

    def _cast(self, value: ir.Value, have: str, want: str) -> ir.Value:
        if have == want:
            return value
        if have == "int64":
            return self.b.sitofp(value, LLVM[want])
        if want == "float64":
            return self.b.fpext(value, DOUBLE)
        return self.b.fptrunc(value, LLVM[want])

    def _lanes(self, t: str, lanes: int) -> ir.Type:
        return ir.VectorType(LLVM[t], lanes) if lanes > 1 else LLVM[t]

    def _vcast(self, value: ir.Value, have: str, want: str, lanes: int) -> ir.Value:
        """_cast on every lane of a vector (or one number when lanes is 1)."""
        if lanes == 1 or have == want:
            return self._cast(value, have, want)
        if want == "float64":
            return self.b.fpext(value, self._lanes(want, lanes))
        return self.b.fptrunc(value, self._lanes(want, lanes))

    def _entry_at(self, items: ir.Value, offset: ir.Value) -> ir.Value:
        return self.b.load(self.b.gep(items, [offset]))

    def _gathered(self, items: ir.Value, t: str, first: ir.Value, step: ir.Value,
                  lanes: int) -> ir.Value:
        """The vector of `lanes` entries at first, first + step, … (one number for 1)."""
        b = self.b
        if lanes == 1:
            return self._entry_at(items, first)
        made = ir.Constant(self._lanes(t, lanes), ir.Undefined)
        for w in range(lanes):
            at = b.add(first, b.mul(ir.Constant(I64, w), step))
            made = b.insert_element(made, self._entry_at(items, at), ir.Constant(I64, w))
        return made

    def _adjacent(self, items: ir.Value, t: str, first: ir.Value, lanes: int) -> ir.Value:
        """The vector of `lanes` adjacent entries from `first` (one load)."""
        pointer = self.b.bitcast(self.b.gep(items, [first]), self._lanes(t, lanes).as_pointer())
        return self.b.load(pointer, align=_ITEMSIZE[t])

    def _spread(self, value: ir.Value, t: str, lanes: int) -> ir.Value:
        """`value` in every lane of a vector (itself for 1)."""
        if lanes == 1:
            return value
        made = ir.Constant(self._lanes(t, lanes), ir.Undefined)
        for w in range(lanes):
            made = self.b.insert_element(made, value, ir.Constant(I64, w))
        return made


class SmallProduct(_Code):
    """The body of a small-product function of dtypes `types` (a's, b's, c's, beta's or ""):
    each row of c by tiles of LANES columns (b's rows read as vectors where its columns are
    adjacent), then the columns left over one at a time."""

    def __init__(self, function: ir.Function, types: tuple[str, str, str, str]):
        super().__init__(function)
        self.ta, self.tb, self.tc, self.tbeta = types
        # (a term: the operands' product in their common type, as Numba multiplies them)
        self.tp = "float64" if "float64" in (self.ta, self.tb) else "float32"
        (self.a, self.m, self.k, self.a0, self.a1, self.bm, self.n, self.b0, self.b1,
         self.c, self.c0, self.c1, *rest) = function.args
        self.beta = rest[0] if rest else None

    def write(self) -> None:
        b = self.b
        whole = b.and_(self.n, ir.Constant(I64, -LANES))  # (the columns tiles cover)
        unit = b.icmp_signed("==", self.b1, ir.Constant(I64, 1))

        def row(i: ir.Value) -> None:
            a_row, c_row = b.mul(i, self.a0), b.mul(i, self.c0)
            with b.if_else(unit) as (adjacent, strided):
                with adjacent:
                    self._loop(ir.Constant(I64, 0), whole, LANES,
                               lambda j: self._tile(a_row, c_row, j, True))
                with strided:
                    self._loop(ir.Constant(I64, 0), whole, LANES,
                               lambda j: self._tile(a_row, c_row, j, False))
            self._loop(whole, self.n, 1, lambda j: self._column(a_row, c_row, j))

        self._loop(ir.Constant(I64, 0), self.m, 1, row)
        b.ret_void()

    def _start(self, c_row: ir.Value, j: ir.Value, lanes: int) -> ir.Value:
        """The sums' first values: out · beta where beta is not 0 (kernels.small_product_beta),
        else 0, in float64."""
        zero = ir.Constant(self._lanes("float64", lanes), None)
        if self.beta is None:
            return zero
        b = self.b
        tbeta = "float64" if "float64" in (self.tc, self.tbeta) or self.tbeta == "int64" \
            else "float32"
        first = b.add(c_row, b.mul(j, self.c1))
        old = self._vcast(self._gathered(self.c, self.tc, first, self.c1, lanes), self.tc,
                          tbeta, lanes)
        factor = self._cast(self.beta, self.tbeta, tbeta)
        scaled = b.fmul(old, self._spread(factor, tbeta, lanes))
        scaled = self._vcast(scaled, tbeta, "float64", lanes)
        given = b.fcmp_unordered("!=", self._cast(self.beta, self.tbeta, "float64"),
                                 ir.Constant(DOUBLE, 0.0))
        return b.select(given, scaled, zero)

    def _sums(self, a_row: ir.Value, c_row: ir.Value, j: ir.Value, lanes: int, row_of) -> None:
        """c[i, j … j + lanes − 1] = the sums of their terms, `row_of(p)` giving b's entries
        of those columns in row p."""
        b = self.b
        total = self._slot(self._lanes("float64", lanes))
        b.store(self._start(c_row, j, lanes), total)

        def term(p: ir.Value) -> None:
            x = self._cast(self._entry_at(self.a, b.add(a_row, b.mul(p, self.a1))), self.ta,
                           self.tp)
            y = self._vcast(row_of(p), self.tb, self.tp, lanes)
            made = b.fmul(self._spread(x, self.tp, lanes), y)
            b.store(b.fadd(b.load(total), self._vcast(made, self.tp, "float64", lanes)), total)

        self._loop(ir.Constant(I64, 0), self.k, 1, term)
        sums = b.load(total)
        for w in range(lanes):
            value = b.extract_element(sums, ir.Constant(I64, w)) if lanes > 1 else sums
            column = b.add(j, ir.Constant(I64, w))
            b.store(self._cast(value, "float64", self.tc),
                    b.gep(self.c, [b.add(c_row, b.mul(column, self.c1))]))

    def _tile(self, a_row: ir.Value, c_row: ir.Value, j: ir.Value, adjacent: bool) -> None:
        b = self.b

        def row_of(p: ir.Value) -> ir.Value:
            first = b.add(b.mul(p, self.b0), b.mul(j, self.b1))
            if adjacent:
                return self._adjacent(self.bm, self.tb, first, LANES)
            return self._gathered(self.bm, self.tb, first, self.b1, LANES)

        self._sums(a_row, c_row, j, LANES, row_of)

    def _column(self, a_row: ir.Value, c_row: ir.Value, j: ir.Value) -> None:
        b = self.b
        self._sums(a_row, c_row, j, 1, lambda p: self._entry_at(
            self.bm, b.add(b.mul(p, self.b0), b.mul(j, self.b1))))


class Kernel(_Code):
    """The body of the product kernel for `dtype` (blas._product_at's cases in its order),
    `cblas` NumPy's gemm, gemv and their whole numbers' type, `small` the module's plain
    loops for c = a · b + beta · c of this dtype."""

    def __init__(self, function: ir.Function, dtype: str, cblas: tuple, small: ir.Function):
        super().__init__(function)
        self.t, self.real = dtype, LLVM[dtype]
        self.gemm, self.gemv, self.whole = cblas
        self.small = small
        self.width = parts.VECTOR_BITS // (8 * _ITEMSIZE[dtype])  # (numbers in a vector)
        (self.a, self.m, self.k, self.a0, self.a1, self.bm, self.n, self.b0, self.b1,
         self.c, self.c0, self.c1, self.beta) = function.args
        self.items = [self.b.inttoptr(x, self.real.as_pointer()) for x in
                      (self.a, self.bm, self.c)]
        self._done = function.append_basic_block("done")

    def _w(self, value: int) -> ir.Value:
        return ir.Constant(I64, value)

    def _case(self, condition: ir.Value, write) -> None:
        """write() where `condition` holds, and the kernel returns after it."""
        b = self.b
        inside = self.function.append_basic_block("case")
        after = self.function.append_basic_block("next")
        b.cbranch(condition, inside, after)
        b.position_at_end(inside)
        write()
        b.branch(self._done)
        b.position_at_end(after)

    def write(self) -> None:
        b, w = self.b, self._w
        m, n, k = self.m, self.n, self.k
        self._case(b.or_(b.icmp_signed("==", m, w(0)), b.icmp_signed("==", n, w(0))),
                   lambda: None)
        work = b.mul(b.mul(m, n), k)
        small = b.icmp_signed("<=", work, w(parts.TILED_PRODUCT))
        self._case(b.and_(b.and_(b.icmp_signed("==", self.b1, w(1)),
                                 b.icmp_signed("==", self.c1, w(1))), small), self._tiles)
        self._own(work)
        self._blas()
        b.call(self.small, [*self.items[:1], m, k, self.a0, self.a1, self.items[1], n,
                            self.b0, self.b1, self.items[2], self.c0, self.c1, self.beta])
        b.branch(self._done)
        b.position_at_end(self._done)
        b.ret_void()

    def _own(self, work: ir.Value) -> None:
        """own_products.py's product where its entry is set and `chosen` takes the sizes."""
        b, w, bits = self.b, self._w, 8 * _ITEMSIZE[self.t]
        name = f"hilbert_own_product_f{bits}"
        slot = self.function.module.globals.get(name)
        if slot is None:
            slot = ir.GlobalVariable(self.function.module, I64, name)
            slot.linkage = "external"
        entry = b.load_atomic(slot, "monotonic", 8)
        least_m, least_k, least_n = parts.SIDES[bits]
        chosen = [b.icmp_signed("!=", entry, w(0)),
                  b.icmp_signed(">=", work, w(parts.WORK[bits])),
                  b.icmp_signed(">=", self.m, w(least_m)), b.icmp_signed(">=", self.k,
                                                                         w(least_k)),
                  b.icmp_signed(">=", self.n, w(least_n))]
        taken = chosen[0]
        for more in chosen[1:]:
            taken = b.and_(taken, more)
        kind = ir.FunctionType(ir.VoidType(), [I64] * 12 + [self.real])
        self._case(taken, lambda: b.call(b.inttoptr(entry, kind.as_pointer()),
                                         list(self.function.args)))

    def _layout(self, rows, cols, s0, s1) -> tuple[ir.Value, ir.Value]:
        """blas._blas_layout: (CBLAS's flag 111 or 112, or 0; the leading dimension)."""
        b, w = self.b, self._w
        one = w(1)

        def at_least(x, y):  # x >= max(1, y)
            return b.icmp_signed(">=", x, b.select(b.icmp_signed(">", y, one), y, one))

        first = b.and_(b.or_(b.icmp_signed("==", s1, one), b.icmp_signed("==", cols, one)),
                       at_least(s0, cols))
        second = b.and_(b.or_(b.icmp_signed("==", s0, one), b.icmp_signed("==", rows, one)),
                        at_least(s1, rows))
        flag = b.select(first, w(PLAIN), b.select(second, w(TRANSPOSED), w(0)))
        return flag, b.select(first, s0, b.select(second, s1, w(0)))

    def _blas(self) -> None:
        """NumPy's gemv or gemm where a, b and c are laid out as BLAS reads them."""
        b, w = self.b, self._w
        m, n, k = self.m, self.n, self.k
        ta, lda = self._layout(m, k, self.a0, self.a1)
        tb, ldb = self._layout(k, n, self.b0, self.b1)
        tc, ldc = self._layout(m, n, self.c0, self.c1)
        readable = b.and_(b.and_(b.icmp_signed(">", k, w(0)), b.icmp_signed("!=", ta, w(0))),
                          b.and_(b.icmp_signed("!=", tb, w(0)),
                                 b.icmp_signed("==", tc, w(PLAIN))))
        self._case(readable, lambda: self._routines(ta, lda, tb, ldb, ldc))

    def _routines(self, ta, lda, tb, ldb, ldc) -> None:
        b, w = self.b, self._w
        m, n, k = self.m, self.n, self.k
        one = ir.Constant(self.real, 1.0)
        many = b.icmp_signed(">", k, w(1))
        x, y = (b.select(many, s, w(1)) for s in (self.b0, self.a1))
        with b.if_else(b.icmp_signed("==", n, w(1))) as (column, rest):
            with column:  # y = A x
                plain = b.icmp_signed("==", ta, w(PLAIN))
                self._gemv(b.select(plain, w(PLAIN), w(TRANSPOSED)), b.select(plain, m, k),
                           b.select(plain, k, m), one, self.a, lda, self.bm, x, self.c0)
            with rest:
                with b.if_else(b.icmp_signed("==", m, w(1))) as (row, matrix):
                    with row:  # yᵀ = Bᵀ xᵀ
                        plain = b.icmp_signed("==", tb, w(PLAIN))
                        self._gemv(b.select(plain, w(TRANSPOSED), w(PLAIN)),
                                   b.select(plain, k, n), b.select(plain, n, k), one,
                                   self.bm, ldb, self.a, y, self.c1)
                    with matrix:
                        whole = [self._whole(v) for v in (m, n, k)]
                        b.call(self.gemm, [ir.Constant(I32, ROW_MAJOR), b.trunc(ta, I32),
                                           b.trunc(tb, I32), *whole, one, self.a,
                                           self._whole(lda), self.bm, self._whole(ldb),
                                           self.beta, self.c, self._whole(ldc)])

    def _whole(self, value: ir.Value) -> ir.Value:
        return value if self.whole == I64 else self.b.trunc(value, self.whole)

    def _gemv(self, flip, rows, cols, one, matrix, ld, vector, step, out_step) -> None:
        b = self.b
        b.call(self.gemv, [ir.Constant(I32, ROW_MAJOR), b.trunc(flip, I32), self._whole(rows),
                           self._whole(cols), one, matrix, self._whole(ld), vector,
                           self._whole(step), self.beta, self.c, self._whole(out_step)])

    # ------------------------------------------------------------------ register tiles

    def _tiles(self) -> None:
        """tiles.tiled_product: blocks of ROWS rows (then single rows) by VECTORS vectors of
        columns, then one vector, then vectors of a half, a quarter, … of the width, then
        single columns (b's and c's columns adjacent)."""
        b, w = self.b, self._w
        rows = b.sub(self.m, b.srem(self.m, w(parts.ROWS)))
        shapes = [(parts.VECTORS, self.width)]
        lanes = self.width
        while lanes > 1:
            shapes.append((1, lanes))
            lanes //= 2
        shapes.append((1, 1))
        for first, last, height in ((w(0), rows, parts.ROWS), (rows, self.m, 1)):
            def row(i: ir.Value, height: int = height) -> None:
                start = w(0)
                for vectors, width in shapes:
                    span = vectors * width
                    stop = b.sub(self.n, b.srem(self.n, w(span))) if span > 1 else self.n
                    self._loop(start, stop, span, lambda j, v=vectors, x=width:
                               self._tile(i, j, height, v, x))
                    start = stop
            self._loop(first, last, height, row)

    def _tile(self, i: ir.Value, j: ir.Value, height: int, vectors: int, width: int) -> None:
        """c's rows i … i + height − 1 by `vectors` vectors of `width` columns from j: each
        sum a fused multiply-add per term, in order, then beta · c added by one more (the
        sum itself where beta is 0), as tiles._write_tile."""
        b, w = self.b, self._w
        a, bm, c = self.items
        vector = self._lanes(self.t, width)
        fma = _fma(self.function.module, self.t, width)
        sums = [[self._slot(vector) for _ in range(vectors)] for _ in range(height)]
        for row in sums:
            for total in row:
                b.store(ir.Constant(vector, None), total)
        a_rows = [b.mul(b.add(i, w(r)), self.a0) for r in range(height)]
        columns = [b.add(j, w(v * width)) for v in range(vectors)]

        def term(p: ir.Value) -> None:
            b_row = b.mul(p, self.b0)
            row = [self._adjacent(bm, self.t, b.add(b_row, col), width) for col in columns]
            a_column = b.mul(p, self.a1)
            for r in range(height):
                entry = self._entry_at(a, b.add(a_rows[r], a_column))
                spread = self._spread(entry, self.t, width)
                for v in range(vectors):
                    b.store(b.call(fma, [spread, row[v], b.load(sums[r][v])]), sums[r][v])

        self._loop(w(0), self.k, 1, term)
        scale = self._spread(self.beta, self.t, width)
        keep = b.fcmp_ordered("==", self.beta, ir.Constant(self.real, 0.0))
        for r in range(height):
            c_row = b.mul(b.add(i, w(r)), self.c0)
            for v in range(vectors):
                at = b.gep(c, [b.add(c_row, columns[v])])
                pointer = b.bitcast(at, vector.as_pointer()) if width > 1 else at
                total = b.load(sums[r][v])
                scaled = b.call(fma, [scale, b.load(pointer, align=_ITEMSIZE[self.t]), total])
                b.store(b.select(keep, total, scaled), pointer, align=_ITEMSIZE[self.t])


def _fma(module: ir.Module, dtype: str, width: int) -> ir.Function:
    """LLVM's fused multiply-add on `width` numbers of `dtype` (one number for 1)."""
    bits = 8 * _ITEMSIZE[dtype]
    name = f"llvm.fma.v{width}f{bits}" if width > 1 else f"llvm.fma.f{bits}"
    kind = ir.VectorType(LLVM[dtype], width) if width > 1 else LLVM[dtype]
    found = module.globals.get(name)
    return found if found is not None else ir.Function(
        module, ir.FunctionType(kind, [kind] * 3), name)
