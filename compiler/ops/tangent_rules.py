"""The forward (tangent) rules of the ops, for Jacobian-vector products
(compiler/passes/forward.py): the op table's `tangent` column (compiler/ops/primitives.py)
holds one of these per op. For `out = op(args)` and the tangents of its arguments (None where
an argument does not depend on the variables), a rule gives out's tangent (None where it is
zero).

Most rules come from the op's reverse rule (compiler/ops/derivative_rules.py), by its family:
an entrywise op's Jacobian is diagonal, so its reverse rule applied to a tangent in place of
an adjoint is the forward rule, once the `sumto` that reduces a broadcast adjoint back to a
scalar operand is left off (`entrywise`); a reduction's output reads only its own line, so its
tangent is the line's tangents weighted by the reverse rule's adjoint of a one, and summed
(`through_adjoint`). Ops linear in their first argument (sums, spreads, reads of slices and
windows) are the op applied to the tangent (`linear`). The rest are written out below.
"""

from __future__ import annotations

from collections.abc import Callable

from ...grammar.errors import CheckError
from .. import ir
from .derivative_rules import Rule, ones_like, p, zeros_like

#: A tangent rule: out's tangent from the node and its arguments' tangents (None: zero).
TangentRule = Callable[[ir.Prim, list["ir.Node | None"]], "ir.Node | None"]

#: Binary ops whose tangent in one operand does not involve the other: where only the smaller
#: operand varies, its tangent is broadcast to the result's shape.
_OTHER_FREE = frozenset({"add", "sub", "mod"})


def flat(node: ir.Prim, tangents: list[ir.Node | None]) -> None:
    """Derivative zero everywhere: comparisons, sizes, positions, one-hots, draws."""
    return None


def linear(node: ir.Prim, tangents: list[ir.Node | None]) -> ir.Node | None:
    """An op linear in its first argument (every other argument gives only shapes, positions
    or indices): the op applied to that argument's tangent."""
    if tangents[0] is None:
        return None
    return ir.Prim(node.op, (tangents[0], *node.args[1:]), node.attrs, node.span)


def joined(node: ir.Prim, tangents: list[ir.Node | None]) -> ir.Node:
    """concat(a, b, k): the concatenation of the tangents (zeros for one that is None)."""
    ta, tb = (t if t is not None else zeros_like(x)
              for t, x in zip(tangents, node.args, strict=True))
    return ir.Prim(node.op, (ta, tb), node.attrs, node.span)


def refused(code: str, message: str) -> TangentRule:
    """An op a forward sweep cannot go through yet: `code` with `message` saying why."""
    def rule(node: ir.Prim, tangents: list[ir.Node | None]) -> ir.Node | None:
        raise CheckError(code, message, node.span)
    return rule


def entrywise(reverse: Rule) -> TangentRule:
    """An entrywise op's rule: Σ over the varying arguments of the reverse rule applied to
    their tangents."""
    def rule(node: ir.Prim, tangents: list[ir.Node | None]) -> ir.Node | None:
        parts = []
        for position, t in enumerate(tangents):
            if t is None:
                continue
            part = reverse(node, t, position)
            if isinstance(part, ir.Prim) and part.op == "sumto":
                part = part.args[0]  # (the reverse rule's reduction to a scalar operand)
            if part is None:
                continue
            if node.op in _OTHER_FREE and len(node.args) == 2 and tangents[1 - position] is None:
                part = p(part, "add", part, zeros_like(node.args[1 - position]))  # broadcast
            parts.append(part)
        return _total(parts)
    return rule


def through_adjoint(reverse: Rule) -> TangentRule:
    """A reduction along axis k (its attribute): Σ_i t_i ∂out/∂x_i along k, the weights
    ∂out/∂x_i being the reverse rule's adjoint of x for an adjoint of ones."""
    def rule(node: ir.Prim, tangents: list[ir.Node | None]) -> ir.Node | None:
        t = tangents[0]
        if t is None:
            return None
        weights = reverse(node, ones_like(node), 0)
        assert weights is not None, f"{node.op}'s reverse rule gives no adjoint of its operand"
        return p(node, "sumalong", p(node, "mul", t, weights), attrs=node.attrs)
    return rule


def extreme(node: ir.Prim, tangents: list[ir.Node | None]) -> ir.Node | None:
    """maximum(x, k): the tangents of the entries equal to the extreme, averaged (the forward
    twin of the reverse rule, which shares the adjoint equally among them)."""
    t = tangents[0]
    if t is None:
        return None
    x = node.args[0]
    axis = node.attrs
    marks = p(node, "eq", x, p(node, "spread", node, x, attrs=axis))
    count = p(node, "sumalong", marks, attrs=axis)
    return p(node, "div", p(node, "sumalong", p(node, "mul", t, marks), attrs=axis), count)


def einsum_tangent(node: ir.Einsum, tangents: list[ir.Node | None]) -> ir.Node | None:
    """Σ over the varying operands of the einsum with that operand's tangent in its place."""
    return _total([ir.Einsum(node.spec, (*node.args[:i], t, *node.args[i + 1:]), node.span)
                   for i, t in enumerate(tangents) if t is not None])


def _total(parts: list) -> ir.Node | None:
    """The sum of `parts`, left to right (None for none)."""
    if not parts:
        return None
    total = parts[0]
    for part in parts[1:]:
        total = p(part, "add", total, part)
    return total
