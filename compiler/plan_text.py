"""Renders a Plan as aligned text a person can read: paths, costs, loops, memory."""

from __future__ import annotations


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def human_count(n: float | None) -> str:
    if n is None:
        return "unknown"
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n:.0f}"


def _shape(shape) -> str:
    return "×".join(map(str, shape)) if shape else "scalar"


def _table(rows: list[list[str]], indent: str = "  ") -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [indent + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]


def render_plan(plan) -> str:
    """The plan as text (what `print(fn.plan(...))` and `hilbert plan` show)."""
    args = ", ".join(f"{p}: {_shape(s)}" for p, s in zip(plan.params, plan.signature, strict=True))
    lines = [f"plan of {plan.function}({args})",
             f"  executor {plan.executor} · path optimiser {plan.optimize}", ""]
    for number, e in enumerate(plan.einsums, 1):
        lines.append(f"einsum {number}  \"{e.spec}\"  on {', '.join(_shape(s) for s in e.shapes)}"
                     f"  [{e.scope}]  {e.where}")
        rows = [["step", "contraction", "FLOPs", "result", "BLAS"]]
        for i, s in enumerate(e.steps, 1):
            rows.append([str(i), s.spec, human_count(s.flops), f"{human_count(s.intermediate)} el",
                         s.blas or "-"])
        lines += _table(rows)
        lines.append(f"  total {human_count(e.flops)} FLOPs · largest intermediate "
                     f"{human_count(e.largest)} elements ({human_bytes(e.largest * 8)})")
        lines.append("")
    if plan.loops:
        lines.append("loops")
        rows = [["loop", "trips", "FLOPs/step", "state"]]
        for lp in plan.loops:
            trips = str(lp.trips) if lp.trips is not None else ("from the arguments" if lp.counted
                                                                else "until its condition")
            rows.append([lp.name, trips, human_count(lp.flops_per_step),
                         ", ".join(_shape(s) for s in lp.state)])
        lines += _table(rows)
        lines.append("")
    if plan.groups:
        lines.append(f"fused entrywise groups: {len(plan.groups)}")
        for g in plan.groups:
            lines.append(f"  [{g.scope}] {_shape(g.shape)}: {' '.join(g.ops)}")
        lines.append("")
    lines.append(f"total FLOPs {human_count(plan.flops)} · largest value "
                 f"{human_bytes(plan.largest_bytes)} · peak memory about {human_bytes(plan.peak_bytes)}")
    lines += [f"  {note}" for note in getattr(plan, "notes", ())]
    return "\n".join(lines)
