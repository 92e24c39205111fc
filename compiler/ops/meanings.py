"""What each op means, as NumPy computes it: compiler/ops/primitives.py's `meaning` column (a
function of the op node and its arguments' values), and its `dask` column where blocks need a
way of their own. Every host runs these: the reference executor, the host tier, the dask
executor's client; compiled code computes the same values its own way."""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial

import numpy as np

from ...grammar.errors import RuntimeHilbertError
from .. import ir
from . import draws
from .shape_rules import exact_number

#: A meaning: the value of an op node from its arguments' values.
Meaning = Callable[[ir.Prim, list], object]
#: A dask meaning: the value of an op node from its arguments' (lazy) values, given `number`,
#: which computes a scalar now (a symbolic run takes its `stand_in` instead), and the node's
#: shape.
LazyMeaning = Callable[[ir.Prim, list, Callable, tuple], object]


# ---------------------------------------------------------------- arithmetic

# NumPy computes x ** c for a *scalar* exponent c of −1, ½ or 2 as 1/x, √x and x·x (so
# (−∞)^½ is NaN and (−0)^½ is −0), but an array of exponents through C's pow (where
# (−∞)^½ is +∞, and 1/x and x·x may differ in the last bit). hilbert gives `x ^ y` one
# meaning, np.power of the two scalars, so these exponents are redone that way.
_SCALAR_CASES = ((-1.0, lambda x: np.divide(1.0, x)), (0.5, np.sqrt), (2.0, np.square))


def power(x, y):
    """x ^ y entrywise: np.power of each pair of float64 scalars, whatever the shapes.

    >>> float(power(np.float64(-np.inf), np.float64(0.5)))
    nan
    """
    result = np.power(x, y)
    if np.ndim(y) == 0:
        return result
    bases, exponents = np.broadcast_arrays(x, y)
    for exponent, scalar_way in _SCALAR_CASES:
        where = exponents == exponent
        if where.any():
            result[where] = scalar_way(bases[where])
    return result


def entrywise(function):
    """The meaning of an entrywise op computed by the NumPy ufunc `function`."""
    return lambda node, args: function(*args)


def raised(node: ir.Prim, args: list):
    return power(*args)


def real_type(value) -> type:
    """The real NumPy type of a value's dtype (float32 for float32 and complex64 values, else
    float64): what comparisons, sizes, positions and one-hots of it are made of."""
    dtype = getattr(value, "dtype", None)
    return np.float32 if dtype in (np.float32, np.complex64) else np.float64


def dtype_of(*values) -> np.dtype:
    """The dtype NumPy gives an operation on `values` (read from their dtypes only: a lazy
    value is never computed for it)."""
    return np.result_type(*(getattr(v, "dtype", type(v)) for v in values))


def compared(function):
    """A comparison: 1.0 where it holds, 0.0 elsewhere (in the arguments' real type)."""
    return lambda node, args: function(*args).astype(real_type(args[0]))


def reduced(function):
    """A reduction along the node's axis (or any function of x and the axis)."""
    return lambda node, args: function(args[0], axis=node.attrs[0])


def measured(axis: int):
    """rows(x) (axis 0) or columns(x) (axis 1), as a number: float64 in every call, where
    every size is exact (compiler/counting.py)."""
    return lambda node, args: np.float64(np.shape(args[0])[axis])


def positions(node: ir.Prim, args: list):
    """0 … n − 1 along the node's axis, in float64 in every call (compiler/counting.py)."""
    return np.arange(np.shape(args[0])[node.attrs[0]], dtype=np.float64)


# ---------------------------------------------------------------- shifted and taken reads

def shift(x: np.ndarray, sizes: list[int], axis: int, coefs: tuple, const: float) -> np.ndarray:
    """x read along `axis` at const + Σ coefs·index over new axes of `sizes` (appended last);
    zero where that index falls outside x."""
    if const >= 0 and all(float(c).is_integer() and c > 0 for c in coefs):
        return _sliding(x, sizes, axis, [int(c) for c in coefs], int(const))
    index, valid = shift_positions(sizes, x.shape[axis], coefs, const)
    taken = np.take(x, index, axis=axis)
    taken = np.moveaxis(taken, list(range(axis, axis + len(sizes))),
                        list(range(taken.ndim - len(sizes), taken.ndim)))
    return np.where(valid, taken, 0.0)  # not taken · valid: outside x is 0 even where x is inf


def shift_positions(sizes: list[int], length: int, coefs, const) -> tuple[np.ndarray, np.ndarray]:
    """Where shift reads x along its axis of `length` entries, at each entry of the new axes of
    `sizes`: the positions const + Σ coefs·index (0 where outside x) and whether each is
    inside x. Known from shapes: every executor's shift reads by these (NumPy's, JAX's as
    constants, ONNX's as a Gather's indices)."""
    index = np.full(sizes, float(const))
    for d, c in enumerate(coefs):
        shape = [1] * len(sizes)
        shape[d] = sizes[d]
        index = index + c * np.arange(sizes[d], dtype=np.float64).reshape(shape)
    valid = (index >= 0) & (index < length)
    return np.where(valid, index, 0).astype(np.int64), valid


def _sliding(x: np.ndarray, sizes: list[int], axis: int, coefs: list[int], const: int):
    """The forward-shift case as a strided view of x padded with zeros: nothing is copied but
    the padding (this is how convolve's L×K windows cost L·K reads, not L²·K memory)."""
    reach = const + sum(c * (n - 1) for c, n in zip(coefs, sizes, strict=True)) + 1
    pad = [(0, 0)] * x.ndim
    pad[axis] = (0, max(0, reach - x.shape[axis]))
    padded = np.ascontiguousarray(np.pad(x, pad))
    step = padded.strides[axis]
    moved = np.moveaxis(padded, axis, -1)
    base = moved[..., const:]
    shape = moved.shape[:-1] + tuple(sizes)
    strides = moved.strides[:-1] + tuple(c * step for c in coefs)
    return np.lib.stride_tricks.as_strided(base, shape, strides, writeable=False)


def shifted(node: ir.Prim, args: list):
    return shift(args[0], [len(w) for w in args[1:]], *node.attrs)


def position(node: ir.Prim, value, size: int) -> int:
    """`value` as a position 0 … size − 1 along the first axis, or E510 naming the read."""
    number = float(value)
    if not (math.isfinite(number) and number.is_integer() and 0 <= number < size):
        raise RuntimeHilbertError("E510", f"x[t] reads position t = {exact_number(number)}, but the first "
                                  f"axis has positions 0 to {size - 1} (t must be a whole "
                                  "number in that range)", node.span)
    return int(number)


def one_hot(node: ir.Prim, labels: np.ndarray, classes) -> np.ndarray:
    """labels (whole numbers 0 … k − 1) as 0/1 vectors of length k along a new last axis."""
    k = int(classes)
    labels = np.asarray(labels)
    bad = ~((labels >= 0) & (labels < k) & (np.floor(labels) == labels))
    if bad.any():
        value = float(labels[bad].flat[0])
        raise RuntimeHilbertError("E511", f"oneHot(labels, {k}) needs labels that are whole "
                                  f"numbers from 0 to {k - 1}, but one is {value:g}", node.span)
    return (labels[..., None] == np.arange(k)).astype(real_type(labels))


def take(x, at, axis: int, coef: float = 1.0, const: float = 0.0):
    """x at the position s along `axis` where coef·s + const = at (coef ±1, const a whole
    number; that axis dropped), or zeros where there is none: what an einsum against the
    one-hot [coef·s + const = at] reads (docs/semantics.md, "Index masks"). The candidate s is
    tested the way the mask tests it, so a value that is not whole, NaN or out of range gives
    zeros; nothing else of x is read, so its inf and NaN elsewhere do not matter."""
    value = float(at)
    s = (value - const) * coef
    size = np.shape(x)[axis]
    if 0.0 <= s < size and math.floor(s) == s and coef * s + const == value:
        if isinstance(x, np.ndarray):
            return np.take(x, int(s), axis=axis)
        return x[(slice(None),) * axis + (int(s),)]  # a lazy (dask) array: a view of its blocks
    return np.zeros(np.shape(x)[:axis] + np.shape(x)[axis + 1:], dtype_of(x))


def taken(node: ir.Prim, args: list):
    return take(args[0], args[1], *node.attrs)


# ---------------------------------------------------------------- sequences

def indexed(node: ir.Prim, args: list):
    x, t = args
    return x[position(node, t, x.shape[0])]


def sliced(node: ir.Prim, args: list):
    x, start, stop = args
    return x[int(start):int(stop)]


def joined(node: ir.Prim, args: list):
    return np.concatenate([np.asarray(args[0]), np.asarray(args[1])], axis=node.attrs[0])


def encoded(node: ir.Prim, args: list):
    return one_hot(node, args[0], args[1])


def keyed(way: Callable) -> Meaning:
    """The meaning of a counter-based draw (key, step, x) made by `way` (compiler/ops/draws.py)
    at x's shape, in the dtype draws shaped like x take."""
    def meaning(node: ir.Prim, args: list):
        key, step, like = args
        return _drawn(way, node, key, step, np.shape(like), like)
    return meaning


def lazy_keyed(way: Callable) -> LazyMeaning:
    """keyed's draw on the dask executor: key and step computed now, the draw one block."""
    def meaning(node: ir.Prim, args: list, number, shape):
        import dask.array as da

        key, step, like = args
        return da.from_array(_drawn(way, node, number(key, 0.0), number(step, 0.0), shape, like))
    return meaning


def _drawn(way: Callable, node: ir.Prim, key, step, shape: tuple, like):
    whole = (draws.whole(key, "key", node.span), draws.whole(step, "step", node.span))
    size = shape[0] if node.op == "permutation" else shape
    return way(*whole, size, draws.drawn_dtype(like))


# ---------------------------------------------------------------- what derivatives are made of

def summed_to(node: ir.Prim, args: list):
    g, like = args
    return g if np.shape(g) == np.shape(like) else np.asarray(np.sum(g))[()]


def spread(node: ir.Prim, args: list):
    g, like = args
    return np.broadcast_to(np.expand_dims(g, node.attrs[0]), np.shape(like))


def placed(node: ir.Prim, args: list):
    g, like, start = args
    out = np.zeros(np.shape(like), dtype_of(g, like))
    at = int(start)
    if node.attrs[0]:
        out[at:at + np.shape(g)[0]] = g
    else:
        out[at] = g
    return out


def cut(node: ir.Prim, args: list):
    g, a, _ = args
    axis, which = node.attrs
    split = np.shape(a)[axis]
    index = [slice(None)] * np.ndim(g)
    index[axis] = slice(0, split) if which == 0 else slice(split, None)
    return g[tuple(index)]


def coordinate(node: ir.Prim, args: list):
    x = args[0]
    axis = node.attrs[0]
    shape = [1] * np.ndim(x)
    shape[axis] = np.shape(x)[axis]
    return np.broadcast_to(np.arange(np.shape(x)[axis], dtype=np.float64).reshape(shape),
                           np.shape(x))


def adjoint(node: ir.Prim, args: list):
    """gradient(of, g): g (that `of` is a scalar was checked with the shapes)."""
    return args[1]


# ---------------------------------------------------------------- dask: blocks of their own

def lazy_power(node: ir.Prim, args: list, number=None, shape=()):
    """x ^ y with power's meaning, block by block. x ^ 0 is 1 whatever x (NaN and ±inf too):
    ones in x's blocks, which read nothing (the compiler spreads a value along an axis, or
    counts positions, as an einsum with x ^ 0)."""
    import dask.array as da

    x, y = args
    if not isinstance(y, da.Array) and np.ndim(y) == 0 and y == 0 and isinstance(x, da.Array):
        return da.ones(x.shape, chunks=x.chunks, dtype=x.dtype)
    operands = [da.asarray(v) if np.ndim(v) else v for v in (x, y)]
    return da.map_blocks(_quiet_power, *operands, dtype=dtype_of(*operands))


def _quiet_power(x, y):
    with np.errstate(all="ignore"):  # inf and NaN are values here, as everywhere
        return power(x, y)


def lazy_shift(node: ir.Prim, args: list, number=None, shape=()):
    """A shifted read: along its axis each block needs the whole line, so that axis is made
    one chunk; the new axes come last, one chunk each."""
    import dask.array as da

    x, sizes = args[0], [len(w) for w in args[1:]]
    axis = node.attrs[0]
    if not isinstance(x, da.Array):
        return shift(x, sizes, *node.attrs)
    whole = x.rechunk({axis: -1})
    kept = [c for i, c in enumerate(whole.chunks) if i != axis]
    return da.map_blocks(_shift_block, whole, sizes, node.attrs, dtype=whole.dtype,
                         drop_axis=axis, new_axis=list(range(len(kept), len(kept) + len(sizes))),
                         chunks=tuple(kept) + tuple((n,) for n in sizes),
                         meta=np.empty((0,) * (len(kept) + len(sizes)), whole.dtype))


def _shift_block(block: np.ndarray, sizes: list[int], attrs: tuple) -> np.ndarray:
    return np.ascontiguousarray(shift(block, sizes, *attrs))


def lazy_index(node: ir.Prim, args: list, number, shape):
    """x[t] of a lazy x: t computed first (it says which blocks to read)."""
    x, t = args
    return x[position(node, number(t), x.shape[0])]


def lazy_take(node: ir.Prim, args: list, number, shape):
    return take(args[0], number(args[1], np.nan), *node.attrs)


def lazy_slice(node: ir.Prim, args: list, number, shape):
    x, start, stop = args
    first = int(number(start))
    return x[first:int(number(stop, first + shape[0]))]


def lazy_join(node: ir.Prim, args: list, number, shape):
    import dask.array as da

    return da.concatenate([da.asarray(args[0]), da.asarray(args[1])], axis=node.attrs[0])


def lazy_encoded(node: ir.Prim, args: list, number, shape):
    """oneHot of lazy labels: each block's labels checked in its own task (E511)."""
    import dask.array as da

    labels, k = da.asarray(args[0]), int(number(args[1], shape[-1]))
    return labels.map_blocks(partial(one_hot, node), k, dtype=real_type(labels),
                             new_axis=labels.ndim, chunks=labels.chunks + ((k,),))


def lazy_summed_to(node: ir.Prim, args: list, number, shape):
    import dask.array as da

    g, like = args
    return g if np.shape(g) == np.shape(like) else da.sum(g)


def lazy_spread(node: ir.Prim, args: list, number, shape):
    import dask.array as da

    g, like = args
    return da.broadcast_to(da.expand_dims(da.asarray(g), node.attrs[0]), np.shape(like))


def lazy_placed(node: ir.Prim, args: list, number, shape):
    """Zeros shaped like `like` with g at row `start` (or from it on, a block), as a join of
    zeros, g and zeros, so no block is written after it is made."""
    import dask.array as da

    g, like, start = args
    rows = np.shape(like)[0]
    at = int(number(start))
    part = da.asarray(g) if node.attrs[0] else da.expand_dims(da.asarray(g), 0)
    rest = tuple(np.shape(like)[1:])
    before = da.zeros((at, *rest), chunks=(-1, *part.chunks[1:]), dtype=part.dtype)
    after = da.zeros((rows - at - part.shape[0], *rest), chunks=(-1, *part.chunks[1:]),
                     dtype=part.dtype)
    return da.concatenate([before, part, after], axis=0)


def lazy_coordinate(node: ir.Prim, args: list, number, shape):
    import dask.array as da

    x, axis = args[0], node.attrs[0]
    line = [1] * x.ndim
    line[axis] = x.shape[axis]
    steps = da.arange(x.shape[axis], dtype=np.float64).reshape(line)
    return da.broadcast_to(steps, x.shape, chunks=x.chunks)
