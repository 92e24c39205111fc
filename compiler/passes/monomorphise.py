"""Writes the rank-polymorphic ops of derivatives (sumto, spread, sumalong, coordinate,
gradient) as plain einsums and entrywise code, and names the axes an einsum's ellipsis stands
for with letters of their own, once the shapes of a call are known, so the planned executors
fuse and plan them like the rest (each op's way is its row's `lower`)."""

from __future__ import annotations

from .. import ir
from ..ops.einsum_spec import ELLIPSIS, spelled_out
from ..ops.primitives import BY_OP
from .shapes import Scope, ShapeTable

#: The ops written anew once shapes are known (their rows' `lower`, compiler/ops/lowering.py).
_LOWER = {op: row.lower for op, row in BY_OP.items() if row.lower is not None}


def monomorphise(root: ir.Node, table: ShapeTable) -> ir.Node:
    """Requires `table` to be root's shapes; ensures no polymorphic op is left (same values).
    Returns `root` itself when it holds none (found without a walk: the table lists every node)."""
    if not any(isinstance(n, ir.Prim) and n.op in _LOWER
               or isinstance(n, ir.Einsum) and ELLIPSIS in n.spec
               for shapes in table.scopes.values() for n in shapes):
        return root
    return _scope((root,), table, ())[0]


def _scope(roots: tuple[ir.Node, ...], table: ShapeTable, scope: Scope) -> tuple[ir.Node, ...]:
    shapes = table.scopes[scope]

    def visit(node: ir.Node, kids: tuple[ir.Node, ...]) -> ir.Node:
        match node:
            case ir.Loop():
                body = _scope((node.until, *node.step), table, scope + (node,))
                return ir.with_bodies(node, kids, (body,))
            case ir.LoopGrad():
                forward = (node.loop.until, *node.loop.step)
                return ir.with_bodies(node, kids, (_scope(forward, table, scope + (node.loop,)),
                                                   _scope(node.vjp, table, scope + (node,))))
            case ir.Einsum(spec=spec) if ELLIPSIS in spec:
                return ir.Einsum(spelled_out(spec, [shapes[a] for a in node.args]), kids,
                                 node.span)
            case ir.Prim(op=op) if op in _LOWER:
                rebuilt = ir.rebuild(node, kids)
                return _LOWER[op](rebuilt, [shapes[a] for a in node.args])  # type: ignore[arg-type]
        return ir.rebuild(node, kids)

    return ir.transform(ir.Tuple(roots, roots[0].span), visit).items  # type: ignore[union-attr]

