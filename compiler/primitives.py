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
    kind: str  # unary | binary | compare | reduce | size | positions | draw
    numpy: Callable | None
    axis: int | None = None  # for size primitives: which axis they measure


def _floor(x):
    return np.floor(x)


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
        Primitive("max", 2, "binary", np.maximum),
        Primitive("min", 2, "binary", np.minimum),
        Primitive("maximum", 2, "reduce", np.max),
        Primitive("minimum", 2, "reduce", np.min),
        Primitive("rows", 1, "size", None, axis=0),
        Primitive("columns", 1, "size", None, axis=1),
        Primitive("positions", 2, "positions", None),
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

#: Ops the compiler introduces itself; no .hb text can name them.
INTERNAL: dict[str, Primitive] = {
    # shift(x, w1, …, wm) [axis, coefs, const]: x read at axis index const + Σ coefs·(new
    # indices), zero outside x; the new axes (sizes len(w1) … len(wm)) come last. See masks.py.
    "shift": Primitive("shift", -1, "shift", None),
}

#: Every IR op name to its row, operators and named primitives alike.
BY_OP: dict[str, Primitive] = {**PRIMITIVES, **{p.name: p for p in OPERATORS.values()}, **INTERNAL}

#: How each op is written back in .hb, for printers and messages.
SPELLING: dict[str, str] = {p.name: sym for sym, p in OPERATORS.items()} | {"neg": "−"}
