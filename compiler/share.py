"""Sharing: structurally identical subexpressions become one node, so work is done once."""

from __future__ import annotations

from . import ir


def share(root: ir.Node) -> ir.Node:
    """Requires inlined IR; ensures equal nodes within a scope are the same object (loop bodies
    are shared within themselves). Twin loops, equal in init, until and step, become one."""
    canonical: dict[ir.Node, ir.Node] = {}

    def visit(node: ir.Node, kids: tuple[ir.Node, ...]) -> ir.Node:
        if isinstance(node, ir.Loop):
            body = _share_body(node)
            node = ir.Loop(kids, body[0], body[1:], node.counter, node.name, node.span)
        else:
            node = ir.rebuild(node, kids)
        return canonical.setdefault(node, node)

    return ir.transform(root, visit)


def _share_body(loop: ir.Loop) -> tuple[ir.Node, ...]:
    """A loop's until and step, shared among themselves (one scope)."""
    holder = ir.Prim("body", (loop.until, *loop.step), (), loop.span)
    shared = share(holder)
    return shared.args  # type: ignore[union-attr]
