"""Matrix products in LLVM IR, as Numba-built code computes them: `K.gemm` and `K.gemm_beta`
call the product kernel Numba-built code calls (executor/numba/blas.py's `_product_at`, by
its symbol: register tiles, hilbert's own products or NumPy's BLAS, the same machine code, so
the same bits); `K.small_product_into` and `K.small_product_beta` (kernels.py's plain loops)
are one function of the module per dtype, written here as loops over tiles of `LANES`
columns whose sums LLVM keeps in vector registers.

A small product sums each entry's terms in order from 0 (or from out·beta where beta is not
0), each term the operands' product in their type, added in float64, and stores the sum in
out's dtype: what kernels.py's loops do (their `total = 0.0`), operation for operation, so
its bits are the Numba path's. The tile changes which entries are summed side by side, never
the order of one entry's terms."""

from __future__ import annotations

from llvmlite import ir

from .runtime import DOUBLE, I64, LLVM
from .unsupported import Unsupported

#: The calls this module lowers (each a statement: its result, the out it is given, unused).
CALLS = ("K.gemm", "K.gemm_beta", "K.small_product_into", "K.small_product_beta")

#: Columns of a small product's tile: each row's sums over 8 columns held in one vector of
#: float64 (two AVX2 registers or one AVX-512 register) while the terms are added.
LANES = 8

#: An entry's size in bytes (a vector of them read from any entry is aligned as one entry).
_ITEMSIZE = {"float64": 8, "float32": 4}

#: The product kernel's parameters (blas.py's `_product_at`: a, m, k, a0, a1, b, n, b0, b1,
#: c, c0, c1 as 64-bit words, then beta) and its symbol for each dtype.
_KERNEL = {"float64": ("d", "hilbert_dproduct_at"), "float32": ("s", "hilbert_sproduct_at")}


def multiply(lowering, fn: str, args: list[tuple]) -> None:
    """The statement `fn(args)` (one of CALLS; each argument its (value, type)) written by
    `lowering`'s builder."""
    arrays = [value for value, _ in args[:3]]
    if len(args) < 3 or any(not hasattr(a, "strides") or len(a.shape) != 2 for a in arrays):
        raise Unsupported(f"{fn} of other than three matrices")
    beta = args[3] if fn.endswith("_beta") else None
    if fn.startswith("K.gemm"):
        _gemm(lowering, *arrays, beta)
    else:
        _small(lowering, *arrays, beta)


def _gemm(lowering, a, b, c, beta: tuple | None) -> None:
    """out = a · b (+ beta · out) through the product kernel, as kernels.gemm_beta calls it."""
    if not a.dtype == b.dtype == c.dtype or c.dtype not in _KERNEL:
        raise Unsupported("a product of mixed or whole-number dtypes")
    letter, symbol = _KERNEL[c.dtype]
    if not _kernel_made(letter, c.dtype):
        raise Unsupported("a product without NumPy's BLAS (Numba's np.dot)")
    real = LLVM[c.dtype]
    module, builder = lowering.module, lowering.builder
    kernel = module.globals.get(symbol) or ir.Function(
        module, ir.FunctionType(ir.VoidType(), [I64] * 12 + [real]), symbol)
    factor = (lowering.cast(*beta, c.dtype) if beta is not None else ir.Constant(real, 0.0))
    builder.call(kernel, [*_words(builder, a, True), *_words(builder, b, False),
                          *_words(builder, c, None), factor])


def _words(builder: ir.IRBuilder, array, rows: bool | None) -> list:
    """An operand of the product kernel: its address, the sizes it is given (a: both, b: its
    columns, c: none) and its steps in entries."""
    sizes = array.shape if rows else array.shape[1:] if rows is False else []
    return [builder.ptrtoint(array.data, I64), *sizes, *array.strides]


def _kernel_made(letter: str, dtype: str) -> bool:
    """Whether the product kernel for `dtype` is compiled and its symbol known to LLVM (made
    once, as kernels.py and kernels32.py make it)."""
    from numba import types

    from ..numba import blas
    return blas.blas_products(letter, types.float64 if dtype == "float64" else types.float32)


def _small(lowering, a, b, c, beta: tuple | None) -> None:
    """out = a · b (+ beta · out) by the module's small-product function for these dtypes."""
    if any(x.dtype not in ("float64", "float32") for x in (a, b, c)):
        raise Unsupported("a small product of whole numbers")
    beta_type = beta[1] if beta is not None else ""
    if beta is not None and beta_type not in ("float64", "float32", "int64"):
        raise Unsupported(f"a product's beta of type {beta_type}")
    function = _small_function(lowering.module, a.dtype, b.dtype, c.dtype, beta_type)
    builder = lowering.builder
    words = [a.data, *a.shape, *a.strides, b.data, b.shape[1], *b.strides, c.data, *c.strides]
    builder.call(function, words + ([beta[0]] if beta is not None else []))


def _small_function(module: ir.Module, ta: str, tb: str, tc: str, tbeta: str) -> ir.Function:
    """The module's function c = a · b (+ beta · c) for operands of these dtypes (beta's:
    "" for none), written once."""
    name = f"hb_small_product.{ta}.{tb}.{tc}.{tbeta or 'none'}"
    found = module.globals.get(name)
    if found is not None:
        return found
    extra = [LLVM[tbeta]] if tbeta else []
    kind = ir.FunctionType(ir.VoidType(), [LLVM[ta].as_pointer(), *[I64] * 4,
                                           LLVM[tb].as_pointer(), *[I64] * 3,
                                           LLVM[tc].as_pointer(), I64, I64, *extra])
    function = ir.Function(module, kind, name)
    function.linkage = "internal"
    function.attributes.add("nounwind")
    function.attributes.add("noinline")  # (one copy optimised, whatever the call sites)
    _SmallProduct(function, (ta, tb, tc, tbeta)).write()
    return function


class _SmallProduct:
    """The body of a small-product function of dtypes `types` (a's, b's, c's, beta's or ""):
    each row of c by tiles of LANES columns (b's rows read as vectors where its columns are
    adjacent), then the columns left over one at a time."""

    def __init__(self, function: ir.Function, types: tuple[str, str, str, str]):
        self.function = function
        self.ta, self.tb, self.tc, self.tbeta = types
        # (a term: the operands' product in their common type, as Numba multiplies them)
        self.tp = "float64" if "float64" in (self.ta, self.tb) else "float32"
        entry = function.append_basic_block("entry")
        self.b = ir.IRBuilder(entry)
        self._entry = entry
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

    def _loop(self, start: ir.Value, stop: ir.Value, step: int, body) -> None:
        """body(j) for j = start, start + step, … below stop."""
        b = self.b
        with b.goto_block(self._entry):
            b.position_at_start(self._entry)
            counter = b.alloca(I64)
        b.store(start, counter)
        test, inside, after = (self.function.append_basic_block(n)
                               for n in ("test", "body", "end"))
        b.branch(test)
        b.position_at_end(test)
        at = b.load(counter)
        b.cbranch(b.icmp_signed("<", at, stop), inside, after)
        b.position_at_end(inside)
        body(at)
        b.store(b.add(at, ir.Constant(I64, step)), counter)
        b.branch(test)
        b.position_at_end(after)

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
        made = ir.Constant(self._lanes(t, lanes), ir.Undefined)
        for w in range(lanes):
            made = self.b.insert_element(made, value, ir.Constant(I64, w))
        return made

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
        scaled = b.fmul(old, self._spread(factor, tbeta, lanes) if lanes > 1 else factor)
        scaled = self._vcast(scaled, tbeta, "float64", lanes)
        given = b.fcmp_unordered("!=", self._cast(self.beta, self.tbeta, "float64"),
                                 ir.Constant(DOUBLE, 0.0))
        return b.select(given, scaled, zero)

    def _sums(self, a_row: ir.Value, c_row: ir.Value, j: ir.Value, lanes: int, row_of) -> None:
        """c[i, j … j + lanes − 1] = the sums of their terms, `row_of(p)` giving b's entries
        of those columns in row p."""
        b = self.b
        with b.goto_block(self._entry):
            b.position_at_start(self._entry)
            total = b.alloca(self._lanes("float64", lanes))
        b.store(self._start(c_row, j, lanes), total)

        def term(p: ir.Value) -> None:
            x = self._cast(self._entry_at(self.a, b.add(a_row, b.mul(p, self.a1))), self.ta,
                           self.tp)
            y = self._vcast(row_of(p), self.tb, self.tp, lanes)
            made = b.fmul(self._spread(x, self.tp, lanes) if lanes > 1 else x, y)
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
