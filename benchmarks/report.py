"""Results as files: latest.json (everything), latest.md (tables) and PNG bar charts."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from benchmarks.cases.base import STANDARD
from hilbert.timing import seconds

COLUMNS = STANDARD  # anchors with a column of their own; the rest go under "other anchors"
_ALL_NAMES = ("hilbert", *STANDARD)  # fixed colours for these in every chart


def write(results: dict, out_dir: Path) -> list[Path]:
    """Write latest.json, latest.md and the plots into out_dir; the paths written. Without
    matplotlib the plots are skipped and the PNGs of an earlier run are left as they were
    (latest.md and `hilbert bench` say so)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    drawing = plotting_available()
    if drawing:
        for stale in [*out_dir.glob("times-*.png"), out_dir / "ratios.png",
                      out_dir / "path-search.png"]:
            stale.unlink(missing_ok=True)  # charts of an earlier run must not pose as this run's
    json_path, md_path = out_dir / "latest.json", out_dir / "latest.md"
    json_path.write_text(json.dumps(results, indent=1, default=_plain) + "\n", encoding="utf-8")
    plots = write_plots(results, out_dir) if drawing else []
    md_path.write_text(markdown(results, [p.name for p in plots], skipped=not drawing),
                       encoding="utf-8")
    return [json_path, md_path, *plots]


def plotting_available() -> bool:
    """True when matplotlib can be imported (the plots need it)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def plots_skipped(out_dir: Path) -> str:
    """What to tell a person whose run drew no plots because matplotlib is missing."""
    old = sorted(p.name for p in out_dir.glob("*.png"))
    kept = (f"; the PNG files already in {out_dir} ({', '.join(old)}) are from an earlier run "
            "and were left as they were" if old else "")
    return ("plots skipped: matplotlib is not installed (pip install matplotlib, or "
            f"pip install -e '.[plot]' in a checkout){kept}")


def _plain(value):
    if hasattr(value, "item"):
        return value.item()
    return str(value)


# --------------------------------------------------------------------------------------------
# Markdown


def _cell(entry: dict | None) -> str:
    if entry is None:
        return ""
    match entry["status"]:
        case "ok":
            ratio = f" (×{entry['ratio']:.2f})" if entry.get("ratio") is not None else ""
            return seconds(entry["median_s"]) + ratio
        case "skipped":
            return "skipped"
        case "mismatch":
            return "**mismatch**"
        case _:
            return "error"


def ours_cell(case: dict) -> str:
    """hilbert's median (or its status), with its share of the machine's peak FMA rate on a
    GEMM-bound case that measured it: `24.1 ms, 71% of peak`."""
    ours = case["ours"]
    if ours["status"] != "ok":
        return f"**{ours['status']}**"
    share = case.get("metrics", {}).get("peak_share")
    return seconds(ours["median_s"]) + (f", {share:.0%} of peak" if share is not None else "")


def machine_words(results: dict) -> str | None:
    """The CPU's family and vectors, the BLAS's kernel (and a pin lifted or not) and the peak
    FMA rates, as one sentence; None for a record made before they were kept."""
    m = results["machine"]
    blas = m.get("blas", {})
    if "cpu_vectors" not in m:
        return None
    pin = m.get("openblas_pin")
    pinned = ""
    if pin:
        settings = " and ".join(f"{k}={v}" for k, v in pin["variables"].items())
        pinned = (f"; {settings} lifted: the benchmark ran without them" if pin["lifted"] else
                  f"; pinned by {settings}, not lifted")
    fma = results.get("peak_fma") or {}
    peak = (f"; peak FMA rate on {fma['cores']} core(s) ({fma['bits']}-bit vectors, "
            f"benchmarks/peak.py): {fma['float64']['all_cores_gflops']:.0f} GFLOP/s float64, "
            f"{fma['float32']['all_cores_gflops']:.0f} float32" if fma else "")
    return (f"CPU {m.get('cpu_family')}, vectors {', '.join(m['cpu_vectors']) or 'none found'}; "
            f"BLAS kernel {blas.get('kernel') or 'not reported'} (threadpoolctl's architecture"
            f"{pinned}){peak}")


def markdown_table(results: dict) -> str:
    """The main table: per case, our median and each anchor's median with ratio ours/anchor."""
    head = ["case", "dtype", "hilbert", *COLUMNS, "other anchors"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for case in results["cases"]:
        anchors = {a["name"]: a for a in case["anchors"]}
        others = [f"{a['name']}: {_cell(a)}" for a in case["anchors"] if a["name"] not in COLUMNS]
        cells = [f"`{case['name']}`", case.get("dtype") or "–", ours_cell(case),
                 *(_cell(anchors.get(c)) for c in COLUMNS),
                 "; ".join(others)]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def targets_table(results: dict) -> str:
    """Each case's targets: what, the measured value, met or not (and why not)."""
    rows = ["| case | target | value | met |", "|---|---|---|---|"]
    for case in results["cases"]:
        for target in case["targets"]:
            value = target["value"]
            if value is None:
                shown = "–"
            elif target["kind"] == "ratio":
                shown = f"×{value:.3g}"
            elif target["metric"] == "peak_share":
                shown = f"{value:.0%}"
            elif isinstance(value, float) and (target["metric"] or "").endswith("_s"):
                shown = seconds(value)
            else:
                shown = _short(value)
            met = {True: "yes", False: "**no**", None: "n/a"}[target["met"]]
            why = f" ({target['why']})" if target["why"] else ""
            rows.append(f"| `{case['name']}` | {target['text']} | {shown} | {met}{why} |")
    return "\n".join(rows)


def versions_line(machine: dict) -> str:
    """The libraries' versions recorded with a run, as one line."""
    return ", ".join(f"{k} {v}" for k, v in machine["versions"].items() if v)


def _metrics(results: dict) -> list[str]:
    lines = []
    for case in results["cases"]:
        shown = {k: v for k, v in case["metrics"].items()
                 if v is not None and k not in ("ours_median_s", "median_s_by_operands")}
        ours = case["ours"]
        if ours.get("gflops"):
            shown["hilbert_gflops"] = ours["gflops"]
        if not shown:
            continue
        parts = ", ".join(f"{k} = {_short(v)}" for k, v in shown.items())
        lines.append(f"- `{case['name']}`: {parts}")
    return lines


def _short(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _path_search(results: dict) -> list[str]:
    for case in results["cases"]:
        table = case["metrics"].get("median_s_by_operands")
        if table:
            rows = ["| operands | hilbert plan | opt_einsum.contract_path |", "|---|---|---|"]
            rows += [f"| {n} | {seconds(v.get('hilbert'))} | {seconds(v.get('opt_einsum'))} |"
                     for n, v in table.items()]
            return ["## Path search time (median per operand count)", "", *rows, ""]
    return []


def _notes(results: dict) -> list[str]:
    return [f"- `{case['name']}`: {note}" for case in results["cases"] for note in case["notes"]]


def load_line(results: dict) -> str:
    """The load average before and after a run: `0.30 / 1.47`."""
    before, after = results["machine"].get("load_before"), results.get("load_after")
    return " / ".join("–" if v is None else f"{v:.2f}" for v in (before, after))


def _busy(results: dict) -> list[str]:
    """A warning when other processes competed for the cores during the run."""
    cores = results["machine"].get("cores_usable") or 1
    before, after = results["machine"].get("load_before"), results.get("load_after")
    if (before or 0) > 0.5 * cores or (after or 0) > cores + 1.0:
        return [f"> **The machine was busy** (load average {load_line(results)} before / after, on "
                f"{cores} core(s); this run itself adds about one): BLAS threads competed with "
                "other work, so times are noisier and slower than on an idle machine.", ""]
    return []


def _problems(results: dict) -> list[str]:
    lines = []
    for case in results["cases"]:
        for entry in (case["ours"], *case["anchors"]):
            if entry["status"] in ("skipped", "error", "mismatch"):
                lines.append(f"- `{case['name']}` · {entry['name']}: {entry['status']} — "
                             f"{entry['reason']}")
    return lines


def markdown(results: dict, plots: list[str], skipped: bool = False) -> str:
    """latest.md: when and where, the main table, targets, metrics, what was skipped, plots
    (or, when `skipped`, why there are none)."""
    m = results["machine"]
    blas = m.get("blas", {})
    threads = blas.get("threads")
    if threads is None and blas.get("threadpools"):
        threads = ", ".join(f"{p['internal_api']} {p['num_threads']}" for p in blas["threadpools"])
    git = m.get("git") or {}
    lines = [
        f"# Benchmark results ({results['mode']} run)", "",
        f"- date: {results['created']} · wall time {results['wall_s']:.0f} s"
        + (f" · with {len(results['merged_from']['cases'])} case(s) kept from the run of "
           f"{results['merged_from']['created']}" if results.get("merged_from") else ""),
        f"- machine: {m['cpu']}, {m['cores_usable']} usable core(s) of {m['cores_logical']}, "
        f"{m['memory_gib']} GiB, {m['platform']}",
        f"- BLAS: {blas.get('name')} {blas.get('version') or ''} · threads: {threads}"
        + (f" · measured peak GEMM {results['peak_gemm_gflops']:.1f} GFLOP/s"
           if results.get("peak_gemm_gflops") else ""),
        *([f"- {words}"] if (words := machine_words(results)) else []),
        f"- executor: `{results['executor']}` (runs `{results['executor_module']}`)"
        + (f" · checkout {git.get('commit')}{' (uncommitted changes)' if git.get('dirty') else ''}"
           if git else ""),
        f"- versions: Python {m['python']}, {versions_line(m)}",
        f"- load average (1 min) before / after: {load_line(results)}", "",
        *_busy(results),
        "Times are medians of per-call seconds after warm-up. **(×r)** is the ratio hilbert / "
        "anchor: below 1 hilbert is faster, above 1 it is slower. Outputs were cross-checked "
        "with numpy.allclose before timing.", "",
        markdown_table(results), "",
        "## Targets (DESIGN.md §6)", "", targets_table(results), "",
        "## Metrics", "", *(_metrics(results) or ["(none)"]), "",
        *_path_search(results),
        "## Skipped, errors, mismatches", "", *(_problems(results) or ["(none)"]), "",
        "## Notes", "", *(_notes(results) or ["(none)"]), "",
    ]
    if plots:
        lines += ["## Plots", "", *(f"![{p}]({p})" for p in plots), ""]
    elif skipped:
        lines += ["## Plots", "", "None drawn: matplotlib is not installed (`pip install "
                  "matplotlib`). PNG files beside this one are from an earlier run.", ""]
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Plots


def write_plots(results: dict, out_dir: Path) -> list[Path]:
    """times-<group>.png (grouped bars of median time, log scale), ratios.png (hilbert /
    anchor, log scale, a line at 1) and path-search.png. Needs matplotlib."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    groups = dict.fromkeys(c["group"] for c in results["cases"])
    for group in groups:
        cases = [c for c in results["cases"] if c["group"] == group and c["group"] != "planning"]
        if cases and (path := _times_plot(plt, cases, group, out_dir, results)):
            written.append(path)
    if (path := _ratio_plot(plt, results, out_dir)):
        written.append(path)
    if (path := _path_plot(plt, results, out_dir)):
        written.append(path)
    return written


def _contestants(cases: list[dict]) -> list[str]:
    names = ["hilbert"]
    for case in cases:
        for a in case["anchors"]:
            if a["name"] not in names and a["status"] == "ok":
                names.append(a["name"])
    return names


def _times_plot(plt, cases: list[dict], group: str, out_dir: Path, results: dict) -> Path | None:
    names = _contestants(cases)
    colours = _colours(plt, names)
    rows = []
    for case in cases:
        by_name = {a["name"]: a for a in case["anchors"]} | {"hilbert": case["ours"]}
        rows.append([(n, by_name[n]["median_s"]) for n in names
                     if n in by_name and by_name[n]["status"] == "ok" and by_name[n]["median_s"]])
    if not any(rows):
        return None
    widest = max(len(r) for r in rows)
    fig, ax = plt.subplots(figsize=(min(18.0, 3.5 + 0.16 * sum(len(r) for r in rows)), 5.2))
    width = 0.8 / widest
    drawn = set()
    for j, row in enumerate(rows):  # each case's bars side by side, centred on its tick
        for i, (name, value) in enumerate(row):
            ax.bar(j + (i - (len(row) - 1) / 2) * width, value, width, color=colours[name])
            drawn.add(name)
    ax.set_xticks(range(len(cases)), [c["name"] for c in cases], rotation=30, ha="right")
    ax.set_yscale("log")
    ax.set_ylabel("median time per call (s, log scale)")
    ax.set_title(f"{group}: hilbert ({results['executor']}) and anchors, {results['mode']} run")
    _legend(plt, ax, [n for n in names if n in drawn], colours)
    ax.grid(axis="y", which="both", alpha=0.3)
    fig.tight_layout()
    path = out_dir / f"times-{group}.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _legend(plt, ax, names: list[str], colours: dict[str, Any]) -> None:
    from matplotlib.patches import Patch

    ax.legend(handles=[Patch(color=colours[n], label=n) for n in names], fontsize=8,
              loc="upper left", bbox_to_anchor=(1.01, 1.0))


def _colours(plt, names: list[str]) -> dict[str, Any]:
    """hilbert in black, each standard anchor its own colour in every chart of the run, other
    anchors the palette's remaining colours in order."""
    palette = plt.get_cmap("tab10").colors + plt.get_cmap("Dark2").colors
    anchors = list(STANDARD)
    extras = [n for n in names if n not in _ALL_NAMES]
    return {n: "black" if n == "hilbert" else palette[anchors.index(n)] if n in anchors
            else palette[(len(anchors) + extras.index(n)) % len(palette)] for n in names}


def _ratio_plot(plt, results: dict, out_dir: Path) -> Path | None:
    cases = [c for c in results["cases"] if any(a["ratio"] for a in c["anchors"])]
    if not cases:
        return None
    names = [n for n in _contestants(cases) if n != "hilbert"]
    colours = _colours(plt, names)
    fig, ax = plt.subplots(figsize=(10, max(4, 0.5 * len(cases) + 1.5)))
    drawn = set()
    for j, case in enumerate(cases):  # bars grow from 1: leftwards hilbert is faster
        timed = [a for a in case["anchors"] if a["ratio"]]
        height = 0.8 / len(timed)
        for i, anchor in enumerate(timed):
            name = anchor["name"]
            ax.barh(j + (i - (len(timed) - 1) / 2) * height, anchor["ratio"] - 1.0, height,
                    left=1.0, color=colours[name])
            drawn.add(name)
    ax.axvline(1.0, color="black", linewidth=1)
    ax.set_yticks(range(len(cases)), [c["name"] for c in cases])
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("hilbert time / anchor time (log scale; left of 1 = hilbert faster)")
    ax.set_title(f"hilbert ({results['executor']}) against each anchor, {results['mode']} run")
    _legend(plt, ax, [n for n in names if n in drawn], colours)
    ax.grid(axis="x", which="both", alpha=0.3)
    fig.tight_layout()
    path = out_dir / "ratios.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _path_plot(plt, results: dict, out_dir: Path) -> Path | None:
    table = next((c["metrics"].get("median_s_by_operands") for c in results["cases"]
                  if c["metrics"].get("median_s_by_operands")), None)
    if not table:
        return None
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    counts = [int(n) for n in table]
    for key, label in (("hilbert", "hilbert plan (fresh signature)"),
                       ("opt_einsum", "opt_einsum.contract_path")):
        ys = [table[str(n)].get(key) for n in counts]
        if any(y is not None for y in ys):
            ax.plot(counts, [math.nan if y is None else y for y in ys], marker="o", label=label)
    ax.set_yscale("log")
    ax.set_xlabel("operands in the einsum")
    ax.set_ylabel("median planning time (s, log scale)")
    ax.set_title("path search time ('auto' optimiser)")
    ax.legend(fontsize=8)
    ax.grid(which="both", alpha=0.3)
    fig.tight_layout()
    path = out_dir / "path-search.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
