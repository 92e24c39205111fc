"""The register micro-kernel of large products and the packing moves around it, as LLVM vector IR.

`executor/numba/panels.py` runs a large product as panels: a is copied ("packed") into panels of
`rows` rows, each stored column after column (the rows' entries at one k side by side), b into
panels of `vectors` vectors of columns, stored row after row, so the micro-kernel reads both as
one sequential stream each. The kernel keeps a rows × (vectors · lanes) block of the result in
vector registers while k runs: at each k, `vectors` vectors of b's panel row, and each of a's
`rows` entries broadcast to a vector and multiplied into them by a fused multiply-add. With
AVX-512 (32 registers) an 8 × 3 tile of float64 (24 sums, 8 × 24 entries) or a 6 × 4 one of
float32 (6 × 64) leaves room for b's vectors and one broadcast; LLVM keeps every sum in a
register (a 7 × 4 tile spills and runs at 40% of it). As `tiles.py` explains, Numba cannot say
this and LLVM does not find it in scalar loops, hence intrinsics.

Each entry of the block is one chain of FMAs over its k from zero, in order, whatever the tile's
place (whole, at an edge, or packing as it goes): so its bits depend only on how k is cut into
blocks (panels.py), never on the rows or columns around it. The sums then go to c: stored as they
are when beta is 0 (c is never read: a NaN there does not leak), else fma(beta, c, sums) (for
beta 1 exactly c + sums).

Variants: `edge` writes only the first mv × nv entries, through a block on the stack, to a c
with any steps (the panels' padding is zeros); `a_source` reads a's entries from a itself (any
steps) and writes them into its panel as it goes, `b_source` likewise b's vectors from rows of
adjacent columns, so the first pass over a panel packs it at the cost of a few stores where a
separate copy would read everything twice (3–5% of the product's time on the AMD EPYC).
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

#: How many k steps ahead the kernel asks for b's panel (a prefetch hint; measured 2–3% faster
#: on the AMD EPYC (Zen 5) than leaving it to the hardware).
AHEAD = 8
_I8P = ir.IntType(8).as_pointer()
_I32 = ir.IntType(32)
_INDEX = ir.IntType(64)


def _k(value: int) -> ir.Constant:
    return ir.Constant(_INDEX, value)


class _Emitter:
    """What the kernel's code is written with: the builder, the number and vector types of
    `real` (types.float32 or float64) at `bits` bits, and the FMA and prefetch intrinsics."""

    def __init__(self, context, builder, real, bits: int):
        self.builder = builder
        self.element = context.get_data_type(real)
        self.lanes = bits // real.bitwidth
        self.vector = ir.VectorType(self.element, self.lanes)
        self.item = real.bitwidth // 8
        # (a CPU on which LLVM prefers 256-bit vectors would split 512-bit ones in two)
        set.add(builder.function.attributes, f'"min-legal-vector-width"="{bits}"')
        self.fma = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(self.vector, [self.vector] * 3),
            f"llvm.fma.v{self.lanes}f{real.bitwidth}")
        self.fma_one = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(self.element, [self.element] * 3),
            f"llvm.fma.f{real.bitwidth}")
        self.prefetch = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [_I8P, _I32, _I32, _I32]),
            "llvm.prefetch.p0")

    def items(self, address):
        """A pointer to numbers at a byte address (an intp)."""
        return self.builder.inttoptr(address, self.element.as_pointer())

    def at(self, items, offset):
        """The address `offset` numbers past `items`."""
        return self.builder.gep(items, [offset])

    def vector_load(self, items, offset, align: int):
        b = self.builder
        return b.load(b.bitcast(self.at(items, offset), self.vector.as_pointer()), align=align)

    def vector_store(self, value, items, offset, align: int):
        b = self.builder
        b.store(value, b.bitcast(self.at(items, offset), self.vector.as_pointer()), align=align)

    def splat(self, value):
        """value in every lane."""
        b = self.builder
        undefined = ir.Constant(self.vector, ir.Undefined)
        first = b.insert_element(undefined, value, ir.Constant(_I32, 0))
        return b.shuffle_vector(first, undefined, ir.Constant(
            ir.VectorType(_I32, self.lanes), [0] * self.lanes))

    def hint(self, items, offset, write: bool) -> None:
        """Ask for the cache line holding items[offset] (kept in every cache level)."""
        b = self.builder
        b.call(self.prefetch, [b.bitcast(self.at(items, offset), _I8P),
                               ir.Constant(_I32, int(write)), ir.Constant(_I32, 3),
                               ir.Constant(_I32, 1)])


def _sums(em: _Emitter, rows: int, vectors: int, operands, a_source: bool, b_source: bool):
    """The k loop: rows × vectors sums of a's panel times b's (or of a and b themselves, packed
    on the way); returns the sums after the last step (kc ≥ 1)."""
    b = em.builder
    ap, bp, kc, sa, sa0, sa1, sb, sb0 = operands
    span = vectors * em.lanes
    a_rows = [b.mul(_k(r), sa0) for r in range(rows)]
    before = b.basic_block
    loop = b.append_basic_block("panel.k")
    after = b.append_basic_block("panel.stored")
    b.branch(loop)
    b.position_at_end(loop)
    p = b.phi(_INDEX)
    phis = [[b.phi(em.vector) for _ in range(vectors)] for _ in range(rows)]
    b_row = b.mul(p, _k(span))
    for line in range(0, span * em.item, 64):
        em.hint(bp, b.add(b.mul(b.add(p, _k(AHEAD)), _k(span)), _k(line // em.item)), False)
    if b_source:
        source_row = b.mul(p, sb0)
        b_vectors = [em.vector_load(sb, b.add(source_row, _k(v * em.lanes)), em.item)
                     for v in range(vectors)]
        for v, value in enumerate(b_vectors):
            em.vector_store(value, bp, b.add(b_row, _k(v * em.lanes)), 64)
    else:
        b_vectors = [em.vector_load(bp, b.add(b_row, _k(v * em.lanes)), 64)
                     for v in range(vectors)]
    a_column = b.mul(p, sa1)
    sums = []
    for r in range(rows):
        packed = em.at(ap, b.add(b.mul(p, _k(rows)), _k(r)))
        if a_source:
            entry = b.load(em.at(sa, b.add(a_rows[r], a_column)))
            b.store(entry, packed)
        else:
            entry = b.load(packed)
        broadcast = em.splat(entry)
        sums.append([b.call(em.fma, [broadcast, b_vectors[v], phis[r][v]])
                     for v in range(vectors)])
    following = b.add(p, _k(1))
    p.add_incoming(_k(0), before)
    p.add_incoming(following, loop)
    zero = ir.Constant(em.vector, None)
    for r in range(rows):
        for v in range(vectors):
            phis[r][v].add_incoming(zero, before)
            phis[r][v].add_incoming(sums[r][v], loop)
    b.cbranch(b.icmp_signed("<", following, kc), loop, after)
    b.position_at_end(after)
    return sums


def _store_whole(em: _Emitter, sums, c, c0, beta) -> None:
    """c's rows × (vectors · lanes) block (adjacent columns, rows c0 apart) = sums (beta 0: c
    unread) or fma(beta, c, sums)."""
    b = em.builder
    unused = b.fcmp_ordered("==", beta, ir.Constant(em.element, 0.0))
    with b.if_else(unused) as (fresh, adding):
        with fresh:
            for r, row in enumerate(sums):
                for v, value in enumerate(row):
                    em.vector_store(value, c, b.add(b.mul(_k(r), c0), _k(v * em.lanes)), em.item)
        with adding:
            factor = em.splat(beta)
            for r, row in enumerate(sums):
                for v, value in enumerate(row):
                    offset = b.add(b.mul(_k(r), c0), _k(v * em.lanes))
                    old = em.vector_load(c, offset, em.item)
                    em.vector_store(b.call(em.fma, [factor, old, value]), c, offset, em.item)


def _store_edge(em: _Emitter, sums, c, c0, c1, beta, mv, nv) -> None:
    """As _store_whole for the first mv rows and nv columns only, c's steps c0 and c1 any: the
    sums go through a block on the stack, then one number at a time (one FMA each, as the
    vectors' lanes do)."""
    b = em.builder
    span = len(sums[0]) * em.lanes
    block = cgutils.alloca_once(b, em.element, size=len(sums) * span)
    for r, row in enumerate(sums):
        for v, value in enumerate(row):
            em.vector_store(value, block, _k(r * span + v * em.lanes), em.item)
    unused = b.fcmp_ordered("==", beta, ir.Constant(em.element, 0.0))
    with cgutils.for_range(b, mv) as row_loop, cgutils.for_range(b, nv) as column_loop:
        i, j = row_loop.index, column_loop.index
        total = b.load(em.at(block, b.add(b.mul(i, _k(span)), j)))
        target = em.at(c, b.add(b.mul(i, c0), b.mul(j, c1)))
        with b.if_else(unused) as (fresh, adding):
            with fresh:
                b.store(total, target)
            with adding:
                b.store(b.call(em.fma_one, [beta, b.load(target), total]), target)


def micro_kernel(tiles: dict[int, tuple[int, int]], bits: int, *, edge: bool = False,
                 a_source: bool = False, b_source: bool = False):
    """An intrinsic: c's rows × (vectors · lanes) block = a's panel · b's panel (+ beta · c),
    (rows, vectors) = tiles[the numbers' bit width].

    kernel(ap, bp, kc, c, c0, c1, beta, mv, nv, sa, sa0, sa1, sb, sb0): ap, bp, c, sa, sb byte
    addresses (intp); ap a's panel (rows numbers per k), bp b's (vectors · lanes per k, 64-byte
    aligned); kc ≥ 1 steps; c's steps c0 (rows) and c1 (columns; 1 unless `edge`), in numbers;
    beta of the numbers' type (float32 or float64); mv, nv the rows and columns written
    (`edge` only). With `a_source`, a's entries are read at sa + (r·sa0 + p·sa1) numbers and
    written into ap; with `b_source`, b's vectors at sb + p·sb0 numbers (adjacent columns) and
    written into bp."""

    def typer(typingctx, ap, bp, kc, c, c0, c1, beta, mv, nv, sa, sa0, sa1, sb, sb0):
        if beta not in (types.float32, types.float64):
            return None
        whole = (ap, bp, kc, c, c0, c1, mv, nv, sa, sa0, sa1, sb, sb0)
        if not all(isinstance(t, types.Integer) for t in whole):
            return None

        rows, vectors = tiles[beta.bitwidth]

        def codegen(context, builder, signature, args):
            em = _Emitter(context, builder, signature.args[6], bits)
            ap_, bp_, kc_, c_, c0_, c1_, _, mv_, nv_, sa_, sa0_, sa1_, sb_, sb0_ = (
                context.cast(builder, v, t, types.intp) if i != 6 else v
                for i, (v, t) in enumerate(zip(args, signature.args, strict=True)))
            c_items = em.items(c_)
            if not edge:  # the block's lines, asked for now: they are needed after the loop
                for r in range(rows):
                    for line in range(0, vectors * em.lanes * em.item, 64):
                        em.hint(c_items, builder.add(builder.mul(_k(r), c0_), _k(line // em.item)),
                                True)
            sums = _sums(em, rows, vectors, (em.items(ap_), em.items(bp_), kc_, em.items(sa_),
                                             sa0_, sa1_, em.items(sb_), sb0_),
                         a_source, b_source)
            if edge:
                _store_edge(em, sums, c_items, c0_, c1_, args[6], mv_, nv_)
            else:
                _store_whole(em, sums, c_items, c0_, args[6])
            return context.get_dummy_value()

        return types.none(ap, bp, kc, c, c0, c1, beta, mv, nv, sa, sa0, sa1, sb, sb0), codegen

    typer.__name__ = (f"panel_{bits}{'_edge' if edge else ''}"
                      f"{'_a' if a_source else ''}{'_b' if b_source else ''}")
    return intrinsic(typer)


def transposed_block(sizes: dict[int, int], bits: int, name: str):
    """An intrinsic: block(dst, src, s0, step, like) writes dst[p·step + r] = src[r·s0 + p] for
    r < rows = sizes[like's bit width] and p < lanes (a vector of `like`'s float type),
    addresses in bytes, steps in numbers: `rows` vectors read, turned by shuffles, written as
    `lanes` runs of `rows`."""

    def typer(typingctx, dst, src, s0, step, like):
        if like not in (types.float32, types.float64):
            return None
        rows = sizes[like.bitwidth]

        def codegen(context, builder, signature, args):
            em = _Emitter(context, builder, like, bits)
            dst_, src_, s0_, step_ = (context.cast(builder, v, t, types.intp)
                                      for v, t in zip(args[:4], signature.args[:4], strict=True))
            source, target = em.items(src_), em.items(dst_)
            parts = [em.vector_load(source, builder.mul(s0_, _k(r)), em.item) for r in range(rows)]
            width = 1 << (rows - 1).bit_length()
            parts += [ir.Constant(em.vector, ir.Undefined)] * (width - rows)
            size = em.lanes
            while len(parts) > 1:  # one vector of every row's numbers, row after row
                mask = ir.Constant(ir.VectorType(_I32, 2 * size), list(range(2 * size)))
                parts = [builder.shuffle_vector(x, y, mask) for x, y in zip(parts[::2], parts[1::2],
                                                                          strict=True)]
                size *= 2
            run = ir.VectorType(em.element, rows)
            for p in range(em.lanes):
                mask = ir.Constant(ir.VectorType(_I32, rows), [r * em.lanes + p for r in range(rows)])
                column = builder.shuffle_vector(parts[0], ir.Constant(parts[0].type, ir.Undefined),
                                                mask)
                at = em.at(target, builder.mul(step_, _k(p)))
                builder.store(column, builder.bitcast(at, run.as_pointer()), align=em.item)
            return context.get_dummy_value()

        return types.none(dst, src, s0, step, like), codegen

    typer.__name__ = f"transposed_{name}_{bits}"
    return intrinsic(typer)


def copied_vectors(counts: dict[int, int], bits: int):
    """An intrinsic: copy(dst, src, like) copies counts[like's bit width] vectors of `like`'s
    float type from the byte address src to dst (64-byte aligned)."""

    def typer(typingctx, dst, src, like):
        if like not in (types.float32, types.float64):
            return None
        count = counts[like.bitwidth]

        def codegen(context, builder, signature, args):
            em = _Emitter(context, builder, like, bits)
            dst_, src_ = (context.cast(builder, v, t, types.intp)
                          for v, t in zip(args[:2], signature.args[:2], strict=True))
            source, target = em.items(src_), em.items(dst_)
            for v in range(count):
                value = em.vector_load(source, _k(v * em.lanes), em.item)
                em.vector_store(value, target, _k(v * em.lanes), 64)
            return context.get_dummy_value()

        return types.none(dst, src, like), codegen

    typer.__name__ = f"copied_{bits}"
    return intrinsic(typer)


@intrinsic
def load_at(typingctx, address, like):
    """The number of `like`'s float type at a byte address (an intp)."""
    if like not in (types.float32, types.float64) or not isinstance(address, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        at = context.cast(builder, args[0], signature.args[0], types.intp)
        return builder.load(builder.inttoptr(at, context.get_data_type(like).as_pointer()))

    return like(address, like), codegen


@intrinsic
def store_at(typingctx, address, value):
    """Write the float `value` at a byte address (an intp)."""
    if value not in (types.float32, types.float64) or not isinstance(address, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        at = context.cast(builder, args[0], signature.args[0], types.intp)
        builder.store(args[1], builder.inttoptr(at, context.get_data_type(value).as_pointer()))
        return context.get_dummy_value()

    return types.none(address, value), codegen


@intrinsic
def as_like(typingctx, value, like):
    """value (a number) as a number of `like`'s float type."""
    if like not in (types.float32, types.float64) or not isinstance(value, types.Number):
        return None

    def codegen(context, builder, signature, args):
        return context.cast(builder, args[0], signature.args[0], like)

    return like(value, like), codegen

