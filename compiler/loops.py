"""Loops run on the host, one step at a time: a counted loop's step count checked (E500), the
state a step changes, a loop run backwards from a tape of its states (E700 before the tape
would pass the memory limit). Every runtime that runs a loop on the host runs it here: the
host core (compiler/evaluate.py's `Host`, so the reference and dask executors), the numba
executor's host loops; the JAX executor's lowering reads the same step-count rule."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from ..grammar.errors import RuntimeHilbertError
from . import ir
from .counting import EXACT
from .memory import memory_limit
from .plan.text import human_bytes

#: How a loop's body is evaluated: `eval_body(node, memo, state)`.
EvalBody = Callable[[ir.Node, dict, tuple], object]


def step_count(loop: ir.Loop, value) -> int:
    """The trip count of a counted loop, or a HilbertError naming the loop and the value."""
    if np.iscomplexobj(value) and np.imag(value) != 0:
        raise RuntimeHilbertError(
            "E500", f"{loop.name} runs a counted loop, so its step count must be a non-negative "
            f"whole number, but it was given the complex number {complex(value)}", loop.span)
    number = float(np.real(value))
    if not math.isfinite(number) or number < 0 or not number.is_integer() or number > EXACT:
        why = ("not finite" if not math.isfinite(number) else "negative" if number < 0
               else "not whole" if not number.is_integer()
               else "too large to count down by one exactly in float64")
        raise RuntimeHilbertError(
            "E500", f"{loop.name} runs a counted loop, so its step count must be a non-negative "
            f"whole number, but it was given {number:g} ({why})", loop.span)
    return int(number)


def moving_components(loop: ir.Loop) -> list[int]:
    """The state components a step changes (not the counter, which the loop itself counts)."""
    return [i for i, s in enumerate(loop.step) if s != ir.State(i, None) and i != loop.counter]


def counted(counter, left: int):
    """`left` as a number of the counter's own dtype (a float32 call's counter stays float32,
    so nothing it reaches widens to float64)."""
    return np.asarray(counter).dtype.type(left)


class Stepping:
    """How a runtime makes a loop's values between steps. On the host they are NumPy values
    already: nothing to do. A lazy runtime (dask) overrides `settle` (a state computed and
    kept before the next step reads it) and `known` (a count or a condition read on the
    client)."""

    def settle(self, values: Sequence) -> tuple:
        """`values` (a state, or a step's new components) made, before anything reads them."""
        return tuple(values)

    def known(self, value):
        """`value` (a step count, or a loop's condition) as a number the client holds."""
        return value

    def _step(self, loop: ir.Loop, frozen: tuple, moving: list[int], memo: dict,
              eval_body: EvalBody) -> tuple:
        """One step's new values of the `moving` components, from the state `frozen`."""
        return self.settle([eval_body(loop.step[i], memo, frozen) for i in moving])


#: The host's stepping: values are NumPy values as they are made.
PLAIN = Stepping()


def run_loop(loop: ir.Loop, state, eval_body: EvalBody, tape: list | None = None,
             boundary=None, stepping: Stepping = PLAIN) -> tuple[tuple, int]:
    """(final state, steps run) of `loop` from `state`; `eval_body(node, memo, state)`
    evaluates the body and `stepping` makes the values between steps. A fresh memo each step
    keeps memory constant; counted loops check their count first (E500) and run exactly that
    many steps. With a `tape`, the state before every step is appended to it (what running
    the loop backwards needs). `boundary(state, steps)`, when given, is called at every step
    boundary after the first step, with the state the next step starts from (a counted loop's
    counter holding the steps left) and the steps run so far: it may end the loop by raising
    (a call moving to compiled code)."""
    moving = moving_components(loop)
    state = list(stepping.settle(state))  # (what every step reads is made once)
    if loop.counter is not None:
        remaining = step_count(loop, stepping.known(state[loop.counter]))
        if tape is not None:
            tape_guard(loop, state, moving, remaining)
        for left in range(remaining, 0, -1):
            state[loop.counter] = counted(state[loop.counter], left)
            frozen = tuple(state)
            if boundary is not None and left != remaining:
                boundary(frozen, remaining - left)
            _advance(loop, state, frozen, moving, {}, tape, eval_body, stepping)
        state[loop.counter] = counted(state[loop.counter], 0)
        return tuple(state), remaining
    steps = 0
    while True:
        memo: dict = {}
        frozen = tuple(state)
        if boundary is not None and steps:
            boundary(frozen, steps)
        if stepping.known(eval_body(loop.until, memo, frozen)) != 0:
            return frozen, steps
        steps += 1
        if tape is not None:
            tape_guard(loop, state, moving, steps)
        _advance(loop, state, frozen, moving, memo, tape, eval_body, stepping)


def _advance(loop: ir.Loop, state: list, frozen: tuple, moving: list[int], memo: dict,
             tape: list | None, eval_body: EvalBody, stepping: Stepping) -> None:
    """`state` moved on by one step from `frozen` (kept on the tape first, when there is one)."""
    if tape is not None:
        tape.append(frozen)
    for i, value in zip(moving, stepping._step(loop, frozen, moving, memo, eval_body),
                        strict=True):
        state[i] = value


def run_loop_grad(node: ir.LoopGrad, init: tuple, seeds: tuple, eval_forward: EvalBody,
                  eval_body: EvalBody, stepping: Stepping = PLAIN) -> tuple[tuple, int]:
    """(adjoints of the starting state's carried components, steps run) of a LoopGrad: the loop
    forward from `init` keeping every step's state (`eval_forward` evaluates its body), then
    each step's adjoint in reverse (`eval_body` evaluates the vjp terms), each made by
    `stepping` before the next reads it."""
    tape: list = []
    _, steps = run_loop(node.loop, init, eval_forward, tape, stepping=stepping)
    adjoints = tuple(seeds)
    while tape:
        before = tape.pop()
        memo: dict = {}
        leaves = before + adjoints
        adjoints = stepping.settle([eval_body(term, memo, leaves) for term in node.vjp])
    return adjoints, steps


def tape_guard(loop: ir.Loop, state: Sequence, moving: list[int], steps: int) -> None:
    """E700 before a backward run's tape of `steps` states would pass the memory limit (the
    state's sizes are read, not its values: lazy values are not computed)."""
    per_step = sum(math.prod(getattr(state[i], "shape", ())) for i in moving) * 8
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
        if shapes is None or loop.counter is None:  # (a loop with no counter keeps no tape)
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
