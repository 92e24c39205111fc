"""Threads (issue 23, item 5): what all cores give a loop nest (1 thread against every core, in
one process), and what hilbert's threads and torch's (or NumPy's BLAS) cost each other when
called alternately (executor/threads.py). Both build their hilbert code under
HILBERT_THREADS=auto (the default); the metric `threads` says how many threads the nests had."""

from __future__ import annotations

import contextlib
import os
import statistics
import time
from collections.abc import Callable

import numpy as np

from benchmarks import anchors as A
from benchmarks.cases.base import (
    EXAMPLES,
    OURS,
    Case,
    Config,
    Measured,
    Setup,
    Skip,
    Target,
)

ALONE, TORCH_ALONE, TORCH_BESIDE = "hilbert alone", "torch alone", "torch beside hilbert"
NUMPY_ALONE, NUMPY_BESIDE = "numpy @ alone", "numpy @ beside hilbert"
HILBERT_BESIDE_NUMPY = "hilbert beside numpy @"
SERIAL = "hilbert, 1 thread"


@contextlib.contextmanager
def _threads_setting(value: str):
    """HILBERT_THREADS=value while code is generated (a code setting: programs made under it
    keep its code)."""
    previous = os.environ.get("HILBERT_THREADS")
    os.environ["HILBERT_THREADS"] = value
    try:
        yield
    finally:
        if previous is None:
            del os.environ["HILBERT_THREADS"]
        else:
            os.environ["HILBERT_THREADS"] = previous


def _rows(config: Config) -> np.ndarray:
    n, p = config.pick((4096, 512), (1024, 512))
    return np.random.default_rng(10).standard_normal((n, p)) * 3 + 1


def _median_of(fn: Callable[..., object], calls: int, *args) -> float:
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _alternated(first: Callable[[], object], second: Callable[[], object],
                calls: int) -> tuple[float, float]:
    """Medians of each of two calls made one after the other, `calls` times."""
    a, b = [], []
    for _ in range(calls):
        start = time.perf_counter()
        first()
        middle = time.perf_counter()
        second()
        a.append(middle - start)
        b.append(time.perf_counter() - middle)
    return statistics.median(a), statistics.median(b)


def alternate(config: Config) -> Setup:
    from hilbert.executor import threads

    import hilbert

    a = _rows(config)
    normalised = hilbert.load(EXAMPLES / "Layers.hb", executor=config.executor).normalisedRows
    with _threads_setting("auto"):
        normalised.build(a.shape)  # nests on every core (threads are asked for)
    w = np.random.default_rng(11).standard_normal((a.shape[1], a.shape[1]))
    try:
        torch = A.torch_module()
    except Skip:
        torch = None

    def measure(config: Config) -> Measured:
        calls = config.pick(30, 10)
        mine = lambda: normalised(a)  # noqa: E731
        blas = lambda: a @ w  # noqa: E731
        others = {NUMPY_ALONE: blas}
        if torch is not None:
            ta, tw = torch.from_numpy(a), torch.from_numpy(w)
            others[TORCH_ALONE] = lambda: torch.tanh(ta @ tw)
        for fn in (mine, *others.values()):
            fn(), fn()
        beside = {NUMPY_ALONE: (NUMPY_BESIDE, HILBERT_BESIDE_NUMPY),
                  TORCH_ALONE: (TORCH_BESIDE, OURS)}
        times: dict[str, list[float]] = {ALONE: []}
        for name in others:
            times.update({name: [], beside[name][0]: [], beside[name][1]: []})
        for _ in range(config.repeats):
            times[ALONE].append(_median_of(mine, calls))
            for name, other in others.items():
                times[name].append(_median_of(other, calls))
                ours, theirs = _alternated(mine, other, calls)
                times[beside[name][1]].append(ours)
                times[beside[name][0]].append(theirs)
        median = {name: statistics.median(t) for name, t in times.items()}
        metrics = {"threads": threads.count(),
                   "hilbert_loss_beside_numpy": median[HILBERT_BESIDE_NUMPY] / median[ALONE],
                   "numpy_loss": median[NUMPY_BESIDE] / median[NUMPY_ALONE]}
        if torch is not None:
            metrics["hilbert_loss_beside_torch"] = median[OURS] / median[ALONE]
            metrics["torch_loss"] = median[TORCH_BESIDE] / median[TORCH_ALONE]
        return Measured(times, metrics=metrics)

    return Setup(ours=None, measure=measure, compare=False,
                 params={"a": "×".join(map(str, a.shape)), "torch": "tanh(a @ w)",
                         "numpy": "a @ w", "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY"),
                         "HILBERT_THREADS at start": os.environ.get("HILBERT_THREADS")},
                 notes=["hilbert: the layer norm (Layers.normalisedRows, its nests on every core) "
                        "timed while it alternates with torch's tanh(a @ w) (each call timed on "
                        "its own), against the same calls made alone; also beside NumPy's "
                        "a @ w; *_loss is the time beside the other over the time alone"])


def scaling(config: Config) -> Setup:
    """The layer norm, dropout and the recurrent network compiled with every core and with
    one thread, in one process."""
    from hilbert.executor import threads

    import hilbert

    a = _rows(config)
    u = np.random.default_rng(12).random(a.shape)
    rng = np.random.default_rng(13)
    sequence = (rng.standard_normal((64, 200)), rng.standard_normal((32, 32)) / np.sqrt(32),
                rng.standard_normal(32), np.zeros((64, 32)))
    shapes = tuple(v.shape for v in sequence)
    path = EXAMPLES / "Layers.hb"
    with _threads_setting("1"):
        serial = hilbert.load(path, executor=config.executor)
        serial.normalisedRows.build(a.shape)  # generated serial (by shapes: the calls' own)
        serial.kept.build(a.shape, u.shape, ())
        serial_fits = hilbert.load(EXAMPLES / "Fits.hb", executor=config.executor)
        serial_fits.unrolled.build(*shapes)
    with _threads_setting("auto"):
        every = hilbert.load(path, executor=config.executor)
        every.normalisedRows.build(a.shape), every.kept.build(a.shape, u.shape, ())
        every_fits = hilbert.load(EXAMPLES / "Fits.hb", executor=config.executor)
        every_fits.unrolled.build(*shapes)  # its 64 rows in blocks (executor/numba/row_blocks.py)

    def measure(config: Config) -> Measured:
        calls = config.pick(30, 10)
        pairs = {"layer norm": (every.normalisedRows, serial.normalisedRows, (a,)),
                 "dropout": (every.kept, serial.kept, (a, u, 0.3)),
                 "recurrence": (every_fits.unrolled, serial_fits.unrolled, sequence)}
        times: dict[str, list[float]] = {OURS: [], SERIAL: []}
        metrics: dict[str, float] = {"threads": threads.count()}
        for name, (fast, slow, args) in pairs.items():
            mine, one = [], []
            for _ in range(config.repeats):
                mine.append(_median_of(fast, calls, *args))
                one.append(_median_of(slow, calls, *args))
            metrics[f"{name.replace(' ', '_')}_speedup"] = (statistics.median(one)
                                                             / statistics.median(mine))
            times[OURS] += mine
            times[SERIAL] += one
        return Measured(times, metrics=metrics)

    return Setup(ours=None, measure=measure, compare=False,
                 params={"a, u": "×".join(map(str, a.shape)), "recurrence": "64×200, 32 units"},
                 notes=["hilbert: the layer norm, dropout and the recurrent network "
                        "(Fits.unrolled: 200 steps, its 64 rows in blocks) built under "
                        "HILBERT_THREADS=auto (every core), against the same functions built "
                        "under HILBERT_THREADS=1; *_speedup is the one-thread time over the "
                        "every-core time"])


CASES = [
    Case("alternate-torch", "threads", "hilbert's threads beside torch's and NumPy's",
         "a threaded layer norm alternating with torch and NumPy products: what each loses",
         alternate,
         (Target("hilbert loses ≤ 5% beside torch", ALONE, 1.05),
          Target("torch loses ≤ 5% beside hilbert", metric="torch_loss", max_value=1.05),
          Target("hilbert loses ≤ 5% beside NumPy's BLAS", metric="hilbert_loss_beside_numpy",
                 max_value=1.05),
          Target("NumPy's BLAS loses ≤ 5% beside hilbert", metric="numpy_loss",
                 max_value=1.05))),
    Case("threads-scaling", "threads", "loop nests on every core against one thread",
         "the layer norm, dropout and a recurrence on every core against HILBERT_THREADS=1",
         scaling, (Target("runs", runs=True),)),
]
