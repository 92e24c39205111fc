"""The result of benchmarking a function of yours (`hilbert bench FILE FN`, `fn.benchmark(…)`):
its contestants, the table it prints and the bar chart it draws."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from hilbert.compiler.passes.shapes import Shape
from hilbert.compiler.plan.text import human_count
from hilbert.grammar.errors import ArgumentError
from hilbert.grammar.source import nowhere

from .timing import seconds

NUMPY = "np.einsum(opt)"           # numpy.einsum(optimize=True): path searched on every call
EXPRESSION = "oe.expression"       # opt_einsum.contract_expression: path searched once
ANCHORS = (NUMPY, EXPRESSION)
#: Inputs given as shapes are drawn from a standard normal with this seed.
SEED = 0
#: One timed repeat lasts at least this long (short calls are looped).
MIN_REPEAT_S = 0.05
PLOT_NEEDS = ("the bar chart needs matplotlib, which is not installed: pip install matplotlib "
              "(or pip install 'hilbert[plot]')")
#: The formats `plot` writes, named by the file's extension.
PLOT_FORMATS = ("png", "svg", "pdf")


@dataclass(frozen=True)
class Work:
    """One einsum of the function as the anchors run it: its specification, its operands'
    shapes, and how many times one call of the function runs it (loops count their steps)."""

    spec: str
    shapes: tuple[Shape, ...]
    count: int


@dataclass
class Contestant:
    """One row of the table: a path optimiser of hilbert's, or an anchor."""

    name: str
    kind: str                             # "hilbert" or "anchor"
    optimize: str | None = None
    status: str = "ok"                    # "ok", "error" or "mismatch"
    reason: str = ""
    plan_s: float | None = None           # median time to plan (to build, for oe.expression)
    first_call_s: float | None = None     # a fresh function's first call: plan, compile, run
    warm: dict | None = None              # median, spread and every repeat of a warm call
    flops: int | None = None              # of one call; None when a loop's trips are unknown
    largest: int | None = None            # elements of the largest intermediate
    ratios: dict[str, float] = field(default_factory=dict)  # warm median / each anchor's
    max_abs_diff: float | None = None     # from the output it was compared with

    @property
    def warm_s(self) -> float | None:
        return self.warm["median_s"] if self.warm else None


@dataclass(frozen=True)
class BenchResult:
    """What `fn.benchmark(…)` returns: print it for the table, `to_dict()` for plain data,
    `plot(path)` for a bar chart."""

    function: str
    params: tuple[str, ...]
    signature: tuple[Shape, ...]
    executor: str
    repeat: int
    work: tuple[Work, ...]
    contestants: tuple[Contestant, ...]
    notes: tuple[str, ...]
    machine: dict

    @property
    def mismatched(self) -> bool:
        """True when some contestant's output disagreed with hilbert's first optimiser's."""
        return any(c.status == "mismatch" for c in self.contestants)

    def to_dict(self) -> dict:
        """Plain data (JSON-ready) for the whole result."""
        data = asdict(self)
        data["signature"] = [list(s) for s in self.signature]
        data["work"] = [{"spec": w.spec, "shapes": [list(s) for s in w.shapes], "count": w.count}
                        for w in self.work]
        return data

    def __str__(self) -> str:
        return render(self)

    def plot(self, path: str | os.PathLike) -> Path:
        """Draw plan, first-call and warm-call times per contestant as grouped bars (log
        scale) into the file `path`, in the format its extension names (PLOT_FORMATS), and
        return it. E600 for a path that cannot be such a file (a directory, no extension or
        another, a folder that does not exist); ImportError when matplotlib is not installed;
        OSError when the file cannot be written."""
        problem = output_path_problem(path, PLOT_FORMATS)
        if problem:
            raise ArgumentError("E600", f"cannot draw the chart into {os.fspath(path)}: {problem}",
                                nowhere(os.fspath(path)))
        return _plot(self, Path(path))


def output_path_problem(path: str | os.PathLike, formats: tuple[str, ...] = ()) -> str | None:
    """Why `path` cannot name a file to write (one ending in an extension of `formats`, when
    they are given), or None: a directory (or a path ending in a separator), an extension
    missing or not one of `formats`, a folder that does not exist."""
    text = os.fspath(path)
    file = Path(text)
    if not text or text.endswith(("/", os.sep)) or file.is_dir():
        return "it names a directory: name the file to write" + (
            f", such as {file / ('bench.' + formats[0])}" if formats and text else "")
    extension = file.suffix[1:].lower()
    if formats and extension not in formats:
        supported = ", ".join(f".{f}" for f in formats)
        said = (f"its extension .{extension} is not a format" if extension else
                "it has no extension to name a format")
        return f"{said} the chart can be written in; end the name in one of {supported}"
    folder = file.parent
    if not folder.is_dir():
        return f"the folder {folder} {'is not a directory' if folder.exists() else 'does not exist'}"
    return None


# -- showing ----------------------------------------------------------------------------------


def render(result: BenchResult) -> str:
    """The result as an aligned table with its notes (what `hilbert bench FILE FN` prints)."""
    args = ", ".join(f"{p}: {'×'.join(map(str, s)) or 'scalar'}"
                     for p, s in zip(result.params, result.signature, strict=True))
    head = ["contestant", "plan", "first call", "warm call", "FLOPs", "largest intermediate",
            *(f"× {a}" for a in ANCHORS)]
    rows = [head] + [_row(c) for c in result.contestants]
    lines = [f"benchmark of {result.function}({args})",
             f"  executor {result.executor} · warm call: median of {result.repeat} repeats of "
             f"≥ {MIN_REPEAT_S * 1e3:.0f} ms · inputs given as shapes: standard normal, seed "
             f"{SEED}", *machine_line(result.machine), "", *_columns(rows), "",
             "× anchor = hilbert's warm call / the anchor's: below 1, hilbert is faster."]
    problems = [f"{c.name}: {c.status}: {c.reason}" for c in result.contestants if c.reason]
    lines += [f"note: {n}" for n in (*result.notes, *problems)]
    return "\n".join(lines)


def machine_line(machine: dict) -> list[str]:
    """The BLAS and its kernel, and the CPU's vectors, as one line of the table's head (none
    for a record that lacks them)."""
    blas = machine.get("blas")
    if not blas:
        return []
    kernel = f", kernel {blas['kernel']}" if blas.get("kernel") else ""
    widest = machine.get("cpu_widest")
    vectors = f" · CPU vectors up to {widest}" if widest else (
        f" · CPU vectors {', '.join(machine['cpu_vectors'])}" if machine.get("cpu_vectors") else "")
    return [f"  BLAS {blas.get('name') or 'unknown'} {blas.get('version') or ''}".rstrip()
            + f"{kernel}{vectors}"]


def _row(c: Contestant) -> list[str]:
    ratios = [f"×{c.ratios[a]:.2f}" if a in c.ratios else "–" for a in ANCHORS]
    if c.status == "error":
        return [c.name, "error", "", "", "", "", *ratios]
    warm = seconds(c.warm_s) + (" (mismatch)" if c.status == "mismatch" else "")
    largest = "–" if c.largest is None else f"{human_count(c.largest)} el"
    return [c.name, seconds(c.plan_s), seconds(c.first_call_s), warm, human_count(c.flops),
            largest, *ratios]


def _columns(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip()
            for r in rows]


def _plot(result: BenchResult, path: Path) -> Path:
    """Grouped bars per contestant: plan, first call and warm call, log scale."""
    try:
        from matplotlib.figure import Figure  # no pyplot: a caller's backend is left alone
    except ImportError:
        raise ImportError(PLOT_NEEDS) from None
    measures = (("plan", "plan_s", "tab:gray"), ("first call", "first_call_s", "tab:orange"),
                ("warm call", "warm_s", "tab:blue"))
    shown = [c for c in result.contestants if c.status != "error"]
    figure = Figure(figsize=(max(6.0, 1.3 * len(shown) + 2), 4.5))
    axes = figure.subplots()
    width = 0.8 / len(measures)
    for i, (label, attribute, colour) in enumerate(measures):
        xs = [j + (i - 1) * width for j, c in enumerate(shown) if getattr(c, attribute)]
        ys = [getattr(c, attribute) for c in shown if getattr(c, attribute)]
        axes.bar(xs, ys, width, label=label, color=colour)
    axes.set_xticks(range(len(shown)), [c.name for c in shown], rotation=20, ha="right")
    axes.set_yscale("log")
    axes.set_ylabel("seconds (log scale)")
    axes.set_title(f"{result.function}: plan, first call and warm call ({result.executor})")
    axes.legend(fontsize=8)
    axes.grid(axis="y", which="both", alpha=0.3)
    figure.tight_layout()
    # the format named outright: matplotlib would otherwise add ".png" to a name without one
    figure.savefig(os.fspath(path), dpi=110, format=path.suffix[1:].lower())
    return path
