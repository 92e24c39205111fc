"""Specialises IR to argument shapes: infers every node's shape and enforces the shape rules."""

from __future__ import annotations

from dataclasses import dataclass, field

from ...grammar.errors import CheckError
from .. import ir
from ..ops.einsum_spec import ELLIPSIS, parse_spec
from ..ops.primitives import BY_OP
from ..ops.shape_rules import Shape, describe_shape, exact_number, static_value, what

__all__ = ["Shape", "ShapeTable", "describe_shape", "exact_number", "infer_shapes", "static_value"]


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
            rule = BY_OP[node.op].shape
            assert rule is not None, f"{node.op} never reaches shape inference"
            return rule(node, [shapes[a] for a in node.args], shapes)
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


def _einsum(node: ir.Einsum, args: list[Shape]) -> Shape:
    spec = parse_spec(node.spec)
    sizes: dict[str, tuple[int, int]] = {}
    rest: tuple[Shape, int] | None = None  # the ellipsis's axes, and the operand first giving them
    for position, (term, shape, operand) in enumerate(zip(spec.inputs, args, node.args, strict=True), 1):
        named = len(term) - (ELLIPSIS in term)
        if len(term) != len(shape) and not (ELLIPSIS in term and len(shape) >= named):
            least = f"at least {named} ax(es)" if ELLIPSIS in term else f"{len(term)} letter(s)"
            raise CheckError(
                "E306", f'einsum "{_written(node.spec)}": operand {position} ({what(operand)}) '
                f"is {describe_shape(shape)}, but its term {_written(term) or '(empty)'} has "
                f"{least}", node.span)
        if ELLIPSIS in term:
            at = term.index(ELLIPSIS)
            axes = shape[at:len(shape) - (len(term) - at - 1)]
            if rest is not None and rest[0] != axes:
                raise CheckError(
                    "E305", f'einsum "{_written(node.spec)}": the ellipsis is '
                    f"{describe_shape(rest[0])} in operand {rest[1]} but {describe_shape(axes)} "
                    f"in operand {position} ({what(operand)}); it stands for the same axes in "
                    "each", node.span)
            rest = rest or (axes, position)
            shape = shape[:at] + (0,) + shape[len(shape) - (len(term) - at - 1):]
        for letter, size in zip(term, shape, strict=True):
            if letter == ELLIPSIS:
                continue
            if letter in sizes and sizes[letter][0] != size:
                other = sizes[letter][1]
                raise CheckError(
                    "E305", f'einsum "{_written(node.spec)}": letter {letter} is '
                    f"{sizes[letter][0]} in operand {other} but {size} in operand {position} "
                    f"({what(operand)})", node.span)
            sizes.setdefault(letter, (size, position))
    out: Shape = ()
    for letter in spec.output:
        out += rest[0] if letter == ELLIPSIS and rest is not None else (sizes[letter][0],)
    return out


def _written(spec: str) -> str:
    """A specification as its source writes it (the ellipsis as `...`)."""
    return spec.replace(ELLIPSIS, "...")


def _cond(node: ir.Cond, cond: Shape, then: Shape, orelse: Shape) -> Shape:
    if cond:
        raise CheckError("E312", f"an if condition must be a scalar, but {what(node.cond)} is "
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
