"""Writes the rank-polymorphic ops of derivatives (sumto, spread, sumalong, coordinate,
gradient) as plain einsums and entrywise code, once the shapes of a call are known, so the
planned executors fuse and plan them like the rest."""

from __future__ import annotations

import string
from collections.abc import Callable

from . import ir
from .shapes import Scope, Shape, ShapeTable

_LETTERS = string.ascii_letters


def monomorphise(root: ir.Node, table: ShapeTable) -> ir.Node:
    """Requires `table` to be root's shapes; ensures no polymorphic op is left (same values).
    Returns `root` itself when it holds none (found without a walk: the table lists every node)."""
    if not any(isinstance(n, ir.Prim) and n.op in _LOWER
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
            case ir.Prim(op=op) if op in _LOWER:
                rebuilt = ir.rebuild(node, kids)
                return _LOWER[op](rebuilt, [shapes[a] for a in node.args])  # type: ignore[arg-type]
        return ir.rebuild(node, kids)

    holder = ir.Prim("body", roots, (), roots[0].span)
    return ir.transform(holder, visit).args  # type: ignore[union-attr]


def _ones(node: ir.Node) -> ir.Node:
    return ir.Prim("pow", (node, ir.Const(0.0, node.span)), (), node.span)


def _sumto(node: ir.Prim, shapes: list[Shape]) -> ir.Node:
    g, like = shapes
    if g == like:
        return node.args[0]
    return ir.Einsum(_LETTERS[:len(g)] + "->", (node.args[0],), node.span)


def _spread(node: ir.Prim, shapes: list[Shape]) -> ir.Node:
    letters = _LETTERS[:len(shapes[1])]
    axis = node.attrs[0]
    kept = letters[:axis] + letters[axis + 1:]
    g, like = node.args
    return ir.Einsum(f"{kept},{letters}->{letters}", (g, _ones(like)), node.span)


def _sumalong(node: ir.Prim, shapes: list[Shape]) -> ir.Node:
    letters = _LETTERS[:len(shapes[0])]
    axis = node.attrs[0]
    return ir.Einsum(f"{letters}->{letters[:axis] + letters[axis + 1:]}", node.args, node.span)


def _coordinate(node: ir.Prim, shapes: list[Shape]) -> ir.Node:
    letters = _LETTERS[:len(shapes[0])]
    axis = node.attrs[0]
    x = node.args[0]
    where = ir.Prim("positions", (x,), (axis,), node.span)
    return ir.Einsum(f"{letters},{letters[axis]}->{letters}", (_ones(x), where), node.span)


def _gradient(node: ir.Prim, shapes: list[Shape]) -> ir.Node:
    return node.args[1]  # `of` was checked to be a scalar when the shapes were inferred


_LOWER: dict[str, Callable[[ir.Prim, list[Shape]], ir.Node]] = {
    "sumto": _sumto, "spread": _spread, "sumalong": _sumalong, "coordinate": _coordinate,
    "gradient": _gradient,
}
