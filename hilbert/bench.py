"""Benchmarks of a function of yours (`hilbert bench FILE FN`, `fn.benchmark(…)`): for each path
optimiser, the time to plan, the first call and a warm call, with the plan's FLOPs and largest
intermediate, beside numpy.einsum(optimize=True) and opt_einsum.contract_expression running
the same einsums.

>>> fn = hilbert.compile_source('fn f(a, b, c) ↦ einsum("ij,jk,kl->il", a, b, c)').f   # doctest: +SKIP
>>> result = fn.benchmark((64, 32), (32, 128), (128, 4), optimize=["greedy", "dp"])     # doctest: +SKIP
>>> print(result); result.to_dict()["contestants"][0]["warm"]["median_s"]              # doctest: +SKIP
"""

from __future__ import annotations

import math
import os
import platform
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import opt_einsum

from hilbert.compiler import ir
from hilbert.compiler.driver import Specialised, annotate, forget_plans, plan_entry, specialise
from hilbert.compiler.plan import ITEM_BYTES, OPTIMISERS, check_optimiser, memory_limit
from hilbert.compiler.plan_text import human_bytes, human_count
from hilbert.compiler.shapes import Shape
from hilbert.executor import get_executor
from hilbert.grammar.errors import ArgumentError, HilbertError, RuntimeHilbertError
from hilbert.grammar.source import nowhere

from .api import Function
from .arguments import bind_arguments
from .progress import Progress
from .timing import Schedule, seconds, time_interleaved

#: The path optimisers compared when none are named: the default first, then the alternatives.
DEFAULT_OPTIMISERS = ("auto", "greedy", "dp", "auto-hq")
NUMPY = "np.einsum(opt)"           # numpy.einsum(optimize=True): path searched on every call
EXPRESSION = "oe.expression"       # opt_einsum.contract_expression: path searched once
ANCHORS = (NUMPY, EXPRESSION)
#: Inputs given as shapes are drawn from a standard normal with this seed.
SEED = 0
#: One timed repeat lasts at least this long (short calls are looped).
MIN_REPEAT_S = 0.05
#: Planning is repeated up to --repeat times, but stops once it has taken this long in all.
PLAN_BUDGET_S = 2.0
#: Outputs of two contestants agree when within this relative tolerance (contraction orders
#: round differently), or within ABS_TOLERANCE of the largest magnitude.
REL_TOLERANCE, ABS_TOLERANCE = 1e-7, 1e-9
PLOT_NEEDS = ("the bar chart needs matplotlib, which is not installed: pip install matplotlib "
              "(or pip install 'hilbert[plot]')")
#: No NumPy array holds this many bytes or more (sizes are signed 64-bit).
_MOST_BYTES = 2**63
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


def benchmark(function: Function, args: tuple, kwargs: dict,
              optimize: str | Sequence[str] | None = None, repeat: int = 5) -> BenchResult:
    """Time `function` on these arguments (shapes as tuples of ints, drawn from a standard
    normal; or values) for each optimiser in `optimize` (None: DEFAULT_OPTIMISERS), beside
    the anchors."""
    optimisers = _optimisers(function, DEFAULT_OPTIMISERS if optimize is None else optimize)
    repeat = _repeat(function, repeat)
    inputs = _inputs(function, args, kwargs, optimisers)
    progress = Progress(len(optimisers) + len(ANCHORS) + 1, unit="stage", quiet=True)
    try:
        return _measure(function, optimisers, repeat, inputs, progress)
    finally:
        progress.close()


def _measure(function: Function, optimisers: tuple[str, ...], repeat: int,
             inputs: tuple[np.ndarray, ...], progress: Progress) -> BenchResult:
    """Plan and first call per optimiser, then the anchors, then warm calls of everyone."""
    runs = []
    for i, optimize in enumerate(optimisers):
        progress.item(i, f"hilbert {optimize}: plan and first call")
        runs.append(_ours(function, optimize, repeat, inputs))
    done = [r for r in runs if r.error is None]
    if not done:  # the same mistake for every optimiser (a bad step count): the user's error
        raise runs[0].error  # type: ignore[misc]
    work, uncounted = _work(done[0].ready)
    operands = _operands(done[0].ready, work, inputs)
    for j, make in enumerate((_numpy_anchor, _expression_anchor)):
        progress.item(len(optimisers) + j, f"anchor {ANCHORS[j]}")
        runs.append(make(work, operands, repeat))
    progress.item(len(optimisers) + len(ANCHORS), "warm calls")
    calls = {r.contestant.name: r.call for r in runs if r.call is not None}
    schedule = Schedule(MIN_REPEAT_S, repeat, repeat, math.inf)
    summaries, failed = time_interleaved(calls, schedule, progress)
    contestants = [r.contestant for r in runs]
    for c in contestants:
        c.warm = summaries.get(c.name)
        if c.name in failed:
            c.status, c.reason = "error", failed[c.name]
    direct = _is_direct(done[0].ready)
    _cross_check(runs, direct)
    if uncounted is None:
        _ratios(contestants)
    notes = ([uncounted] if uncounted else _notes(work, direct)) + [
        "first call: a fresh function of this process, planning included; it runs on the host "
        "tier (its compiled code is built before the warm calls; under HILBERT_COMPILE=eager "
        "it compiles first); code compiled earlier in this process, or kept in the disk cache, "
        "is reused, so the first row's first call may include work that later rows' do not"]
    return BenchResult(function.entry.name, function.entry.params, tuple(v.shape for v in inputs),
                       function.executor, repeat, work, tuple(contestants), tuple(notes),
                       _machine())


# -- normalising the arguments --------------------------------------------------------------


def _optimisers(function: Function, optimize: str | Sequence[str]) -> tuple[str, ...]:
    """The optimisers as a tuple without repeats; each one known (E600 otherwise)."""
    names = (optimize,) if isinstance(optimize, str) else tuple(optimize)
    span = function.entry.definition.span
    if not names:
        raise ArgumentError("E600", "benchmark needs at least one path optimiser (choose from "
                            f"{', '.join(OPTIMISERS)})", span)
    for name in names:
        if not isinstance(name, str):
            raise ArgumentError("E600", f"a path optimiser is named by a string, not "
                                f"{type(name).__name__} {name!r}", span)
        check_optimiser(name, span)
    return tuple(dict.fromkeys(names))


def _repeat(function: Function, repeat) -> int:
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        raise ArgumentError("E600", f"benchmark's repeat must be a whole number ≥ 1, not "
                            f"{repeat!r}", function.entry.definition.span)
    return repeat


def _inputs(function: Function, args: tuple, kwargs: dict,
            optimisers: tuple[str, ...]) -> tuple[np.ndarray, ...]:
    """Arrays for the call: a shape (a tuple of ints, `()` a scalar) becomes a standard normal
    draw of that shape; anything else is a value, converted as a call converts it. Nothing is
    drawn before the arguments are bound (E600), the shapes checked (E3xx) and the memory
    guard passed (E700): the arrays to draw must fit the limit, and so must some optimiser's
    plan for these shapes."""
    entry = function.entry
    stand_in = np.zeros(())  # in a shape's place while binding: no memory, nothing drawn
    bound = bind_arguments(entry, tuple(stand_in if _is_shape(a) else a for a in args),
                           {k: stand_in if _is_shape(v) else v for k, v in kwargs.items()})
    given = dict(zip(entry.params, args, strict=False)) | kwargs  # bound: a valid binding
    drawn = {p: tuple(v) for p, v in given.items() if _is_shape(v)}  # in the order given
    shapes = tuple(drawn.get(p, b.shape) for p, b in zip(entry.params, bound, strict=True))
    _check_shapes(function, shapes)
    _guard_draws(function, drawn, shapes)
    _guard_plans(function, optimisers, shapes, tuple(
        _placeholder(drawn[p]) if p in drawn else b for p, b in zip(entry.params, bound, strict=True)))
    rng = np.random.default_rng(SEED)
    draws = {p: np.asarray(rng.standard_normal(s), dtype=np.float64) for p, s in drawn.items()}
    return tuple(draws.get(p, b) for p, b in zip(entry.params, bound, strict=True))


def _guard_draws(function: Function, drawn: dict[str, Shape], shapes) -> None:
    """E700 when the arrays to draw for arguments given as shapes would be over the memory
    limit together, before any is allocated."""
    needed = sum(math.prod(s) for s in drawn.values()) * ITEM_BYTES
    limit = memory_limit()
    if needed <= limit and needed < _MOST_BYTES:
        return
    over = (f"over the limit of {human_bytes(limit)} (set HILBERT_MEMORY_LIMIT to change it)"
            if needed > limit else "more than a NumPy array can hold")
    parts = ", ".join(f"{p} ({'×'.join(map(str, s))})" for p, s in drawn.items() if s)
    err = RuntimeHilbertError(
        "E700", f"benchmarking {function.entry.name} would draw the argument(s) given as shapes, "
        f"{parts}, from a standard normal: {human_bytes(needed)} of float64 in all, {over}",
        function.entry.definition.span)
    raise _annotated(function, err, shapes)


def _placeholder(shape: Shape) -> np.ndarray:
    """Zeros of `shape` that take no memory (a broadcast view), for planning only."""
    return np.broadcast_to(np.float64(0.0), shape)


def _as_written(function: Function) -> bool:
    """Whether the function's executor runs (and so plans) the IR as written."""
    return getattr(get_executor(function.executor), "AS_WRITTEN", False)


def _guard_plans(function: Function, optimisers: tuple[str, ...], shapes, values) -> None:
    """E700 before anything is drawn when every optimiser's plan for these shapes is over the
    memory limit (the first optimiser's plan that is not settles it: the work goes on)."""
    refused: HilbertError | None = None
    for optimize in optimisers:
        try:
            plan_entry(function.entry, shapes, optimize, function.executor, values,
                       as_written=_as_written(function))
        except HilbertError as err:
            if err.code != "E700":
                return  # another reason, which the timed runs report (values drawn may differ)
            refused = refused or err
        else:
            return
    if refused is not None:
        raise _annotated(function, refused, shapes)


def _is_shape(value) -> bool:
    return isinstance(value, tuple) and all(isinstance(d, int) and not isinstance(d, bool)
                                            and d >= 0 for d in value)


def _check_shapes(function: Function, shapes: tuple[Shape, ...]) -> None:
    """Shape errors (E3xx) are the user's, whatever the optimiser: raised here, annotated."""
    try:
        specialise(function.entry, shapes)
    except HilbertError as err:
        raise _annotated(function, err, shapes) from None


def _annotated(function: Function, err: HilbertError, shapes) -> HilbertError:
    parts = ", ".join(f"{p}: {'×'.join(map(str, s)) or 'scalar'}"
                      for p, s in zip(function.entry.params, shapes, strict=True))
    return annotate(err, function.module.resolved).with_note(
        f"while benchmarking {function.entry.name}({parts})")


# -- hilbert's contestants --------------------------------------------------------------------


@dataclass
class _Run:
    """A contestant prepared: the callable the warm timing calls, the output of its first call,
    and for hilbert's optimisers the specialised plan (or the error that stopped it)."""

    contestant: Contestant
    call: Callable[[], Any] | None = None
    output: Any = None
    ready: Specialised | None = None
    error: HilbertError | None = None


def _ours(function: Function, optimize: str, repeat: int, inputs) -> _Run:
    """Planning (median of fresh path searches), then a fresh function's first call."""
    contestant = Contestant(f"hilbert {optimize}", "hilbert", optimize)
    shapes = tuple(v.shape for v in inputs)
    try:
        contestant.plan_s, ready = _planning(function, optimize, shapes, inputs, repeat)
    except HilbertError as err:
        return _failed(contestant, _annotated(function, err, shapes))
    fresh = Function(function.entry, function.module, function.executor, optimize)
    forget_plans()  # the first call plans and searches its paths afresh too
    try:
        begun = time.perf_counter()
        output = fresh(*inputs)
        contestant.first_call_s = time.perf_counter() - begun
        build = getattr(fresh.program(shapes), "build", None)
        if build is not None:  # the warm call is the compiled tier's (docs/architecture.md)
            build()
    except HilbertError as err:  # already annotated by the call
        return _failed(contestant, err)
    contestant.flops = ready.plan.flops
    contestant.largest = max((e.largest for e in ready.plan.einsums), default=None)
    return _Run(contestant, lambda: fresh(*inputs), output, ready)


def _failed(contestant: Contestant, err: HilbertError) -> _Run:
    if err.code == "E500":
        err = err.with_note("arguments given as shapes are drawn at random: give step counts "
                            "as values (in Python a number, with `hilbert bench` --value T=100)")
    contestant.status, contestant.reason = "error", str(err).splitlines()[0]
    return _Run(contestant, error=err)


def _planning(function: Function, optimize: str, shapes, inputs, repeat: int):
    """(median seconds, the last result) of planning `repeat` times, each with an empty path
    cache so that every repeat searches afresh; stops early past PLAN_BUDGET_S in all."""
    times: list[float] = []
    stop = time.perf_counter() + PLAN_BUDGET_S
    while len(times) < repeat and (not times or time.perf_counter() < stop):
        forget_plans()
        begun = time.perf_counter()
        ready = plan_entry(function.entry, shapes, optimize, function.executor, inputs,
                           as_written=_as_written(function))
        times.append(time.perf_counter() - begun)
    return statistics.median(times), ready


# -- the anchors ------------------------------------------------------------------------------


def _work(ready: Specialised | None) -> tuple[tuple[Work, ...], str | None]:
    """The plan's einsums, each with how often one call runs it: once, or once per step of the
    loop it runs in. When that cannot be known (a loop's trips depend on values not given,
    or loops nest), each einsum counts once and a note says why."""
    assert ready is not None
    plan = ready.plan
    trips: dict[str, list[int | None]] = {}
    for loop in plan.loops:
        trips.setdefault(loop.name, []).append(loop.trips)
    counts = [1 if e.scope == "call" else _only(trips.get(e.scope, [])) for e in plan.einsums]
    known = [c for c in counts if c is not None]
    if len(known) == len(counts) and plan.flops == sum(
            c * e.flops for c, e in zip(known, plan.einsums, strict=True)):
        return tuple(Work(e.spec, e.shapes, c) for e, c in zip(plan.einsums, known, strict=True)), None
    return (tuple(Work(e.spec, e.shapes, 1) for e in plan.einsums),
            "the anchors run each einsum once: how often one call runs the einsums inside "
            "loops is not known here (give step counts as values), so no ratios are given")


def _only(values: list[int | None]) -> int | None:
    return values[0] if len(values) == 1 else None


def _is_direct(ready: Specialised | None) -> bool:
    """True when the function is one einsum of its parameters: the anchors then compute its
    very output, from the same inputs, and are checked against it."""
    body = ready.body if ready is not None else None
    return isinstance(body, ir.Einsum) and all(isinstance(a, ir.Param) for a in body.args)


def _operands(ready: Specialised | None, work: tuple[Work, ...], inputs) -> list[tuple]:
    """Each einsum's operands: the function's own inputs when it is one einsum of them, else
    standard normal draws of the operands' shapes."""
    if _is_direct(ready):
        assert ready is not None and isinstance(ready.body, ir.Einsum)
        return [tuple(inputs[a.index] for a in ready.body.args)]  # type: ignore[attr-defined]
    rng = np.random.default_rng(SEED + 1)
    return [tuple(rng.standard_normal(s) for s in w.shapes) for w in work]


def _numpy_anchor(work: tuple[Work, ...], operands: list[tuple], repeat: int) -> _Run:
    """numpy.einsum(optimize=True) on each einsum, as often as one call runs it. It searches
    its path on every call, so it has no planning time of its own."""
    contestant = Contestant(NUMPY, "anchor")
    costs = [_numpy_cost(w.spec, ops) for w, ops in zip(work, operands, strict=True)]

    def call():
        result = None
        for w, ops in zip(work, operands, strict=True):
            for _ in range(w.count):
                result = np.einsum(w.spec, *ops, optimize=True)
        return result

    return _anchor(contestant, call, work, costs)


def _numpy_cost(spec: str, operands: tuple) -> tuple[int, int]:
    """FLOPs and largest intermediate of the path numpy.einsum(optimize=True) takes, counted
    as opt_einsum (and hilbert's plan) count them."""
    path, _ = np.einsum_path(spec, *operands, optimize=True)
    _, info = opt_einsum.contract_path(spec, *operands, optimize=[tuple(p) for p in path[1:]])
    return int(info.opt_cost), int(info.largest_intermediate)


def _expression_anchor(work: tuple[Work, ...], operands: list[tuple], repeat: int) -> _Run:
    """opt_einsum.contract_expression built once per einsum (its planning), then called."""
    contestant = Contestant(EXPRESSION, "anchor")
    times = []
    for _ in range(repeat):
        begun = time.perf_counter()
        expressions = [opt_einsum.contract_expression(w.spec, *w.shapes) for w in work]
        times.append(time.perf_counter() - begun)
    contestant.plan_s = statistics.median(times) if work else None
    costs = []
    for w in work:
        _, info = opt_einsum.contract_path(w.spec, *w.shapes, shapes=True)
        costs.append((int(info.opt_cost), int(info.largest_intermediate)))

    def call():
        result = None
        for expression, w, ops in zip(expressions, work, operands, strict=True):
            for _ in range(w.count):
                result = expression(*ops)
        return result

    return _anchor(contestant, call, work, costs)


def _anchor(contestant: Contestant, call: Callable[[], Any], work: tuple[Work, ...],
            costs: list[tuple[int, int]]) -> _Run:
    """Costs summed over the work, and the first call timed; nothing to run without einsums."""
    if not work:
        contestant.status, contestant.reason = "error", "the function has no einsum to run"
        return _Run(contestant)
    contestant.flops = sum(w.count * flops for w, (flops, _) in zip(work, costs, strict=True))
    contestant.largest = max(largest for _, largest in costs)
    begun = time.perf_counter()
    output = call()
    contestant.first_call_s = time.perf_counter() - begun
    return _Run(contestant, call, output)


# -- judging ----------------------------------------------------------------------------------


def _cross_check(runs: list[_Run], direct: bool) -> None:
    """Every hilbert optimiser's output against the first one's; the anchors too when they
    compute the function's own output. A disagreement is a 'mismatch', without ratios."""
    basis = next(r for r in runs if r.contestant.kind == "hilbert" and r.error is None)
    for run in runs:
        c = run.contestant
        if run is basis or c.status != "ok" or (c.kind == "anchor" and not direct):
            continue
        c.max_abs_diff, why = _difference(run.output, basis.output)
        if why:
            c.status, c.reason = "mismatch", f"{why} than {basis.contestant.name}'s output"


def _difference(got, want) -> tuple[float | None, str]:
    """The largest absolute difference, and why the two disagree ('' when they agree)."""
    gots, wants = _parts(got), _parts(want)
    if [g.shape for g in gots] != [w.shape for w in wants]:
        return None, f"shape(s) {[g.shape for g in gots]} rather"
    largest = 0.0
    for g, w in zip(gots, wants, strict=True):
        if not g.size:
            continue
        largest = max(largest, float(np.nanmax(np.abs(g - w), initial=0.0)))
        scale = float(np.nanmax(np.abs(w), initial=1.0))
        if not np.allclose(g, w, rtol=REL_TOLERANCE, atol=ABS_TOLERANCE * max(scale, 1.0),
                           equal_nan=True):
            return largest, f"values up to {largest:.3g} away (rtol {REL_TOLERANCE:g}) rather"
    return largest, ""


def _parts(value) -> list[np.ndarray]:
    if isinstance(value, tuple):
        return [np.asarray(v, dtype=np.float64) for v in value]
    return [np.asarray(value, dtype=np.float64)]


def _ratios(contestants: list[Contestant]) -> None:
    """Each hilbert optimiser's warm median over each anchor's (both ok)."""
    anchors = [a for a in contestants if a.kind == "anchor" and a.status == "ok" and a.warm_s]
    for c in contestants:
        if c.kind == "hilbert" and c.status == "ok" and c.warm_s:
            c.ratios = {a.name: c.warm_s / a.warm_s for a in anchors}  # type: ignore[operator]


def _notes(work: tuple[Work, ...], direct: bool) -> list[str]:
    """What the anchors' times mean beside hilbert's."""
    if not work:
        return ["the function has no einsum, so the anchors have nothing to run"]
    if direct:
        return ["the function is one einsum of its arguments: the anchors compute the same "
                "output from the same inputs, checked against hilbert's"]
    calls = sum(w.count for w in work)
    return [f"the anchors run the function's {len(work)} einsum(s) ({calls} call(s) per call "
            "of the function) on standard normal operands of the same shapes; hilbert's "
            "times also include the rest of its work (entrywise operations, loops)"]


def _machine() -> dict:
    """Where the numbers were measured: platform, Python, cores and library versions."""
    versions: dict[str, str | None] = {}
    for name in ("hilbert", "numpy", "opt_einsum", "numba"):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return {"platform": platform.platform(), "python": platform.python_version(),
            "cores": os.cpu_count(), "versions": versions}


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
             f"{SEED}", "", *_columns(rows), "",
             "× anchor = hilbert's warm call / the anchor's: below 1, hilbert is faster."]
    problems = [f"{c.name}: {c.status}: {c.reason}" for c in result.contestants if c.reason]
    lines += [f"note: {n}" for n in (*result.notes, *problems)]
    return "\n".join(lines)


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
