"""A scope of a call on the numba executor (the call's own, or a loop body run on the host):
compiled regions for every compilable node the host needs, the host runtime for the rest, and
where a running loop may move from the host to compiled code (`resume_points`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...compiler import ir
from ...compiler.counting import Counting, counting_in
from ...compiler.evaluate import Host
from ...compiler.loops import (
    guard_tapes,
    moving_components,
    run_loop,
    run_loop_grad,
    tapes_at_the_call,
)
from ...compiler.passes.shapes import Scope, ShapeTable
from ...compiler.plan import Plan
from ...compiler.plan.schedule import RegionSchedule
from ..numerics import quietly
from ..planned import einsum_kernel
from . import interrupt
from .placement import Placement, describe
from .regions import CompiledRegion

if TYPE_CHECKING:
    from .. import codegen


class ScopeRunner(Host):
    """Evaluates one scope (the call's, or a loop body on the host): compiled regions for every
    compilable node the host needs, the host runtime (compiler/evaluate.py, each einsum along
    its planned path) for the rest."""

    def __init__(self, roots: list[ir.Node], scope: Scope, table: ShapeTable, plan: Plan,
                 optimize: str, where: Placement, fast: bool = False,
                 counted: Counting | None = None):
        self.roots = roots
        self.fast = fast  # math="fast": the code generator's (scheduler.Decisions)
        self.scope = scope
        self.table = table
        self.plan = plan
        self.optimize = optimize
        self.where = where
        self.shapes = table.scopes[scope]
        self.regions: dict[ir.Node, CompiledRegion] = {}
        self.hosted: dict[ir.Node, str] = {}
        self.bodies: dict[ir.Node, list[ScopeRunner]] = {}  # host loops: each scope's runner
        self.loop_steps = 0
        self._einsums: dict = {}
        # (the call's counted values, compiler/counting.py: one analysis for every scope)
        counted = counting_in(roots[0], plan.dtype) if counted is None else counted
        super().__init__(self._einsum, plan.dtype, counted, scope)
        self._place(roots)
        self.whole = self._whole()
        # the call's loops run backwards whose tapes are checked before it runs a step
        self._tapes = tapes_at_the_call(roots[0]) if not scope and self.hosted else []

    # ---------------------------------------------------------------- placement

    def _place(self, roots: list[ir.Node]) -> None:
        stack = list(roots)
        seen: set[ir.Node] = set()
        while stack:
            node = stack.pop()
            if node in seen or isinstance(node, (ir.Const, ir.Param, ir.State)):
                continue
            seen.add(node)
            why = self.where.reason(node, self.scope)
            if why is None:
                region = self.regions[node] = CompiledRegion(self._region(node), self.table,
                                                             self.optimize, self.plan.paths,
                                                             self.fast, self.plan.dtype,
                                                             self.counting)
                stack.extend(region.region.inputs)  # values the host computes for it
                continue
            self.hosted[node] = why
            stack.extend(ir.children(node))
            if isinstance(node, ir.Loop):
                self.bodies[node] = [self._runner(_body_roots(node), self.scope + (node,))]
            elif isinstance(node, ir.LoopGrad):
                self.bodies[node] = [self._runner(_body_roots(node.loop), self.scope + (node.loop,)),
                                     self._runner(list(node.vjp), self.scope + (node,))]

    def _runner(self, roots: list[ir.Node], scope) -> ScopeRunner:
        return ScopeRunner(roots, scope, self.table, self.plan, self.optimize, self.where,
                           self.fast, self.counting)

    def _region(self, root: ir.Node) -> codegen.Region:
        """Everything compilable `root` reads, down to leaves and host values (its inputs)."""
        def inside(node: ir.Node) -> bool:
            return not (isinstance(node, (ir.Param, ir.State)) or (
                node is not root and self.where.reason(node, self.scope) is not None))

        _, inputs = ir.region(root, inside)
        inputs.sort(key=lambda n: (not isinstance(n, (ir.Param, ir.State)), getattr(n, "index", 0)))
        from ..codegen import Region

        return Region(root, tuple(inputs), self.scope)

    def _whole(self) -> CompiledRegion | None:
        """The single region that is the whole call, when everything compiles."""
        if len(self.roots) != 1 or self.hosted:
            return None
        root = self.roots[0]
        region = self.regions.get(root)
        if region is None or not all(isinstance(n, ir.Param) for n in region.region.inputs):
            return None
        return region

    def notes(self) -> list[str]:
        """What compiled and what did not, for the plan."""
        lines = []
        if self.whole is not None:
            g = self.whole.generated
            how = ("one compiled function" if g.compiled else
                   "direct NumPy/BLAS calls (nothing to compile)")
            lines.append(f"the whole call runs as {how}: {g.kernels} fused loop nest(s), "
                         f"{g.products} contraction(s), {len(g.loops)} loop(s) inside")
            lines += [g.weighed] if g.weighed else []
            lines += [f"loop {lp.name} compiled whole, no host turns per step" for lp in g.loops]
            return lines
        for node, why in self.hosted.items():
            lines.append(f"host: {describe(node)}: {why}")
        for region in self.regions.values():
            g = region.generated
            lines.append(f"compiled: {describe(region.region.root)} with {g.kernels} fused loop "
                         f"nest(s), {g.products} contraction(s), {len(g.loops)} loop(s)")
            lines += [f"{describe(region.region.root)}: {g.weighed}"] if g.weighed else []
        for runners in self.bodies.values():
            for body in runners:
                lines += body.notes()
        return lines

    def schedule(self) -> list[RegionSchedule]:
        """What each generated function of the call runs, unit by unit (the plan's schedule)."""
        if self.whole is not None:
            g = self.whole.generated
            return [RegionSchedule("the whole call", g.compiled, g.units, _lines(g.source))]
        found = [RegionSchedule(describe(region.region.root), region.generated.compiled,
                                region.generated.units, _lines(region.generated.source))
                 for region in self.regions.values()]
        for runners in self.bodies.values():
            for body in runners:
                found += body.schedule()
        return found

    # ---------------------------------------------------------------- evaluation

    def run(self, leaves: tuple, boundary=None) -> object:
        """The value of the scope's first root for these leaves. `boundary`: what the call's
        loops call at each step boundary (compiler/loops.run_loop), which may move the call on."""
        memo: dict = {BOUNDARY: boundary}
        if self._tapes:  # E700 before the forward run that comes first, not after it
            quietly(guard_tapes, self._tapes, self.table.states,
                    lambda node: self.eval(node, memo, leaves))
        return self.answer(self.eval(self.roots[0], memo, leaves))

    def _inputs(self, node: ir.Node, memo: dict) -> tuple[ir.Node, ...]:
        if node in self.regions:
            return tuple(n for n in self.regions[node].region.inputs
                         if not isinstance(n, (ir.Param, ir.State)))
        return super()._inputs(node, memo)

    def _value(self, node: ir.Node, memo: dict, leaves: tuple):
        region = self.regions.get(node)
        if region is not None:
            values = [leaves[n.index] if isinstance(n, (ir.Param, ir.State)) else memo[n]
                      for n in region.region.inputs]
            value, steps = region.run(region.convert(values))
            self.loop_steps += steps
            return value if not self.narrow or node in self.counted else self._as_data(value)
        return super()._value(node, memo, leaves)

    def _einsum(self, node: ir.Einsum, operands: list):
        key = (node.spec, tuple(np.shape(o) for o in operands))
        kernel = self._einsums.get(key)
        if kernel is None:
            kernel = self._einsums[key] = einsum_kernel(node.spec, key[1], self.optimize,
                                                                 self.plan.paths)
        return kernel(*operands)

    def loop(self, loop: ir.Loop, state: tuple, memo: dict):
        """A loop whose body holds host work: a Python loop, its body's compilable parts still
        compiled (as the reference executor runs it, step counts checked the same way); the
        call's memo holds the hook its step boundaries call (BOUNDARY)."""
        body, = self.bodies[loop]
        with interrupt.host_loop():  # Ctrl-C between steps, never inside a compiled call
            final, steps = run_loop(loop, state, interrupt.stepped(body.eval),
                                    boundary=memo.get(BOUNDARY))
        self.loop_steps += steps + body.take_steps()
        return final

    def loop_grad(self, node: ir.LoopGrad, init: tuple, seeds: tuple):
        """A loop run backwards: forward with a tape, then the adjoint of every step, each
        body's compilable parts compiled (as the reference executor runs it)."""
        forward, backward = self.bodies[node]
        with interrupt.host_loop():  # Ctrl-C between steps, never inside a compiled call
            adjoints, steps = run_loop_grad(node, init, seeds,
                                            interrupt.stepped(forward.eval),
                                            interrupt.stepped(backward.eval))
        self.loop_steps += steps + forward.take_steps() + backward.take_steps()
        return adjoints

    def take_steps(self) -> int:
        steps, self.loop_steps = self.loop_steps, 0
        return steps


#: The key of a call's memo under which its root scope keeps the loops' step-boundary hook.
BOUNDARY = "step boundary"


def only_loop(body: ir.Node) -> ir.Loop | None:
    """The loop of `body`'s own scope when it holds one and nothing run backwards, else None."""
    loops = [n for n in ir.topological(body) if isinstance(n, (ir.Loop, ir.LoopGrad))]
    return loops[0] if len(loops) == 1 and isinstance(loops[0], ir.Loop) else None


def resume_points(body: ir.Node) -> tuple[tuple[int, int], ...] | None:
    """Where a call of `body` can move from the host to compiled code in the middle of its
    loop: ((component, parameter index), …) when its scope holds one loop (nothing run
    backwards), whose counter and every moving component start from a parameter of the call
    that nothing else reads. Calling the compiled program with those parameters set to the
    state at a step boundary (the counter to the steps left) then runs the rest of the loop,
    and what follows it, exactly. None otherwise."""
    loop = only_loop(body)
    if loop is None:
        return None
    moving = moving_components(loop)
    if loop.counter is not None:
        moving.append(loop.counter)
    points = tuple((j, loop.init[j].index) for j in sorted(moving)
                   if isinstance(loop.init[j], ir.Param))
    parameters = [p for _, p in points]
    if len(points) != len(moving) or len(set(parameters)) != len(parameters):
        return None
    starts = {loop.init[j] for j in moving}
    for node in _every_node(body):  # is a start read anywhere but as the loop's start?
        kids = ir.children(node)
        if node is loop:
            kids = tuple(k for j, k in enumerate(kids) if j not in moving)
        if any(k in starts for k in kids):
            return None
    return points


def _every_node(root: ir.Node) -> list[ir.Node]:
    """Every node of `root`'s scope and of every loop body in it."""
    found: list[ir.Node] = []
    pending = [(root,)]
    while pending:
        scope = ir.topological(*pending.pop())
        found += scope
        for node in scope:
            if isinstance(node, ir.Loop):
                pending.append((node.until, *node.step))
            elif isinstance(node, ir.LoopGrad):
                pending.append((node.loop.until, *node.loop.step))
                pending.append(tuple(node.vjp))
    return found


def _body_roots(loop: ir.Loop) -> list[ir.Node]:
    """What a loop body evaluates: its moving steps, and its condition unless it is counted."""
    steps = [loop.step[i] for i in moving_components(loop)]
    return steps if loop.counter is not None else [loop.until, *steps]


def regions_of(runner: ScopeRunner) -> list[CompiledRegion]:
    """Every compiled region of a runner and of the runners of its host loops' bodies."""
    found: list[CompiledRegion] = []
    pending = [runner]
    while pending:
        current = pending.pop()
        found += current.regions.values()
        for bodies in current.bodies.values():
            pending += bodies
    return found


def _lines(source: str) -> int:
    """The size of generated code, in lines."""
    return source.count("\n") + 1
