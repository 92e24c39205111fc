"""The two kinds of program generated code makes: one compiled function of the parameters
(`WholeProgram`, the fast path), or a walk on the host calling compiled regions
(`HostProgram`)."""

from __future__ import annotations

import functools

import numpy as np

from ...compiler.dtypes import is_complex
from ...compiler.passes.realness import real_results
from ...compiler.plan import Plan
from ..numerics import detached, fresh_first, quietly
from .regions import CompiledRegion
from .row_blocks import RowBlocks
from .scope import ScopeRunner


class WholeProgram:
    """A call that is one generated function of the parameters: the fast path."""

    tier = "compiled"  # (the tier every call of it runs on: TieredProgram's second)
    detaches = True  # (what it returns shares no memory with its arguments: `detached`)

    def __init__(self, region: CompiledRegion, plan: Plan, arity: int,
                 blocks: RowBlocks | None = None):
        self.plan = plan
        self.region = region
        self.blocks = blocks  # the call as blocks of rows on several threads (row_blocks.py)
        self.positions = tuple(n.index for n in region.region.inputs)
        # plain NumPy calls on the parameters as they are: nothing to convert, no checked
        # read whose error the region translates (x[t], oneHot)
        self.direct = (self.positions == tuple(range(arity)) and not region.scalars
                       and not region.generated.compiled and not region.generated.reads)
        # what a call runs: straight to fresh_first when direct (a Python frame less: a
        # small product's call is about 2 µs, each frame 0.07)
        self.run = functools.partial(fresh_first, region.function) if self.direct else self
        self._steps = 0
        # (a complex call's real results, computed in complex arrays: realness.real_results)
        self.real = real_results(region.region.root) if is_complex(plan.dtype) and \
            region.generated.compiled else None

    def __call__(self, values):
        if self.direct:  # plain NumPy calls on the parameters as they are
            return fresh_first(self.region.function, values)
        args = self.region.convert([values[i] for i in self.positions])
        if self.region.generated.compiled:
            value, steps = (self.blocks or self.region).run(args)
        else:  # NumPy calls on the host: inf and NaN are values, not warnings
            value, steps = quietly(self.region, args)
        if steps:
            self._steps += steps
        if self.real is not None:
            value = real_parts(value, self.real)
        return detached(value, values)

    @property
    def loop_steps(self) -> int:
        return self._steps


class HostProgram:
    """A call with host work: the host walks the call, compiled regions do the rest (none,
    for the host tier of a call with loops)."""

    tier = "compiled"
    detaches = True

    def __init__(self, runner: ScopeRunner, plan: Plan):
        self.plan = plan
        self.runner = runner
        self.run = self  # (what a call runs, as WholeProgram's)

    def __call__(self, values, boundary=None):
        return detached(quietly(self.runner.run, tuple(values), boundary), values)

    @property
    def loop_steps(self) -> int:
        return self.runner.loop_steps


def real_parts(value, real: bool | tuple):
    """`value` (a complex call's compiled result) with its real results (`real`: realness.
    real_results) made their real parts, as the host's NumPy makes them: a C-ordered real
    array, or a real number; a tuple's item by item."""
    if isinstance(real, tuple):
        return tuple(real_parts(v, r) for v, r in zip(value, real, strict=True))
    if not real:
        return value
    if isinstance(value, np.ndarray):
        return np.ascontiguousarray(value.real)
    return value.real
