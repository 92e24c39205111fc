"""The derivative of every op, as a table: for `out = op(args)` and the adjoint `g` of out, the
rule gives the adjoint contribution to args[position] (None where the derivative is zero).

Rules see no shapes (they are written once per definition, for every shape it is called
with), so where an entrywise operand may be a scalar the contribution is `sumto`'d to it, and
a reduction's adjoint is `spread` back along its axis; compiler/monomorphise.py writes these as
plain einsums once shapes are known. Ties: max(a, b) and min(a, b) give the whole adjoint to
the second operand where a = b (so relu(z) = max(z, 0) has derivative 0 at 0, as PyTorch's
relu); maximum(x, k) and minimum(x, k) share it equally among the entries that tie for the
extreme. Comparisons, floor, abs at 0, rows, columns, positions, oneHot and the
arg-extremes have derivative zero.
"""

from __future__ import annotations

import math
import string
from collections.abc import Callable

from hilbert.grammar.errors import CheckError

from . import ir
from .einsum_spec import parse_spec

Rule = Callable[[ir.Prim, ir.Node, int], "ir.Node | None"]


def _p(node: ir.Node, op: str, *args: ir.Node, attrs: tuple = ()) -> ir.Prim:
    return ir.Prim(op, args, attrs, node.span)


def _c(node: ir.Node, value: float) -> ir.Const:
    return ir.Const(value, node.span)


def ones_like(x: ir.Node) -> ir.Node:
    """All ones in the shape of x (x ^ 0 is 1 for every x, NaN and ±inf included)."""
    return _p(x, "pow", x, _c(x, 0.0))


def zeros_like(x: ir.Node) -> ir.Node:
    return _p(x, "mul", _c(x, 0.0), ones_like(x))


def _to(arg: ir.Node, value: ir.Node) -> ir.Node:
    """`value` (shaped like the op's result) as a contribution to `arg`, which may be a scalar
    operand of an entrywise op: summed down to it then."""
    return _p(arg, "sumto", value, arg)


def _times(g: ir.Node, factor: ir.Node) -> ir.Node:
    return _p(g, "mul", g, factor)


# ---------------------------------------------------------------- entrywise, one argument

def _unary(derivative: Callable[[ir.Prim], ir.Node]) -> Rule:
    """The rule of f(x) from f'(x) (written over the op node, so f(x) itself can be reused)."""
    return lambda node, g, position: _times(g, derivative(node))


def _x(node: ir.Prim) -> ir.Node:
    return node.args[0]


UNARY: dict[str, Callable[[ir.Prim], ir.Node]] = {
    "exp": lambda n: n,
    "ln": lambda n: _p(n, "div", _c(n, 1.0), _x(n)),
    "sqrt": lambda n: _p(n, "div", _c(n, 0.5), n),
    "tanh": lambda n: _p(n, "sub", _c(n, 1.0), _p(n, "pow", n, _c(n, 2.0))),
    "sin": lambda n: _p(n, "cos", _x(n)),
    "cos": lambda n: _p(n, "neg", _p(n, "sin", _x(n))),
    "tan": lambda n: _p(n, "add", _c(n, 1.0), _p(n, "pow", n, _c(n, 2.0))),
    "abs": lambda n: _p(n, "sub", _p(n, "gt", _x(n), _c(n, 0.0)), _p(n, "lt", _x(n), _c(n, 0.0))),
    "erf": lambda n: _p(n, "mul", _c(n, 2.0 / math.sqrt(math.pi)),
                        _p(n, "exp", _p(n, "neg", _p(n, "pow", _x(n), _c(n, 2.0))))),
}


# ---------------------------------------------------------------- entrywise, two arguments

def _add(node: ir.Prim, g: ir.Node, position: int) -> ir.Node:
    return _to(node.args[position], g)


def _sub(node: ir.Prim, g: ir.Node, position: int) -> ir.Node:
    return _to(node.args[position], g if position == 0 else _p(g, "neg", g))


def _mul(node: ir.Prim, g: ir.Node, position: int) -> ir.Node:
    return _to(node.args[position], _times(g, node.args[1 - position]))


def _div(node: ir.Prim, g: ir.Node, position: int) -> ir.Node:
    a, b = node.args
    if position == 0:
        return _to(a, _p(g, "div", g, b))
    return _to(b, _p(g, "neg", _p(g, "div", _times(g, node), b)))  # −g·(a/b)/b


def _pow(node: ir.Prim, g: ir.Node, position: int) -> ir.Node | None:
    a, b = node.args
    if position == 0:
        if isinstance(b, ir.Const):
            if b.value == 0.0:
                return None
            if b.value == 1.0:
                return _to(a, g)
            if b.value == 2.0:
                return _to(a, _times(g, _p(a, "mul", _c(a, 2.0), a)))
            power = _p(a, "pow", a, _c(a, b.value - 1.0))
            return _to(a, _times(g, _p(a, "mul", _c(a, b.value), power)))
        return _to(a, _times(g, _p(a, "mul", b, _p(a, "pow", a, _p(b, "sub", b, _c(b, 1.0))))))
    # ∂ a^b / ∂ b = a^b · ln a; where a = 0 the term is taken as 0 (ln of a + [a = 0] = ln 1)
    safe = _p(a, "add", a, _p(a, "eq", a, _c(a, 0.0)))
    return _to(b, _times(g, _p(b, "mul", node, _p(b, "ln", safe))))


def _extreme(op: str) -> Rule:
    """max(a, b) / min(a, b): the adjoint goes to the larger (smaller) operand, to b on a tie."""
    first, second = ("gt", "le") if op == "max" else ("lt", "ge")

    def rule(node: ir.Prim, g: ir.Node, position: int) -> ir.Node:
        a, b = node.args
        chosen = _p(node, first if position == 0 else second, a, b)
        return _to(node.args[position], _times(g, chosen))

    return rule


# ---------------------------------------------------------------- reductions and the rest

def _reduce_extreme(node: ir.Prim, g: ir.Node, position: int) -> ir.Node:
    """maximum(x, k): the adjoint, spread back along axis k, split equally among the entries
    equal to the extreme."""
    x = node.args[0]
    axis = node.attrs
    marks = _p(node, "eq", x, _p(node, "spread", node, x, attrs=axis))
    count = _p(node, "sumalong", marks, attrs=axis)
    return _times(marks, _p(node, "spread", _p(node, "div", g, count), x, attrs=axis))


def _sumalong(node: ir.Prim, g: ir.Node, position: int) -> ir.Node:
    return _p(node, "spread", g, node.args[0], attrs=node.attrs)


def _index(node: ir.Prim, g: ir.Node, position: int) -> ir.Node | None:
    if position != 0:
        return None
    x, t = node.args
    return _p(node, "place", g, x, t, attrs=(False,))


def _slice(node: ir.Prim, g: ir.Node, position: int) -> ir.Node | None:
    if position != 0:
        return None
    x, start, _ = node.args
    return _p(node, "place", g, x, start, attrs=(True,))


def _concat(node: ir.Prim, g: ir.Node, position: int) -> ir.Node:
    a, b = node.args
    return _p(node, "cut", g, a, b, attrs=(node.attrs[0], position))


def _sumto(node: ir.Prim, g: ir.Node, position: int) -> ir.Node | None:
    """sumto(x, like): each entry of x gets the adjoint of the sum it went into (the shape of
    `like` is all `like` gives)."""
    x = node.args[0]
    return _times(g, ones_like(x)) if position == 0 else None


def _spread(node: ir.Prim, g: ir.Node, position: int) -> ir.Node | None:
    """spread(x, like)[k]: the adjoints of the copies of each entry of x, summed along k."""
    return _p(node, "sumalong", g, attrs=node.attrs) if position == 0 else None


def _zero(node: ir.Prim, g: ir.Node, position: int) -> None:
    return None


def _gradient(node: ir.Prim, g: ir.Node, position: int) -> ir.Node:
    raise CheckError("E323", "this derivative is taken of a value that is itself computed with "
                     "a derivative; derivatives of derivatives are not supported yet", node.span)


RULES: dict[str, Rule] = {
    **{op: _unary(d) for op, d in UNARY.items()},
    "neg": lambda node, g, position: _p(g, "neg", g),
    "add": _add, "sub": _sub, "mul": _mul, "div": _div, "pow": _pow,
    "max": _extreme("max"), "min": _extreme("min"),
    "maximum": _reduce_extreme, "minimum": _reduce_extreme, "sumalong": _sumalong,
    "sumto": _sumto, "spread": _spread,
    "index": _index, "slice": _slice, "concat": _concat,
    **{op: _zero for op in ("floor", "eq", "ne", "lt", "gt", "le", "ge", "rows", "columns",
                            "positions", "coordinate", "oneHot")},
    # place and cut only ever appear inside a derivative (of x[t], of concat), read through
    # its `gradient` op, which refuses first; shift and take appear only after differentiation
    **{op: _gradient for op in ("gradient", "place", "cut", "shift", "take")},
}


# ---------------------------------------------------------------- einsum

_LETTERS = string.ascii_letters


def einsum_adjoint(node: ir.Einsum, g: ir.Node, position: int) -> ir.Node:
    """The adjoint of operand `position`: the einsum with that operand's term and the output
    swapped, `g` in the output's place. A letter repeated in the operand's term (a diagonal)
    is renamed apart and tied to its twin by a 0/1 mask; letters found nowhere else (summed
    within this operand alone) come back through ones shaped like it."""
    spec = parse_spec(node.spec)
    term = spec.inputs[position]
    x = node.args[position]
    used = set(node.spec)
    fresh = (ch for ch in _LETTERS if ch not in used)
    target, terms, args = [], [spec.output], [g]
    first_axis: dict[str, int] = {}
    for axis, letter in enumerate(term):
        if letter not in first_axis:
            first_axis[letter] = axis
            target.append(letter)
            continue
        twin = next(fresh, None)
        if twin is None:
            raise CheckError("E300", f'einsum "{node.spec}" uses too many letters to be '
                             "differentiated (its diagonal needs a letter of its own)", node.span)
        target.append(twin)
        terms.append(letter + twin)
        args.append(_diagonal(x, first_axis[letter], axis))
    for i, (other, arg) in enumerate(zip(spec.inputs, node.args, strict=True)):
        if i != position:
            terms.append(other)
            args.append(arg)
    if set(target) - set("".join(terms)):
        terms.append("".join(target))
        args.append(ones_like(x))
    return ir.Einsum(",".join(terms) + "->" + "".join(target), tuple(args), node.span)


def _diagonal(x: ir.Node, first: int, second: int) -> ir.Node:
    """The 0/1 matrix [i = j] for axes `first` and `second` of x (equal in size)."""
    rows = _p(x, "positions", x, attrs=(first,))
    cols = _p(x, "positions", x, attrs=(second,))
    down = ir.Einsum("i,j->ij", (rows, ones_like(cols)), x.span)
    across = ir.Einsum("i,j->ij", (ones_like(rows), cols), x.span)
    return _p(x, "eq", down, across)
