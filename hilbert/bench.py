"""Benchmarks of a function of yours (`hilbert bench FILE FN`, `fn.benchmark(…)`): for each path
optimiser, the time to plan, the first call and a warm call, with the plan's FLOPs and largest
intermediate, beside numpy.einsum(optimize=True) and opt_einsum.contract_expression running
the same einsums.

>>> fn = hilbert.compile_source('fn f(a, b, c) ↦ einsum("ij,jk,kl->il", a, b, c)').f   # doctest: +SKIP
>>> result = fn.benchmark((64, 32), (32, 128), (128, 4), optimize=["greedy", "dp"])     # doctest: +SKIP
>>> print(result); result.to_dict()["contestants"][0]["warm"]["median_s"]              # doctest: +SKIP

The parts: this module times the contestants (`benchmark`) and runs the anchors; the
arguments are made ready in bench_inputs, hilbert's optimisers planned and first called in
bench_optimisers, the outputs judged in bench_judging, and the result shown in bench_report.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import opt_einsum

from hilbert.compiler import ir
from hilbert.compiler.driver import Specialised

from .bench_inputs import _inputs, _optimisers, _repeat
from .bench_judging import ABS_TOLERANCE, REL_TOLERANCE, _cross_check, _machine, _notes, _ratios
from .bench_machine import pin_note
from .bench_optimisers import PLAN_BUDGET_S, _ours, _Run
from .bench_report import (
    ANCHORS,
    EXPRESSION,
    MIN_REPEAT_S,
    NUMPY,
    PLOT_FORMATS,
    PLOT_NEEDS,
    SEED,
    BenchResult,
    Contestant,
    Work,
    output_path_problem,
    render,
)
from .progress import Progress
from .timing import Schedule, time_interleaved

if TYPE_CHECKING:
    from .api import Function

__all__ = [
    "ABS_TOLERANCE", "ANCHORS", "DEFAULT_OPTIMISERS", "EXPRESSION", "MIN_REPEAT_S", "NUMPY",
    "PLAN_BUDGET_S", "PLOT_FORMATS", "PLOT_NEEDS", "REL_TOLERANCE", "SEED", "BenchResult",
    "Contestant", "Work", "benchmark", "output_path_problem", "render",
]

#: The path optimisers compared when none are named: the default first, then the alternatives.
DEFAULT_OPTIMISERS = ("auto", "greedy", "dp", "auto-hq")


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
    machine = _machine()
    pinned = pin_note(machine["openblas_pin"])
    notes = ([uncounted] if uncounted else _notes(work, direct)) + [
        "first call: a fresh function of this process, planning included; it runs on the host "
        "tier (its compiled code is built before the warm calls; under HILBERT_COMPILE=eager "
        "it compiles first); code compiled earlier in this process, or kept in the disk cache, "
        "is reused, so the first row's first call may include work that later rows' do not",
        *([pinned] if pinned else [])]
    return BenchResult(function.entry.name, function.entry.params, tuple(v.shape for v in inputs),
                       function.executor, repeat, work, tuple(contestants), tuple(notes),
                       machine)


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
