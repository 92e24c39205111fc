"""The derivative rules of the ops (compiler/ops/primitives.py's `derivative` column, which
gives each op its rule): for `out = op(args)` and the adjoint `g` of out, a rule gives the adjoint contribution to args[position] (None where the derivative is zero).

Rules see no shapes (they are written once per definition, for every shape it is called
with), so where an entrywise operand may be a scalar the contribution is `sumto`'d to it, and
a reduction's adjoint is `spread` back along its axis; compiler/passes/monomorphise.py writes these as
plain einsums once shapes are known. Ties: max(a, b) and min(a, b) give the whole adjoint to
the second operand where a = b (so relu(z) = max(z, 0) has derivative 0 at 0, as PyTorch's
relu); maximum(x, k) and minimum(x, k) share it equally among the entries that tie for the
extreme. Comparisons, floor, abs at 0, rows, columns, positions, oneHot and the
arg-extremes have derivative zero.
"""

from __future__ import annotations

from collections.abc import Callable

from ...grammar.errors import CheckError
from .. import ir
from .einsum_spec import letters, parse_spec

Rule = Callable[[ir.Prim, ir.Node, int], "ir.Node | None"]


def p(node: ir.Node, op: str, *args: ir.Node, attrs: tuple = ()) -> ir.Prim:
    return ir.Prim(op, args, attrs, node.span)


def c(node: ir.Node, value: float) -> ir.Const:
    return ir.Const(value, node.span)


def ones_like(x: ir.Node) -> ir.Node:
    """All ones in the shape of x (x ^ 0 is 1 for every x, NaN and ±inf included)."""
    return p(x, "pow", x, c(x, 0.0))


def zeros_like(x: ir.Node) -> ir.Node:
    return p(x, "mul", c(x, 0.0), ones_like(x))


def _to(arg: ir.Node, value: ir.Node) -> ir.Node:
    """`value` (shaped like the op's result) as a contribution to `arg`, which may be a scalar
    operand of an entrywise op: summed down to it then."""
    return p(arg, "sumto", value, arg)


def _times(g: ir.Node, factor: ir.Node) -> ir.Node:
    return p(g, "mul", g, factor)


# ---------------------------------------------------------------- entrywise, one argument

def unary(derivative: Callable[[ir.Prim], ir.Node]) -> Rule:
    """The rule of f(x) from f'(x) (written over the op node, so f(x) itself can be reused)."""
    return lambda node, g, position: _times(g, derivative(node))


def negate(node: ir.Prim, g: ir.Node, position: int) -> ir.Node:
    return p(g, "neg", g)


# ---------------------------------------------------------------- entrywise, two arguments

def add(node: ir.Prim, g: ir.Node, position: int) -> ir.Node:
    return _to(node.args[position], g)


def sub(node: ir.Prim, g: ir.Node, position: int) -> ir.Node:
    return _to(node.args[position], g if position == 0 else p(g, "neg", g))


def mul(node: ir.Prim, g: ir.Node, position: int) -> ir.Node:
    return _to(node.args[position], _times(g, node.args[1 - position]))


def div(node: ir.Prim, g: ir.Node, position: int) -> ir.Node:
    a, b = node.args
    if position == 0:
        return _to(a, p(g, "div", g, b))
    return _to(b, p(g, "neg", p(g, "div", _times(g, node), b)))  # −g·(a/b)/b


def modulo(node: ir.Prim, g: ir.Node, position: int) -> ir.Node:
    """a mod b = a − b⌊a/b⌋: slope 1 in a, −⌊a/b⌋ in b (⌊a/b⌋ is constant between its jumps)."""
    a, b = node.args
    if position == 0:
        return _to(a, g)
    return _to(b, _times(g, p(g, "neg", p(g, "floordiv", a, b))))


def pow_(node: ir.Prim, g: ir.Node, position: int) -> ir.Node | None:
    a, b = node.args
    if position == 0:
        if isinstance(b, ir.Const):
            if b.value == 0.0:
                return None
            if b.value == 1.0:
                return _to(a, g)
            if b.value == 2.0:
                return _to(a, _times(g, p(a, "mul", c(a, 2.0), a)))
            power = p(a, "pow", a, c(a, b.value - 1.0))
            return _to(a, _times(g, p(a, "mul", c(a, b.value), power)))
        return _to(a, _times(g, p(a, "mul", b, p(a, "pow", a, p(b, "sub", b, c(b, 1.0))))))
    # ∂ a^b / ∂ b = a^b · ln a; where a = 0 the term is taken as 0 (ln of a + [a = 0] = ln 1)
    safe = p(a, "add", a, p(a, "eq", a, c(a, 0.0)))
    return _to(b, _times(g, p(b, "mul", node, p(b, "ln", safe))))


def extreme(op: str) -> Rule:
    """max(a, b) / min(a, b): the adjoint goes to the larger (smaller) operand, to b on a tie."""
    first, second = ("gt", "le") if op == "max" else ("lt", "ge")

    def rule(node: ir.Prim, g: ir.Node, position: int) -> ir.Node:
        a, b = node.args
        chosen = p(node, first if position == 0 else second, a, b)
        return _to(node.args[position], _times(g, chosen))

    return rule


# ---------------------------------------------------------------- reductions and the rest

def reduce_extreme(node: ir.Prim, g: ir.Node, position: int) -> ir.Node:
    """maximum(x, k): the adjoint, spread back along axis k, split equally among the entries
    equal to the extreme."""
    x = node.args[0]
    axis = node.attrs
    marks = p(node, "eq", x, p(node, "spread", node, x, attrs=axis))
    count = p(node, "sumalong", marks, attrs=axis)
    return _times(marks, p(node, "spread", p(node, "div", g, count), x, attrs=axis))


def sumalong(node: ir.Prim, g: ir.Node, position: int) -> ir.Node:
    return p(node, "spread", g, node.args[0], attrs=node.attrs)


def index(node: ir.Prim, g: ir.Node, position: int) -> ir.Node | None:
    if position != 0:
        return None
    x, t = node.args
    return p(node, "place", g, x, t, attrs=(False,))


def slice_(node: ir.Prim, g: ir.Node, position: int) -> ir.Node | None:
    if position != 0:
        return None
    x, start, _ = node.args
    return p(node, "place", g, x, start, attrs=(True,))


def concat(node: ir.Prim, g: ir.Node, position: int) -> ir.Node:
    a, b = node.args
    return p(node, "cut", g, a, b, attrs=(node.attrs[0], position))


def sumto(node: ir.Prim, g: ir.Node, position: int) -> ir.Node | None:
    """sumto(x, like): each entry of x gets the adjoint of the sum it went into (the shape of
    `like` is all `like` gives)."""
    x = node.args[0]
    return _times(g, ones_like(x)) if position == 0 else None


def spread(node: ir.Prim, g: ir.Node, position: int) -> ir.Node | None:
    """spread(x, like)[k]: the adjoints of the copies of each entry of x, summed along k."""
    return p(node, "sumalong", g, attrs=node.attrs) if position == 0 else None


def zero(node: ir.Prim, g: ir.Node, position: int) -> None:
    return None


def refused(node: ir.Prim, g: ir.Node, position: int) -> ir.Node:
    """The ops that only ever appear inside a derivative (place and cut, of x[t] and concat;
    shift and take, made after differentiating): read through its `gradient` op, which
    refuses first."""
    raise CheckError("E323", "this derivative is taken of a value that is itself computed with "
                     "a derivative; derivatives of derivatives are not supported yet", node.span)


# ---------------------------------------------------------------- einsum

def einsum_adjoint(node: ir.Einsum, g: ir.Node, position: int) -> ir.Node:
    """The adjoint of operand `position`: the einsum with that operand's term and the output
    swapped, `g` in the output's place. A letter repeated in the operand's term (a diagonal)
    is renamed apart and tied to its twin by a 0/1 mask; letters found nowhere else (summed
    within this operand alone) come back through ones shaped like it."""
    spec = parse_spec(node.spec)
    term = spec.inputs[position]
    x = node.args[position]
    used = set(node.spec)
    fresh = (ch for ch in letters() if ch not in used)
    target, terms, args = [], [spec.output], [g]
    first_axis: dict[str, int] = {}
    for axis, letter in enumerate(term):
        if letter not in first_axis:
            first_axis[letter] = axis
            target.append(letter)
            continue
        twin = next(fresh)
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
    rows = p(x, "positions", x, attrs=(first,))
    cols = p(x, "positions", x, attrs=(second,))
    down = ir.Einsum("i,j->ij", (rows, ones_like(cols)), x.span)
    across = ir.Einsum("i,j->ij", (ones_like(rows), cols), x.span)
    return p(x, "eq", down, across)
