"""The primitives of LANGUAGE.md §5 as one table: name, arity, kind and NumPy meaning."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True)
class Primitive:
    """One row of the table. `kind` selects the shape rule in compiler/shapes.py."""

    name: str
    arity: int
    kind: str  # unary | binary | compare | reduce | size | positions | draw | … (shapes.py)
    numpy: Callable | None
    axis: int | None = None  # for size primitives: which axis they measure
    axis_arg: int | None = None  # the argument that must be a whole-number literal (an axis)


def _floor(x):
    return np.floor(x)


def _erf(x):
    """SciPy's erf (a ufunc: arrays, scalars and dask arrays alike), SciPy imported at the first
    erf evaluated, not with hilbert (it costs a third of a second)."""
    from scipy import special

    return special.erf(x)


PRIMITIVES: dict[str, Primitive] = {
    p.name: p
    for p in [
        Primitive("exp", 1, "unary", np.exp),
        Primitive("ln", 1, "unary", np.log),
        Primitive("sqrt", 1, "unary", np.sqrt),
        Primitive("tanh", 1, "unary", np.tanh),
        Primitive("sin", 1, "unary", np.sin),
        Primitive("cos", 1, "unary", np.cos),
        Primitive("tan", 1, "unary", np.tan),
        Primitive("abs", 1, "unary", np.abs),
        Primitive("floor", 1, "unary", _floor),
        Primitive("erf", 1, "unary", _erf),
        Primitive("max", 2, "binary", np.maximum),
        Primitive("min", 2, "binary", np.minimum),
        Primitive("maximum", 2, "reduce", np.max, axis_arg=1),
        Primitive("minimum", 2, "reduce", np.min, axis_arg=1),
        Primitive("argmax", 2, "argreduce", None, axis_arg=1),
        Primitive("argmin", 2, "argreduce", None, axis_arg=1),
        Primitive("rows", 1, "size", None, axis=0),
        Primitive("columns", 1, "size", None, axis=1),
        Primitive("positions", 2, "positions", None, axis_arg=1),
        Primitive("oneHot", 2, "onehot", None),
        Primitive("concat", 3, "concat", None, axis_arg=2),
        Primitive("gaussian", 1, "draw", None),
        Primitive("uniform", 1, "draw", None),
    ]
}

#: Operators, by their ASCII spelling in the syntax tree, as primitive ops of the IR.
OPERATORS: dict[str, Primitive] = {
    "+": Primitive("add", 2, "binary", np.add),
    "-": Primitive("sub", 2, "binary", np.subtract),
    "*": Primitive("mul", 2, "binary", np.multiply),
    "/": Primitive("div", 2, "binary", np.divide),
    "^": Primitive("pow", 2, "binary", np.power),
    "neg": Primitive("neg", 1, "unary", np.negative),
    "=": Primitive("eq", 2, "compare", np.equal),
    "!=": Primitive("ne", 2, "compare", np.not_equal),
    "<": Primitive("lt", 2, "compare", np.less),
    ">": Primitive("gt", 2, "compare", np.greater),
    "<=": Primitive("le", 2, "compare", np.less_equal),
    ">=": Primitive("ge", 2, "compare", np.greater_equal),
}

#: Ops the compiler introduces itself; no .hb text can name them (x[t] and x[a:b] are syntax).
INTERNAL: dict[str, Primitive] = {p.name: p for p in [
    # shift(x, w1, …, wm) [axis, coefs, const]: x read at axis index const + Σ coefs·(new
    # indices), zero outside x; the new axes (sizes len(w1) … len(wm)) come last. See masks.py.
    Primitive("shift", -1, "shift", None),
    # take(x, t)[axis, coef, const]: x at the position s along `axis` with coef·s + const = t
    # (coef ±1, const whole; that axis dropped), zeros where there is none: an einsum against
    # the one-hot [coef·s + const = t] of a scalar t. See masks.py.
    Primitive("take", 2, "take", None),
    # index(x, t): x[t], the slice t along the first axis; slice(x, a, b): x[a:b].
    Primitive("index", 2, "index", None),
    Primitive("slice", 3, "slice", None),
    # What derivatives are made of (compiler/derivative.py), each polymorphic in rank:
    # sumto(g, like): g summed down to like's shape (like a scalar) or g itself (same shape);
    # spread(g, like)[k]: g repeated along a new axis k to like's shape; sumalong(x)[k]: the
    # sum over axis k; place(g, like, t)[block]: zeros shaped like `like` with g at slice t (or
    # from row t on, a block); cut(g, a, b)[k, which]: the part of g along axis k that came
    # from a (which = 0) or b (1) in concat(a, b, k); coordinate(x)[k]: each entry's index along
    # axis k; gradient(of, g): g, once `of` is checked to be a scalar.
    Primitive("sumto", 2, "sumto", None),
    Primitive("spread", 2, "spread", None),
    Primitive("sumalong", 1, "reduce", np.sum),
    Primitive("place", 3, "place", None),
    Primitive("cut", 3, "cut", None),
    Primitive("coordinate", 1, "coordinate", None),
    Primitive("gradient", 2, "gradient", None),
]}

#: Every IR op name to its row, operators and named primitives alike.
BY_OP: dict[str, Primitive] = {**PRIMITIVES, **{p.name: p for p in OPERATORS.values()}, **INTERNAL}

#: How each op is written back in .hb, for printers and messages.
SPELLING: dict[str, str] = ({p.name: sym for sym, p in OPERATORS.items()}
                            | {"neg": "−", "index": "x[t]", "slice": "x[a:b]"})


def arg_extreme(op: str, x, axis: int, span):
    """argmax(x, k) (or argmin) as IR: a 0/1 tensor shaped like x marking, along axis k, the
    first entry equal to the largest (smallest); a line holding NaN has no mark."""
    from . import ir

    def prim(name, *args, attrs=()):
        return ir.Prim(name, args, attrs, span)

    reduce = "maximum" if op == "argmax" else "minimum"
    best = prim(reduce, x, attrs=(axis,))
    marks = prim("eq", x, prim("spread", best, x, attrs=(axis,)))
    where = prim("coordinate", x, attrs=(axis,))
    # positions of the marked entries as they are, every other entry pushed past them all
    pushed = prim("add", where, prim("mul", prim("sub", ir.Const(1.0, span), marks),
                                     ir.Const(1e300, span)))
    first = prim("minimum", pushed, attrs=(axis,))
    return prim("eq", where, prim("spread", first, x, attrs=(axis,)))
