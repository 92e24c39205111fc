"""Shared compiled kernels the generated code calls: small or BLAS products, NaN-aware max/min.

These are generic in shape (one compilation per rank and layout, cached on disk), so every
program shares them instead of compiling its own.
"""

from __future__ import annotations

import math
import sys

import numpy as np
from numba import carray, njit, types
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic

from . import disk, pairwise, vmath
from .blas import (  # noqa: F401 (generated code calls gemm, gemm_beta)
    blas_products,
    gemm,
    gemm_beta,
)
from .faults import (  # noqa: F401 (generated code raises them)
    DrawError,
    LabelError,
    PositionError,
    StepCountError,
)
from .jitting import (  # noqa: F401 (for cache.py, kernels32.py, tests)
    BLAS,
    PYTHON_MODE,
    STAMP,
    compiled,
    jit,
)
from .own_products import (  # noqa: F401 (for host code: own_products.py)
    shared_product,
)
from .vmath import (  # noqa: F401 (generated code calls them)
    add_any_order,
    divisor_unsafe,
    exp,
    exp_fast,
    log,
    quotient,
    quotient_unsafe,
    tanh,
    tanh_fast,
    wide_vectors,
)

if not PYTHON_MODE:
    from .blas import _items  # (arranged_into reads raw memory with it)

#: Below this many multiply-adds a product runs as a plain loop: a BLAS call costs more.
SMALL_PRODUCT = 4096

if PYTHON_MODE:  # generated code runs as Python
    def transposed(x, axes: str):
        """x.transpose(axes): a view of x with its axes in the order `axes` ("2,0,1")."""
        return x.transpose([int(a) for a in axes.split(",")])
else:
    @intrinsic
    def transposed(typingctx, x, axes):
        """x.transpose(axes), the axes written in the code as text ("2,0,1"): a view of x with
        its axes in that order (Numba's own transpose by a tuple compiles its slice
        assignments' error messages into each program: seconds of compile time)."""
        if not (isinstance(x, types.Array) and isinstance(axes, types.StringLiteral)):
            return None
        order = [int(a) for a in axes.literal_value.split(",")]
        if sorted(order) != list(range(x.ndim)):
            return None
        result = x.copy(layout="A")

        def codegen(context, builder, signature, args):
            from numba.core import cgutils
            from numba.np.arrayobj import make_array, populate_array

            source = make_array(signature.args[0])(context, builder, args[0])
            out = make_array(result)(context, builder)
            sizes = cgutils.unpack_tuple(builder, source.shape)
            steps = cgutils.unpack_tuple(builder, source.strides)
            populate_array(out, data=source.data, shape=[sizes[a] for a in order],
                           strides=[steps[a] for a in order], itemsize=source.itemsize,
                           meminfo=source.meminfo, parent=source.parent)
            return impl_ret_borrowed(context, builder, result, out._getvalue())

        return result(x, axes), codegen


#: What generated loops call before each step (interrupt.py sets the flag from another thread).
if PYTHON_MODE:  # generated code runs as Python
    def stop_requested(stop) -> bool:
        """Whether stop[0] asks compiled loops to stop."""
        return stop[0] != 0
else:
    @intrinsic
    def _load_atomic(typingctx, flags):
        """flags[0] read from memory at every call: an atomic load, which the compiler may not
        hoist out of a loop as it would a plain load of memory the loop never writes."""
        if not (isinstance(flags, types.Array) and flags.dtype == types.int64):
            return None

        def codegen(context, builder, signature, args):
            array = context.make_array(signature.args[0])(context, builder, args[0])
            return builder.load_atomic(array.data, "monotonic", 8)

        return types.int64(flags), codegen

    def _requested(stop) -> bool:
        """Whether stop[0] asks compiled loops to stop (another thread sets it)."""
        return _load_atomic(stop) != 0

    # kept in hilbert's private cache directory, as every compiled kernel is
    stop_requested = disk.keep(njit(_requested, nogil=True), STAMP)


#: Arrays of at least this many bytes ask the kernel for huge pages, as NumPy's own do: with
#: 4 KiB pages, first touching a fresh 32 MiB buffer costs more than computing into it.
HUGE = 1 << 22
_MADV_HUGEPAGE = 14

if sys.platform.startswith("linux") and not PYTHON_MODE:
    _madvise = types.ExternalFunction("madvise", types.intc(types.uintp, types.uintp, types.intc))

    @compiled
    def fresh(shape, dtype):
        """np.empty(shape, dtype), on huge pages when large (Linux; elsewhere plain np.empty)."""
        out = np.empty(shape, dtype)
        size = out.size * out.itemsize
        if size >= HUGE:
            start = out.ctypes.data
            skip = 4096 - start % 4096
            _madvise(start + skip, size - skip, _MADV_HUGEPAGE)
        return out

    @compiled
    def empty(shape):
        """np.empty(shape) of float64, on huge pages when large (`fresh`)."""
        return fresh(shape, np.float64)
else:
    def fresh(shape, dtype):
        """np.empty(shape, dtype) (huge pages are asked for on Linux only)."""
        return np.empty(shape, dtype)

    def empty(shape):
        """np.empty(shape) of float64."""
        return np.empty(shape)


#: The error function on one number (compiled code calls it per entry: Numba knows math.erf).
erf = math.erf


_PHILOX_M0, _PHILOX_M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_PHILOX_W0, _PHILOX_W1 = np.uint64(0x9E3779B9), np.uint64(0xBB67AE85)
_LOW32, _SHIFT32 = np.uint64(0xFFFFFFFF), np.uint64(32)


@compiled
def philox(key, step, i):
    """Philox-4x32-10 of the counter (i, step) under `key`, all uint64: the four output words
    (compiler/ops/draws.py, whose NumPy twin it is, bit for bit)."""
    c0, c1 = i & _LOW32, i >> _SHIFT32
    c2, c3 = step & _LOW32, step >> _SHIFT32
    k0, k1 = key & _LOW32, key >> _SHIFT32
    for r in range(10):
        if r > 0:
            k0, k1 = (k0 + _PHILOX_W0) & _LOW32, (k1 + _PHILOX_W1) & _LOW32
        p0, p1 = _PHILOX_M0 * c0, _PHILOX_M1 * c2
        c0, c1, c2, c3 = ((p1 >> _SHIFT32) ^ c1 ^ k0, p1 & _LOW32,
                          (p0 >> _SHIFT32) ^ c3 ^ k1, p0 & _LOW32)
    return c0, c1, c2, c3


@compiled
def _unit53(high, low):
    return (float(high >> np.uint64(5)) * 67108864.0 + float(low >> np.uint64(6))) * (2.0 ** -53)


@compiled
def _whole64(x):
    return x >= 0.0 and x < 18446744073709551616.0 and np.floor(x) == x


@compiled
def keyed_draws(kind, key, step, out):
    """Counter-based draws (compiler/ops/draws.py) into the fresh C-ordered array `out`:
    `kind` 0 uniform, 1 gaussian, 2 a permutation of 0 … n − 1; float32 draws where `out`
    is float32. Answers 0, or 1 when key or step is not a whole number 0 … 2⁶⁴ − 1 (nothing is
    drawn; the executor raises E512). Gaussians call C's log1p and cos, as the host does."""
    if not (_whole64(key) and _whole64(step)):
        return 1
    flat = out.reshape(out.size)
    k, s = np.uint64(key), np.uint64(step)
    single = out.itemsize == 4
    if kind == 2:
        u = np.empty(flat.size)
        for i in range(flat.size):
            w0, w1, _, _ = philox(k, s, np.uint64(i))
            u[i] = _unit53(w0, w1)
        order = np.argsort(u, kind="mergesort")
        for i in range(flat.size):
            flat[i] = order[i]
        return 0
    for i in range(flat.size):
        w0, w1, w2, w3 = philox(k, s, np.uint64(i))
        if kind == 0 and single:
            flat[i] = float(w0 >> np.uint64(8)) * (2.0 ** -24)
        elif kind == 0:
            flat[i] = _unit53(w0, w1)
        else:
            radius = np.sqrt(-2.0 * math.log1p(-_unit53(w0, w1)))
            flat[i] = radius * math.cos(2.0 * math.pi * _unit53(w2, w3))
    return 0


@compiled
def fmax(a, b):
    """np.maximum on scalars: NaN if either is NaN (vmath.maximum: vectorised reductions)."""
    return vmath.maximum(a, b)


@compiled
def fmin(a, b):
    """np.minimum on scalars: NaN if either is NaN (vmath.minimum: vectorised reductions)."""
    return vmath.minimum(a, b)


@compiled
def power(x, y):
    """np.power on float64 scalars: NumPy's own ways for the exponents 2, ½ and −1 (x·x, √x,
    1/x, so (−∞)^½ is NaN), C's pow otherwise (see executor/numerics.py)."""
    if y == 2.0:
        return x * x
    if y == 0.5:
        return np.sqrt(x)
    if y == -1.0:
        return 1.0 / x
    return np.power(x, y)


@compiled
def small_product_into(a, b, out):
    """out = a · b for small matrices (either possibly a transposed view), as plain loops."""
    for i in range(a.shape[0]):
        for j in range(b.shape[1]):
            total = 0.0
            for p in range(a.shape[1]):
                total += a[i, p] * b[p, j]
            out[i, j] = total
    return out


@compiled
def small_product_beta(a, b, out, beta):
    """out = a · b + beta · out as plain loops (any strides)."""
    for i in range(a.shape[0]):
        for j in range(b.shape[1]):
            total = out[i, j] * beta if beta != 0.0 else 0.0
            for p in range(a.shape[1]):
                total += a[i, p] * b[p, j]
            out[i, j] = total
    return out


@compiled
def product_into(a, b, out):
    """out = a · b for matrices (either possibly a transposed view): BLAS (np.dot into out)
    when large, plain loops when small."""
    if a.shape[0] * a.shape[1] * b.shape[1] > SMALL_PRODUCT:
        return gemm(a, b, out)
    return small_product_into(a, b, out)


@compiled
def product(a, b):
    """a · b for matrices, in a new C-ordered array (see product_into)."""
    return product_into(a, b, empty((a.shape[0], b.shape[1])))


def arranged_into(x, out):
    """out[...] = x for x in any layout (a transposed view) and out C-ordered of x's shape: x's
    last axis copied as one run per position of the others. Axes that lie one after the other
    in x's memory are walked as one (a tensor network's step transposes a dozen axes of 2 or
    3, most of which keep their neighbours: walked axis by axis, each run would be 2 entries).
    A kernel shared by every program: Numba's own copy compiles its slice assignments' error
    messages into each program."""
    if out.size == 0:
        return out
    item = x.itemsize
    flat = out.reshape(out.size)
    sizes = np.ones(max(x.ndim, 1), np.int64)
    steps = np.zeros(max(x.ndim, 1), np.int64)
    rank = 0
    low = 0
    high = 0
    for axis in range(x.ndim):
        size = x.shape[axis]
        step = x.strides[axis] // item
        reach = (size - 1) * step
        low += min(0, reach)
        high += max(0, reach)
        if size == 1:
            continue
        if rank > 0 and steps[rank - 1] == step * size:  # (the axis before runs on into it)
            sizes[rank - 1] *= size
            steps[rank - 1] = step
        else:
            sizes[rank] = size
            steps[rank] = step
            rank += 1
    rank = max(rank, 1)
    items = carray(_items(x.ctypes.data + item * low, x.dtype), (high - low + 1,))
    run, step = sizes[rank - 1], steps[rank - 1]
    index = np.zeros(rank, np.int64)
    at = -low  # the offset of x's current run in items
    for start in range(0, out.size, run):
        for j in range(run):
            flat[start + j] = items[at + j * step]
        axis = rank - 2
        while axis >= 0:
            index[axis] += 1
            at += steps[axis]
            if index[axis] < sizes[axis]:
                break
            at -= steps[axis] * sizes[axis]
            index[axis] = 0
            axis -= 1
    return out


def contiguous(x):
    """np.ascontiguousarray(x) for an array in any layout: a C-ordered copy (arranged_into)."""
    return arranged_into(x, fresh(x.shape, x.dtype))


def _arranged_into_python(x, out):
    out[...] = x
    return out


arranged_into = _arranged_into_python if PYTHON_MODE else compiled(arranged_into)
contiguous = (np.ascontiguousarray if PYTHON_MODE else compiled(contiguous))


#: A long sum's partial sums, combined pairwise (pairwise.py; executor/codegen/sums.py).
partials, levels, push_rows, total_rows = (compiled(f) for f in (
    pairwise.partials, pairwise.levels, pairwise.push_rows, pairwise.total_rows))


@compiled
def copy_into(out, x):
    """out[...] = x for C-ordered arrays of one shape."""
    flat_out = out.reshape(out.size)
    flat_x = x.reshape(x.size)
    for i in range(flat_x.size):
        flat_out[i] = flat_x[i]
    return out
