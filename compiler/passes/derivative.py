"""Reverse-mode differentiation of inlined IR: ∂ e / ∂ x written out as ordinary IR.

The derivative of an einsum is an einsum, of entrywise work entrywise work, of a counted loop
a loop run backwards (ir.LoopGrad), so the planner fuses and plans a gradient like any other
work. The per-op rules live in compiler/ops/derivative_rules.py; this module is the sweep:

- Only *active* nodes (those that depend on the variable) get adjoints, so two derivatives of
  one value (∂ e / ∂ w1 and ∂ e / ∂ w2) build the same adjoint nodes where they overlap, and
  sharing makes the common work one computation.
- An `if` passes its adjoint to the branch it takes: contributions that come through a branch
  carry a *guard* (the conditions on the way), and are only ever evaluated under it, so the
  untaken branch's values are never computed (a derivative of `if x > 0 then sqrt(x) else 0`
  never takes a square root of a negative number).
- A loop's final state passes its adjoint back through every step: ir.LoopGrad keeps the
  moving state of each step of a forward run (a tape: steps × state size) and runs the steps'
  adjoints in reverse. Only the state components that depend on the variable are carried.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...grammar.errors import CheckError
from ...grammar.source import Span
from .. import ir
from ..ops.derivative_rules import einsum_adjoint, zeros_like
from ..ops.primitives import BY_OP
from .share import share

#: A guard: the `if` conditions (and which way each went) a contribution came through.
Guard = tuple[tuple[ir.Node, bool], ...]

#: What a derivative's value is read through: every derivative is wrapped in a `gradient` op
#: (or is a loop run backwards), so meeting one on the way to the variable means a derivative
#: of a derivative.
_DERIVED = {"gradient"}


def differentiate(of: ir.Node, wrt: ir.Node, span: Span) -> ir.Node:
    """∂ of / ∂ wrt as IR: the adjoint of `wrt` for a scalar `of`.

    Requires inlined IR (no Call, Item or Grad) with `wrt` a Local or State leaf; ensures a
    node of wrt's shape, wrapped in the `gradient` op that checks, once shapes are known,
    that `of` is a scalar (E320) — before the derivative's own ops, so a shape error names
    what the user wrote.
    """
    if isinstance(of, ir.Tuple):
        raise CheckError("E320", f"∂ … / ∂ {_name(wrt)}: a gradient is taken of a scalar, but "
                         f"this is a tuple of {len(of.items)} values; differentiate one of them",
                         span)
    of = share(of)
    adjoint = Sweep(span).run([(of, ir.Const(1.0, span))], [wrt])[0]
    return ir.Prim("gradient", (of, adjoint), (), span)  # `of` first: its shapes are checked first


def _name(node: ir.Node) -> str:
    return getattr(node, "name", None) or "this value"


class Sweep:
    """One reverse sweep over one scope: adjoints flow from the seeded roots to the variables."""

    def __init__(self, span: Span):
        self.span = span
        self.contributions: dict[ir.Node, dict[Guard, list[ir.Node]]] = {}
        self.active: set[ir.Node] = set()
        self.carried: dict[ir.Loop, tuple[int, ...]] = {}
        self.loop_seeds: dict[ir.Loop, dict[Guard, dict[int, list[ir.Node]]]] = {}

    def run(self, seeds: Sequence[tuple[ir.Node, ir.Node]], variables: Sequence[ir.Node]) -> list[ir.Node]:
        """The adjoint of each variable, given the adjoint `seed` of each root."""
        order = ir.topological(*(root for root, _ in seeds))
        self.active = self._active(order, set(variables))
        for root, seed in seeds:
            if root in self.active:
                self.add(root, (), seed)
        targets = set(variables)
        for node in reversed(order):
            if node in targets or node not in self.active:
                continue
            groups = self.contributions.pop(node, None)
            if groups is None and not isinstance(node, ir.Loop):
                continue
            self.propagate(node, groups or {})
        return [self.total(self.contributions.get(v, {}), v) for v in variables]

    # ---------------------------------------------------------------- which nodes are active

    def _active(self, order: list[ir.Node], variables: set[ir.Node]) -> set[ir.Node]:
        active: set[ir.Node] = set()
        for node in order:
            if node in variables:
                active.add(node)
            elif isinstance(node, ir.Project) and isinstance(node.loop, ir.Loop):
                if node.loop in active and node.index in self.carried[node.loop]:
                    active.add(node)
            elif isinstance(node, ir.Loop):
                carried = _carried(node, [a in active for a in node.init])
                self.carried[node] = carried
                if carried:
                    active.add(node)
            elif any(k in active for k in ir.children(node)):
                active.add(node)
        for node in active:
            derived = (isinstance(node, ir.LoopGrad)
                       or isinstance(node, ir.Prim) and node.op in _DERIVED)
            if derived:
                raise CheckError("E323", "this derivative is taken of a value that is itself "
                                 "computed with a derivative; derivatives of derivatives are "
                                 "not supported yet", self.span)
        return active

    # ---------------------------------------------------------------- adjoints

    def add(self, node: ir.Node, guard: Guard, contribution: ir.Node | None) -> None:
        if contribution is not None and node in self.active:
            self.contributions.setdefault(node, {}).setdefault(guard, []).append(contribution)

    def propagate(self, node: ir.Node, groups: dict[Guard, list[ir.Node]]) -> None:
        """Pass `node`'s adjoint (one sum per guard) on to the active nodes it reads."""
        if isinstance(node, ir.Loop):
            self.loop(node)
            return
        for guard, parts in groups.items():
            g = _sum(parts)
            match node:
                case ir.Cond(cond=c, then=t, orelse=o):
                    self.add(t, guard + ((c, True),), g)
                    self.add(o, guard + ((c, False),), g)
                case ir.Project(loop=loop, index=i):
                    seeds = self.loop_seeds.setdefault(loop, {}).setdefault(guard, {})  # type: ignore[arg-type]
                    seeds.setdefault(i, []).append(g)
                case ir.Einsum(args=args):
                    for position, arg in enumerate(args):
                        if arg in self.active:
                            self.add(arg, guard, einsum_adjoint(node, g, position))
                case ir.Prim(op=op, args=args):
                    rule = BY_OP[op].derivative
                    assert rule is not None, f"derivative: {op} is never differentiated"
                    for position, arg in enumerate(args):
                        if arg in self.active:
                            self.add(arg, guard, rule(node, g, position))
                case _:
                    raise AssertionError(f"derivative: no rule for {node!r}")

    def loop(self, loop: ir.Loop) -> None:
        """Seeds of the final state → adjoints of the starting state, one LoopGrad per guard
        the loop's results were read under (so a loop read in one branch only is run
        backwards only when that branch is taken)."""
        carried = self.carried[loop]
        for guard, seeds in self.loop_seeds.pop(loop, {}).items():
            grad = loop_adjoint(loop, carried, {i: _sum(parts) for i, parts in seeds.items()},
                                self.span)
            for position, component in enumerate(carried):
                self.add(loop.init[component], guard, ir.Project(grad, position, loop.span))  # type: ignore[arg-type]

    def total(self, groups: dict[Guard, list[ir.Node]], like: ir.Node) -> ir.Node:
        """The adjoint of `like` from its guarded contributions (zeros if there are none)."""
        terms = [_guarded(guard, _sum(parts), like) for guard, parts in groups.items()]
        return _sum(terms) if terms else zeros_like(like)


def loop_adjoint(loop: ir.Loop, carried: tuple[int, ...], seeds: dict[int, ir.Node],
                 span: Span) -> ir.LoopGrad:
    """The LoopGrad of `loop` for the adjoints `seeds` of its final state's components."""
    n = len(loop.init)
    start = tuple(seeds.get(c) or zeros_like(ir.Project(loop, c, loop.span)) for c in carried)
    step_seeds = [(loop.step[c], ir.State(n + j, span)) for j, c in enumerate(carried)]
    variables = [ir.State(c, span) for c in carried]
    vjp = Sweep(span).run(step_seeds, variables)
    return ir.LoopGrad(loop, start, carried, tuple(share(v) for v in vjp), span)


def _carried(loop: ir.Loop, active_init: list[bool]) -> tuple[int, ...]:
    """The state components that depend on the variable: those it reaches through `init`,
    and those a step computes from such a component. The counter never is (it is whole)."""
    reads = [{n.index for n in ir.topological(s) if isinstance(n, ir.State)} for s in loop.step]
    carried = {i for i, a in enumerate(active_init) if a}
    grown = True
    while grown:
        grown = False
        for i, read in enumerate(reads):
            if i not in carried and read & carried:
                carried.add(i)
                grown = True
    carried.discard(loop.counter)  # type: ignore[arg-type]
    return tuple(sorted(carried))


def _sum(parts: list[ir.Node]) -> ir.Node:
    total = parts[0]
    for part in parts[1:]:
        total = ir.Prim("add", (total, part), (), part.span)
    return total


def _guarded(guard: Guard, value: ir.Node, like: ir.Node) -> ir.Node:
    """`value` where every condition of `guard` went its way, zeros elsewhere; the `if`s
    evaluate `value` only where it applies."""
    for cond, taken in reversed(guard):
        zeros = zeros_like(like)
        value = (ir.Cond(cond, value, zeros, value.span) if taken
                 else ir.Cond(cond, zeros, value, value.span))
    return value
