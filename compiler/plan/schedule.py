"""What generated code runs, unit by unit: the schedule an executor's code generator chose for
a call (executor/codegen/), kept in the Plan beside the paths, so `f.plan()` says what runs:
each fused loop nest with the values it computes, stores and recomputes, which nests run as
one loop over rows, which run on several threads, how each contraction step is laid out, and
whether the code is compiled or plain NumPy calls."""

from __future__ import annotations

from dataclasses import dataclass

Shape = tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Unit:
    """One unit of generated code, in the order it runs. `kind`: "nest" (a fused loop nest),
    "product" (a contraction step as matrix products), "loops" (a contraction step as a loop
    nest), "einsum" (a step as one numpy.einsum: a tensor network's), "loop" (a loop, inline),
    "branch" (an if on a scalar), "one-hot"; `what`: a nest's values (its ops, then its
    reductions after "→"), a step's contraction; `how`: what it stores and recomputes, or the
    step's layout; `rows`: nests with the same number run as one loop
    over their rows (0: alone)."""

    kind: str
    scope: str
    shape: Shape
    what: str
    how: str = ""
    parallel: bool = False
    rows: int = 0


@dataclass(frozen=True, slots=True)
class RegionSchedule:
    """One generated function: what it computes (`what`: the whole call, or a region the host
    calls), whether it is compiled, its units, and its size in lines of generated Python
    (what Numba compiles: compile time grows with it)."""

    what: str
    compiled: bool
    units: tuple[Unit, ...]
    lines: int = 0


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
