"""How the rank-polymorphic ops of derivatives (sumto, spread, sumalong, coordinate, gradient)
are written as plain einsums and entrywise code once their arguments' shapes are known: the op
table's `lower` column (compiler/ops/primitives.py), which the monomorphise pass
(compiler/passes/monomorphise.py) applies."""

from __future__ import annotations

import string

from .. import ir
from .shape_rules import Shape

_LETTERS = string.ascii_letters


def _ones(node: ir.Node) -> ir.Node:
    return ir.Prim("pow", (node, ir.Const(0.0, node.span)), (), node.span)


def sumto(node: ir.Prim, shapes: list[Shape]) -> ir.Node:
    g, like = shapes
    if g == like:
        return node.args[0]
    return ir.Einsum(_LETTERS[:len(g)] + "->", (node.args[0],), node.span)


def spread(node: ir.Prim, shapes: list[Shape]) -> ir.Node:
    letters = _LETTERS[:len(shapes[1])]
    axis = node.attrs[0]
    kept = letters[:axis] + letters[axis + 1:]
    g, like = node.args
    return ir.Einsum(f"{kept},{letters}->{letters}", (g, _ones(like)), node.span)


def sumalong(node: ir.Prim, shapes: list[Shape]) -> ir.Node:
    letters = _LETTERS[:len(shapes[0])]
    axis = node.attrs[0]
    return ir.Einsum(f"{letters}->{letters[:axis] + letters[axis + 1:]}", node.args, node.span)


def coordinate(node: ir.Prim, shapes: list[Shape]) -> ir.Node:
    letters = _LETTERS[:len(shapes[0])]
    axis = node.attrs[0]
    x = node.args[0]
    where = ir.Prim("positions", (x,), (axis,), node.span)
    return ir.Einsum(f"{letters},{letters[axis]}->{letters}", (_ones(x), where), node.span)


def gradient(node: ir.Prim, shapes: list[Shape]) -> ir.Node:
    return node.args[1]  # `of` was checked to be a scalar when the shapes were inferred
