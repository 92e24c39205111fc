"""Forward-mode differentiation of inlined IR: Jacobian-vector products written out as IR.

Given the tangents of some leaves (a definition's parameters), one sweep over the nodes in
order gives each node that depends on them its tangent, by the op's forward rule
(compiler/ops/tangent_rules.py); the tangent of an einsum is a sum of einsums, of entrywise
work entrywise work, so the planner fuses and plans it like anything else. No tape is kept:

- An `if` has the tangent of the branch it takes (an `if` over the two branches' tangents, so
  the untaken branch is never evaluated).
- A loop carries the tangents of its state beside the state: the loop is rebuilt with one
  more component per component that depends on the variables, whose step is the tangent of
  that component's step. Its results and their tangents come from the one loop.
- A value computed with a derivative (∂ inside the function) is refused (E323), as the
  reverse sweep refuses it.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...grammar.errors import CheckError
from .. import ir
from ..ops.derivative_rules import zeros_like
from ..ops.primitives import BY_OP
from ..ops.tangent_rules import einsum_tangent
from .derivative import _carried


class Forward:
    """One forward sweep over one scope."""

    def __init__(self, tangents: dict[ir.Node, ir.Node]):
        self.tangents: dict[ir.Node, ir.Node | None] = dict(tangents)
        self.new: dict[ir.Node, ir.Node] = {leaf: leaf for leaf in tangents}
        self.extended: dict[ir.Loop, tuple[ir.Loop, dict[int, int]]] = {}

    def run(self, roots: Sequence[ir.Node]) -> tuple[list[ir.Node], list[ir.Node | None]]:
        """Each root rebuilt (its loops carry tangents now) and its tangent (None: zero)."""
        for node in ir.topological(*roots):
            if node not in self.new:
                self.visit(node)
        return [self.new[r] for r in roots], [self.tangents.get(r) for r in roots]

    def visit(self, node: ir.Node) -> None:
        if isinstance(node, ir.Loop):
            self.loop(node)
            return
        kids = tuple(self.new[k] for k in ir.children(node))
        new = ir.rebuild(node, kids)
        self.new[node] = new
        if isinstance(node, ir.Project):
            _, moved = self.extended[node.loop]
            if node.index in moved:
                self.tangents[node] = ir.Project(new.loop, moved[node.index], node.span)  # type: ignore[union-attr]
            return
        given = [self.tangents.get(k) for k in ir.children(node)]
        if all(t is None for t in given):
            return
        match node:
            case ir.Prim(op=op):
                rule = BY_OP[op].tangent  # (the op table's forward rule)
                assert rule is not None, f"forward: no tangent rule for {op}"
                self.tangents[node] = rule(new, given)  # type: ignore[arg-type]
            case ir.Einsum():
                self.tangents[node] = einsum_tangent(new, given)  # type: ignore[arg-type]
            case ir.Cond():
                _, then_t, else_t = given
                if then_t is not None or else_t is not None:
                    self.tangents[node] = ir.Cond(new.cond, _or_zeros(then_t, new.then),  # type: ignore[union-attr]
                                                  _or_zeros(else_t, new.orelse), node.span)  # type: ignore[union-attr]
            case ir.LoopGrad():
                raise CheckError("E323", "this value is computed with a derivative; derivatives "
                                 "of derivatives are not supported yet", node.span)
            case _:
                raise AssertionError(f"forward: no rule for {node!r}")

    def loop(self, loop: ir.Loop) -> None:
        """The loop with each component that depends on the variables followed (after all the
        state) by its tangent; Project reads both from it."""
        init = tuple(self.new[k] for k in loop.init)
        carried = _carried(loop, [self.tangents.get(k) is not None for k in loop.init])
        if not carried:
            self.new[loop] = ir.rebuild(loop, init)
            self.extended[loop] = (self.new[loop], {})  # type: ignore[assignment]
            return
        n = len(loop.init)
        span = loop.span
        inner = Forward({ir.State(c, span): ir.State(n + j, span)
                         for j, c in enumerate(carried)})
        (until, *step), tangents = inner.run([loop.until, *loop.step])
        step_tangents = tuple(_or_zeros(tangents[1 + c], ir.State(c, span)) for c in carried)
        init_tangents = tuple(_or_zeros(self.tangents.get(loop.init[c]), init[c])
                              for c in carried)
        new = ir.Loop(init + init_tangents, until, (*step, *step_tangents), loop.counter,
                      loop.name, span)
        self.new[loop] = new
        self.extended[loop] = (new, {c: n + j for j, c in enumerate(carried)})


def _or_zeros(t: ir.Node | None, like: ir.Node) -> ir.Node:
    """A tangent, or zeros shaped like `like` where it is zero."""
    return t if t is not None else zeros_like(like)
