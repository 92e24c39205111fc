"""Whether a fused loop nest runs its rows on several threads: the planner's rule, from what
the nest does per entry and how many threads its function may use.

The code generator measures a nest (`NestWork`: its shape, the statements and kernel calls of
its body, whether a value is carried across its rows) and asks `parallel` before it writes the
nest's loops; the answer is the nest's unit's `parallel` in the plan's schedule (schedule.py),
and the loops are written as it says. A nest is worth threads when its work, entries times a
rough cost per entry, pays for waking them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

Shape = tuple[int, ...]

#: A nest runs its outer loop on several threads from this much work (entries × cost per
#: entry, counting a statement of the body as 1 and a call of a kernel, such as K.exp, as
#: CALL_COST): about half a millisecond on one core, against the tens of microseconds that
#: waking sleeping threads may take.
PARALLEL_WORK = 1 << 20
CALL_COST = 8


@dataclass(frozen=True, slots=True)
class NestWork:
    """What decides a nest's threads: its `shape`; whether it `carries` a value across its
    rows (a total started before its outer loop, or one read after it: its rows are then not
    independent); whether its outer axes run as one `flat` loop (a nest deeper than Python's
    blocks allow); and its body per entry: `statements`, and `calls` of hilbert's kernels
    among them (a sum's K.add_any_order not counted: LLVM inlines it)."""

    shape: Shape
    carries: bool
    flat: bool
    statements: int
    calls: int

    @property
    def work(self) -> int:
        """Entries × cost per entry."""
        return math.prod(self.shape) * (self.statements + CALL_COST * self.calls)


def parallel(nest: NestWork, threads: int) -> bool:
    """Whether `nest` runs its outer loop on `threads` threads (1: its function's nests run
    serially): its rows are independent, there are at least two of them, and its work pays.

    >>> parallel(NestWork((4096, 512), carries=False, flat=False, statements=3, calls=1), 4)
    True
    >>> parallel(NestWork((64, 48), carries=False, flat=False, statements=3, calls=1), 4)
    False
    """
    if threads < 2 or nest.carries or nest.flat or not nest.shape or nest.shape[0] < 2:
        return False
    return nest.work >= PARALLEL_WORK
