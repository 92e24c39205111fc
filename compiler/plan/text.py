"""Renders a Plan as aligned text a person can read: paths, costs, loops, the schedule, memory."""

from __future__ import annotations

from decimal import Decimal

from .schedule import render


def human_bytes(n: float) -> str:
    """Bytes in binary units: '512 B', '2.0 KiB', '7.3 TiB'; past 1024 TiB, '3.1e+08 TiB'.
    Exact for any size (a plan may describe an impossible shape, far beyond a float)."""
    value = Decimal(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB" if abs(value) < 1024 else f"{value:.1e} TiB"


def human_count(n: float | None) -> str:
    """A count in SI units: '950', '4.10 k', '2.15 G'; from 10¹², '3.1e+15'."""
    if n is None:
        return "unknown"
    value = Decimal(n)
    if abs(value) >= 10**12:
        return f"{value:.1e}"
    for unit, scale in (("G", 10**9), ("M", 10**6), ("k", 10**3)):
        if abs(value) >= scale:
            return f"{value / scale:.2f} {unit}"
    return f"{value:.0f}"


def shape_text(shape) -> str:
    """A shape as a plan writes it: `3×4`, or `scalar`."""
    return "×".join(map(str, shape)) if shape else "scalar"


def _table(rows: list[list[str]], indent: str = "  ") -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [indent + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]


def render_plan(plan) -> str:
    """The plan as text (what `print(fn.plan(...))` and `hilbert plan` show)."""
    named = plan.axes or ("",) * len(plan.params)
    args = ", ".join(f"{p}: {n + ' = ' if n else ''}{shape_text(s)}"
                     for p, n, s in zip(plan.params, named, plan.signature, strict=True))
    lines = [f"plan of {plan.function}({args})",
             f"  executor {plan.executor} · {plan.dtype} · path optimiser {plan.optimize}"]
    if plan.laws:
        lines.append(f"  laws applied to the body: {', '.join(plan.laws)}")
    lines.append("")
    for number, e in enumerate(plan.einsums, 1):
        lines.append(f"einsum {number}  \"{e.spec}\"  on {', '.join(shape_text(s) for s in e.shapes)}"
                     f"  [{e.scope}]  {e.where}")
        rows = [["step", "contraction", "FLOPs", "result", "BLAS"]]
        for i, s in enumerate(e.steps, 1):
            rows.append([str(i), s.spec, human_count(s.flops), f"{human_count(s.intermediate)} el",
                         s.blas or "-"])
        lines += _table(rows)
        lines.append(f"  total {human_count(e.flops)} FLOPs · largest intermediate "
                     f"{human_count(e.largest)} elements ({human_bytes(e.largest * plan.item_bytes)})")
        if e.note:
            lines.append(f"  note: {e.note}")
        lines.append("")
    if plan.loops:
        lines.append("loops")
        rows = [["loop", "trips", "FLOPs/step", "state"]]
        for lp in plan.loops:
            trips = str(lp.trips) if lp.trips is not None else ("from the arguments" if lp.counted
                                                                else "until its condition")
            rows.append([lp.name, trips, human_count(lp.flops_per_step),
                         ", ".join(shape_text(s) for s in lp.state)])
        lines += _table(rows)
        lines.append("")
    lines += render(plan.schedule.regions, shape_text)  # (decided now, if it was not yet)
    lines.append(f"total FLOPs {human_count(plan.flops)} · largest value "
                 f"{human_bytes(plan.largest_bytes)} · peak memory about {human_bytes(plan.peak_bytes)}")
    lines += [f"  {note}" for note in plan.all_notes]
    return "\n".join(lines)
