"""NumPy meaning of the ops for sequences and derivatives: x[t], x[a:b], concat, oneHot, and
the internal ops derivatives are written with (compiler/primitives.py lists them)."""

from __future__ import annotations

import math

import numpy as np
from hilbert.compiler import ir
from hilbert.compiler.shapes import exact_number
from hilbert.grammar.errors import RuntimeHilbertError


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
    return (labels[..., None] == np.arange(k)).astype(np.float64)


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
    return np.zeros(np.shape(x)[:axis] + np.shape(x)[axis + 1:])


def evaluate(node: ir.Prim, kind: str, args: list):
    """The value of `node` (of one of the kinds below) from its arguments' values."""
    attrs = node.attrs
    match kind:
        case "index":
            x, t = args
            return x[position(node, t, x.shape[0])]
        case "slice":
            x, start, stop = args
            return x[int(start):int(stop)]
        case "concat":
            return np.concatenate([np.asarray(args[0]), np.asarray(args[1])], axis=attrs[0])
        case "onehot":
            return one_hot(node, args[0], args[1])
        case "sumto":
            g, like = args
            return g if np.shape(g) == np.shape(like) else np.float64(np.sum(g))
        case "spread":
            g, like = args
            return np.broadcast_to(np.expand_dims(g, attrs[0]), np.shape(like))
        case "place":
            g, like, start = args
            out = np.zeros(np.shape(like))
            at = int(start)
            if attrs[0]:
                out[at:at + np.shape(g)[0]] = g
            else:
                out[at] = g
            return out
        case "cut":
            g, a, _ = args
            axis, which = attrs
            split = np.shape(a)[axis]
            index = [slice(None)] * np.ndim(g)
            index[axis] = slice(0, split) if which == 0 else slice(split, None)
            return g[tuple(index)]
        case "coordinate":
            x = args[0]
            axis = attrs[0]
            shape = [1] * np.ndim(x)
            shape[axis] = np.shape(x)[axis]
            return np.broadcast_to(np.arange(np.shape(x)[axis], dtype=np.float64).reshape(shape),
                                   np.shape(x))
        case "gradient":
            return args[1]
        case "take":
            return take(args[0], args[1], *attrs)
    raise AssertionError(f"no NumPy meaning for {node.op}")
