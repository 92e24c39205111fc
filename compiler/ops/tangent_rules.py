"""The forward (tangent) rules of the ops, for Jacobian-vector products
(compiler/passes/forward.py): for `out = op(args)` and the tangents of its arguments (None
where an argument does not depend on the variables), a rule gives out's tangent (None where
it is zero).

Most rules come from the reverse rules of compiler/ops/derivative_rules.py, by the op's
family (its `kind` in the op table): an entrywise op's Jacobian is diagonal, so the reverse
rule applied to a tangent in place of an adjoint is the forward rule, once the `sumto` that
reduces a broadcast adjoint back to a scalar operand is left off. Ops linear in their first
argument (sums, spreads, reads of slices and windows) are the op applied to the tangent. The
rest are written out below. `FORWARD` says, for every op of the table, how its tangent is
made, so an op added without a forward rule fails a test (tests/test_products.py).
"""

from __future__ import annotations

from hilbert.compiler import ir
from hilbert.compiler.ops.derivative_rules import p, zeros_like
from hilbert.compiler.ops.primitives import BY_OP
from hilbert.grammar.errors import CheckError

#: Families whose tangent is the reverse rule applied to the tangent (entrywise ops).
ENTRYWISE = frozenset({"unary", "binary"})
#: Families with derivative zero everywhere (their values are flat in their arguments).
FLAT = frozenset({"compare", "size", "positions", "onehot", "random", "draw", "argreduce",
                  "coordinate"})
#: Ops linear in their first argument: the tangent is the op applied to the first argument's
#: tangent (every other argument gives only shapes, positions or indices).
LINEAR_IN_FIRST = frozenset({"cumsum", "sumalong", "sumto", "spread", "index", "slice",
                             "shift", "take", "place", "cut"})
#: Ops a forward sweep cannot go through yet: the message says why.
REFUSED = {
    "gradient": "this value is computed with a derivative; derivatives of derivatives are not "
                "supported yet",
    "productadjoint": "this value is computed with a derivative; derivatives of derivatives "
                      "are not supported yet",
    "cumprod": "a Jacobian-vector product through cumprod is not supported yet (its tangent "
               "is a running recurrence with no rule written); use vjp, or write the product "
               "as a loop",
}
#: Binary ops whose tangent in one operand does not involve the other: where only the smaller
#: operand varies, its tangent is broadcast to the result's shape.
_OTHER_FREE = frozenset({"add", "sub", "mod"})


def tangent(node: ir.Prim, tangents: list[ir.Node | None]) -> ir.Node | None:
    """The tangent of `node` given its arguments' tangents (at least one is not None)."""
    op = node.op
    how = forward_rule(op)
    if how == "refused":
        raise CheckError("E323" if op != "cumprod" else "E326", REFUSED[op], node.span)
    if how == "flat":
        return None
    if how == "linear":
        if op == "concat":
            ta, tb = (t if t is not None else zeros_like(x)
                      for t, x in zip(tangents, node.args, strict=True))
            return ir.Prim(op, (ta, tb), node.attrs, node.span)
        if tangents[0] is None:
            return None
        return ir.Prim(op, (tangents[0], *node.args[1:]), node.attrs, node.span)
    if how == "extreme":
        return _reduced_extreme(node, tangents[0])
    if how == "entrywise":
        return _entrywise(node, tangents)
    raise AssertionError(f"forward: no tangent rule for {op}")


def _entrywise(node: ir.Prim, tangents: list[ir.Node | None]) -> ir.Node | None:
    """Σ over the varying arguments of the reverse rule applied to their tangents."""
    rule = BY_OP[node.op].derivative
    assert rule is not None
    parts = []
    for position, t in enumerate(tangents):
        if t is None:
            continue
        part = rule(node, t, position)
        if isinstance(part, ir.Prim) and part.op == "sumto":
            part = part.args[0]  # (the reverse rule's reduction to a scalar operand)
        if part is None:
            continue
        if node.op in _OTHER_FREE and len(node.args) == 2 and tangents[1 - position] is None:
            part = p(part, "add", part, zeros_like(node.args[1 - position]))  # broadcast
        parts.append(part)
    if not parts:
        return None
    total = parts[0]
    for part in parts[1:]:
        total = p(part, "add", total, part)
    return total


def _reduced_extreme(node: ir.Prim, t: ir.Node | None) -> ir.Node | None:
    """maximum(x, k): the tangents of the entries equal to the extreme, averaged (the forward
    twin of the reverse rule, which shares the adjoint equally among them)."""
    if t is None:
        return None
    x = node.args[0]
    axis = node.attrs
    marks = p(node, "eq", x, p(node, "spread", node, x, attrs=axis))
    count = p(node, "sumalong", marks, attrs=axis)
    return p(node, "div", p(node, "sumalong", p(node, "mul", t, marks), attrs=axis), count)


def einsum_tangent(node: ir.Einsum, tangents: list[ir.Node | None]) -> ir.Node | None:
    """Σ over the varying operands of the einsum with that operand's tangent in its place."""
    parts = [ir.Einsum(node.spec, (*node.args[:i], t, *node.args[i + 1:]), node.span)
             for i, t in enumerate(tangents) if t is not None]
    if not parts:
        return None
    total: ir.Node = parts[0]
    for part in parts[1:]:
        total = p(part, "add", total, part)
    return total


def forward_rule(op: str) -> str:
    """How the tangent of `op` is made: "refused", "flat" (zero), "linear" (the op applied to
    the tangent), "extreme", "entrywise", or "none" (no rule: a test fails for such an op)."""
    row = BY_OP[op]
    if op in REFUSED:
        return "refused"
    if row.kind in FLAT or row.derivative is None:
        return "flat"
    if op in LINEAR_IN_FIRST or op == "concat":
        return "linear"
    if op in ("maximum", "minimum"):
        return "extreme"
    if row.kind in ENTRYWISE:
        return "entrywise"
    return "none"
