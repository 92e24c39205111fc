"""Small matrix products in registers: a micro-kernel written as LLVM vector code.

A product of 64×32 by 32×32 (a recurrent network's step) costs OpenBLAS 16–18 µs on a 2-core
AMD EPYC: its call, checks and packing outweigh 65 thousand multiply-adds. XLA emits such a
product inline and takes about 9 µs. Written as scalar Numba loops, LLVM does not vectorise a
register-tiled product (only scalar FMAs come out, 2–3× slower than OpenBLAS), so the tile is
written here directly in LLVM IR with vector types: `ROWS` rows of the result by `VECTORS`
vectors of columns kept in registers while the sum over the shared index runs, one broadcast
entry of a times one vector of b's row per multiply-add. The vectors are the CPU's own width
(`VECTOR_BITS`): 512 bits on a CPU with AVX-512 (4×16 float64, 4×32 float32), 256 elsewhere;
columns left over that fill no vector take one of half the width, then single columns. The
same product took 6.7 µs so with 256-bit vectors; on the AVX-512 EPYC (Zen 5) 512-bit tiles
take 1.6 µs where 256-bit ones take 2.5 µs (CPU time of one thread; docs/architecture.md).

The sum over the shared index runs in order, one fused multiply-add per term, as a plain
loop `total += a[i, p] · b[p, j]` does once LLVM contracts it: the rounding differs from
BLAS's (whose order is its own) by no more than any two BLAS builds differ.

`product_at` (executor/numba/blas.py, `_product_at`) uses these tiles for products below
`TILED_PRODUCT` multiply-adds whose b and result are row-major with unit steps along their
rows; BLAS takes the rest.
"""

from __future__ import annotations

from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from .product_parts import ROWS, VECTOR_BITS, VECTORS
from .product_parts import TILED_PRODUCT as TILED_PRODUCT  # (blas.py reads it here)


def _tile(rows: int, vectors: int, bits: int):
    """An intrinsic computing a rows × (vectors·lanes) block of out = a·b + beta·out, a vector
    of `bits` bits holding bits / beta's bit width numbers (with bits 0, one: single columns).

    tile(a, a0, a1, b, b0, c, c0, i, j, k, beta): a, b, c addresses of float matrices of
    beta's type, a's steps a0 (between rows) and a1 (between columns), b's and c's steps
    between rows b0 and c0 (their columns are adjacent), all in items; the block's first row
    i and column j; k terms summed. With beta 0 the old values of c are never used."""

    def typer(typingctx, a, a0, a1, b, b0, c, c0, i, j, k, beta):
        if beta not in (types.float32, types.float64):
            return None

        def codegen(context, builder, signature, args):
            _write_tile(_Lanes(context, builder, beta, bits), signature, args, rows, vectors)
            return context.get_dummy_value()

        return types.none(a, a0, a1, b, b0, c, c0, i, j, k, beta), codegen

    typer.__name__ = f"tile_{rows}x{vectors}x{bits}"
    return intrinsic(typer)


class _Lanes:
    """What a tile's LLVM code is written with: its builder, its numbers' type (`real`) and
    vectors of them (`per_vector` lanes of `bits` bits; one number when bits is 0)."""

    def __init__(self, context, builder, real, bits: int):
        self.context, self.builder, self.real = context, builder, real
        self.element = context.get_data_type(real)
        self.per_vector = max(1, bits // real.bitwidth)
        self.vector = (ir.VectorType(self.element, self.per_vector) if self.per_vector > 1
                       else self.element)
        self.index = context.get_value_type(types.intp)

    def constant(self, value):
        return ir.Constant(self.index, value)

    def spread(self, value):
        """value in every lane of a vector."""
        if self.per_vector == 1:
            return value
        builder = self.builder
        undefined = ir.Constant(self.vector, ir.Undefined)
        first = builder.insert_element(undefined, value, ir.Constant(ir.IntType(32), 0))
        return builder.shuffle_vector(first, undefined, ir.Constant(
            ir.VectorType(ir.IntType(32), self.per_vector), [0] * self.per_vector))

    def vector_at(self, items, offset):
        """The vector of items at `offset` (unaligned)."""
        at = self.builder.gep(items, [offset])
        return self.builder.load(self.builder.bitcast(at, self.vector.as_pointer()),
                                 align=self.real.bitwidth // 8)

    def store_at(self, items, offset, value):
        at = self.builder.gep(items, [offset])
        self.builder.store(value, self.builder.bitcast(at, self.vector.as_pointer()),
                           align=self.real.bitwidth // 8)


def _write_tile(lanes: _Lanes, signature, args, rows: int, vectors: int) -> None:
    """The code of one tile (`_tile`'s arguments in `args`): the sums of its block kept in
    vector registers while the k terms are added, then stored into c (scaled by beta)."""
    context, builder, real = lanes.context, lanes.builder, lanes.real
    whole = [context.cast(builder, v, t, types.intp)
             for v, t in zip(args[:10], signature.args[:10], strict=True)]
    a_at, a0_, a1_, b_at, b0_, c_at, c0_, i_, j_, k_ = whole
    pointer = lanes.element.as_pointer()
    a_items, b_items, c_items = (builder.inttoptr(at, pointer) for at in (a_at, b_at, c_at))
    # (a CPU on which LLVM prefers 256-bit vectors would split 512-bit ones in two)
    set.add(builder.function.attributes, f'"min-legal-vector-width"="{VECTOR_BITS}"')
    per_vector, vector = lanes.per_vector, lanes.vector
    fma = cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(vector, [vector] * 3),
        f"llvm.fma.v{per_vector}f{real.bitwidth}" if per_vector > 1 else f"llvm.fma.f{real.bitwidth}")
    zero = ir.Constant(vector, None)
    sums = [[cgutils.alloca_once_value(builder, zero) for _ in range(vectors)]
            for _ in range(rows)]
    a_rows = [builder.mul(builder.add(i_, lanes.constant(r)), a0_) for r in range(rows)]
    columns = [builder.add(j_, lanes.constant(v * per_vector)) for v in range(vectors)]
    with cgutils.for_range(builder, k_) as loop:
        p = loop.index
        b_row = builder.mul(p, b0_)
        b_vectors = [lanes.vector_at(b_items, builder.add(b_row, col)) for col in columns]
        a_column = builder.mul(p, a1_)
        for r in range(rows):
            entry = builder.load(builder.gep(a_items, [builder.add(a_rows[r], a_column)]))
            spread_entry = lanes.spread(entry)
            for v in range(vectors):
                total = builder.load(sums[r][v])
                builder.store(builder.call(fma, [spread_entry, b_vectors[v], total]),
                              sums[r][v])
    factor = context.cast(builder, args[10], signature.args[10], real)
    scale = lanes.spread(factor)
    keep = builder.fcmp_ordered("==", factor, ir.Constant(lanes.element, 0.0))
    for r in range(rows):
        c_row = builder.mul(builder.add(i_, lanes.constant(r)), c0_)
        for v in range(vectors):
            at = builder.add(c_row, columns[v])
            total = builder.load(sums[r][v])
            scaled = builder.call(fma, [scale, lanes.vector_at(c_items, at), total])
            lanes.store_at(c_items, at, builder.select(keep, total, scaled))


#: Blocks of the result: 4 rows × 2 vectors, 4 × 1 and 1 × 2, 1 × 1 vectors; for the last
#: columns that fill no vector, 4 × 1 and 1 × 1 vectors of a half, a quarter, an eighth of the
#: width, then single columns (16-lane float32 vectors would otherwise leave the 4 columns of a
#: 128×64·64×4 product to single columns: 7.4 µs where 256-bit tiles take 1.8).
tile_wide = _tile(ROWS, VECTORS, VECTOR_BITS)
tile_narrow = _tile(ROWS, 1, VECTOR_BITS)
row_wide = _tile(1, VECTORS, VECTOR_BITS)
row_narrow = _tile(1, 1, VECTOR_BITS)
tile_half = _tile(ROWS, 1, VECTOR_BITS // 2)
row_half = _tile(1, 1, VECTOR_BITS // 2)
tile_quarter = _tile(ROWS, 1, VECTOR_BITS // 4)
row_quarter = _tile(1, 1, VECTOR_BITS // 4)
tile_eighth = _tile(ROWS, 1, VECTOR_BITS // 8)
row_eighth = _tile(1, 1, VECTOR_BITS // 8)
tile_column = _tile(ROWS, 1, 0)
row_column = _tile(1, 1, 0)


@intrinsic
def lanes(typingctx, like):
    """How many numbers of `like`'s float type fill a vector (a constant: 8 float64s with
    512-bit vectors)."""
    if like not in (types.float32, types.float64):
        return None

    def codegen(context, builder, signature, args):
        return context.get_constant(types.intp, VECTOR_BITS // like.bitwidth)

    return types.intp(like), codegen


@njit(nogil=True, error_model="numpy", boundscheck=False)
def tiled_product(a, m, k, a0, a1, b, n, b0, c, c0, beta):
    """out = a · b + beta · out, block by block (see `_tile` for the arguments). Compiled
    inside blas._product_at."""
    width = lanes(beta)
    half, quarter, eighth = max(1, width // 2), max(1, width // 4), max(1, width // 8)
    wide = n - n % (VECTORS * width)
    narrow = n - n % width
    halved = n - n % half  # (each remainder below is at most one vector)
    quartered = n - n % quarter
    eighths = n - n % eighth
    whole_rows = m - m % ROWS
    for i in range(0, whole_rows, ROWS):
        for j in range(0, wide, VECTORS * width):
            tile_wide(a, a0, a1, b, b0, c, c0, i, j, k, beta)
        for j in range(wide, narrow, width):
            tile_narrow(a, a0, a1, b, b0, c, c0, i, j, k, beta)
        for j in range(narrow, halved, half):
            tile_half(a, a0, a1, b, b0, c, c0, i, j, k, beta)
        for j in range(halved, quartered, quarter):
            tile_quarter(a, a0, a1, b, b0, c, c0, i, j, k, beta)
        for j in range(quartered, eighths, eighth):
            tile_eighth(a, a0, a1, b, b0, c, c0, i, j, k, beta)
        for j in range(eighths, n):
            tile_column(a, a0, a1, b, b0, c, c0, i, j, k, beta)
    for i in range(whole_rows, m):
        for j in range(0, wide, VECTORS * width):
            row_wide(a, a0, a1, b, b0, c, c0, i, j, k, beta)
        for j in range(wide, narrow, width):
            row_narrow(a, a0, a1, b, b0, c, c0, i, j, k, beta)
        for j in range(narrow, halved, half):
            row_half(a, a0, a1, b, b0, c, c0, i, j, k, beta)
        for j in range(halved, quartered, quarter):
            row_quarter(a, a0, a1, b, b0, c, c0, i, j, k, beta)
        for j in range(quartered, eighths, eighth):
            row_eighth(a, a0, a1, b, b0, c, c0, i, j, k, beta)
        for j in range(eighths, n):
            row_column(a, a0, a1, b, b0, c, c0, i, j, k, beta)
