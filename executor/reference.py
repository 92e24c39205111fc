"""The reference executor: a plain NumPy interpreter of inlined IR, the oracle for the rest."""

from __future__ import annotations

import math

import numpy as np
from hilbert.compiler import ir
from hilbert.compiler.counting import NOTHING, Counting, counting_in
from hilbert.compiler.evaluate import Host, numpy_einsum
from hilbert.executor.numerics import detached, quietly
from hilbert.grammar.errors import RuntimeHilbertError

#: Plans for this executor are of the IR as written (compiler/driver.plan_entry's as_written).
AS_WRITTEN = True
#: Above 2^53, float64 cannot hold every whole number, so `t − 1` would stop counting down.
_EXACT = 2.0 ** 53


def step_count(loop: ir.Loop, value) -> int:
    """The trip count of a counted loop, or a HilbertError naming the loop and the value."""
    if np.iscomplexobj(value) and np.imag(value) != 0:
        raise RuntimeHilbertError(
            "E500", f"{loop.name} runs a counted loop, so its step count must be a non-negative "
            f"whole number, but it was given the complex number {complex(value)}", loop.span)
    number = float(np.real(value))
    if not math.isfinite(number) or number < 0 or not number.is_integer() or number > _EXACT:
        why = ("not finite" if not math.isfinite(number) else "negative" if number < 0
               else "not whole" if not number.is_integer()
               else "too large to count down by one exactly in float64")
        raise RuntimeHilbertError(
            "E500", f"{loop.name} runs a counted loop, so its step count must be a non-negative "
            f"whole number, but it was given {number:g} ({why})", loop.span)
    return int(number)


class Reference(Host):
    """The reference executor's runtime: the host core (compiler/evaluate.py) with loops as
    Python loops over a state tuple, run backwards from a tape of their states."""

    def __init__(self, einsum=numpy_einsum, dtype: str = "float64",
                 counting: Counting = NOTHING):
        super().__init__(einsum, dtype, counting)
        self.loop_steps = 0  # loop iterations run so far (an instrument for tests and plans)

    def run(self, root: ir.Node, args: tuple[np.ndarray, ...], memo: dict | None = None):
        """The value of `root` for these arguments, NumPy's warnings kept quiet (inf and NaN
        are values), never sharing memory with an argument; `memo` holds values already
        computed for this call (none by default)."""
        value = quietly(self.eval, root, {} if memo is None else memo, args)
        return detached(self.answer(value), args)

    def loop_grad(self, node: ir.LoopGrad, init: tuple, seeds: tuple):
        final, steps = run_loop_grad(node, init, seeds, self.within(node.loop, self.eval),
                                     self.within(node, self.eval))
        self.loop_steps += steps
        return final

    def loop(self, loop: ir.Loop, state: tuple, memo: dict):
        final, steps = run_loop(loop, state, self.within(loop, self.eval))
        self.loop_steps += steps
        return final


def moving_components(loop: ir.Loop) -> list[int]:
    """The state components a step changes (not the counter, which the loop itself counts)."""
    return [i for i, s in enumerate(loop.step) if s != ir.State(i, None) and i != loop.counter]


def counted(counter, left: int):
    """`left` as a number of the counter's own dtype (a float32 call's counter stays float32,
    so nothing it reaches widens to float64)."""
    return np.asarray(counter).dtype.type(left)


def run_loop(loop: ir.Loop, state, eval_body, tape: list | None = None,
             boundary=None) -> tuple[tuple, int]:
    """(final state, steps run) of `loop` from `state` on the host; `eval_body(node, memo,
    state)` evaluates the body. A fresh memo each step keeps memory constant; counted loops
    check their count first (E500) and run exactly that many steps. With a `tape`, the state
    before every step is appended to it (what running the loop backwards needs). `boundary(
    state, steps)`, when given, is called at every step boundary after the first step, with
    the state the next step starts from (a counted loop's counter holding the steps left) and
    the steps run so far: it may end the loop by raising (a call moving to compiled code)."""
    moving = moving_components(loop)
    state = list(state)
    if loop.counter is not None:
        remaining = step_count(loop, state[loop.counter])
        if tape is not None:
            tape_guard(loop, state, moving, remaining)
        for left in range(remaining, 0, -1):
            memo: dict = {}
            state[loop.counter] = counted(state[loop.counter], left)
            frozen = tuple(state)
            if boundary is not None and left != remaining:
                boundary(frozen, remaining - left)
            if tape is not None:
                tape.append(frozen)
            for i in moving:
                state[i] = eval_body(loop.step[i], memo, frozen)
        state[loop.counter] = counted(state[loop.counter], 0)
        return tuple(state), remaining
    steps = 0
    while True:
        memo = {}
        frozen = tuple(state)
        if boundary is not None and steps:
            boundary(frozen, steps)
        if eval_body(loop.until, memo, frozen) != 0:
            return frozen, steps
        steps += 1
        if tape is not None:
            tape_guard(loop, state, moving, steps)
            tape.append(frozen)
        for i in moving:
            state[i] = eval_body(loop.step[i], memo, frozen)


def tape_guard(loop: ir.Loop, state: list, moving: list[int], steps: int) -> None:
    """E700 before a backward run's tape of `steps` states would pass the memory limit."""
    from hilbert.compiler.plan import memory_limit
    from hilbert.compiler.plan.text import human_bytes

    per_step = sum(np.size(state[i]) for i in moving) * 8
    limit = memory_limit()
    if per_step * steps > limit:
        raise RuntimeHilbertError(
            "E700", f"running {loop.name} backwards keeps its state of every step: {steps:,} "
            f"steps of {human_bytes(per_step)} need {human_bytes(per_step * steps)}, over the "
            f"limit of {human_bytes(limit)} (set HILBERT_MEMORY_LIMIT to change it)", loop.span)


def tapes_at_the_call(root: ir.Node) -> list[ir.LoopGrad]:
    """The counted loops run backwards that a call of `root` runs whatever happens (in the
    call's own scope, not inside a branch of an `if` nor a loop's body) and whose step count
    reads only the call's arguments: their tapes can be checked before anything runs."""
    found: list[ir.LoopGrad] = []
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, ir.LoopGrad) and node.loop.counter is not None and not any(
                isinstance(n, (ir.Loop, ir.LoopGrad, ir.Project, ir.State))
                for n in ir.topological(node.loop.init[node.loop.counter])):
            found.append(node)
        stack.extend((node.cond,) if isinstance(node, ir.Cond) else ir.children(node))
    return found


def guard_tapes(tapes: list[ir.LoopGrad], states: dict, count) -> None:
    """E700 (as `tape_guard` words it) before a call runs a single step, for each of `tapes`
    (its `tapes_at_the_call`) whose step count is known at the call and whose tape would pass
    the memory limit. `states` are the loops' state shapes (a ShapeTable's states,
    by scope: a loop run backwards in the call's scope has its state at `(loop,)`), and
    `count(node)` is the value of a step count's node (computed once, as the call will), or
    None where it is not known yet (a dask executor's lazy number). A count that is no count
    is left for the loop itself to refuse (E500), where it would have."""
    for node in tapes:
        loop = node.loop
        shapes = states.get((loop,))
        if shapes is None:
            continue
        value = count(loop.init[loop.counter])
        if value is None:
            continue
        try:
            steps = step_count(loop, value)
        except RuntimeHilbertError:
            continue
        zeros = [np.broadcast_to(np.float64(0), shape) for shape in shapes]  # sizes only
        tape_guard(loop, zeros, moving_components(loop), steps)


def run_loop_grad(node: ir.LoopGrad, init: tuple, seeds: tuple, eval_forward,
                  eval_body) -> tuple[tuple, int]:
    """(adjoints of the starting state's carried components, steps run) of a LoopGrad: the loop
    forward from `init` keeping every step's state (`eval_forward` evaluates its body), then
    each step's adjoint in reverse (`eval_body` evaluates the vjp terms)."""
    tape: list = []
    _, steps = run_loop(node.loop, init, eval_forward, tape)
    adjoints = tuple(seeds)
    while tape:
        before = tape.pop()
        memo: dict = {}
        leaves = before + adjoints
        adjoints = tuple(eval_body(term, memo, leaves) for term in node.vjp)
    return adjoints, steps


class ReferenceProgram:
    """The reference executor's callable for one signature: the IR as written, index masks
    read as shifts (docs/semantics.md), nothing fused, plain numpy.einsum. A loop run
    backwards whose tape would pass the memory limit is refused before the call runs a step
    when its step count is known at the call (`guard_tapes`)."""

    def __init__(self, entry, shapes, plan, states: dict | None = None):
        self.body = entry.masked
        self.plan = plan
        self.evaluator = Reference(dtype=plan.dtype, counting=counting_in(self.body, plan.dtype))
        self.tapes = tapes_at_the_call(self.body)
        if self.tapes and states is None:
            from hilbert.compiler.passes.shapes import infer_shapes

            states = infer_shapes(self.body, tuple(shapes)).states
        self.states = states or {}

    def __call__(self, values):
        memo: dict = {}
        if self.tapes:
            leaves = tuple(values)
            quietly(guard_tapes, self.tapes, self.states,
                    lambda node: self.evaluator.eval(node, memo, leaves))
        return self.evaluator.run(self.body, values, memo)

    @property
    def loop_steps(self) -> int:
        return self.evaluator.loop_steps


def prepare(entry, shapes, optimize: str = "auto", values=None,
            math: str = "exact", dtype: str = "float64") -> ReferenceProgram:
    """Specialise `entry` to `shapes` and `dtype` and return the program that runs it (`math`
    changes nothing: NumPy's functions are within every mode's bounds)."""
    from hilbert.compiler.driver import plan_entry

    ready = plan_entry(entry, shapes, optimize, "reference", values, as_written=AS_WRITTEN,
                       dtype=dtype)
    # the table's state shapes are the body's when the reference runs what was planned
    states = ready.table.states if ready.body is entry.masked else None
    return ReferenceProgram(entry, shapes, ready.plan, states)
