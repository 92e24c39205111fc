"""Timing calls as the benchmarks do: calibrated repeats, taken in turns across contestants,
the garbage collector paused, summarised by medians. Shared by `hilbert bench` and the suite.

>>> summaries, failed = time_interleaved({"f": lambda: None}, Schedule())   # doctest: +SKIP
>>> summaries["f"]["median_s"]                                               # doctest: +SKIP
"""

from __future__ import annotations

import gc
import math
import statistics
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

#: A pause before each timed repeat, so thread pools that spin after their last call (OpenMP in
#: PyTorch, XLA's) go idle before the next contestant runs rather than competing with it.
SETTLE_S = 0.002


class Reporter(Protocol):
    """Anything that can be told what is being done now (a progress bar)."""

    def step(self, label: str) -> None: ...


@dataclass(frozen=True)
class Schedule:
    """How hard to time: a repeat lasts at least `min_time` seconds (short calls are looped);
    `repeats` repeats per contestant, cut to no fewer than `min_repeats` when they would take
    more than `budget_s` seconds."""

    min_time: float = 0.05
    repeats: int = 5
    min_repeats: int = 3
    budget_s: float = 10.0


def time_interleaved(calls: dict[str, Callable[[], Any]], schedule: Schedule,
                     progress: Reporter | None = None) -> tuple[dict[str, dict], dict[str, str]]:
    """Per contestant: a calibration (a second warm-up that picks how many calls one repeat
    loops over, so a repeat lasts ≥ min_time), then repeats taken in turn across contestants
    so slow drifts of the machine hit everyone alike. Returns summaries of seconds per call,
    and the contestants that failed while being timed, with the reason."""
    plans: dict[str, tuple[int, int]] = {}
    failed: dict[str, str] = {}
    for name, call in calls.items():
        if progress:
            progress.step(f"calibrating {name}")
        try:
            number, per_call = calibrate(call, schedule.min_time)
        except Exception as err:  # noqa: BLE001 - one failing contestant must not stop the rest
            failed[name] = f"failed while calibrating: {describe(err)}"
            continue
        repeats = schedule.repeats
        if repeats * number * per_call > schedule.budget_s:
            repeats = max(schedule.min_repeats, int(schedule.budget_s / (number * per_call)))
        plans[name] = (number, repeats)
    times: dict[str, list[float]] = {name: [] for name in plans}
    for r in range(max((p[1] for p in plans.values()), default=0)):
        for name, (number, repeats) in plans.items():
            if r >= repeats or name in failed:
                continue
            if progress:
                progress.step(f"timing {name} ({r + 1}/{repeats})")
            time.sleep(SETTLE_S)
            try:
                times[name].append(time_repeat(calls[name], number) / number)
            except Exception as err:  # noqa: BLE001
                failed[name] = f"failed while being timed: {describe(err)}"
    summaries = {name: summarise(values, plans[name][0])
                 for name, values in times.items() if name not in failed}
    return summaries, failed


def calibrate(call: Callable[[], Any], min_time: float) -> tuple[int, float]:
    """(calls per repeat, seconds per call) after one more warm-up call."""
    per_call = time_repeat(call, 1)
    if per_call >= min_time:
        return 1, per_call
    number = max(1, min(10**6, math.ceil(min_time / max(per_call, 1e-7))))
    per_call = time_repeat(call, number) / number  # also a warm-up; refines the estimate
    return max(1, min(10**6, math.ceil(min_time / max(per_call, 1e-9)))), per_call


def time_repeat(call: Callable[[], Any], number: int) -> float:
    """Seconds for `number` calls, the garbage collector paused (as timeit does)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        begun = time.perf_counter()
        for _ in range(number):
            call()
        return time.perf_counter() - begun
    finally:
        if enabled:
            gc.enable()


def summarise(times: list[float], number: int) -> dict:
    """Median and spread of per-call seconds."""
    ordered = sorted(times)
    quartiles = statistics.quantiles(ordered, n=4) if len(ordered) > 1 else [ordered[0]] * 3
    return {"median_s": statistics.median(ordered), "min_s": ordered[0], "max_s": ordered[-1],
            "iqr_s": quartiles[2] - quartiles[0], "repeats": len(ordered), "number": number,
            "times_s": ordered}


def seconds(value: float | None) -> str:
    """A duration with a unit a person reads at a glance: 812 ns, 14.2 µs, 3.07 ms, 1.25 s."""
    if value is None:
        return "–"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value / 1e-9:.3g} ns"


def describe(err: BaseException) -> str:
    """An exception in one line: its type and message (HilbertError's first line is enough)."""
    text = str(err).strip().splitlines()
    where = "" if text else " at " + traceback.format_exception(err)[-2].strip()[:200]
    return f"{type(err).__name__}: {text[0] if text else ''}{where}"[:500]
