"""Loops and `if` written as ONNX: an `if` on a value computed from the arguments as `If` (each
branch a subgraph, only the one taken runs), a loop as `Loop` (a counted loop with its trip
count, a conditional one with its condition; the state its steps change carried, the rest read
as it was before the loop, so sizes made from it stay sizes), a loop run backwards (a
derivative through a loop) as its Loop keeping each step's state (its scan outputs, the tape)
and a second Loop down the tape. The part of the trace (executor/onnx/tracing.py) that writes
them."""

from __future__ import annotations

from collections import ChainMap

import numpy as np

from ...compiler import ir
from ...compiler.loops import moving_components, step_count
from .graph import Tensor

_I64, _BOOL = np.dtype(np.int64), np.dtype(np.bool_)


def _dtype(value) -> np.dtype:
    return value.dtype if isinstance(value, Tensor) else np.asarray(value).dtype


class Control:
    """The trace's loops and branches (a base of Trace: `graph`, `eval` and `within` are its)."""

    def _branch(self, node: ir.Cond, memo, leaves: tuple) -> Tensor:
        """`if` on a computed condition: ONNX's If, each branch traced into a subgraph over the
        values computed so far (what it computes itself stays inside it)."""
        g = self.graph
        traced = []
        for branch in (node.then, node.orelse):
            with g.scope([]) as nodes:
                traced.append((self.eval(branch, ChainMap({}, memo), leaves), nodes))
        kind = np.result_type(*(_dtype(v) for v, _ in traced))
        shape = tuple(np.broadcast_shapes(*(np.shape(v) for v, _ in traced)))
        graphs = []
        for value, nodes in traced:
            with g.scope(nodes):
                value = g.tensor(value, kind)
                value = g.expand(value, shape)
            graphs.append(g.subgraph(nodes, [], [value], "branch"))
        test = g.emit("Not", [g.emit("Equal", [memo[node.cond], g.tensor(
            np.zeros((), memo[node.cond].dtype))], (), _BOOL)], (), _BOOL)
        return g.emit("If", [test], shape, kind, then_branch=graphs[0], else_branch=graphs[1])

    def loop(self, loop: ir.Loop, state: tuple, memo):
        """The final state of `loop` from `state`: one Loop node, carrying the components its
        steps change in the dtypes they start in."""
        return self._forward(loop, state, taped=False)[0]

    def _forward(self, loop: ir.Loop, state: tuple, taped: bool):
        """(final state, steps, tape) of `loop` from `state`; `taped`: the Loop also gives the
        state before each step of every moving component (its scan outputs), and its steps."""
        g = self.graph
        moving = moving_components(loop)
        body = self.within(loop, self.eval)
        start = [g.tensor(state[i]) for i in moving]
        counter = g.input_like("counter", (), _I64)
        carried = [g.input_like("state", s.shape, s.dtype) for s in start]
        steps = self._steps(loop, state[loop.counter]) if loop.counter is not None else None
        # (a conditional loop run backwards counts its steps as state of its own)
        count = g.input_like("steps", (), _I64) if taped and steps is None else None

        def frozen(values, left=None) -> tuple:
            whole = list(state)
            for i, v in zip(moving, values, strict=True):
                whole[i] = v
            if left is not None:
                whole[loop.counter] = left
            return tuple(whole)

        with g.scope([]) as nodes:
            left = None if steps is None else g.cast(g.emit("Sub", [steps, counter], (), _I64),
                                                      _dtype(state[loop.counter]))
            after = self._stepped(loop, body, frozen(carried, left), moving, start)
            keep = g.tensor(np.bool_(True)) if steps is not None else \
                self._not_done(loop, body, frozen(after))
            counted = [] if count is None else [g.emit("Add", [count, np.int64(1)], (), _I64)]
        inputs = [counter, g.input_like("going", (), _BOOL), *carried, *([count] if count else [])]
        graph = g.subgraph(nodes, inputs, [keep, *after, *counted, *(carried if taped else [])],
                           "body")
        first = g.tensor(np.bool_(True)) if steps is not None else \
            self._not_done(loop, body, frozen(start))
        outs = [(s.shape, s.dtype) for s in start] + [((), _I64)] * len(counted) + \
            [((None, *s.shape), s.dtype) for s in start if taped]
        made = g.emit_many("Loop", [steps, first, *start, *([np.int64(0)] if count else [])],
                           outs, body=graph) if outs else []
        finals, tape = made[:len(start)], made[len(start) + len(counted):]
        steps = made[len(start)] if counted else steps
        last = None if loop.counter is None else np.zeros((), _dtype(state[loop.counter]))
        return frozen(finals, last), steps, tape

    def _stepped(self, loop: ir.Loop, body, leaves: tuple, moving: list[int],
                 start: list[Tensor]) -> list[Tensor]:
        """One step's values of the moving components, each of its start's dtype and shape."""
        g, memo = self.graph, {}
        after = [g.tensor(body(loop.step[i], memo, leaves), s.dtype)
                 for i, s in zip(moving, start, strict=True)]
        return [g.expand(a, s.shape) for a, s in zip(after, start, strict=True)]

    def loop_grad(self, node: ir.LoopGrad, init: tuple, seeds: tuple):
        """The adjoints of a loop run backwards: the loop forward keeping each step's state
        (its tape), then a second Loop down the tape applying the vjp terms, from the last
        step's state to the first (loops.run_loop_grad's order)."""
        g, loop = self.graph, node.loop
        moving = moving_components(loop)
        _, steps, tape = self._forward(loop, init, taped=True)
        vjp = self.within(node, self.eval)  # (its terms' counted values: compiler/counting.py)
        start = [g.tensor(s) for s in seeds]
        back = g.input_like("back", (), _I64)
        adjoints = [g.input_like("adjoint", s.shape, s.dtype) for s in start]
        with g.scope([]) as nodes:
            at = g.emit("Sub", [g.emit("Sub", [steps, back], (), _I64), np.int64(1)], (), _I64)
            before = list(init)
            for i, buffer in zip(moving, tape, strict=True):
                before[i] = g.emit("Gather", [buffer, at], buffer.shape[1:], buffer.dtype, axis=0)
            if loop.counter is not None:
                before[loop.counter] = g.cast(g.emit("Sub", [steps, at], (), _I64),
                                              _dtype(init[loop.counter]))
            memo: dict = {}
            leaves = tuple(before) + tuple(adjoints)
            after = [g.tensor(vjp(term, memo, leaves), s.dtype)
                     for term, s in zip(node.vjp, start, strict=True)]
        graph = g.subgraph(nodes, [back, g.input_like("going", (), _BOOL), *adjoints],
                           [g.tensor(np.bool_(True)), *after], "backwards")
        return tuple(g.emit_many("Loop", [steps, g.tensor(np.bool_(True)), *start],
                                 [(s.shape, s.dtype) for s in start], body=graph))

    def _not_done(self, loop: ir.Loop, body, leaves: tuple) -> Tensor:
        g = self.graph
        until = g.tensor(body(loop.until, {}, leaves))
        return g.emit("Equal", [until, g.tensor(np.zeros((), until.dtype))], (), _BOOL)

    def _steps(self, loop: ir.Loop, count):
        """A counted loop's trip count as an int64: known now (E500 as a call raises it where
        it is not a whole number ≥ 0), or the computed count as it is."""
        if isinstance(count, Tensor):
            return self.graph.cast(count, _I64)
        return self.graph.tensor(np.asarray(step_count(loop, count), _I64))
