"""Sharing: structurally identical subexpressions become one node, so work is done once."""

from __future__ import annotations

from .. import ir


def share(root: ir.Node) -> ir.Node:
    """Requires inlined IR; ensures equal nodes within a scope are the same object (loop bodies
    are shared within themselves). Twin loops, equal in init, until and step, become one."""
    return ir.rewrite_scopes(root, _share_scope)


def _share_scope(roots: tuple[ir.Node, ...], bodies: dict) -> tuple[ir.Node, ...]:
    """One scope's roots with equal nodes made one; its loops take their shared bodies."""
    canonical: dict[ir.Node, ir.Node] = {}

    def visit(node: ir.Node, kids: tuple[ir.Node, ...]) -> ir.Node:
        node = ir.with_scopes(node, kids, bodies)
        return canonical.setdefault(node, node)

    holder = ir.Tuple(roots, roots[0].span)  # one scope, however many roots
    return ir.transform(holder, visit).items  # type: ignore[union-attr]
