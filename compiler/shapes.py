"""Specialises IR to argument shapes: infers every node's shape and enforces the shape rules."""

from __future__ import annotations

from dataclasses import dataclass, field

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
Scope = tuple[ir.Loop, ...]


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
            if isinstance(node, ir.Loop) and node not in shapes:
                body = self.scope + (node,)
                if body not in table.scopes:
                    state = tuple(shapes[a] for a in node.init)
                    table.states[body] = state
                    return _Pending(body, [node.until, *node.step],
                                    lambda leaf, state=state: state[leaf.index])
            if node not in shapes:
                shapes[node] = _shape(table, self.scope, node, shapes, self.leaf)
            self.position += 1
        return None


def _shape(table: ShapeTable, scope: Scope, node: ir.Node, shapes: dict, leaf) -> Shape:
    match node:
        case ir.Param() | ir.State():
            return leaf(node)
        case ir.Const():
            return ()
        case ir.Prim():
            return _prim(node, [shapes[a] for a in node.args])
        case ir.Einsum():
            return _einsum(node, [shapes[a] for a in node.args])
        case ir.Cond():
            return _cond(node, shapes[node.cond], shapes[node.then], shapes[node.orelse])
        case ir.Loop():
            return ()  # its value is its final state, read through Project
        case ir.Project():
            return table.states[scope + (node.loop,)][node.index]
    raise AssertionError(f"cannot infer the shape of {node!r}")


def _prim(node: ir.Prim, args: list[Shape]) -> Shape:
    prim = BY_OP[node.op]
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
        if args[0][axis] == 0:
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
    if not body.scope:
        return
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
