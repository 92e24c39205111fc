"""Loop-invariant code motion: what a loop body computes from values the loop never changes is
computed once, before the loop.

A training loop that reads `einsum("ij,jk->ik", a, einsum("jl,lk->jk", w1, w2))` with w1 and
w2 passed along unchanged would multiply w1 by w2 at every step (and fusion would make the
two products one three-operand einsum, planned anew per step). Here each such value becomes a
new state component of the loop: its start is the value computed from the loop's initial
values, and each step passes it on unchanged. The loop's results are the same, value for
value; a loop that runs no step computes the moved values once for nothing.
"""

from __future__ import annotations

from .. import ir
from ..ops.primitives import having

#: Primitives that may move: they read values only and cannot fail (no checked reads, no
#: draws from a random stream); of those, the ones not worth a state component read only
#: shapes.
_MOVABLE = having("movable")
_SHAPES_ONLY = having("shapes_only")


def hoist_invariants(root: ir.Node) -> ir.Node:
    """Requires shared IR with its masks eliminated, before fusion (which would merge a moved
    product back into the per-step einsum that reads it); ensures no loop body computes an
    einsum or an entrywise value from only the state the loop never changes and constants:
    the largest such values become state components of their own, computed before the loop.
    IR holding a loop run backwards (LoopGrad, which names state components by position) is
    left as it is."""
    if any(isinstance(node, ir.LoopGrad) for node in ir.everything(root)):
        return root

    def scope(roots: tuple[ir.Node, ...], bodies: dict) -> tuple[ir.Node, ...]:
        def visit(node: ir.Node, kids: tuple[ir.Node, ...]) -> ir.Node:
            if isinstance(node, ir.Loop):
                return _hoisted(ir.with_scopes(node, kids, bodies))  # type: ignore[arg-type]
            return ir.rebuild(node, kids)

        return tuple(ir.transform(r, visit) for r in roots)

    return ir.rewrite_scopes(root, scope)


def _hoisted(loop: ir.Loop) -> ir.Loop:
    """`loop` with the values its body computes from unchanged state moved before it."""
    fixed = {i for i, s in enumerate(loop.step)
             if isinstance(s, ir.State) and s.index == i and i != loop.counter}
    if not fixed:
        return loop
    roots = (loop.until, *loop.step)
    order = ir.topological(*roots)
    invariant: dict[int, bool] = {}
    for node in order:
        match node:
            case ir.State(index=i):
                invariant[id(node)] = i in fixed
            case ir.Const():
                invariant[id(node)] = True
            case ir.Einsum() | ir.Prim() if _movable(node):
                invariant[id(node)] = all(invariant[id(k)] for k in ir.children(node))
            case _:
                invariant[id(node)] = False
    read_by_changing = {id(r) for r in roots}
    for node in order:
        if not invariant[id(node)]:
            read_by_changing.update(id(k) for k in ir.children(node))
    moved = [n for n in order
             if invariant[id(n)] and id(n) in read_by_changing and _worth_moving(n)]
    if not moved:
        return loop

    # the values computed from the loop's start (in one pass: what they share stays shared)
    starts = ir.transform(ir.Tuple(tuple(moved), loop.span), lambda n, kids: (
        loop.init[n.index] if isinstance(n, ir.State) else ir.rebuild(n, kids)))
    first = len(loop.init)
    states = {id(n): ir.State(first + j, n.span) for j, n in enumerate(moved)}
    holder = ir.Tuple(roots, loop.span)
    body = ir.transform(holder, lambda n, kids: states.get(id(n)) or ir.rebuild(n, kids))
    until, *step = body.items  # type: ignore[union-attr]
    return ir.Loop((*loop.init, *starts.items), until,  # type: ignore[union-attr]
                   (*step, *(states[id(n)] for n in moved)), loop.counter, loop.name, loop.span)


def _movable(node: ir.Einsum | ir.Prim) -> bool:
    return isinstance(node, ir.Einsum) or node.op in _MOVABLE


def _worth_moving(node: ir.Node) -> bool:
    """An einsum, or an entrywise value, that reads some state (not constants alone, not only
    shapes, not the ones x ^ 0)."""
    if isinstance(node, ir.Prim):
        if node.op in _SHAPES_ONLY:
            return False
        if node.op == "pow" and isinstance(node.args[1], ir.Const) and node.args[1].value == 0.0:
            return False
    elif not isinstance(node, ir.Einsum):
        return False
    return any(isinstance(n, ir.State) for n in ir.topological(node))
