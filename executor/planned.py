"""The planned executor: fused IR, einsums along their opt_einsum paths (BLAS where it can)."""

from __future__ import annotations

import numpy as np
import opt_einsum
from hilbert.compiler.driver import Entry, plan_entry

from .reference import Reference

#: Below this many FLOPs an einsum runs as one numpy.einsum call: planning it costs more.
SMALL = 20_000


class PlannedProgram:
    """A callable for one signature: `plan` says how, `__call__(values)` does it."""

    def __init__(self, body, plan):
        self.plan = plan
        self.body = body
        self._kernels = {key: _kernel(key[0], key[1], path, plan) for key, path in plan.paths.items()}
        self.evaluator = Reference(einsum=self._einsum)

    def _einsum(self, node, operands):
        key = (node.spec, tuple(np.shape(o) for o in operands))
        return self._kernels[key](*operands)

    def __call__(self, values):
        return self.evaluator.run(self.body, values)

    @property
    def loop_steps(self) -> int:
        return self.evaluator.loop_steps


def _kernel(spec: str, shapes, path, plan):
    flops = next((e.flops for e in plan.einsums if e.spec == spec and e.shapes == shapes), 0)
    if flops < SMALL or len(shapes) == 1:
        return lambda *ops: np.einsum(spec, *ops)
    expression = opt_einsum.contract_expression(spec, *shapes, optimize=list(path))
    return expression


def prepare(entry: Entry, shapes, optimize: str = "auto", values=None) -> PlannedProgram:
    """Specialise and plan `entry` for `shapes`; return the program that runs it."""
    ready = plan_entry(entry, shapes, optimize, "numba", values)
    return PlannedProgram(ready.body, ready.plan)
