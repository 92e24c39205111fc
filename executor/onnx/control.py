"""Loops and `if` written as ONNX: an `if` on a value computed from the arguments as `If` (each
branch a subgraph, only the one taken runs), a loop as `Loop` (a counted loop with its trip
count, a conditional one with its condition; the state its steps change carried, the rest read
as it was before the loop, so sizes made from it stay sizes). The part of the trace
(executor/onnx/tracing.py) that writes them: a loop run backwards (a derivative through a
loop) is not written yet."""

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
                if value.shape != shape:
                    value = g.emit("Expand", [value, g.tensor(shape, _I64)], shape, kind)
            graphs.append(g.subgraph(nodes, [], [value], "branch"))
        test = g.emit("Not", [g.emit("Equal", [memo[node.cond], g.tensor(
            np.zeros((), memo[node.cond].dtype))], (), _BOOL)], (), _BOOL)
        return g.emit("If", [test], shape, kind, then_branch=graphs[0], else_branch=graphs[1])

    def loop(self, loop: ir.Loop, state: tuple, memo):
        """The final state of `loop` from `state`: one Loop node, carrying the components its
        steps change in the dtypes they start in."""
        g = self.graph
        moving = moving_components(loop)
        body = self.within(loop, self.eval)
        start = [g.tensor(state[i]) for i in moving]
        counter = g.input_like("counter", (), _I64)
        going = g.input_like("going", (), _BOOL)
        carried = [g.input_like("state", s.shape, s.dtype) for s in start]

        def frozen(values, left=None) -> tuple:
            whole = list(state)
            for i, v in zip(moving, values, strict=True):
                whole[i] = v
            if left is not None:
                whole[loop.counter] = left
            return tuple(whole)

        steps = self._steps(loop, state[loop.counter]) if loop.counter is not None else None
        with g.scope([]) as nodes:
            if steps is not None:
                left = g.emit("Sub", [steps, counter], (), _I64)
                leaves = frozen(carried, g.cast(left, _dtype(state[loop.counter])))
            else:
                leaves = frozen(carried)
            step_memo: dict = {}
            after = [g.tensor(body(loop.step[i], step_memo, leaves), s.dtype)
                     for i, s in zip(moving, start, strict=True)]
            after = [g.emit("Expand", [a, g.tensor(s.shape, _I64)], s.shape, s.dtype)
                     if a.shape != s.shape else a for a, s in zip(after, start, strict=True)]
            keep = g.tensor(np.bool_(True)) if loop.counter is not None else \
                self._not_done(loop, body, frozen(after))
        graph = g.subgraph(nodes, [counter, going, *carried], [keep, *after], "body")
        first = g.tensor(np.bool_(True)) if steps is not None else \
            self._not_done(loop, body, frozen(start))
        finals = g.emit_many("Loop", [steps, first, *start], [(s.shape, s.dtype) for s in start],
                             body=graph) if start else []
        if loop.counter is not None:
            return frozen(finals, np.zeros((), _dtype(state[loop.counter])))
        return frozen(finals)

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
