"""Sharing: structurally identical subexpressions become one node, so work is done once."""

from __future__ import annotations

from . import ir


def share(root: ir.Node) -> ir.Node:
    """Requires inlined IR; ensures equal nodes within a scope are the same object (loop bodies
    are shared within themselves). Twin loops, equal in init, until and step, become one."""
    canonical: dict[ir.Node, ir.Node] = {}

    def visit(node: ir.Node, kids: tuple[ir.Node, ...]) -> ir.Node:
        scopes = ir.bodies(node)
        if scopes:
            node = ir.with_bodies(node, kids, tuple(_share_body(roots, node.span) for roots in scopes))
        else:
            node = ir.rebuild(node, kids)
        return canonical.setdefault(node, node)

    return ir.transform(root, visit)


def _share_body(roots: tuple[ir.Node, ...], span) -> tuple[ir.Node, ...]:
    """The roots of a loop body, shared among themselves (one scope)."""
    shared = share(ir.Prim("body", roots, (), span))
    return shared.args  # type: ignore[union-attr]
