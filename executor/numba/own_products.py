"""When hilbert's own large products (panels.py) run instead of NumPy's BLAS, and their machine
code, made at the first call that can use it.

They run one per thread, on a block of a product: where hilbert's threads share a product out
(regions.py, "split" products; row_blocks.py) and NumPy's BLAS runs on one thread. On one core
they beat OpenBLAS's own kernel for the CPU (docs/architecture.md, "Large products"); a whole
product on one thread does not beat OpenBLAS on all the cores, so elsewhere BLAS keeps it.
`used(dtype)` marks such a call: for its length, the product kernel (blas._product_at) finds
own_product's address in `_ENTRIES` and runs the products `chosen` takes (by work and sides)
as own_product; outside, the entry is 0 and BLAS runs them. `shared_product` does the same for
host code (plain NumPy calls), sharing a product out on hilbert's block threads itself.

Where they run is a table by CPU kind (`OWN`, by vector width), fixed, so a machine always
makes the same choice and a call the same bits: with AVX-512 (measured on the AMD EPYC, Zen 5)
they beat OpenBLAS's SkylakeX kernel; with AVX2 only, 6 × 8 (float64) and 6 × 16 (float32)
tiles merely tied OpenBLAS's Haswell kernel (measured on the same EPYC with Numba compiling
for Haswell and OpenBLAS pinned to it, 57 and 114 GFLOP/s on one core both), so BLAS keeps
its products there.

own_product is compiled (or loaded from the disk cache) when a call first needs it, not when
kernels.py loads: its cold compilation takes seconds (3–5 s per number type on the AMD EPYC),
which every program's first compilation would otherwise pay. So its entry is a number in C
memory that compiled code reads through a symbol, not a function it links to.
"""

from __future__ import annotations

import ctypes
import itertools
import threading
from contextlib import contextmanager

import numpy as np
from llvmlite import ir
from numba import config, njit, types
from numba.extending import intrinsic

from .. import blas_threads, threads
from . import native, panels, row_blocks
from .product_parts import ENTRIES as _ENTRIES
from .product_parts import SIDES, WORK

#: Whether own products are used, per vector width and number width: where they measured
#: faster than OpenBLAS's kernel for the CPU on one core (AVX-512: the AMD EPYC, Zen 5).
OWN = {512: {64: True, 32: True}, 256: {64: False, 32: False}}[panels.BITS]
#: own_product's address per number width once compiled; how many `used` calls are under way.
_MADE: dict[int, int] = {}
_USERS = {64: 0, 32: 0}
_LOCK = threading.Lock()


def _signature(width: int):
    number = types.float64 if width == 64 else types.float32
    return types.void(types.uintp, types.intp, types.intp, types.intp, types.intp, types.uintp,
                      types.intp, types.intp, types.intp, types.uintp, types.intp, types.intp,
                      number)


def _made(width: int) -> int:
    """own_product's address for numbers of `width` bits, compiled on first need (under _LOCK)."""
    if width not in _MADE:
        _MADE[width] = native.c_function(panels.own_product, _signature(width), panels.STAMP)
    return _MADE[width]


def prepare(dtype) -> None:
    """Make own_product for `dtype` now if `used` would use it (a build calls this, so that the
    first call finds it made)."""
    if _wanted(dtype):
        with _LOCK:
            _made(np.dtype(dtype).itemsize * 8)


def _wanted(dtype) -> bool:
    dtype = np.dtype(dtype)
    return dtype.kind == "f" and OWN.get(dtype.itemsize * 8, False) and not config.DISABLE_JIT


@contextmanager
def used(dtype):
    """Inside, large products of `dtype` (float32, float64) run as own products where `OWN` says
    so: the caller's threads share the products out and NumPy's BLAS runs on one thread."""
    width = np.dtype(dtype).itemsize * 8
    if not _wanted(dtype):
        yield
        return
    with _LOCK:
        _ENTRIES[width].value = _made(width)
        _USERS[width] += 1
    try:
        yield
    finally:
        with _LOCK:
            _USERS[width] -= 1
            if _USERS[width] == 0:
                _ENTRIES[width].value = 0


@njit(nogil=True, error_model="numpy", boundscheck=False)
def chosen(m, n, k, like):
    """Whether an m×k by k×n product of `like`'s float type is large enough to run as an own
    product (inside `used`)."""
    work, least_m, least_k, least_n = _least(like)
    return m * n * k >= work and m >= least_m and k >= least_k and n >= least_n


@intrinsic
def _least(typingctx, like):
    """WORK and SIDES for `like`'s float type, as constants."""
    if like not in (types.float32, types.float64):
        return None
    result = types.UniTuple(types.intp, 4)

    def codegen(context, builder, signature, args):
        values = (WORK[like.bitwidth], *SIDES[like.bitwidth])
        return context.make_tuple(builder, result, [context.get_constant(types.intp, v)
                                                    for v in values])

    return result(like), codegen


@intrinsic
def entry(typingctx, like):
    """own_product's address for `like`'s float type: 0 outside `used` (read afresh each time)."""
    if like not in (types.float32, types.float64):
        return None

    def codegen(context, builder, signature, args):
        name = f"hilbert_own_product_f{like.bitwidth}"
        slot = builder.module.globals.get(name)
        if slot is None:
            slot = ir.GlobalVariable(builder.module, ir.IntType(64), name)
            slot.linkage = "external"
        return builder.load_atomic(slot, "monotonic", 8)

    return types.intp(like), codegen


@intrinsic
def call_at(typingctx, at, a, m, k, a0, a1, b, n, b0, b1, c, c0, c1, beta):
    """own_product(a, m, k, a0, a1, b, n, b0, b1, c, c0, c1, beta) through its address `at`
    (from `entry`)."""
    if beta not in (types.float32, types.float64):
        return None
    wanted = _signature(beta.bitwidth).args

    def codegen(context, builder, signature, args):
        values = [context.cast(builder, v, t, w)
                  for v, t, w in zip(args[1:], signature.args[1:], wanted, strict=True)]
        function = ir.FunctionType(ir.VoidType(), [context.get_value_type(w) for w in wanted])
        builder.call(builder.inttoptr(args[0], function.as_pointer()), values)
        return context.get_dummy_value()

    return types.none(at, a, m, k, a0, a1, b, n, b0, b1, c, c0, c1, beta), codegen


#: own_product for each number width as a ctypes function (host code calls it: `_block`).
_CALLS: dict[int, object] = {}


def _c_call(width: int, address: int):
    """own_product at `address` as a ctypes function (which lets go of the GIL while it runs)."""
    if width not in _CALLS:
        whole, address_type = ctypes.c_int64, ctypes.c_uint64
        number = ctypes.c_double if width == 64 else ctypes.c_float
        _CALLS[width] = ctypes.CFUNCTYPE(None, address_type, *[whole] * 4, address_type,
                                         *[whole] * 3, address_type, whole, whole, number)(address)
    return _CALLS[width]


def multiply(a, b, out, beta: float = 0.0) -> None:
    """out[...] = a · b + beta · out by own_product (made now if it is not yet), for matrices of
    one float dtype (float32, float64) in any layout, on this thread (beta 0: out unread).

    >>> x = np.arange(6.0).reshape(2, 3); y = np.empty((2, 2))
    >>> multiply(x, x.T, y); bool((y == x @ x.T).all())
    True
    """
    width = out.itemsize * 8
    with _LOCK:
        at = _made(width)
    size = out.itemsize
    _c_call(width, at)(a.ctypes.data, a.shape[0], a.shape[1], a.strides[0] // size,
                       a.strides[1] // size, b.ctypes.data, b.shape[1], b.strides[0] // size,
                       b.strides[1] // size, out.ctypes.data, out.strides[0] // size,
                       out.strides[1] // size, beta)


def _block(a, b, out) -> None:
    """out[...] = a · b: an own product where `used` has entered one for their dtype and the
    product is `chosen`, else NumPy's BLAS."""
    m, k = a.shape
    width = out.itemsize * 8
    if _ENTRIES[width].value == 0 or not chosen(m, b.shape[1], k, out.dtype.type(0)):
        np.matmul(a, b, out=out)
    else:
        multiply(a, b, out)


def shared_product(a, b, by_rows: bool = True):
    """a · b for two matrices of one float dtype, from host code (plain NumPy calls): shared out
    as compiled code's split products are (codegen/products.py, _shared_out), one block of rows
    (or of columns) per thread of hilbert's, the caller running the first, each block an own
    product where `OWN` and `chosen` say so, else NumPy's BLAS on one thread. Other operands:
    np.dot.

    >>> x = np.arange(6.0).reshape(2, 3)
    >>> bool((shared_product(x, x.T) == x @ x.T).all())
    True
    """
    if a.ndim != 2 or b.ndim != 2 or a.dtype != b.dtype or a.dtype.kind != "f":
        return np.dot(a, b)
    out = np.empty((a.shape[0], b.shape[1]), a.dtype)
    parts = threads.count()
    side = out.shape[0] if by_rows else out.shape[1]
    edges = [side * i // parts for i in range(parts + 1)]
    blocks = [(a[lo:hi], b, out[lo:hi]) if by_rows else (a, b[:, lo:hi], out[:, lo:hi])
              for lo, hi in itertools.pairwise(edges) if hi > lo]
    with blas_threads.single(), used(a.dtype):
        pending = ([row_blocks.block_pool(len(blocks) - 1).submit(_block, *part)
                    for part in blocks[1:]] if len(blocks) > 1 else [])
        try:
            _block(*blocks[0])
        finally:
            for future in pending:  # (every block ends before the call does; a failure is
                future.result()    # raised)
    return out
