"""A host call's loop moving to the compiled code at a step boundary, once the build has ended
(docs/architecture.md, "Calls with loops start on the host too"): the step boundary hook a
TieredProgram (tiers.py) gives its host tier, and the exception that hands the call's result
back from it."""

from __future__ import annotations


class StepBoundary:
    """TieredProgram's step boundaries (a base of it: the build, its queue and the resume
    points are TieredProgram's own)."""

    def _boundary(self, values, began: float, state: tuple, steps: int) -> None:
        """At a step boundary of a host call's loop (begun at `began`): the build is queued
        when due if this call can use it (`_worth_moving`; else it is queued when the call
        ends, so Numba loading beside the steps does not slow them down); once it is built,
        the rest of the call runs on the compiled code from `state` when its loop can move
        (raised as _Moved, with its result)."""
        if not self.queued and self._worth_moving(began, state, steps):
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


class _Moved(Exception):  # noqa: N818 (not an error: how a host call hands over its result)
    """Raised at a step boundary of a host call once the compiled code has finished it."""

    def __init__(self, value) -> None:
        super().__init__()
        self.value = value
