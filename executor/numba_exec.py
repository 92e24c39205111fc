"""The numba executor: a call compiled whole into one function (loops inside, contractions
through BLAS, entrywise work in fused loop nests), with a per-node fallback to the host.

What cannot be compiled (a primitive with no compiled form, or one forced to the host by
HILBERT_NUMBA_HOST=op,op) runs as the planned NumPy executor would; every maximal compilable
part around it still runs compiled, and the plan's notes say which nodes ran where and why.

Calls run in tiers (docs/architecture.md, "Tiers"): no call waits for Numba. A call without
loops runs at once as the planned executor (executor/planned.py) runs it, on the host, while
its code is generated and compiled in a background thread (from the HILBERT_COMPILE-th call of
its signature), then swapped in. A call with loops runs its steps on the host (each step's work
in NumPy) while its code is compiled from its first call; a loop that starts from the call's
parameters (a model's train block, a self-recursive definition) moves to the compiled code at
the next step boundary once it is built, its state carried over.
"""

from __future__ import annotations

import atexit
import copy
import functools
import queue
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
from hilbert.compiler import ir, passes, settings
from hilbert.compiler.driver import Entry, Specialised, plan_entry
from hilbert.compiler.evaluate import Host
from hilbert.compiler.meanings import one_hot, position
from hilbert.compiler.plan import Plan
from hilbert.compiler.primitives import BY_OP, SPELLING
from hilbert.compiler.settings import names, whole_number
from hilbert.compiler.shapes import Scope, ShapeTable, infer_shapes
from hilbert.grammar.errors import HilbertError, RuntimeHilbertError, first_line, warn

from . import built, interrupt, threads
from .faults import LabelError, PositionError, StepCountError
from .numerics import detached, fresh_first, quietly
from .planned import PlannedProgram, einsum_kernel
from .reference import (
    guard_tapes,
    moving_components,
    run_loop,
    run_loop_grad,
    step_count,
    tapes_at_the_call,
)

if TYPE_CHECKING:
    from . import codegen

#: Environment variable naming ops (or "einsum") to run on the host, for tests and debugging.
HOST_ENVIRONMENT = "HILBERT_NUMBA_HOST"
_FLOAT64 = np.dtype(np.float64)
#: Environment variable saying when a loop-free call's generated code is built (compiled and
#: swapped in): "eager" (at the first call, before it runs), "never" (calls stay on the host),
#: or N (in a background thread from the N-th call of a signature). See COMPILE_AFTER.
COMPILE_ENVIRONMENT = "HILBERT_COMPILE"
#: The call of a signature from which its code is built in the background, by default: a
#: signature called once is never compiled (a call made once costs the host's milliseconds,
#: not Numba's seconds); one called again is compiled while the calls go on on the host.
COMPILE_AFTER = 2
#: The deepest ifs and loops one generated function nests: Python refuses more than 20 nested
#: loop blocks (and 100 levels of indentation), and the code generator recurses per level. An
#: `if` or loop nesting deeper runs on the host, its inner ones compiled as functions of their
#: own (docs/semantics.md, "Limits").
NESTED_IFS = 40
NESTED_LOOPS = 6
#: What a loop-free program's plan says before its code is built.
TIERED = ("the first calls run on the host (each einsum along its path as NumPy/BLAS pairwise "
          "steps, entrywise work in NumPy) until the generated code is built and swapped in "
          f"({COMPILE_ENVIRONMENT} says when: by default in a background thread from call "
          f"{COMPILE_AFTER})")
#: What a tiered program's plan says once its code is built.
BUILT = "the generated code is built: calls run on it"
#: What a program with loops says before its code is built, (1) when a running loop moves to
#: the compiled code at a step boundary, (2) when only the next call does.
STEPPED = ("the first calls run on the host (loops step by step in Python, each step's work in "
           "NumPy) while the generated code is built in the background "
           f"({COMPILE_ENVIRONMENT} says when: by default from the first call); ")
RESUMED = "a running loop moves to it at the next step boundary, its state carried over"
RESTARTED = "calls that start once it is built run on it"


def prepare(entry: Entry, shapes, optimize: str = "auto", values=None):
    """Specialise and plan `entry` for `shapes`; return the program that runs it: tiered when
    it has no loops (nothing is generated or compiled here), else compiled at its first call."""
    ready = plan_entry(entry, shapes, optimize, "numba", values)
    forced = names(HOST_ENVIRONMENT)
    threads.count()  # HILBERT_THREADS read here, on the caller's thread (E600 if unreadable)

    def replan() -> Plan:  # host walks and generated code run as Python hold every value
        return plan_entry(entry, shapes, optimize, "numba", values, keeps_all=True).plan

    looped = bool(ready.plan.loops)  # (every loop is planned, however deep)
    return TieredProgram(_tiers(ready, optimize, forced), replan, len(entry.params),
                         compile_when(looped))


class Tiers:
    """What every program of one signature shares, made once per plan (and kept with it): the
    host tier's program (the planned program; for a call with loops, a walk of the IR on the
    host with every loop stepped in Python), where a running loop may move to the second tier
    (`resumes`), and the runner of the second tier (made when first asked for), with the code
    it generates."""

    def __init__(self, ready: Specialised, optimize: str, forced: frozenset[str]):
        self.looped = bool(ready.plan.loops)
        if self.looped:
            self.resumes = resume_points(ready.body)
            note = STEPPED + (RESTARTED if self.resumes is None else RESUMED)
            walk = ScopeRunner([ready.body], (), ready.table, ready.plan, optimize,
                               Placement(ready.table, forced, host_only=True))
            self.host = HostProgram(walk, _noted(ready.plan, (note,)))
        else:
            self.resumes = None
            note = TIERED
            self.host = PlannedProgram(ready.body, _noted(ready.plan, (note,)))
        self.note = note
        self._ready = ready
        self._optimize = optimize
        self._forced = forced
        self._runner: ScopeRunner | None = None
        self._lock = threading.Lock()

    @property
    def runner(self) -> ScopeRunner:
        with self._lock:
            if self._runner is None:
                body, table = generated_ir(self._ready)
                self._runner = ScopeRunner([body], (), table, self._ready.plan, self._optimize,
                                           Placement(table, self._forced))
            return self._runner


def generated_ir(ready: Specialised) -> tuple[ir.Node, ShapeTable]:
    """The IR generated code runs, and its shapes: the plan's, with each sliding dot product
    split (masks.split_windowed_dots), which one compiled nest sums window by window. The host
    tier and the plan (its memory count included) keep the dot, which NumPy runs on the stored
    windows in one matrix-vector product. Made once per plan."""
    made = ready.derived.get("generated ir")
    if made is None:
        body = passes.run(passes.GENERATE, ready.body)
        table = ready.table if body is ready.body else infer_shapes(body, ready.plan.signature)
        made = ready.derived.setdefault("generated ir", (body, table))
    return made


def _tiers(ready: Specialised, optimize: str, forced: frozenset[str]) -> Tiers:
    key = ("numba tiers", optimize, forced)
    made = ready.derived.get(key)
    if made is None:
        made = ready.derived.setdefault(key, Tiers(ready, optimize, forced))
    return made


def build(program, label: str = "") -> None:
    """Compile `program` (one `prepare` made) now, so that its first call waits for no
    compiler: a loop-free program's second tier is built and swapped in (unless the memory
    guard keeps it on the host, as its plan then says); a program with loops has every one of
    its compiled regions compiled (loaded from the disk cache when it holds them). A build that
    lasts shows a line `compiling LABEL` on a terminal (hilbert.progress.compiling)."""
    from hilbert.progress import compiling

    with compiling(label, len(_regions(program.runner))) as advance:
        program.build(advance)


def first_call(program, label: str) -> None:
    """Before the first call of a new signature: what that call would wait for, built now under
    `build`'s line (under HILBERT_COMPILE=eager only: otherwise the first call starts on the
    host tier at once)."""
    if isinstance(program, TieredProgram) and program.eager:
        build(program, label)


def compile_when(looped: bool = False) -> int | None:
    """HILBERT_COMPILE as the call of a signature from which its code is built (0: eager, at
    the first call before it runs; None: never), or an ArgumentError (E600). By default a call
    with loops is built from its first call (its steps are worth compiling), one without from
    the COMPILE_AFTER-th."""
    text = settings.text(COMPILE_ENVIRONMENT).lower()
    if text in ("", "background"):
        return 1 if looped else COMPILE_AFTER
    if text == "eager":
        return 0
    if text == "never":
        return None
    return whole_number(COMPILE_ENVIRONMENT, "eager, never, or the call from which to compile "
                        f"in the background (a whole number ≥ 1; {COMPILE_AFTER} by default)",
                        smallest=1)


def _holds_every_value(runner: ScopeRunner) -> bool:
    """Whether `runner`'s program keeps every value until the call ends: a host walk, or
    generated code that runs as Python (it holds its locals)."""
    from .kernels import PYTHON_MODE  # NUMBA_DISABLE_JIT=1: generated code runs as Python

    return runner.whole is None or not runner.whole.generated.compiled or PYTHON_MODE


def _noted(plan: Plan, lines) -> Plan:
    """`plan` with `lines` added to its notes (a copy: dataclasses.replace costs 10 µs)."""
    noted = copy.copy(plan)
    object.__setattr__(noted, "notes", plan.notes + tuple(f"numba: {line}" for line in lines))
    return noted


def _second_tier(runner: ScopeRunner, plan: Plan, arity: int):
    """The program of generated code for `runner`: one function of the parameters, or a host
    walk calling compiled regions."""
    if runner.whole is not None:
        return WholeProgram(runner.whole, plan, arity)
    return HostProgram(runner, plan)


class Placement:
    """Which nodes compile. A node runs on the host if its op has no compiled form (or is
    forced there), a loop if anything in its body does, an `if` if anything in a branch does.
    `host_only`: nothing compiles (the host tier of a call with loops)."""

    def __init__(self, table: ShapeTable, forced: frozenset[str], host_only: bool = False):
        self.table = table
        self.forced = forced
        self.host_only = host_only
        self._reasons: dict[tuple[Scope, ir.Node], str | None] = {}
        self._nesting: dict[ir.Node, tuple[int, int]] = {}

    def reason(self, node: ir.Node, scope: Scope) -> str | None:
        """Why `node` (in `scope`) cannot be compiled, or None if it can."""
        key = (scope, node)
        if key not in self._reasons:
            self._reasons[key] = self._reason(node, scope)
        return self._reasons[key]

    def _reason(self, node: ir.Node, scope: Scope) -> str | None:
        if self.host_only:
            return "the host tier runs while the compiled code is built"
        match node:
            case ir.Prim(op=op):
                if op in self.forced:
                    return f"{op} is forced to the host by {HOST_ENVIRONMENT}"
                if "compiled" not in BY_OP[op].traits:
                    return f"{SPELLING.get(op, op)} has no compiled form"
            case ir.Einsum() if "einsum" in self.forced:
                return f"einsum is forced to the host by {HOST_ENVIRONMENT}"
            case ir.Loop():
                loops = self.nesting(node)[1] + 1
                if loops > NESTED_LOOPS:
                    return (f"it nests loops {loops} deep, and one compiled function holds at "
                            f"most {NESTED_LOOPS} (the inner ones compile on their own)")
                inner = self.first_host(ir.topological(node.until, *node.step), scope + (node,))
                if inner is not None:
                    return f"its body runs {_describe(inner[0])} on the host ({inner[1]})"
            case ir.LoopGrad():
                return "a loop run backwards keeps a tape of its states on the host"
            case ir.Cond():
                ifs = self.nesting(node)[0] + 1
                if ifs > NESTED_IFS:
                    return (f"it nests ifs {ifs} deep, and one compiled function holds at most "
                            f"{NESTED_IFS} (the inner ones compile on their own)")
                inner = self.first_host(ir.topological(node.then, node.orelse), scope)
                if inner is not None:
                    return f"a branch runs {_describe(inner[0])} on the host ({inner[1]})"
            case ir.Project():
                if self.reason(node.loop, scope) is not None:
                    return "it reads a loop that runs on the host"
        return None

    def nesting(self, root: ir.Node) -> tuple[int, int]:
        """How deep ifs and loops nest inside `root`'s branches (an `if`) or body (a loop),
        counted along the longest chain each: every `if` whose branch, and every loop whose
        body, reaches another counts one. (An `if`'s condition and a loop's start are computed
        outside it, so they do not nest.) Computed on an explicit stack, once per node."""
        memo = self._nesting
        stack = [(root, False)]
        while stack:
            node, ready = stack.pop()
            if node in memo:
                continue
            inside = _nested_in(node)
            if not ready:
                stack.append((node, True))
                stack.extend((kid, False) for kid in inside if kid not in memo)
                continue
            ifs = loops = 0
            for kid in inside:
                below_ifs, below_loops = memo[kid]
                ifs = max(ifs, below_ifs + isinstance(kid, ir.Cond))
                loops = max(loops, below_loops + isinstance(kid, ir.Loop))
            memo[node] = (ifs, loops)
        return memo[root]

    def first_host(self, nodes, scope):
        for n in nodes:
            why = self.reason(n, scope)
            if why is not None:
                return n, why
        return None


def _nested_in(node: ir.Node) -> tuple[ir.Node, ...]:
    """What `node`'s code nests: an `if`'s branches, a loop's body, else what it reads."""
    match node:
        case ir.Cond():
            return (node.then, node.orelse)
        case ir.Loop():
            return (node.until, *node.step)
    return ir.children(node)


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
        from .kernels import PYTHON_MODE  # (Numba is loaded once something is to compile)

        self.python_mode = PYTHON_MODE  # NUMBA_DISABLE_JIT: NumPy scalars that warn on x/0
        self.region = region
        self._table = table
        self._optimize = optimize
        self._generated: codegen.Generated | None = None
        self._function = None
        self.scalars = tuple(i for i, n in enumerate(region.inputs)
                             if not table.scopes[region.scope][n])
        self.arrays = tuple(i for i in range(len(region.inputs)) if i not in self.scalars)

    @property
    def generated(self) -> codegen.Generated:
        """The region's code, generated when first asked for (a call on the host needs none)."""
        if self._generated is None:
            from . import codegen

            self._generated = codegen.generate(self.region, self._table, self._optimize,
                                              exact=True)
        return self._generated

    @property
    def source(self) -> str:
        return self.generated.source

    @property
    def function(self):
        """The generated function (a Numba dispatcher when its code needs compiling), made
        once; Numba compiles it at its first call, or when `compile` says."""
        if self._function is None:
            from . import cache

            self._function = cache.function(self.generated.source, self.generated.compiled)
        return self._function

    @function.setter
    def function(self, value) -> None:
        self._function = value

    def compile(self) -> None:
        """Compile the function now, for the argument types `convert` gives (loaded from the
        disk cache when it holds them), so that its first call runs compiled code at once."""
        function = self.function
        if not self.generated.compiled or not hasattr(function, "compile"):
            return  # plain NumPy calls, or NUMBA_DISABLE_JIT: nothing to compile
        from numba import types

        shapes = self._table.scopes[self.region.scope]
        signature = [types.Array(types.float64, len(shapes[n]), "C") if shapes[n]
                     else types.float64 for n in self.region.inputs]
        if self.generated.loops:
            signature.append(types.Array(types.int64, 1, "C"))  # interrupt's stop flag
        function.compile(tuple(signature))

    def __call__(self, args):
        """(value, loop steps run) for these input values (as `convert` makes them). Anything
        compiled code raises but a bad step count is a bug and propagates: a bad disk cache
        entry never reaches here (disk.HilbertCache replaces it while loading)."""
        try:
            if self.python_mode:
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


class ScopeRunner(Host):
    """Evaluates one scope (the call's, or a loop body on the host): compiled regions for every
    compilable node the host needs, the host runtime (compiler/evaluate.py, each einsum along
    its planned path) for the rest."""

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
        self._einsums: dict = {}
        super().__init__(self._einsum)
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
        from .codegen import Region

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

    def run(self, leaves: tuple, boundary=None) -> object:
        """The value of the scope's first root for these leaves. `boundary`: what the call's
        loops call at each step boundary (reference.run_loop), which may move the call on."""
        memo: dict = {_BOUNDARY: boundary}
        if self._tapes:  # E700 before the forward run that comes first, not after it
            quietly(guard_tapes, self._tapes, self.table.states,
                    lambda node: self.eval(node, memo, leaves))
        return self.eval(self.roots[0], memo, leaves)

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
            return value
        return super()._value(node, memo, leaves)

    def _einsum(self, node: ir.Einsum, operands: list):
        key = (node.spec, tuple(np.shape(o) for o in operands))
        kernel = self._einsums.get(key)
        if kernel is None:
            kernel = self._einsums[key] = einsum_kernel(node.spec, key[1], self.optimize)
        return kernel(*operands)

    def loop(self, loop: ir.Loop, state: tuple, memo: dict):
        """A loop whose body holds host work: a Python loop, its body's compilable parts still
        compiled (as the reference executor runs it, step counts checked the same way); the
        call's memo holds the hook its step boundaries call (_BOUNDARY)."""
        body, = self.bodies[loop]
        with interrupt.host_loop():  # Ctrl-C between steps, never inside a compiled call
            final, steps = run_loop(loop, state, interrupt.stepped(body.eval),
                                    boundary=memo.get(_BOUNDARY))
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
_BOUNDARY = "step boundary"


def resume_points(body: ir.Node) -> tuple[tuple[int, int], ...] | None:
    """Where a call of `body` can move from the host to compiled code in the middle of its
    loop: ((component, parameter index), …) when its scope holds one loop (nothing run
    backwards), whose counter and every moving component start from a parameter of the call
    that nothing else reads. Calling the compiled program with those parameters set to the
    state at a step boundary (the counter to the steps left) then runs the rest of the loop,
    and what follows it, exactly. None otherwise."""
    loops = [n for n in ir.topological(body) if isinstance(n, (ir.Loop, ir.LoopGrad))]
    if len(loops) != 1 or not isinstance(loops[0], ir.Loop):
        return None
    loop = loops[0]
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


class WholeProgram:
    """A call that is one generated function of the parameters: the fast path."""

    tier = "compiled"  # (the tier every call of it runs on: TieredProgram's second)

    def __init__(self, region: CompiledRegion, plan: Plan, arity: int):
        self.plan = plan
        self.region = region
        self.function = region.function
        self.positions = tuple(n.index for n in region.region.inputs)
        # plain NumPy calls on the parameters as they are: nothing to convert, no checked
        # read whose error the region translates (x[t], oneHot)
        self.direct = (self.positions == tuple(range(arity)) and not region.scalars
                       and not region.generated.compiled and not region.generated.reads)
        # what a call runs: straight to fresh_first when direct (a Python frame less: a
        # small product's call is about 2 µs, each frame 0.07)
        self.run = functools.partial(fresh_first, self.function) if self.direct else self
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
    """A call with host work: the host walks the call, compiled regions do the rest (none,
    for the host tier of a call with loops)."""

    tier = "compiled"

    def __init__(self, runner: ScopeRunner, plan: Plan):
        self.plan = plan
        self.runner = runner
        self.run = self  # (what a call runs, as WholeProgram's)

    def __call__(self, values, boundary=None):
        return detached(quietly(self.runner.run, tuple(values), boundary), values)

    @property
    def loop_steps(self) -> int:
        return self.runner.loop_steps


class TieredProgram:
    """A call in two tiers. The first, from the first call, needs nothing compiled: the
    planned program on the host (executor/planned.py), or for a call with loops a walk of it
    on the host that steps each loop in Python. The second: the generated code (one compiled
    function, or plain NumPy calls when nothing needs compiling), built when HILBERT_COMPILE
    says (`compile_when`) and swapped in once built, so a call never waits for Numba unless
    asked to; a call in the middle of a loop whose start the second tier can take
    (`resume_points`) moves to it at the next step boundary. `tier` is the tier the latest
    call ran on ("host" or "compiled"); both give the same results but for the last bits'
    rounding (docs/semantics.md, "Tiers")."""

    def __init__(self, tiers: Tiers, replan: Callable[[], Plan], arity: int, when: int | None):
        self.host = tiers.host
        self.host_calls = 0  # calls run on the host so far (counted loosely under threads)
        self.moved = 0  # calls that moved to the compiled code at a step boundary
        self._resumes = tiers.resumes
        self.looped = tiers.looped
        self._host_steps = 0  # steps host calls ran before they moved
        self._tiers = tiers
        self._replan = replan
        self._arity = arity
        self._when = when
        self._plan = self.host.plan
        self._second: WholeProgram | HostProgram | None = None  # generated, not yet built
        self._fast: WholeProgram | HostProgram | None = None  # built and swapped in
        self._lock = threading.RLock()  # (build holds it while it generates the code)
        self._done = threading.Event()  # set when the build has ended, built or not
        self.queued = False  # handed to the background builder
        self._error: BaseException | None = None

    @property
    def plan(self) -> Plan:
        """The plan, its notes saying which tier calls run on (and, once the code is generated,
        what it holds)."""
        return self._plan

    def __call__(self, values):
        fast = self._fast
        if fast is not None:
            return fast.run(values)
        return self._first_tier(values)

    @property
    def tier(self) -> str | None:
        """The tier calls run on now ("host" or "compiled"), None before the first call: the
        tier of the latest call, but for one that ran while the code was being swapped in."""
        if self._fast is not None:
            return "compiled"
        return "host" if self.host_calls else None

    @property
    def eager(self) -> bool:
        """Whether its code is built before its first call runs (HILBERT_COMPILE=eager)."""
        return self._when == 0

    @property
    def built(self) -> bool:
        """Whether the generated code is built and calls run on it."""
        return self._fast is not None

    def _first_tier(self, values):
        if self._error is not None:  # the build failed: as a call that compiles would
            if self._when == 0 or isinstance(self._error, HilbertError):
                raise _fresh(self._error) from self._error  # (never one object raised again)
            self._stay_on_host(self._error)
        when = self._when
        if when == 0 and not self._done.is_set():
            if self.build() is not None:
                return self(values)
        self.host_calls += 1
        if not self.looped:
            self._start_when_due()
            return self.host(values)
        try:
            value = self.host(values, functools.partial(self._boundary, values))
        except _Moved as moved:
            return moved.value
        self._start_when_due()
        return value

    def sources(self) -> list[str]:
        """The generated sources of its compiled regions (generated now if they were not)."""
        return [r.source for r in _regions(self.runner) if r.generated.compiled]

    def kept(self) -> bool:
        """Whether a build of this program's code is in the disk cache (executor/built.py)."""
        try:
            return built.kept(self.sources())
        except Exception:  # noqa: BLE001 (code that cannot be generated is not kept)
            return False

    def _start_when_due(self) -> None:
        """Queue the build once this signature has had the calls HILBERT_COMPILE asks for. A
        call with loops queues it at its first step boundary (or its end): its first step, and
        a one-step train call, then run before Numba competes with them for the interpreter."""
        when = self._when
        if when is not None and self.host_calls >= when and not self.queued \
                and not self._done.is_set():
            self._start()

    def _boundary(self, values, state: tuple, steps: int) -> None:
        """At a step boundary of a host call's loop: the build is queued when due; once it is
        built, the rest of the call runs on the compiled code from `state` when its loop can
        move (raised as _Moved, with its result)."""
        self._start_when_due()
        fast = self._fast
        if fast is None or self._resumes is None:
            return
        moved = list(values)
        for component, parameter in self._resumes:
            moved[parameter] = state[component]
        value = fast.run(moved)
        self._host_steps += steps
        self.moved += 1
        raise _Moved(value)

    def _stay_on_host(self, err: BaseException) -> None:
        """After a background build failed for a reason of hilbert's own (a bug): calls go on
        on the host tier, which gives the same results, and the user is told once (W903)."""
        self._error = None
        self._when = None
        self._plan = _noted(self.host.plan, (f"calls stay on the host: the compiled code could "
                                             f"not be built ({type(err).__name__}: {err})",))
        warn("W903", f"the compiled code of a call could not be built ({type(err).__name__}: "
             f"{first_line(err)}); its calls go on on the host tier, with the same results. "
             "This is a bug in hilbert: please report it with the .hb source", stacklevel=6)

    def _start(self) -> None:
        with self._lock:
            if self.queued or self._done.is_set():
                return
            self.queued = True
        _BUILDER.submit(self)

    def build_quietly(self) -> None:
        """`build`, its error kept for the next call to raise (the background thread's way)."""
        try:
            self.build()
        except Exception:  # noqa: BLE001, S110 (kept in self._error: the next call raises it)
            pass

    def build(self, advance=None):
        """Generate the code, compile it for this signature and swap it in, in this thread (the
        background thread calls this; so may anyone who wants the compiled tier now). Returns
        the program calls now run on, or None when they stay on the host (the generated code
        would hold more memory than the limit allows; the plan's notes say so). A build that
        fails raises here, and at every later call (as a call that compiles would); one that
        is interrupted (Ctrl-C) is tried again by the next call that builds."""
        with self._lock:
            if self._done.is_set():
                return self._fast
            try:
                fast = self._built(advance)
            except Exception as err:
                self._error = err
                self._done.set()
                raise
            self._done.set()
            return fast

    def _built(self, advance=None):
        second = self.generated()
        plan = second.plan
        runner = self._tiers.runner
        if _holds_every_value(runner):  # planned again, as such: within the memory limit?
            try:
                plan = _noted(self._replan(), (self._tiers.note, BUILT, *_notes(runner)))
            except RuntimeHilbertError as err:
                if err.code != "E700":
                    raise
                self._plan = _noted(self.host.plan, (f"calls stay on the host: the generated "
                                                     f"code would hold every value of a call "
                                                     f"({err.message})",))
                return None
        for region in _regions(runner):
            region.compile()
            if advance is not None:
                advance()
        if self.looped:
            built.keep(self.sources())
        second.plan = self._plan = plan
        self._fast = second
        return second

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until a build started (by a call, or `build`) has ended; whether it has."""
        return self._done.wait(timeout)

    def generated(self) -> WholeProgram | HostProgram:
        """The second tier's program (its code generated now if it was not yet; nothing is
        compiled here)."""
        with self._lock:
            if self._second is None:
                plan = _noted(self.host.plan, (BUILT, *_notes(self._tiers.runner)))
                self._second = _second_tier(self._tiers.runner, plan, self._arity)
            return self._second

    @property
    def region(self) -> CompiledRegion:
        """The generated function of a call that is one (as WholeProgram's), generated now if it
        was not yet."""
        second = self.generated()
        assert isinstance(second, WholeProgram), "a call with host work has no one region"
        return second.region

    @property
    def runner(self) -> ScopeRunner:
        return self._tiers.runner

    @property
    def loop_steps(self) -> int:
        """Loop steps its calls have run so far, on either tier."""
        steps = self.host.loop_steps + self._host_steps
        second = self._second
        return steps + (second.loop_steps if second is not None else 0)


class _Moved(Exception):  # noqa: N818 (not an error: how a host call hands over its result)
    """Raised at a step boundary of a host call once the compiled code has finished it."""

    def __init__(self, value) -> None:
        super().__init__()
        self.value = value


class _Builder:
    """The background thread that builds queued programs one after another (Numba compiles one
    function at a time whatever the threads), started with the first program queued. It is a
    daemon, but a process does not end while it builds a program with loops: at exit `finish`
    waits for those (Ctrl-C skips the wait), so that the next process finds their machine code
    in the disk cache and moves to it as soon as it is loaded, instead of compiling it again.
    Queued loop-free programs are dropped at exit (their first calls cost the host's
    milliseconds anyway); what a build was writing to the disk cache is written whole or not at
    all (executor/disk.py)."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[TieredProgram] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._pending: list[TieredProgram] = []  # programs with loops queued or being built
        self._exiting = False

    def submit(self, program: TieredProgram) -> None:
        with self._lock:
            if program.looped:
                self._pending.append(program)
            self._queue.put(program)
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name="hilbert-compile",
                                                daemon=True)
                self._thread.start()
                atexit.register(self.finish)

    def _work(self) -> None:
        while True:
            program = self._queue.get()
            try:
                if not self._exiting or (program.looped and not program.kept()):
                    program.build_quietly()
            finally:
                with self._lock:
                    if program in self._pending:
                        self._pending.remove(program)

    def finish(self) -> None:
        """At exit: wait until every queued program with loops whose code the disk cache does
        not hold yet is built, saying so on a terminal once the wait has lasted a second."""
        from hilbert.progress import BUILD_LINE_DELAY_S, wanted

        self._exiting = True
        with self._lock:
            pending = list(self._pending)
        needed = [p for p in pending if not p.kept()]
        waited = 0.0
        try:
            for program in needed:
                while not program.wait(BUILD_LINE_DELAY_S):
                    waited += BUILD_LINE_DELAY_S
                    if waited == BUILD_LINE_DELAY_S and wanted(sys.stderr):
                        print("hilbert: finishing the compilation of loops for the disk "
                              "cache (Ctrl-C skips it)", file=sys.stderr, flush=True)
        except KeyboardInterrupt:
            pass


_BUILDER = _Builder()


def _fresh(err: BaseException) -> BaseException:
    """A new exception like `err`, to raise again without growing `err`'s traceback."""
    try:
        return copy.copy(err)
    except Exception:  # noqa: BLE001 (an exception whose arguments cannot be given again)
        return RuntimeError(f"{type(err).__name__}: {err}")


def _notes(runner: ScopeRunner) -> tuple[str, ...]:
    return tuple(runner.notes())


def _regions(runner: ScopeRunner) -> list[CompiledRegion]:
    """Every compiled region of a runner and of the runners of its host loops' bodies."""
    found: list[CompiledRegion] = []
    pending = [runner]
    while pending:
        current = pending.pop()
        found += current.regions.values()
        for bodies in current.bodies.values():
            pending += bodies
    return found
