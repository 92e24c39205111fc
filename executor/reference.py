"""The reference executor: a plain NumPy interpreter of inlined IR, the oracle for the rest."""

from __future__ import annotations

from ..compiler import ir
from ..compiler.counting import counting_in
from ..compiler.evaluate import Host
from ..compiler.loops import guard_tapes, tapes_at_the_call
from .numerics import detached, quietly

#: Plans for this executor are of the IR as written (compiler/driver.plan_entry's as_written).
AS_WRITTEN = True


class ReferenceProgram:
    """The reference executor's callable for one signature: the IR as written, index masks
    read as shifts (docs/semantics.md), nothing fused, plain numpy.einsum, loops as Python
    loops (the host core, compiler/evaluate.py). A loop run backwards whose tape would pass
    the memory limit is refused before the call runs a step when its step count is known at
    the call (`guard_tapes`)."""

    def __init__(self, entry, shapes, plan, states: dict | None = None):
        self.body: ir.Node = entry.masked
        self.plan = plan
        self.evaluator = Host(dtype=plan.dtype, counting=counting_in(self.body, plan.dtype))
        self.tapes = tapes_at_the_call(self.body)
        if self.tapes and states is None:
            from ..compiler.passes.shapes import infer_shapes

            states = infer_shapes(self.body, tuple(shapes)).states
        self.states = states or {}

    def __call__(self, values):
        """The value of the body for these arguments, NumPy's warnings kept quiet (inf and NaN
        are values), never sharing memory with an argument."""
        memo: dict = {}
        leaves = tuple(values)
        if self.tapes:
            quietly(guard_tapes, self.tapes, self.states,
                    lambda node: self.evaluator.eval(node, memo, leaves))
        value = quietly(self.evaluator.eval, self.body, memo, leaves)
        return detached(self.evaluator.answer(value), values)

    @property
    def loop_steps(self) -> int:
        return self.evaluator.loop_steps


def prepare(entry, shapes, optimize: str = "auto", values=None,
            math: str = "exact", dtype: str = "float64") -> ReferenceProgram:
    """Specialise `entry` to `shapes` and `dtype` and return the program that runs it (`math`
    changes nothing: NumPy's functions are within every mode's bounds)."""
    from ..compiler.driver import plan_entry

    ready = plan_entry(entry, shapes, optimize, "reference", values, as_written=AS_WRITTEN,
                       dtype=dtype)
    # the table's state shapes are the body's when the reference runs what was planned
    states = ready.table.states if ready.body is entry.masked else None
    return ReferenceProgram(entry, shapes, ready.plan, states)
