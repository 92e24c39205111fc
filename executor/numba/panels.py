"""Large matrix products of hilbert's own: a and b packed into panels, cut into cache-sized blocks,
each block of the result computed by a register micro-kernel (microkernel.py).

The blocking follows Goto's and BLIS's: for each block of `depth` (KC) steps of k, a's rows (up
to `panel_rows`, MC, at a time: they stay in the L3 cache) are packed into panels of the tile's
rows; for each block of `columns` (NC) of b's columns (depth × columns fits in the L2 cache) b is
packed into panels of the tile's columns; then, for each panel of a (its depth × rows numbers
stay in L1) the kernel runs over every panel of b, which streams from L2. The first pass over a
panel packs it as it computes (microkernel.py: `a_source`, `b_source`), so a and b are read once;
only an edge panel (fewer rows or columns than a tile) is packed apart, padded with zeros.

`BLOCKINGS` holds the sizes for each CPU kind (its vector width) and number type, chosen by
measurement on the 2-core AMD EPYC (Zen 5, AVX-512; docs/architecture.md, "Large products"):
8 × 24 tiles of float64 with KC 512 and NC 120, 6 × 64 of float32 with KC 1024 and NC 128 (a
float32 panel of a's 6 rows by 1024 steps still fits in L1, and a product with k ≤ 1024 then
writes c once). They are constants, the same for every machine of a kind: the same call gives
the same bits every time, and each entry's bits depend only on KC (microkernel.py), so the
rows or columns a thread gets change nothing.

`own_product` has `blas._product_at`'s contract (raw addresses, steps in numbers, any sign):
out = a · b + beta · out, beta 0 never reading out, on the calling thread. When it runs, and
how it is compiled, is own_products.py's business.
"""

from __future__ import annotations

import ctypes
import hashlib
from dataclasses import dataclass
from pathlib import Path

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from . import tiles
from .microkernel import (
    as_like,
    copied_vectors,
    load_at,
    micro_kernel,
    store_at,
    transposed_block,
)


@dataclass(frozen=True)
class Blocking:
    """How one number type's large products are cut (see the module's doc)."""

    rows: int  # the tile's rows: a's panels hold this many
    vectors: int  # the tile's columns, in vectors: b's panels hold vectors × lanes columns
    depth: int  # KC: steps of k per block (each entry's sum is cut here)
    columns: int  # NC: b's columns packed at a time (depth × columns numbers fit in L2)
    panel_rows: int  # MC: a's rows packed at a time (depth × panel_rows numbers fit in L3)


#: The blocking per vector width and number width (bits). 512: AVX-512's 32 registers; 256:
#: AVX2's 16 (6 × 2 vectors, as BLIS's Haswell kernels).
BLOCKINGS = {
    512: {64: Blocking(8, 3, 512, 120, 1024), 32: Blocking(6, 4, 1024, 128, 1026)},
    256: {64: Blocking(6, 2, 256, 256, 1026), 32: Blocking(6, 2, 256, 256, 1026)},
}
#: This CPU's vector width (tiles.VECTOR_BITS: 512 with AVX-512, else 256).
BITS = tiles.VECTOR_BITS
#: What this module's machine code depends on (its disk cache's key, with the CPU Numba keeps).
STAMP = " ".join(hashlib.sha256(Path(__file__).with_name(name).read_bytes()).hexdigest()[:16]
                 for name in ("panels.py", "microkernel.py")) + f" {np.__version__}"

_SIZES = {width: b for width, b in BLOCKINGS[BITS].items()}
_TILES = {width: (b.rows, b.vectors) for width, b in _SIZES.items()}
_kernel = micro_kernel(_TILES, BITS)
_kernel_a = micro_kernel(_TILES, BITS, a_source=True)
_kernel_b = micro_kernel(_TILES, BITS, b_source=True)
_kernel_ab = micro_kernel(_TILES, BITS, a_source=True, b_source=True)
_edge = micro_kernel(_TILES, BITS, edge=True)
_a_block = transposed_block({width: b.rows for width, b in _SIZES.items()}, BITS, "rows")
_b_block = transposed_block({64: BITS // 64, 32: BITS // 32}, BITS, "lanes")
_b_row = copied_vectors({width: b.vectors for width, b in _SIZES.items()}, BITS)


#: How many products own_product has run in this process (a number in C memory that compiled
#: code adds to by its symbol, so cached machine code finds it in every process): `runs`.
_RUNS = ctypes.c_int64(0)
llvm.add_symbol("hilbert_own_products_run", ctypes.addressof(_RUNS))


def runs() -> int:
    """How many products own_product has run in this process (tests count which kernel ran)."""
    return _RUNS.value


@intrinsic
def _counted(typingctx):
    """Add one to `_RUNS` (atomically: blocks of a product run on several threads)."""

    def codegen(context, builder, signature, args):
        module = builder.module
        count = module.globals.get("hilbert_own_products_run")
        if count is None:
            count = ir.GlobalVariable(module, ir.IntType(64), "hilbert_own_products_run")
            count.linkage = "external"
        builder.atomic_rmw("add", count, ir.Constant(ir.IntType(64), 1), "monotonic")
        return context.get_dummy_value()

    return types.none(), codegen


@intrinsic
def _sizes(typingctx, like):
    """(rows, columns of a tile, depth, columns, panel_rows, lanes, bytes) for `like`'s float
    type, as constants."""
    if like not in (types.float32, types.float64):
        return None
    result = types.UniTuple(types.intp, 7)

    def codegen(context, builder, signature, args):
        b = _SIZES[like.bitwidth]
        lanes = BITS // like.bitwidth
        values = (b.rows, b.vectors * lanes, b.depth, b.columns, b.panel_rows, lanes,
                  like.bitwidth // 8)
        return context.make_tuple(builder, result, [context.get_constant(types.intp, v)
                                                    for v in values])

    return result(like), codegen


def _jit(function):
    return njit(function, nogil=True, error_model="numpy", boundscheck=False)


@_jit
def _strips(src, s_k, s_j, live, width, first, kc, dst, like):
    """dst[p·width + j] = the number at src + (p·s_k + j·s_j) numbers for first ≤ p < kc and
    j < live, 0 for live ≤ j < width (one panel's numbers one by one)."""
    item = _sizes(like)[6]
    zero = as_like(0.0, like)
    for p in range(first, kc):
        for j in range(width):
            value = load_at(src + (p * s_k + j * s_j) * item, like) if j < live else zero
            store_at(dst + (p * width + j) * item, value)


@_jit
def _pack_a(src, s0, s1, count, kc, dst, like):
    """a's `count` rows from src (its entry [0, 0]; steps s0, s1) into panels of the tile's
    rows at dst, kc steps of k each (zeros below the last row)."""
    rows, _, _, _, _, lanes, item = _sizes(like)
    for i in range(0, count, rows):
        live = min(rows, count - i)
        panel = dst + i * kc * item
        start = src + i * s0 * item
        first = 0
        if live == rows and s1 == 1:  # rows of adjacent numbers: turned a block at a time
            first = kc - kc % lanes
            for p in range(0, first, lanes):
                _a_block(panel + p * rows * item, start + p * item, s0, rows, like)
        _strips(start, s1, s0, live, rows, first, kc, panel, like)


@_jit
def _pack_b(src, s0, s1, count, kc, dst, like):
    """b's `count` columns from src (its entry [0, 0]; steps s0, s1) into panels of the tile's
    columns at dst, kc steps of k each (zeros right of the last column)."""
    _, span, _, _, _, lanes, item = _sizes(like)
    for j in range(0, count, span):
        live = min(span, count - j)
        panel = dst + j * kc * item
        start = src + j * s1 * item
        first = 0
        if live == span and s1 == 1:  # adjacent columns: copied a row of vectors at a time
            for p in range(kc):
                _b_row(panel + p * span * item, start + p * s0 * item, like)
            first = kc
        elif live == span and s0 == 1:  # b stored by columns (a transposed view): turned
            first = kc - kc % lanes
            for p in range(0, first, lanes):
                for q in range(0, span, lanes):
                    _b_block(panel + (p * span + q) * item, start + (q * s1 + p) * item, s1,
                             span, like)
        _strips(start, s0, s1, live, span, first, kc, panel, like)


@_jit
def _panels(a, a0, a1, b, b0, c, c0, c1, beta, corner, sizes, packs, fused_a, fused_b):
    """One block: every tile of c's mc × nc block at `corner` (ic, jc, pc) from packed panels at
    packs (ap, bp); kc steps. fused_a: the first tile of each row of tiles packs a's panel,
    fused_b: the first row of tiles packs b's (only whole tiles do)."""
    ic, jc, pc = corner
    mc, nc, kc = sizes
    ap, bp = packs
    rows, span, _, _, _, _, item = _sizes(beta)
    for i in range(0, mc, rows):
        mv = min(rows, mc - i)
        for j in range(0, nc, span):
            nv = min(span, nc - j)
            at = c + ((ic + i) * c0 + (jc + j) * c1) * item
            pa, pb = ap + i * kc * item, bp + j * kc * item
            sa = a + ((ic + i) * a0 + pc * a1) * item
            sb = b + (pc * b0 + jc + j) * item
            if mv < rows or nv < span or c1 != 1:
                _edge(pa, pb, kc, at, c0, c1, beta, mv, nv, sa, a0, a1, sb, b0)
            elif fused_a and j == 0 and fused_b and i == 0:
                _kernel_ab(pa, pb, kc, at, c0, c1, beta, mv, nv, sa, a0, a1, sb, b0)
            elif fused_a and j == 0:
                _kernel_a(pa, pb, kc, at, c0, c1, beta, mv, nv, sa, a0, a1, sb, b0)
            elif fused_b and i == 0:
                _kernel_b(pa, pb, kc, at, c0, c1, beta, mv, nv, sa, a0, a1, sb, b0)
            else:
                _kernel(pa, pb, kc, at, c0, c1, beta, mv, nv, sa, a0, a1, sb, b0)


@_jit
def _row_block(a, a0, a1, b, n, b0, b1, c, c0, c1, beta, corner, mc, kc, packs):
    """c's rows ic … ic + mc for k's block pc … pc + kc (corner (ic, pc)): a's rows packed (the
    whole panels by the kernel, at the first block of columns), then each block of columns."""
    ic, pc = corner
    ap, bp = packs
    rows, span, _, columns, _, _, item = _sizes(beta)
    fuse_a = c1 == 1 and min(columns, n) >= span  # (the first tile of a row of tiles is whole)
    whole_m = mc - mc % rows if fuse_a else 0
    if whole_m < mc:
        _pack_a(a + ((ic + whole_m) * a0 + pc * a1) * item, a0, a1, mc - whole_m, kc,
                ap + whole_m * kc * item, beta)
    fuse_b = c1 == 1 and b1 == 1 and mc >= rows  # (the first row of tiles is whole)
    for jc in range(0, n, columns):
        nc = min(columns, n - jc)
        whole_n = nc - nc % span if fuse_b else 0
        if whole_n < nc:
            _pack_b(b + (pc * b0 + (jc + whole_n) * b1) * item, b0, b1, nc - whole_n, kc,
                    bp + whole_n * kc * item, beta)
        _panels(a, a0, a1, b, b0, c, c0, c1, beta, (ic, jc, pc), (mc, nc, kc), packs,
                fuse_a and jc == 0, fuse_b)


@_jit
def _blocked(a, m, k, a0, a1, b, n, b0, b1, c, c0, c1, beta):
    """own_product for k ≥ 1 and m, n ≥ 1, addresses as intp. Returns the packing room's size
    (so it lives to the end)."""
    rows, span, depth, columns, panel_rows, _, item = _sizes(beta)
    a_room = -(-min(panel_rows, m) // rows) * rows * min(depth, k)
    b_room = -(-min(columns, n) // span) * span * min(depth, k)
    room = np.empty(((a_room + b_room) * item + 256) // 8, np.float64)
    start = np.intp(room.ctypes.data)
    ap = start + 63 - (start + 63) % 64  # (panels start on cache lines: b's are read aligned)
    bp = ap + a_room * item + 63 - (ap + a_room * item + 63) % 64
    one = as_like(1.0, beta)
    for pc in range(0, k, depth):
        kc = min(depth, k - pc)
        for ic in range(0, m, panel_rows):
            _row_block(a, a0, a1, b, n, b0, b1, c, c0, c1, beta if pc == 0 else one, (ic, pc),
                       min(panel_rows, m - ic), kc, (ap, bp))
    return room.size


@_jit
def _scaled(c, m, n, c0, c1, beta):
    """out = beta · out (0 where beta is 0: out unread), for a product with nothing summed."""
    item = _sizes(beta)[6]
    zero = as_like(0.0, beta)
    for i in range(m):
        for j in range(n):
            at = c + (i * c0 + j * c1) * item
            store_at(at, load_at(at, beta) * beta if beta != 0 else zero)


def own_product(a, m, k, a0, a1, b, n, b0, b1, c, c0, c1, beta):
    """out = a · b + beta · out on raw matrices of beta's type (float32 or float64): each an
    address and its steps between rows and between columns in numbers, any sign (a is m×k,
    b k×n, out m×n). Fastest with out's columns adjacent (or its rows: then outᵀ = bᵀ · aᵀ is
    computed); b's adjacent columns let its first pass pack it."""
    _counted()
    if m == 0 or n == 0:
        return
    a_, b_, c_ = np.intp(a), np.intp(b), np.intp(c)
    if k == 0:
        _scaled(c_, m, n, c0, c1, beta)
    elif c1 != 1 and c0 == 1:
        _blocked(b_, n, k, b1, b0, a_, m, a1, a0, c_, c1, c0, beta)
    else:
        _blocked(a_, m, k, a0, a1, b_, n, b0, b1, c_, c0, c1, beta)
