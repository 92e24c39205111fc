"""The IR's layers and their verifier: what each stage of the pipeline admits, and
`verify(root, layer)`, which checks a stage's IR against it (compiler/passes/__init__.py runs it after
every pass when HILBERT_VERIFY is set, as the test suite does).

A layer admits a set of node classes and a set of ops (from the op table). The verifier checks
every node of every scope: its class and op, its op's arity and attributes, einsum specs
against their operands, projections and counters against their loops' state, and that each
loop body is closed (it reads the outside only through its state). Given a shape table it also
checks every node's shape against its rule, by inferring the shapes again."""

from __future__ import annotations

from dataclasses import dataclass

from .. import ir
from ..ops.einsum_spec import parse_spec
from ..ops.primitives import BY_OP
from ..settings import text

#: Environment variable that turns the verifier on between passes.
VERIFY_ENVIRONMENT = "HILBERT_VERIFY"

_VALUES = frozenset({ir.Param, ir.Const, ir.Prim, ir.Einsum, ir.Cond, ir.Loop, ir.Project,
                     ir.State, ir.LoopGrad})
#: Ops the resolver lowers at once (argmax and argmin become comparisons and reductions).
_NEVER = frozenset(op for op, row in BY_OP.items() if row.kind == "argreduce")
#: Ops index masks are read as (compiler/passes/masks.py).
_MASKED = frozenset({"shift", "take"})
#: The rank-polymorphic ops of derivatives, written as einsums once shapes are known.
_POLYMORPHIC = frozenset(op for op, row in BY_OP.items() if row.lower is not None)


@dataclass(frozen=True)
class Layer:
    """One stage of the IR: the node classes and ops it admits."""

    name: str
    nodes: frozenset[type]
    ops: frozenset[str]
    doc: str


_ALL = frozenset(BY_OP) - _NEVER
LAYERS: dict[str, Layer] = {layer.name: layer for layer in [
    Layer("entry", _VALUES, _ALL - _MASKED,
          "an entry point inlined over Param(0…n−1): no calls, locals, tuples but the root's, "
          "or ∂ left (the shape rules are checked on it)"),
    Layer("masked", _VALUES, _ALL, "index masks read as shifted and taken reads"),
    Layer("optimised", _VALUES, _ALL, "loop invariants hoisted and einsum chains fused"),
    Layer("specialised", _VALUES, _ALL - _POLYMORPHIC,
          "for one signature: derivatives' polymorphic ops written as einsums"),
    Layer("generated", _VALUES, _ALL - _POLYMORPHIC,
          "what generated code runs: a convolution's dot split into a sliding sum"),
]}


class VerifyError(AssertionError):
    """IR that breaks its layer's rules: a compiler bug, never a user's error."""


def enabled() -> bool:
    """Whether HILBERT_VERIFY asks for the verifier between passes."""
    return text(VERIFY_ENVIRONMENT) not in ("", "0")


def verify(root: ir.Node, layer: str, params: tuple | None = None, table=None) -> None:
    """Check `root` against `layer` (a name in LAYERS); with argument shapes `params` and their
    shape `table`, check every node's shape too. Raises VerifyError naming the node."""
    admitted = LAYERS[layer]
    roots = _values(root)
    pending: list[tuple[tuple[ir.Node, ...], int | None]] = [(roots, None)]
    seen: set[tuple] = set()
    while pending:
        scope_roots, width = pending.pop()
        key = (scope_roots, width)
        if key in seen:
            continue
        seen.add(key)
        for node in ir.topological(*scope_roots):
            _check(node, admitted, width)
            if isinstance(node, ir.Loop):
                pending.append(((node.until, *node.step), len(node.init)))
            elif isinstance(node, ir.LoopGrad):
                loop = node.loop
                pending.append(((loop.until, *loop.step), len(loop.init)))
                pending.append((node.vjp, len(loop.init) + len(node.carried)))
    if params is not None and table is not None:
        _check_shapes(root, params, table)


def _values(root: ir.Node) -> tuple[ir.Node, ...]:
    """The values an entry answers: its root, or the items of its root tuple (which may hold
    tuples: a definition may answer nested tuples)."""
    if not isinstance(root, ir.Tuple):
        return (root,)
    return tuple(v for item in root.items for v in _values(item))


def _fail(node: ir.Node, why: str):
    return VerifyError(f"{type(node).__name__} at {getattr(node, 'span', None)}: {why}")


def _check(node: ir.Node, layer: Layer, width: int | None) -> None:
    """One node of a scope whose state has `width` components (None: the call's own scope)."""
    if type(node) not in layer.nodes:
        raise _fail(node, f"the {layer.name} layer admits no {type(node).__name__}")
    match node:
        case ir.Param() if width is not None:
            raise _fail(node, "a loop body reads a parameter (bodies are closed over State)")
        case ir.State(index=i) if width is None or not 0 <= i < width:
            raise _fail(node, f"state component {i} read where the state has {width}")
        case ir.Prim():
            _check_prim(node, layer)
        case ir.Einsum(spec=spec, args=args):
            if len(parse_spec(spec).inputs) != len(args):
                raise _fail(node, f'einsum "{spec}" is given {len(args)} operands')
        case ir.Loop(init=init, step=step, counter=counter):
            if len(step) != len(init):
                raise _fail(node, f"{len(init)} state components but {len(step)} steps")
            if counter is not None and not 0 <= counter < len(init):
                raise _fail(node, f"counter {counter} is not a state component")
        case ir.LoopGrad(seeds=seeds, carried=carried, vjp=vjp, loop=loop):
            if not len(seeds) == len(carried) == len(vjp):
                raise _fail(node, "seeds, carried components and vjp terms differ in number")
            if any(not 0 <= c < len(loop.init) for c in carried):
                raise _fail(node, "a carried component is not one of the loop's")
        case ir.Project(loop=loop, index=i):
            count = len(loop.carried) if isinstance(loop, ir.LoopGrad) else len(loop.init)
            if not 0 <= i < count:
                raise _fail(node, f"component {i} of a loop answering {count}")


def _check_prim(node: ir.Prim, layer: Layer) -> None:
    row = BY_OP.get(node.op)
    if row is None:
        raise _fail(node, f"{node.op!r} is no op of the op table")
    if node.op not in layer.ops:
        raise _fail(node, f"the {layer.name} layer admits no {node.op}")
    arity = row.arity - (row.axis_arg is not None)
    if (len(node.args) < 1) if row.arity < 0 else (len(node.args) != arity):
        raise _fail(node, f"{node.op} takes {arity} argument(s), not {len(node.args)}")
    if len(node.attrs) != row.attrs:
        raise _fail(node, f"{node.op} has {row.attrs} attribute(s), not {len(node.attrs)}")
    if row.axis_arg is not None and not (isinstance(node.attrs[0], int) and node.attrs[0] >= 0):
        raise _fail(node, f"{node.op}'s axis {node.attrs[0]!r} is not a whole number")


def _check_shapes(root: ir.Node, params: tuple, table) -> None:
    """Every node's shape in `table` is what its rule gives (the shapes inferred again)."""
    from ..passes.shapes import infer_shapes

    again = infer_shapes(root, params)
    for scope, shapes in table.scopes.items():
        fresh = again.scopes.get(scope, {})
        for node, shape in shapes.items():
            if fresh.get(node, shape) != shape:
                raise _fail(node, f"its shape is {fresh[node]} by its rule, {shape} in the table")
