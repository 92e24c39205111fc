"""Every primitive's shape rule (compiler/ops/primitives.py's `shape` column), and the words shape
messages are written with. A rule takes the op node, its arguments' shapes and the shapes
inferred so far, and returns the node's shape or raises the CheckError a user reads."""

from __future__ import annotations

import numpy as np

from ...grammar.errors import CheckError
from .. import ir
from .table import BY_OP, SPOKEN

Shape = tuple[int, ...]


def describe_shape(shape: Shape) -> str:
    """Plain words for a shape: 'a scalar', 'a vector of 3', 'a 2×3 matrix'."""
    if not shape:
        return "a scalar"
    if len(shape) == 1:
        return f"a vector of {shape[0]}"
    kind = "matrix" if len(shape) == 2 else f"rank-{len(shape)} tensor"
    return f"a {'×'.join(map(str, shape))} {kind}"


def what(node: ir.Node) -> str:
    """How a message names a value: `argument a`, a loop's state by the name the source gives
    it (a model's weight `w` in a train block), or its source text and place."""
    if isinstance(node, ir.Param):
        return f"argument {node.name}"
    if isinstance(node, ir.State) and node.name:
        return node.name
    if not node.span:
        return "a value"
    span = node.span
    text = span.source.line(span.line)[span.column - 1:span.end_column - 1]
    if span.end_line == span.line and 0 < len(text) <= 40:
        return f"{text} at {span.line}:{span.column}"
    return f"the value at {span.line}:{span.column}"


def exact_number(value) -> str:
    """`value` written exactly as it is: 4 as `4`, 3.9999999999 as `3.9999999999` (never
    rounded to `4`, as `:g` would); past 2^53, Python's shortest form (`1e+300`)."""
    number = float(value)
    return str(int(number)) if number.is_integer() and abs(number) < 2**53 else repr(number)


def _name(node: ir.Prim) -> str:
    """The op as a message names it (`exp`, `the operator ·`)."""
    return SPOKEN[0](node.op)


# ---------------------------------------------------------------- values known from shapes

def static_value(node: ir.Node, shapes: dict) -> float | None:
    """The value of a scalar known from shapes alone (numbers, rows, columns and arithmetic
    on them: the ops with the trait "static"), or None when it depends on data."""
    pending: list[ir.Node] = [node]
    values: dict[ir.Node, float] = {}
    while pending:
        n = pending[-1]
        if isinstance(n, ir.Const):
            values[n] = n.value
        elif isinstance(n, ir.Prim) and "static" in BY_OP[n.op].traits and BY_OP[n.op].kind == "size":
            values[n] = float(shapes[n.args[0]][BY_OP[n.op].axis])
        elif isinstance(n, ir.Prim) and "static" in BY_OP[n.op].traits:
            missing = [a for a in n.args if a not in values]
            if missing:
                pending += missing
                continue
            numpy = BY_OP[n.op].numpy
            assert numpy is not None
            with np.errstate(all="ignore"):
                values[n] = float(numpy(*(values[a] for a in n.args)))
        else:
            return None
        pending.pop()
    return values[node]


def _whole(node: ir.Node, shapes: dict, wanted: str, op: ir.Node) -> int:
    """A static whole number ≥ 0 (slice bounds, a class count), or E319 (at `op`) saying why
    not."""
    value = static_value(node, shapes)
    if value is None:
        raise CheckError("E319", f"{wanted} must be known from the shapes of the arguments (a "
                         f"number, rows(…), columns(…) or arithmetic on them), but "
                         f"{what(node)} depends on their values", op.span)
    if not (value >= 0 and float(value).is_integer()):
        raise CheckError("E319", f"{wanted} must be a whole number, at least 0, but it is "
                         f"{value:g}", op.span)
    return int(value)


# ---------------------------------------------------------------- the rules

def same(node: ir.Prim, args: list[Shape], shapes: dict) -> Shape:
    """One argument; the result has its shape."""
    return args[0]


def pair(node: ir.Prim, args: list[Shape], shapes: dict) -> Shape:
    """Two arguments of one shape, or one of them a scalar; nothing else broadcasts."""
    a, b = args
    if a == b or not b:
        return a
    if not a:
        return b
    left, right = node.args
    raise CheckError(
        "E310", f"{_name(node)} needs operands of the same shape (or one scalar), but "
        f"{what(left)} is {describe_shape(a)} and {what(right)} is {describe_shape(b)}; "
        "nothing broadcasts: to repeat a vector across a matrix, say so with einsum",
        node.span)


def axis_of(node: ir.Prim, shape: Shape, does: str) -> int:
    """The node's axis attribute, or E314 when `shape` has no such axis."""
    axis = node.attrs[0]
    if axis >= len(shape):
        raise CheckError("E314", f"{_name(node)} {does} axis {axis}, but {what(node.args[0])} "
                         f"is {describe_shape(shape)} (axes count from 0)", node.span)
    return axis


def reduce(node: ir.Prim, args: list[Shape], shapes: dict) -> Shape:
    """x without the reduced axis; only a reduction whose row gives its value over nothing (a
    sum's 0) may reduce an empty axis."""
    axis = axis_of(node, args[0], "reduces")
    if args[0][axis] == 0 and BY_OP[node.op].empty is None:
        name = _name(node)
        raise CheckError("E317", f"{name} reduces axis {axis}, but {what(node.args[0])} is "
                         f"{describe_shape(args[0])}, empty along it, and the {name} of "
                         "nothing is undefined", node.span)
    return args[0][:axis] + args[0][axis + 1:]


def size(node: ir.Prim, args: list[Shape], shapes: dict) -> Shape:
    """A scalar, read from an axis x must have."""
    axis = BY_OP[node.op].axis
    assert axis is not None
    if len(args[0]) <= axis:
        extra = "; a vector has no columns" if node.op == "columns" and len(args[0]) == 1 else ""
        raise CheckError("E311", f"{_name(node)} needs at least {axis + 1} axes, but "
                         f"{what(node.args[0])} is {describe_shape(args[0])}{extra}", node.span)
    return ()


def positions(node: ir.Prim, args: list[Shape], shapes: dict) -> Shape:
    axis = axis_of(node, args[0], "reads")
    return (args[0][axis],)


def shift(node: ir.Prim, args: list[Shape], shapes: dict) -> Shape:
    axis = node.attrs[0]
    return args[0][:axis] + args[0][axis + 1:] + tuple(w[0] for w in args[1:])


def draw(node: ir.Prim, args: list[Shape], shapes: dict) -> Shape:
    if args[0]:
        raise CheckError("E311", f"{_name(node)} needs a scalar seed, but it is given "
                         f"{describe_shape(args[0])}", node.span)
    return tuple(node.attrs[0])


def keyed(node: ir.Prim, args: list[Shape], shapes: dict) -> Shape:
    """A counter-based draw (key, step, x): scalars key and step; the shape of x."""
    for position, what_ in ((0, "key"), (1, "step")):
        if args[position]:
            raise CheckError("E311", f"{_name(node)} needs a scalar {what_}, but it is given "
                             f"{describe_shape(args[position])}", node.span)
    return args[2]


def shuffled(node: ir.Prim, args: list[Shape], shapes: dict) -> Shape:
    """permutation(key, step, v): a vector as long as v."""
    keyed(node, args, shapes)
    if len(args[2]) != 1:
        raise CheckError("E311", f"permutation orders the positions of a vector, but it is given "
                         f"{describe_shape(args[2])}", node.span)
    return args[2]


def index(node: ir.Prim, args: list[Shape], shapes: dict) -> Shape:
    x, t = args
    if not x:
        raise CheckError("E311", f"x[t] reads a slice along the first axis, but {what(node.args[0])} "
                         "is a scalar", node.span)
    if t:
        raise CheckError("E318", f"x[t] takes one position, a scalar, but {what(node.args[1])} is "
                         f"{describe_shape(t)}", node.span)
    known = static_value(node.args[1], shapes)
    if known is not None and not (0 <= known < x[0] and float(known).is_integer()):
        where = "outside" if float(known).is_integer() else "not a whole position of"
        raise CheckError("E318", f"x[{exact_number(known)}] is {where} {what(node.args[0])}, "
                         f"{describe_shape(x)}: positions are whole numbers from 0 to "
                         f"{x[0] - 1}", node.span)
    return x[1:]


def slice_(node: ir.Prim, args: list[Shape], shapes: dict) -> Shape:
    x = args[0]
    if not x:
        raise CheckError("E311", f"x[a:b] takes rows along the first axis, but {what(node.args[0])} "
                         "is a scalar", node.span)
    start = _whole(node.args[1], shapes, "the start of a slice x[a:b]", node)
    stop = _whole(node.args[2], shapes, "the end of a slice x[a:b]", node)
    if not start <= stop <= x[0]:
        raise CheckError("E318", f"x[{start}:{stop}] is outside {what(node.args[0])}, "
                         f"{describe_shape(x)}: a slice a:b needs 0 ≤ a ≤ b ≤ {x[0]}", node.span)
    return (stop - start,) + x[1:]


def concat(node: ir.Prim, args: list[Shape], shapes: dict) -> Shape:
    a, b = args
    axis = node.attrs[0]
    if axis >= len(a) or len(a) != len(b) or a[:axis] + a[axis + 1:] != b[:axis] + b[axis + 1:]:
        raise CheckError("E324", f"concat joins along axis {axis} tensors that agree on every "
                         f"other axis, but {what(node.args[0])} is {describe_shape(a)} and "
                         f"{what(node.args[1])} is {describe_shape(b)}", node.span)
    return a[:axis] + (a[axis] + b[axis],) + a[axis + 1:]


def onehot(node: ir.Prim, args: list[Shape], shapes: dict) -> Shape:
    if args[1]:
        raise CheckError("E319", f"oneHot's class count must be a scalar, but {what(node.args[1])} "
                         f"is {describe_shape(args[1])}", node.span)
    return args[0] + (_whole(node.args[1], shapes, "oneHot's class count", node),)


def sumto(node: ir.Prim, args: list[Shape], shapes: dict) -> Shape:
    g, like = args
    assert g == like or not like, f"sumto {g} to {like}"
    return like


def spread(node: ir.Prim, args: list[Shape], shapes: dict) -> Shape:
    g, like = args
    axis = node.attrs[0]
    assert like[:axis] + like[axis + 1:] == g, f"spread {g} along {axis} to {like}"
    return like


def place(node: ir.Prim, args: list[Shape], shapes: dict) -> Shape:
    return args[1]


def cut(node: ir.Prim, args: list[Shape], shapes: dict) -> Shape:
    return args[1 + node.attrs[1]]


def coordinate(node: ir.Prim, args: list[Shape], shapes: dict) -> Shape:
    return args[0]


def take(node: ir.Prim, args: list[Shape], shapes: dict) -> Shape:
    x, at = args
    axis = node.attrs[0]
    assert not at and axis < len(x), f"take {at} along axis {axis} of {x}"
    return x[:axis] + x[axis + 1:]


def gradient(node: ir.Prim, args: list[Shape], shapes: dict) -> Shape:
    of, adjoint = args
    if of:
        raise CheckError("E320", f"∂ e / ∂ x needs a scalar e, but e is {describe_shape(of)}; "
                         "sum it first (einsum with an empty output, as einsum(\"i->\", e) for a "
                         "vector) or take one entry",
                         node.span)
    return adjoint
