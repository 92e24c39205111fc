"""Loops lowered to JAX, the part of `Lowering` (executor/jax/lowering.py) that runs them: a
counted loop as `lax.fori_loop`, a conditional one as `lax.while_loop`, its state carried in
the dtypes its steps keep, and a loop run backwards (LoopGrad) as its loop forward writing
each step's state to a tape, then `lax.fori_loop` down the tape."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ...compiler import ir
from ...compiler.counting import EXACT
from ...compiler.loops import moving_components, step_count
from ...grammar.errors import HilbertError
from .ledger import TapeTooShort
from .meanings import is_host


class Loops:
    """Lowering's loops (a base of it: the walk, checks and ledger are Lowering's own)."""

    def loop(self, loop: ir.Loop, state: tuple, memo):
        return self._forward(loop, state)[0]

    def _forward(self, loop: ir.Loop, state: tuple, tape: tuple | None = None):
        """(final state, steps, tape) of `loop` from `state`; with a tape (one buffer per
        moving component), the state before each step written to it. A tape too short for
        the steps (noted by the caller, and the call traced again) is written at its last row
        by a conditional loop, which runs on to count its steps; a counted loop, whose steps
        are its count, runs none."""
        moving = moving_components(loop)
        types = self._carried(loop, state, moving)
        body = self.within(loop, self.eval)  # (its body's counted values: compiler/counting.py)
        start = tuple(jnp.asarray(state[i]).astype(t) for i, t in zip(moving, types, strict=True))

        def frozen(values, counter=None) -> tuple:
            whole = list(state)
            for i, v in zip(moving, values, strict=True):
                whole[i] = v
            if counter is not None:
                whole[loop.counter] = counter
            return tuple(whole)

        def taped(tape, values, at):
            if tape is None:
                return None
            room = tape[0].shape[0] if tape else 1
            row = jnp.minimum(at, room - 1)
            return tuple(lax.dynamic_update_index_in_dim(t, v, row, 0)
                         for t, v in zip(tape, values, strict=True))

        def stepped(values, leaves) -> tuple:
            memo: dict = {}
            return tuple(jnp.asarray(body(loop.step[i], memo, leaves)).astype(t)
                         for i, t in zip(moving, types, strict=True))

        if loop.counter is not None:
            return self._counted_loop(loop, state, start, tape, frozen, taped, stepped)
        return self._conditional_loop(loop, state, start, tape, body, frozen, taped, stepped)

    def _counted_loop(self, loop: ir.Loop, state: tuple, start: tuple, tape: tuple | None,
                      frozen, taped, stepped):
        """`_forward` of a loop with a counter: `lax.fori_loop` over its steps."""
        count = state[loop.counter]
        kind = jnp.result_type(count)
        steps = self._steps(loop, count)

        def counted(i, carry):
            values, ledger, tape = carry
            saved = self._enter(ledger)
            leaves = frozen(values, (steps - i).astype(kind))
            tape = taped(tape, values, i)
            values = stepped(values, leaves)
            return values, self._leave(saved), tape

        # (a tape too short for the count runs no step: the call is traced again)
        run = steps if tape is None or not tape else jnp.where(
            steps > tape[0].shape[0], jnp.int64(0), steps)
        values, self.ledger, tape = lax.fori_loop(jnp.int64(0), run, counted,
                                                  (start, self.ledger, tape))
        self._counted(run)
        return frozen(values, jnp.zeros((), kind)), steps, tape

    def _conditional_loop(self, loop: ir.Loop, state: tuple, start: tuple, tape: tuple | None,
                          body, frozen, taped, stepped):
        """`_forward` of a loop that stops on a condition: `lax.while_loop`, counting steps."""
        first = body(loop.until, {}, tuple(state))

        def going(carry):
            return carry[1]

        def conditional(carry):
            values, _, n, ledger, tape = carry
            saved = self._enter(ledger)
            tape = taped(tape, values, n)
            values = stepped(values, frozen(values))
            done = body(loop.until, {}, frozen(values))
            return values, jnp.asarray(done == 0), n + 1, self._leave(saved), tape

        values, _, steps, self.ledger, tape = lax.while_loop(
            going, conditional, (start, jnp.asarray(first == 0), jnp.int64(0), self.ledger, tape))
        self._counted(steps)
        return frozen(values), steps, tape

    def _steps(self, loop: ir.Loop, count):
        """A counted loop's trip count as an int64, E500 noted unless `count` is a whole
        number from 0 to 2⁵³ (loops.step_count's rule, whose message it raises)."""
        if is_host(count):
            try:
                return jnp.int64(step_count(loop, count))
            except HilbertError:
                pass  # (noted below: raised if the call comes here)
        value = jnp.asarray(count)
        real = jnp.real(value).astype(jnp.float64)
        bad = ~(jnp.isfinite(real) & (real >= 0) & (jnp.floor(real) == real) & (real <= EXACT))
        if jnp.iscomplexobj(value):
            bad = bad | (jnp.imag(value) != 0)
            self.check(bad, value, lambda v: step_count(loop, v))
        else:
            self.check(bad, real, lambda v: step_count(loop, v.real))
        return jnp.where(bad, 0.0, real).astype(jnp.int64)

    def _carried(self, loop: ir.Loop, state: tuple, moving: list[int]) -> list[np.dtype]:
        """The dtypes a loop's moving state keeps: its own in a real call; in a complex call,
        promoted until the step's values fit (a real start the step makes complex)."""
        types = [np.dtype(jnp.result_type(state[i])) for i in moving]
        if not self.complex:
            return types
        body = self.within(loop, self.eval)
        saved = self.ledger
        try:
            for _ in range(len(types) + 1):
                def step(*values, types=types):
                    whole = list(state)
                    for i, v in zip(moving, values, strict=True):
                        whole[i] = v
                    memo: dict = {}
                    return [body(loop.step[i], memo, tuple(whole)) for i in moving]
                specs = [jax.ShapeDtypeStruct(np.shape(state[i]), t)
                         for i, t in zip(moving, types, strict=True)]
                found = [np.dtype(jnp.promote_types(t, o.dtype))
                         for t, o in zip(types, jax.eval_shape(step, *specs), strict=True)]
                if found == types:
                    break
                types = found
        finally:
            self.ledger = saved
        return types

    # ------------------------------------------------------------ loops run backwards

    def loop_grad(self, node: ir.LoopGrad, init: tuple, seeds: tuple):
        """The loop forward from `init` writing its states to a tape, then its vjp terms from
        the last step's state to the first (loops.run_loop_grad's order)."""
        loop = node.loop
        site = self.sites[node]
        room = self.capacities[site]
        moving = moving_components(loop)
        types = self._carried(loop, init, moving)
        self.tapes[site] = (loop, [tuple(np.shape(v)) for v in init])
        tape = tuple(jnp.zeros((room,) + tuple(np.shape(init[i])), t)
                     for i, t in zip(moving, types, strict=True))
        _, steps, tape = self._forward(loop, init, tape)
        self.check(steps > room, steps, lambda v: _too_short(site, v))
        back = jnp.minimum(steps, room)
        kind = jnp.result_type(init[loop.counter]) if loop.counter is not None else None
        adjoint_types = self._adjoint_types(node, seeds)
        start = tuple(jnp.asarray(s).astype(t) for s, t in zip(seeds, adjoint_types, strict=True))
        vjp = self.within(node, self.eval)  # (its terms' counted values: compiler/counting.py)

        def backwards(j, carry):
            adjoints, ledger = carry
            saved = self._enter(ledger)
            at = back - 1 - j
            before = list(init)
            for i, buffer in zip(moving, tape, strict=True):
                before[i] = lax.dynamic_index_in_dim(buffer, at, 0, keepdims=False)
            if loop.counter is not None:
                before[loop.counter] = (steps - at).astype(kind)
            memo: dict = {}
            leaves = tuple(before) + adjoints
            adjoints = tuple(jnp.asarray(vjp(term, memo, leaves)).astype(t)
                             for term, t in zip(node.vjp, adjoint_types, strict=True))
            return adjoints, self._leave(saved)

        adjoints, self.ledger = lax.fori_loop(jnp.int64(0), back, backwards, (start, self.ledger))
        return adjoints

    def _adjoint_types(self, node: ir.LoopGrad, seeds: tuple) -> list[np.dtype]:
        """The adjoints' dtypes: the seeds' in a real call, the call's complex dtype where a
        seed is complex in a complex one (∂ through complex values is refused, E325)."""
        return [np.dtype(jnp.result_type(s)) for s in seeds]


def _too_short(site: int, steps: complex) -> None:
    raise TapeTooShort(site, int(steps.real))
