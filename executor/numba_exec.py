"""The numba executor: a call compiled whole into one function (loops inside, contractions
through BLAS, entrywise work in fused loop nests), with a per-node fallback to the host.

What cannot be compiled (a primitive with no compiled form, or one forced to the host by
HILBERT_NUMBA_HOST=op,op) runs as the planned NumPy executor would; every maximal compilable
part around it still runs compiled, and the plan's notes say which nodes ran where and why.
"""

from __future__ import annotations

import os
from dataclasses import replace

import numpy as np
from hilbert.compiler import ir
from hilbert.compiler.driver import Entry, plan_entry
from hilbert.compiler.plan import Plan
from hilbert.compiler.primitives import BY_OP, SPELLING
from hilbert.compiler.shapes import Scope, ShapeTable

from . import cache, codegen, interrupt, kernels
from .kernels import LabelError, PositionError, StepCountError
from .numerics import detached, fresh_first, quietly
from .planned import _kernel as planned_einsum
from .reference import (
    Reference,
    evaluate,
    moving_components,
    needs,
    run_loop,
    run_loop_grad,
    step_count,
)
from .sequences import one_hot, position

#: Environment variable naming ops (or "einsum") to run on the host, for tests and debugging.
HOST_ENVIRONMENT = "HILBERT_NUMBA_HOST"
_COMPILED_KINDS = ("unary", "binary", "compare", "reduce", "size", "positions", "shift", "take", "index",
                   "slice", "onehot")
#: NUMBA_DISABLE_JIT=1: generated code runs as Python, on NumPy scalars that warn on x/0.
_PYTHON_MODE = kernels.PYTHON_MODE
_FLOAT64 = np.dtype(np.float64)


def prepare(entry: Entry, shapes, optimize: str = "auto", values=None):
    """Specialise and plan `entry` for `shapes`; return the program that runs it."""
    ready = plan_entry(entry, shapes, optimize, "numba", values)
    table, plan = ready.table, ready.plan
    forced = frozenset(filter(None, os.environ.get(HOST_ENVIRONMENT, "").split(",")))
    where = Placement(table, forced)
    runner = ScopeRunner([ready.body], (), table, plan, optimize, where)
    if runner.whole is None or not runner.whole.generated.compiled or _PYTHON_MODE:
        # Host walks and generated code run as Python hold every value until the call ends.
        plan = plan_entry(entry, shapes, optimize, "numba", values, keeps_all=True).plan
    notes = tuple(f"numba: {line}" for line in runner.notes())
    plan = replace(plan, notes=plan.notes + notes) if hasattr(plan, "notes") else plan
    if runner.whole is not None:
        return WholeProgram(runner.whole, plan, len(entry.params))
    return HostProgram(runner, plan)


class Placement:
    """Which nodes compile. A node runs on the host if its op has no compiled form (or is
    forced there), a loop if anything in its body does, an `if` if anything in a branch does."""

    def __init__(self, table: ShapeTable, forced: frozenset[str]):
        self.table = table
        self.forced = forced
        self._reasons: dict[tuple[Scope, ir.Node], str | None] = {}

    def reason(self, node: ir.Node, scope: Scope) -> str | None:
        """Why `node` (in `scope`) cannot be compiled, or None if it can."""
        key = (scope, node)
        if key not in self._reasons:
            self._reasons[key] = self._reason(node, scope)
        return self._reasons[key]

    def _reason(self, node: ir.Node, scope: Scope) -> str | None:
        match node:
            case ir.Prim(op=op):
                if op in self.forced:
                    return f"{op} is forced to the host by {HOST_ENVIRONMENT}"
                if BY_OP[op].kind not in _COMPILED_KINDS:
                    return f"{SPELLING.get(op, op)} has no compiled form"
            case ir.Einsum() if "einsum" in self.forced:
                return f"einsum is forced to the host by {HOST_ENVIRONMENT}"
            case ir.Loop():
                inner = self.first_host(ir.topological(node.until, *node.step), scope + (node,))
                if inner is not None:
                    return f"its body runs {_describe(inner[0])} on the host ({inner[1]})"
            case ir.LoopGrad():
                return "a loop run backwards keeps a tape of its states on the host"
            case ir.Cond():
                inner = self.first_host(ir.topological(node.then, node.orelse), scope)
                if inner is not None:
                    return f"a branch runs {_describe(inner[0])} on the host ({inner[1]})"
            case ir.Project():
                if self.reason(node.loop, scope) is not None:
                    return "it reads a loop that runs on the host"
        return None

    def first_host(self, nodes, scope):
        for n in nodes:
            why = self.reason(n, scope)
            if why is not None:
                return n, why
        return None


def _describe(node: ir.Node) -> str:
    match node:
        case ir.Prim(op=op):
            what = SPELLING.get(op, op)
        case ir.Loop(name=name):
            what = f"loop {name}"
        case ir.Cond():
            what = "an if"
        case _:
            what = type(node).__name__.lower()
    return f"{what} at {node.span}" if node.span is not None else what


class CompiledRegion:
    """One generated function and how to call it: `inputs` are the IR nodes whose values it is
    given (scalars are passed as NumPy floats, arrays as C-ordered writable float64 arrays)."""

    def __init__(self, region: codegen.Region, table: ShapeTable, optimize: str):
        generated = codegen.generate(region, table, optimize, exact=True)
        self.region = region
        self.source = generated.source
        self.generated = generated
        self.function = cache.function(generated.source, generated.compiled)
        self.scalars = tuple(i for i, n in enumerate(region.inputs)
                             if not table.scopes[region.scope][n])
        self.arrays = tuple(i for i in range(len(region.inputs)) if i not in self.scalars)

    def __call__(self, args):
        """(value, loop steps run) for these input values (as `convert` makes them). Anything
        compiled code raises but a bad step count is a bug and propagates: a bad disk cache
        entry never reaches here (disk.HilbertCache replaces it while loading)."""
        try:
            if _PYTHON_MODE:
                with np.errstate(all="ignore"):
                    return self.function(*args)
            return self.function(*args)
        except StepCountError as err:
            number, value = err.args
            step_count(self.generated.loops[number], value)  # raises the HilbertError
            raise AssertionError("a step count compiled code refused was accepted") from err
        except PositionError as err:
            number, value, size = err.args
            position(self.generated.reads[number], value, size)  # raises the HilbertError
            raise AssertionError("a position compiled code refused was accepted") from err
        except LabelError as err:
            number, value, classes = err.args
            one_hot(self.generated.reads[number], np.array([value]), classes)  # raises E511
            raise AssertionError("a label compiled code refused was accepted") from err

    def run(self, args: list):
        """(value, loop steps run): the function called on `args`, stopped by Ctrl-C within
        one loop step when it has loops (executor/interrupt.py)."""
        if self.generated.loops:
            return interrupt.call(self, args)
        return self(args)

    def convert(self, values) -> list:
        """Host values as this function's arguments: compiled code is compiled for one layout
        only, so any other array (another order or dtype, a strided or read-only view, a
        subclass) is copied into it here, at the boundary, instead of reaching compiled code."""
        args = list(values)
        for i in self.scalars:
            args[i] = np.float64(args[i])
        for i in self.arrays:
            v = args[i]
            if not (type(v) is np.ndarray and v.dtype == _FLOAT64 and v.flags.c_contiguous
                    and v.flags.writeable):
                args[i] = np.array(v, dtype=np.float64, order="C")
        return args


class ScopeRunner:
    """Evaluates one scope (the call's, or a loop body on the host): compiled regions for every
    compilable node the host needs, NumPy (the planned executor) for the rest."""

    def __init__(self, roots: list[ir.Node], scope: Scope, table: ShapeTable, plan: Plan,
                 optimize: str, where: Placement):
        self.roots = roots
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
        self._evaluator = Reference()
        self._einsums: dict = {}
        self._place(roots)
        self.whole = self._whole()

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
                                                             self.optimize)
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
        return ScopeRunner(roots, scope, self.table, self.plan, self.optimize, self.where)

    def _region(self, root: ir.Node) -> codegen.Region:
        """Everything compilable `root` reads, down to leaves and host values (its inputs)."""
        inputs: list[ir.Node] = []
        seen: set[ir.Node] = set()
        stack = [root]
        while stack:
            node = stack.pop()
            if node in seen:
                continue
            seen.add(node)
            if isinstance(node, (ir.Param, ir.State)) or (
                    node is not root and self.where.reason(node, self.scope) is not None):
                inputs.append(node)
            else:
                stack.extend(ir.children(node))
        inputs.sort(key=lambda n: (not isinstance(n, (ir.Param, ir.State)), getattr(n, "index", 0)))
        return codegen.Region(root, tuple(inputs), self.scope)

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
            lines += [f"loop {lp.name} compiled whole, no host turns per step" for lp in g.loops]
            return lines
        for node, why in self.hosted.items():
            lines.append(f"host: {_describe(node)}: {why}")
        for region in self.regions.values():
            g = region.generated
            lines.append(f"compiled: {_describe(region.region.root)} with {g.kernels} fused loop "
                         f"nest(s), {g.products} contraction(s), {len(g.loops)} loop(s)")
        for runners in self.bodies.values():
            for body in runners:
                lines += body.notes()
        return lines

    # ---------------------------------------------------------------- evaluation

    def run(self, leaves: tuple) -> object:
        return self.eval(self.roots[0], {}, leaves)

    def eval(self, node: ir.Node, memo: dict, leaves: tuple):
        """`node`'s value, evaluating what it needs first (memoised in `memo`)."""
        return evaluate(node, memo, leaves, self._inputs, self._value)

    def _inputs(self, node: ir.Node, memo: dict) -> tuple[ir.Node, ...]:
        if node in self.regions:
            return tuple(n for n in self.regions[node].region.inputs
                         if not isinstance(n, (ir.Param, ir.State)))
        return needs(node, memo)

    def _value(self, node: ir.Node, memo: dict, leaves: tuple):
        region = self.regions.get(node)
        if region is not None:
            values = [leaves[n.index] if isinstance(n, (ir.Param, ir.State)) else memo[n]
                      for n in region.region.inputs]
            value, steps = region.run(region.convert(values))
            self.loop_steps += steps
            return value
        match node:
            case ir.Param(index=i) | ir.State(index=i):
                return leaves[i]
            case ir.Const(value=v):
                return np.float64(v)
            case ir.Prim():
                return self._evaluator.prim(node, [memo[a] for a in node.args])
            case ir.Einsum():
                return self._einsum(node, [memo[a] for a in node.args])
            case ir.Cond():
                return memo[node.then if memo[node.cond] != 0 else node.orelse]
            case ir.Loop():
                return self._loop(node, [memo[a] for a in node.init])
            case ir.LoopGrad():
                return self._loop_grad(node, [memo[a] for a in ir.children(node)])
            case ir.Project():
                return memo[node.loop][node.index]
            case ir.Tuple():
                return tuple(memo[a] for a in node.items)
        raise AssertionError(f"the numba executor cannot evaluate {node!r}")

    def _einsum(self, node: ir.Einsum, operands: list):
        key = (node.spec, tuple(np.shape(o) for o in operands))
        kernel = self._einsums.get(key)
        if kernel is None:
            path = self.plan.paths.get(key) or [tuple(range(len(operands)))]
            kernel = self._einsums[key] = planned_einsum(node.spec, key[1], path, self.plan)
        return kernel(*operands)

    def _loop(self, loop: ir.Loop, state: list):
        """A loop whose body holds host work: a Python loop, its body's compilable parts still
        compiled (as the reference executor runs it, step counts checked the same way)."""
        body, = self.bodies[loop]
        final, steps = run_loop(loop, state, body.eval)
        self.loop_steps += steps + body.take_steps()
        return final

    def _loop_grad(self, node: ir.LoopGrad, values: list):
        """A loop run backwards: forward with a tape, then the adjoint of every step, each
        body's compilable parts compiled (as the reference executor runs it)."""
        forward, backward = self.bodies[node]
        n = len(node.loop.init)
        adjoints, steps = run_loop_grad(node, tuple(values[:n]), tuple(values[n:]), forward.eval,
                                        backward.eval)
        self.loop_steps += steps + forward.take_steps() + backward.take_steps()
        return adjoints

    def take_steps(self) -> int:
        steps, self.loop_steps = self.loop_steps, 0
        return steps


def _body_roots(loop: ir.Loop) -> list[ir.Node]:
    """What a loop body evaluates: its moving steps, and its condition unless it is counted."""
    steps = [loop.step[i] for i in moving_components(loop)]
    return steps if loop.counter is not None else [loop.until, *steps]


class WholeProgram:
    """A call that is one generated function of the parameters: the fast path."""

    def __init__(self, region: CompiledRegion, plan: Plan, arity: int):
        self.plan = plan
        self.region = region
        self.function = region.function
        self.positions = tuple(n.index for n in region.region.inputs)
        # plain NumPy calls on the parameters as they are: nothing to convert, no checked
        # read whose error the region translates (x[t], oneHot)
        self.direct = (self.positions == tuple(range(arity)) and not region.scalars
                       and not region.generated.compiled and not region.generated.reads)
        self._steps = 0

    def __call__(self, values):
        if self.direct:  # plain NumPy calls on the parameters as they are
            return fresh_first(self.function, values)
        args = self.region.convert([values[i] for i in self.positions])
        if self.region.generated.compiled:
            value, steps = self.region.run(args)
        else:  # NumPy calls on the host: inf and NaN are values, not warnings
            value, steps = quietly(self.region, args)
        if steps:
            self._steps += steps
        return detached(value, values)

    @property
    def loop_steps(self) -> int:
        return self._steps


class HostProgram:
    """A call with host work: the host walks the call, compiled regions do the rest."""

    def __init__(self, runner: ScopeRunner, plan: Plan):
        self.plan = plan
        self.runner = runner

    def __call__(self, values):
        return detached(quietly(self.runner.run, tuple(values)), values)

    @property
    def loop_steps(self) -> int:
        return self.runner.loop_steps
