"""What generated code runs, unit by unit: the schedule of a call, part of its Plan beside the
paths, so `f.plan()` says what runs, the same before and after a build: each fused loop nest
with the values it computes, stores and recomputes, which nests run as one loop over rows,
which run on several threads, how each contraction step is laid out, and whether the code is
compiled or plain NumPy calls. The executor that plans generated code gives the plan the
function deciding it (`Schedule`); it is decided once, when first read, and the build runs
exactly what was decided."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, replace

Shape = tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Unit:
    """One unit of generated code, in the order it runs. `kind`: "nest" (a fused loop nest),
    "product" (a contraction step as matrix products), "loops" (a contraction step as a loop
    nest), "einsum" (a step as one numpy.einsum: a tensor network's), "loop" (a loop, inline),
    "branch" (an if on a scalar), "one-hot"; `what`: a nest's values (its ops, then its
    reductions after "→"), a step's contraction; `how`: what it stores and recomputes, or the
    step's layout; `parallel`: a nest whose outer loop runs on several threads (threads.py
    decides); `rows`: nests with the same number run as one loop over their rows (0: alone;
    `RowLoop`)."""

    kind: str
    scope: str
    shape: Shape
    what: str
    how: str = ""
    parallel: bool = False
    rows: int = 0


@dataclass(frozen=True, slots=True)
class RowLoop:
    """Fused nests that run as one loop over their rows: their units' numbers (from 1), in
    the order they run, and whether that loop runs on threads (when any of them would alone).
    The code generator's row-join decision (executor/codegen/rows.py, `decide`), which its
    rewrite (`join`) performs as it is.

    >>> in_row_loops((Unit("nest", "call", (4, 3), "exp"),) * 2, (RowLoop((1, 2), True),))[1].rows
    1
    """

    kernels: tuple[int, ...]
    parallel: bool


def in_row_loops(units: tuple[Unit, ...], loops: tuple[RowLoop, ...]) -> tuple[Unit, ...]:
    """`units` with the nests of each of `loops` numbered by it (`Unit.rows`, from 1) and on
    threads as it is."""
    found = list(units)
    for number, loop in enumerate(loops, 1):
        for kernel in loop.kernels:
            found[kernel - 1] = replace(found[kernel - 1], rows=number, parallel=loop.parallel)
    return tuple(found)


@dataclass(frozen=True, slots=True)
class RegionSchedule:
    """One generated function: what it computes (`what`: the whole call, or a region the host
    calls), whether it is compiled, its units, and its size in lines of generated Python
    (what Numba compiles: compile time grows with it)."""

    what: str
    compiled: bool
    units: tuple[Unit, ...]
    lines: int = 0


#: What a `Schedule`'s decision gives: its generated functions, and the executor's account
#: of them (what runs where and why: notes of the plan).
Decided = tuple[tuple[RegionSchedule, ...], tuple[str, ...]]


class Schedule:
    """A call's schedule: its generated functions (`regions`) and the executor's account of
    them (`notes`). Decided by `decide` when first read, once (deciding writes the code's loop
    IR, which loads the code generator: a call that never reads its schedule, as one on the
    host tier, pays nothing for it); from then on it is plain data, and a build runs what it
    says.

    >>> Schedule().regions
    ()
    """

    __slots__ = ("_decide", "_decided", "_lock")

    def __init__(self, decide: Callable[[], Decided] | None = None,
                 regions: tuple[RegionSchedule, ...] = (), notes: tuple[str, ...] = ()):
        self._decide = decide
        self._decided: Decided | None = None if decide is not None else (regions, notes)
        self._lock = threading.Lock()

    def decided(self) -> Decided:
        """(regions, notes), decided now if they were not yet."""
        found = self._decided
        if found is None:
            with self._lock:
                if self._decided is None:
                    assert self._decide is not None
                    self._decided = self._decide()
                    self._decide = None  # (what it held is not needed again)
                found = self._decided
        return found

    @property
    def regions(self) -> tuple[RegionSchedule, ...]:
        return self.decided()[0]

    @property
    def notes(self) -> tuple[str, ...]:
        return self.decided()[1]

    def __reduce__(self):  # pickled as the data decided (a decision holds the executor's state)
        regions, notes = self.decided()
        return Schedule, (None, regions, notes)

    def __deepcopy__(self, memo) -> Schedule:  # plain data once decided: nothing to copy
        return self

    def __eq__(self, other) -> bool:
        return isinstance(other, Schedule) and self.decided() == other.decided()

    def __hash__(self) -> int:
        return hash(self.decided())

    def __repr__(self) -> str:
        return f"Schedule({self._decided!r})" if self._decide is None else "Schedule(undecided)"


def render(schedule: tuple[RegionSchedule, ...], shape) -> list[str]:
    """The schedule as lines of the plan's text (`shape` writes a shape)."""
    lines: list[str] = []
    for region in schedule:
        how = "compiled" if region.compiled else "NumPy calls, nothing compiled"
        how += f", {region.lines} lines" if region.lines else ""
        lines.append(f"generated code for {region.what} ({how}): {len(region.units)} unit(s)")
        rows = []
        for number, unit in enumerate(region.units, 1):
            marks = ", ".join(m for m in (f"row loop {unit.rows}" if unit.rows else "",
                                          "threads" if unit.parallel else "") if m)
            rows.append([str(number), unit.kind, shape(unit.shape), f"[{unit.scope}]", unit.what,
                         unit.how, marks])
        if rows:
            widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
            lines += ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
                      for r in rows]
        lines.append("")
    return lines
