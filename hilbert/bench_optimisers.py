"""hilbert's path optimisers as contestants of a benchmark: for each, the time to plan (fresh
path searches) and a fresh function's first call, with the plan's FLOPs and largest
intermediate."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hilbert.compiler.driver import Specialised, forget_plans, plan_entry
from hilbert.grammar.errors import HilbertError

from .bench_inputs import _annotated, _as_written
from .bench_report import Contestant

if TYPE_CHECKING:
    from .api import Function

#: Planning is repeated up to --repeat times, but stops once it has taken this long in all.
PLAN_BUDGET_S = 2.0


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
    fresh = type(function)(function.entry, function.module, function.executor, optimize)
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
