"""Specialises IR to argument shapes: infers every node's shape and enforces the shape rules."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from hilbert.grammar.errors import CheckError

from . import ir
from .einsum_spec import parse_spec
from .primitives import BY_OP, OPERATORS, SPELLING

_OPERATORS = {p.name for p in OPERATORS.values()}
_UNICODE = {"-": "−", "*": "·", "!=": "≠", "<=": "≤", ">=": "≥"}

Shape = tuple[int, ...]


def describe_shape(shape: Shape) -> str:
    """Plain words for a shape: 'a scalar', 'a vector of 3', 'a 2×3 matrix'."""
    if not shape:
        return "a scalar"
    if len(shape) == 1:
        return f"a vector of {shape[0]}"
    kind = "matrix" if len(shape) == 2 else f"rank-{len(shape)} tensor"
    return f"a {'×'.join(map(str, shape))} {kind}"


def _what(node: ir.Node) -> str:
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


#: Where a node is evaluated: the loops entered from the call's own scope, outermost first
#: (`()` is the call itself). A path, not the innermost loop alone: two loops whose bodies are
#: equal (one loop called on two shapes of state) run equal inner loops on different shapes.
Scope = tuple[ir.Loop | ir.LoopGrad, ...]


@dataclass
class ShapeTable:
    """The shape of every node, per scope, and the state shapes of every loop body's scope."""

    scopes: dict[Scope, dict[ir.Node, Shape]] = field(default_factory=dict)
    states: dict[Scope, tuple[Shape, ...]] = field(default_factory=dict)

    def of(self, node: ir.Node, scope: Scope = ()) -> Shape:
        return self.scopes[scope][node]


def infer_shapes(root: ir.Node, params: tuple[Shape, ...]) -> ShapeTable:
    """Requires inlined IR over Param; ensures every node has a shape or raises CheckError.

    Scopes are inferred with an explicit stack (loops may nest as deep as definitions go):
    meeting a loop whose body is not yet known suspends the scope, infers the body, resumes."""
    table = ShapeTable()
    pending = [_Pending((), [root], lambda node: params[node.index])]
    while pending:
        top = pending[-1]
        inner = top.advance(table)
        if inner is None:
            pending.pop()
            _check_loop(table, top)
        else:
            pending.append(inner)
    return table


class _Pending:
    """One scope being inferred: its nodes in order and how far it has got."""

    def __init__(self, scope: Scope, roots: list[ir.Node], leaf):
        self.scope = scope
        self.roots = roots
        self.leaf = leaf
        self.order = ir.topological(*roots)
        self.position = 0

    def advance(self, table: ShapeTable) -> _Pending | None:
        """Infer onwards; a body to infer first (a loop met for the first time), or None."""
        shapes = table.scopes.setdefault(self.scope, {})
        while self.position < len(self.order):
            node = self.order[self.position]
            if isinstance(node, (ir.Loop, ir.LoopGrad)) and node not in shapes:
                inner = self.body(table, node, shapes)
                if inner is not None:
                    return inner
            if node not in shapes:
                shapes[node] = _shape(table, self.scope, node, shapes, self.leaf)
            self.position += 1
        return None

    def body(self, table: ShapeTable, node: ir.Loop | ir.LoopGrad, shapes: dict) -> _Pending | None:
        """The next scope of `node` (a Loop, or a LoopGrad: the forward loop's body, then the
        adjoints') still to infer, with its state's shapes; None once all are known."""
        loop = node.loop if isinstance(node, ir.LoopGrad) else node
        body: Scope = self.scope + (loop,)
        state = tuple(shapes[a] for a in loop.init)
        if body not in table.scopes:
            table.states[body] = state
            return _Pending(body, [loop.until, *loop.step],
                            lambda leaf, state=state: state[leaf.index])
        adjoints: Scope = self.scope + (node,)
        if isinstance(node, ir.LoopGrad) and adjoints not in table.scopes:
            full = state + tuple(state[c] for c in node.carried)
            table.states[adjoints] = full
            return _Pending(adjoints, list(node.vjp), lambda leaf, state=full: state[leaf.index])
        return None


def _shape(table: ShapeTable, scope: Scope, node: ir.Node, shapes: dict, leaf) -> Shape:
    match node:
        case ir.Param() | ir.State():
            return leaf(node)
        case ir.Const():
            return ()
        case ir.Prim():
            return _prim(node, [shapes[a] for a in node.args], shapes)
        case ir.Einsum():
            return _einsum(node, [shapes[a] for a in node.args])
        case ir.Cond():
            return _cond(node, shapes[node.cond], shapes[node.then], shapes[node.orelse])
        case ir.Loop() | ir.LoopGrad():
            return ()  # its value is its final state (its adjoints), read through Project
        case ir.Project() if isinstance(node.loop, ir.LoopGrad):
            return table.states[scope + (node.loop,)][node.loop.carried[node.index]]
        case ir.Project():
            return table.states[scope + (node.loop,)][node.index]
        case ir.Tuple():
            return ()  # only ever an entry's result: the executors hand its items to Python
    raise AssertionError(f"cannot infer the shape of {node!r}")


def _prim(node: ir.Prim, args: list[Shape], shapes: dict) -> Shape:
    prim = BY_OP[node.op]
    rule = _RULES.get(prim.kind)
    if rule is not None:
        return rule(node, args, shapes)
    name = SPELLING.get(node.op, node.op)
    if node.op in _OPERATORS:
        name = f"the operator {_UNICODE.get(name, name)}"
    if prim.kind == "unary":
        return args[0]
    if prim.kind in ("binary", "compare"):
        a, b = args
        if a == b or not b:
            return a
        if not a:
            return b
        left, right = node.args
        raise CheckError(
            "E310", f"{name} needs operands of the same shape (or one scalar), but "
            f"{_what(left)} is {describe_shape(a)} and {_what(right)} is {describe_shape(b)}; "
            "nothing broadcasts: to repeat a vector across a matrix, say so with einsum",
            node.span)
    if prim.kind == "reduce":
        axis = node.attrs[0]
        if axis >= len(args[0]):
            raise CheckError("E314", f"{name} reduces axis {axis}, but {_what(node.args[0])} is "
                             f"{describe_shape(args[0])} (axes count from 0)", node.span)
        if args[0][axis] == 0 and node.op != "sumalong":
            raise CheckError("E317", f"{name} reduces axis {axis}, but {_what(node.args[0])} is "
                             f"{describe_shape(args[0])}, empty along it, and the {name} of "
                             "nothing is undefined", node.span)
        return args[0][:axis] + args[0][axis + 1:]
    if prim.kind == "size":
        assert prim.axis is not None
        if len(args[0]) <= prim.axis:
            extra = "; a vector has no columns" if prim.name == "columns" and len(args[0]) == 1 else ""
            raise CheckError("E311", f"{name} needs at least {prim.axis + 1} axes, but "
                             f"{_what(node.args[0])} is {describe_shape(args[0])}{extra}", node.span)
        return ()
    if prim.kind == "positions":
        axis = node.attrs[0]
        if axis >= len(args[0]):
            raise CheckError("E314", f"positions reads axis {axis}, but {_what(node.args[0])} is "
                             f"{describe_shape(args[0])} (axes count from 0)", node.span)
        return (args[0][axis],)
    if prim.kind == "shift":
        axis = node.attrs[0]
        return args[0][:axis] + args[0][axis + 1:] + tuple(w[0] for w in args[1:])
    if prim.kind == "draw":
        if args[0]:
            raise CheckError("E311", f"{name} needs a scalar seed, but it is given "
                             f"{describe_shape(args[0])}", node.span)
        return tuple(node.attrs[0])
    raise AssertionError(f"no shape rule for {node.op}")


# ---------------------------------------------------------------- sequences and derivatives

def static_value(node: ir.Node, shapes: dict) -> float | None:
    """The value of a scalar known from shapes alone (numbers, rows, columns and arithmetic
    on them), or None when it depends on data."""
    pending: list[ir.Node] = [node]
    values: dict[ir.Node, float] = {}
    while pending:
        n = pending[-1]
        if isinstance(n, ir.Const):
            values[n] = n.value
        elif isinstance(n, ir.Prim) and BY_OP[n.op].kind == "size" and n.op in _STATIC_SIZE:
            values[n] = float(shapes[n.args[0]][BY_OP[n.op].axis])
        elif isinstance(n, ir.Prim) and n.op in _STATIC_ARITHMETIC:
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


_STATIC_SIZE = {"rows", "columns"}
_STATIC_ARITHMETIC = {"add", "sub", "mul", "div", "neg", "floor", "max", "min", "pow"}


def _whole(node: ir.Node, shapes: dict, what: str, op: ir.Node) -> int:
    """A static whole number ≥ 0 (slice bounds, a class count), or E319 (at `op`) saying why
    not."""
    value = static_value(node, shapes)
    if value is None:
        raise CheckError("E319", f"{what} must be known from the shapes of the arguments (a "
                         f"number, rows(…), columns(…) or arithmetic on them), but "
                         f"{_what(node)} depends on their values", op.span)
    if not (value >= 0 and float(value).is_integer()):
        raise CheckError("E319", f"{what} must be a whole number, at least 0, but it is "
                         f"{value:g}", op.span)
    return int(value)


def exact_number(value) -> str:
    """`value` written exactly as it is: 4 as `4`, 3.9999999999 as `3.9999999999` (never
    rounded to `4`, as `:g` would); past 2^53, Python's shortest form (`1e+300`)."""
    number = float(value)
    return str(int(number)) if number.is_integer() and abs(number) < 2**53 else repr(number)


def _index_rule(node: ir.Prim, args: list[Shape], shapes: dict) -> Shape:
    x, t = args
    if not x:
        raise CheckError("E311", f"x[t] reads a slice along the first axis, but {_what(node.args[0])} "
                         "is a scalar", node.span)
    if t:
        raise CheckError("E318", f"x[t] takes one position, a scalar, but {_what(node.args[1])} is "
                         f"{describe_shape(t)}", node.span)
    known = static_value(node.args[1], shapes)
    if known is not None and not (0 <= known < x[0] and float(known).is_integer()):
        where = "outside" if float(known).is_integer() else "not a whole position of"
        raise CheckError("E318", f"x[{exact_number(known)}] is {where} {_what(node.args[0])}, "
                         f"{describe_shape(x)}: positions are whole numbers from 0 to "
                         f"{x[0] - 1}", node.span)
    return x[1:]


def _slice_rule(node: ir.Prim, args: list[Shape], shapes: dict) -> Shape:
    x = args[0]
    if not x:
        raise CheckError("E311", f"x[a:b] takes rows along the first axis, but {_what(node.args[0])} "
                         "is a scalar", node.span)
    start = _whole(node.args[1], shapes, "the start of a slice x[a:b]", node)
    stop = _whole(node.args[2], shapes, "the end of a slice x[a:b]", node)
    if not start <= stop <= x[0]:
        raise CheckError("E318", f"x[{start}:{stop}] is outside {_what(node.args[0])}, "
                         f"{describe_shape(x)}: a slice a:b needs 0 ≤ a ≤ b ≤ {x[0]}", node.span)
    return (stop - start,) + x[1:]


def _concat_rule(node: ir.Prim, args: list[Shape], shapes: dict) -> Shape:
    a, b = args
    axis = node.attrs[0]
    if axis >= len(a) or len(a) != len(b) or a[:axis] + a[axis + 1:] != b[:axis] + b[axis + 1:]:
        raise CheckError("E324", f"concat joins along axis {axis} tensors that agree on every "
                         f"other axis, but {_what(node.args[0])} is {describe_shape(a)} and "
                         f"{_what(node.args[1])} is {describe_shape(b)}", node.span)
    return a[:axis] + (a[axis] + b[axis],) + a[axis + 1:]


def _onehot_rule(node: ir.Prim, args: list[Shape], shapes: dict) -> Shape:
    if args[1]:
        raise CheckError("E319", f"oneHot's class count must be a scalar, but {_what(node.args[1])} "
                         f"is {describe_shape(args[1])}", node.span)
    return args[0] + (_whole(node.args[1], shapes, "oneHot's class count", node),)


def _sumto_rule(node: ir.Prim, args: list[Shape], shapes: dict) -> Shape:
    g, like = args
    assert g == like or not like, f"sumto {g} to {like}"
    return like


def _spread_rule(node: ir.Prim, args: list[Shape], shapes: dict) -> Shape:
    g, like = args
    axis = node.attrs[0]
    assert like[:axis] + like[axis + 1:] == g, f"spread {g} along {axis} to {like}"
    return like


def _place_rule(node: ir.Prim, args: list[Shape], shapes: dict) -> Shape:
    return args[1]


def _cut_rule(node: ir.Prim, args: list[Shape], shapes: dict) -> Shape:
    return args[1 + node.attrs[1]]


def _coordinate_rule(node: ir.Prim, args: list[Shape], shapes: dict) -> Shape:
    return args[0]


def _take_rule(node: ir.Prim, args: list[Shape], shapes: dict) -> Shape:
    x, at = args
    axis = node.attrs[0]
    assert not at and axis < len(x), f"take {at} along axis {axis} of {x}"
    return x[:axis] + x[axis + 1:]


def _gradient_rule(node: ir.Prim, args: list[Shape], shapes: dict) -> Shape:
    of, adjoint = args
    if of:
        raise CheckError("E320", f"∂ e / ∂ x needs a scalar e, but e is {describe_shape(of)}; "
                         "sum it first (einsum with an empty output, as einsum(\"i->\", e) for a "
                         "vector) or take one entry",
                         node.span)
    return adjoint


_RULES = {"index": _index_rule, "slice": _slice_rule, "concat": _concat_rule,
          "onehot": _onehot_rule, "sumto": _sumto_rule, "spread": _spread_rule,
          "place": _place_rule, "cut": _cut_rule, "coordinate": _coordinate_rule,
          "gradient": _gradient_rule, "take": _take_rule}


def _einsum(node: ir.Einsum, args: list[Shape]) -> Shape:
    spec = parse_spec(node.spec)
    sizes: dict[str, tuple[int, int]] = {}
    for position, (term, shape, operand) in enumerate(zip(spec.inputs, args, node.args, strict=True), 1):
        if len(term) != len(shape):
            raise CheckError(
                "E306", f'einsum "{node.spec}": operand {position} ({_what(operand)}) is '
                f"{describe_shape(shape)}, but its term {term or '(empty)'} has {len(term)} "
                "letter(s)", node.span)
        for letter, size in zip(term, shape, strict=True):
            if letter in sizes and sizes[letter][0] != size:
                other = sizes[letter][1]
                raise CheckError(
                    "E305", f'einsum "{node.spec}": letter {letter} is {sizes[letter][0]} in '
                    f"operand {other} but {size} in operand {position} ({_what(operand)})",
                    node.span)
            sizes.setdefault(letter, (size, position))
    return tuple(sizes[letter][0] for letter in spec.output)


def _cond(node: ir.Cond, cond: Shape, then: Shape, orelse: Shape) -> Shape:
    if cond:
        raise CheckError("E312", f"an if condition must be a scalar, but {_what(node.cond)} is "
                         f"{describe_shape(cond)}; to choose per entry, use c · a + (1 − c) · b",
                         node.cond.span)
    if then != orelse:
        raise CheckError("E313", f"the branches of this if have different shapes: "
                         f"{describe_shape(then)} and {describe_shape(orelse)}", node.span)
    return then


def _check_loop(table: ShapeTable, body: _Pending) -> None:
    """A loop body's rules, once its shapes are known: a scalar condition, and a step that
    keeps the shape of every state component."""
    if not body.scope or not isinstance(body.scope[-1], ir.Loop):
        return  # the call's own scope, or a LoopGrad's adjoints (checked as they are made)
    loop = body.scope[-1]
    shapes, state = table.scopes[body.scope], table.states[body.scope]
    if shapes[loop.until]:
        raise CheckError("E312", f"the condition that ends {loop.name} must be a scalar, but it "
                         f"is {describe_shape(shapes[loop.until])}", loop.until.span)
    for index, (before, step) in enumerate(zip(state, loop.step, strict=True)):
        after = shapes[step]
        if after != before:
            raise CheckError(
                "E315", f"{loop.name} changes the shape of its state component {index + 1} from "
                f"{describe_shape(before)} to {describe_shape(after)} in one step", step.span)
