"""argmax and argmin on dask arrays: the IR compiler/ops/primitives.py's arg_extreme writes for
them recognised, and computed as one arg-reduction over the blocks instead of four passes."""

from __future__ import annotations

from functools import partial

import dask.array as da
import numpy as np

from ...compiler import ir
from ...compiler.ops.primitives import NO_POSITION
from ...compiler.passes.shapes import ShapeTable


class Extremes:
    """Finds the arg-extremes of one signature's IR (by scope and node, each looked at once)."""

    def __init__(self, table: ShapeTable):
        self.table = table
        self._found: dict[tuple, tuple[ir.Node, int, bool] | None] = {}

    def find(self, node: ir.Node, scope) -> tuple[ir.Node, int, bool] | None:
        """(x, k, largest) when `node` is the heart of argmax(x, k) (largest) or argmin(x, k)
        as compiler/ops/primitives.py's arg_extreme writes it (and compiler/passes/monomorphise.py lowers
        its spread and coordinate): the minimum along k of each entry's position, pushed past
        them all by NO_POSITION (2⁵³) where it is not equal to the largest (smallest) of its
        line. That is the first position of the extreme, or NO_POSITION on a line holding NaN;
        on dask it is one arg-reduction over x's blocks (first_positions), not four passes."""
        if not (isinstance(node, ir.Prim) and node.op == "minimum"):
            return None
        key = (scope, node)
        if key not in self._found:
            self._found[key] = self._match(node, scope)
        return self._found[key]

    def _match(self, node: ir.Prim, scope) -> tuple[ir.Node, int, bool] | None:
        try:
            x = node.args[0].args[1].args[0].args[1].args[0]  # type: ignore[attr-defined]
        except (AttributeError, IndexError):
            return None
        shape = self.table.scopes[scope].get(x)
        if not shape or 0 in shape or len(node.attrs) != 1:
            return None
        axis = node.attrs[0]
        for largest in (True, False):
            if any(node == _first_extreme_ir(x, axis, len(shape), largest, lowered)
                   for lowered in (True, False)):
                return x, axis, largest
        return None


def _first_extreme_ir(x: ir.Node, axis: int, rank: int, largest: bool, lowered: bool) -> ir.Node:
    """The `first` of compiler/ops/primitives.py's arg_extreme(x, axis), its spread and coordinate
    as written (lowered=False) or as compiler/passes/monomorphise.py lowers them to einsums."""
    span = x.span  # spans take no part in equality

    def prim(name, *args, attrs=()):
        return ir.Prim(name, args, attrs, span)

    best = prim("maximum" if largest else "minimum", x, attrs=(axis,))
    if lowered:
        letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"[:rank]
        kept = letters[:axis] + letters[axis + 1:]
        ones = prim("pow", x, ir.Const(0.0, span))
        spread = ir.Einsum(f"{kept},{letters}->{letters}", (best, ones), span)
        where = ir.Einsum(f"{letters},{letters[axis]}->{letters}",
                          (ones, prim("positions", x, attrs=(axis,))), span)
    else:
        spread = prim("spread", best, x, attrs=(axis,))
        where = prim("coordinate", x, attrs=(axis,))
    marks = prim("eq", x, spread)
    pushed = prim("add", where, prim("mul", prim("sub", ir.Const(1.0, span), marks),
                                     ir.Const(NO_POSITION, span)))
    return prim("minimum", pushed, attrs=(axis,))


def first_positions(x, axis: int, largest: bool):
    """Along `axis` of x, the first position (0, 1, …, as a float) of the largest entry
    (`largest`) or the smallest, NO_POSITION for a line holding NaN; x's shape without that axis.
    On dask an arg-reduction: each block gives the extreme of each of its lines and the first
    position of it (a pair), and pairs are combined by dask's tree reduction, so every block of
    x is read once and the graph grows with the number of blocks. The positions are float64
    in every call, as counted values are (compiler/counting.py)."""
    if not isinstance(x, da.Array):
        pairs = _extreme_pairs(np.asarray(x, dtype=np.float64), axis, largest)
        return np.take(_final_pairs(pairs, (axis,), True, largest)[..., 1], 0, axis=axis)
    pairs = da.map_blocks(_extreme_pairs, x, axis, largest, dtype=np.float64, new_axis=x.ndim,
                          chunks=tuple((1,) * len(c) if i == axis else c
                                       for i, c in enumerate(x.chunks)) + ((2,),),
                          meta=np.empty((0,) * (x.ndim + 1)))
    final = da.reduction(pairs, partial(_combine_pairs, largest=largest),
                         partial(_final_pairs, largest=largest), axis=axis, keepdims=True,
                         combine=partial(_combine_pairs, largest=largest), dtype=np.float64,
                         concatenate=True, meta=np.empty((0,) * (x.ndim + 1)))
    return final[(slice(None),) * axis + (0, Ellipsis, 1)]


def _extreme_pairs(block: np.ndarray, axis: int, largest: bool, block_info=None) -> np.ndarray:
    """Each line of `block` along `axis` as (its extreme, the first position equal to it,
    counted from the start of the whole axis): shaped like block, that axis 1 long, and a last
    axis of the two. An empty line gives (−inf for the largest, +inf for the smallest; +inf),
    which any entry of another block beats."""
    offset = 0 if block_info is None else block_info[0]["array-location"][axis][0]
    shape = list(block.shape)
    shape[axis] = 1
    if block.shape[axis] == 0:
        value = np.full(shape, -np.inf if largest else np.inf)
        return np.stack([value, np.full(shape, np.inf)], axis=-1)
    with np.errstate(all="ignore"):
        value = (np.max if largest else np.min)(block, axis=axis, keepdims=True)
        first = np.argmax(block == value, axis=axis, keepdims=True) + float(offset)
    return np.stack([value, first.astype(np.float64)], axis=-1)


def _combine_pairs(pairs: np.ndarray, axis, keepdims: bool, largest: bool) -> np.ndarray:
    """Pairs of several blocks along `axis` as one: the extreme of their extremes (NaN if one
    is NaN) and the least position among the pairs that reach it (the first)."""
    (k,) = axis if isinstance(axis, tuple) else (axis,)
    values, positions = pairs[..., 0], pairs[..., 1]
    with np.errstate(all="ignore"):
        value = (np.max if largest else np.min)(values, axis=k, keepdims=True)
        first = np.min(np.where(values == value, positions, np.inf), axis=k, keepdims=True)
    return np.stack([value, first], axis=-1)


def _final_pairs(pairs: np.ndarray, axis, keepdims: bool, largest: bool) -> np.ndarray:
    """The combined pair, its position NO_POSITION where the extreme is NaN (no entry equals
    it: the minimum of every position pushed by NO_POSITION is position 0's)."""
    pair = _combine_pairs(pairs, axis, keepdims, largest)
    pair[..., 1] = np.where(np.isnan(pair[..., 0]), NO_POSITION, pair[..., 1])
    return pair
