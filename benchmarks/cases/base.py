"""What a benchmark case is: its contestants, its targets, and the settings it is sized by."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hilbert.timing import Schedule

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"

OURS = "hilbert"
# The standard anchors, in the order the report shows them.
NUMPY = "numpy"                  # hand-written NumPy, the way a person would write it
EINSUM = "np.einsum"             # numpy.einsum(optimize=False)
EINSUM_OPT = "np.einsum(opt)"    # numpy.einsum(optimize=True)
OE = "oe.contract"               # opt_einsum.contract, path searched on every call
OE_EXPR = "oe.expression"        # opt_einsum.contract_expression, path searched once
TORCH = "torch"                  # PyTorch eager on the CPU (optional)
JAX = "jax.jit"                  # JAX jit, loops as lax.fori_loop (optional)
STANDARD = (NUMPY, EINSUM, EINSUM_OPT, OE, OE_EXPR, TORCH, JAX)
#: A target against the fastest anchor timed (hilbert's own float64 twin left out).
BEST = "best"
#: hilbert on the same values in float64: the anchor a float32 case's speed-up is read from.
TWIN = "hilbert float64"
#: The tolerances a case in float32 is checked to (its anchors compute in float32 too).
SINGLE_RTOL = {"float32": {"rtol": 1e-4, "atol": 1e-5}}


class Skip(Exception):
    """An anchor that cannot run here (a library is missing, or the anchor would be absurdly
    slow); the message says why and is recorded in the results."""


@dataclass(frozen=True)
class Config:
    """How hard to measure: `quick` shrinks repeats and some sizes; `optional` allows the
    PyTorch and JAX anchors."""

    quick: bool = False
    executor: str = "numba"
    optional: bool = True

    def pick(self, full, quick):
        """The full-mode value, or the quick one."""
        return quick if self.quick else full

    @property
    def min_time(self) -> float:
        """Seconds one timed repeat lasts at least (short calls are looped)."""
        return self.pick(0.1, 0.02)

    @property
    def repeats(self) -> int:
        return self.pick(9, 5)

    @property
    def min_repeats(self) -> int:
        return self.pick(5, 3)

    @property
    def budget_s(self) -> float:
        """Seconds of timed repeats one contestant may use before its repeats are cut (never
        below `min_repeats`)."""
        return self.pick(30.0, 1.5)

    @property
    def schedule(self) -> Schedule:
        """These settings as the timing loop takes them."""
        return Schedule(self.min_time, self.repeats, self.min_repeats, self.budget_s)

    @property
    def probe_timeout_s(self) -> float:
        """How long a warm call of ours may take in an isolated probe (longer: not timed)."""
        return self.pick(30.0, 5.0)

    @property
    def first_call_timeout_s(self) -> float:
        """How long the probe's first call may take, JIT compilation included."""
        return self.pick(180.0, 30.0)

    @property
    def naive_limit(self) -> float:
        """numpy.einsum(optimize=False) is skipped above this many multiply-adds."""
        return self.pick(5e9, 3e8)


@dataclass(frozen=True)
class Anchor:
    """A contestant to compare against: `make()` prepares it (outside any timing) and returns
    the zero-argument callable that is timed; it raises Skip when the anchor cannot run."""

    name: str
    make: Callable[[], Callable[[], Any]]
    note: str = ""


def float64_twins(dtype: str, call: Callable[[], Any]) -> list[Anchor]:
    """hilbert's own float64 call on a float32 case's values (`call` binds them, converted
    when the case is made): what the case's float32 speed-up is measured against. A float64
    case has none."""
    return [] if dtype == "float64" else [
        Anchor(TWIN, lambda: call, "hilbert on the same values in float64")]


@dataclass(frozen=True)
class Target:
    """A goal from DESIGN.md §6. Either a ratio (our time / an anchor's time ≤ max_ratio, the
    anchor "best" meaning the fastest anchor timed), a metric bound (≤ max_value, or
    ≥ min_value) or value (= expect), or just "it runs"."""

    text: str
    anchor: str | None = None
    max_ratio: float | None = None
    metric: str | None = None
    max_value: float | None = None
    expect: Any = None
    runs: bool = False
    min_value: float | None = None

#: The targets of the float32 cases (issue 23): the best anchor in float32, and on the GEMM-bound
#: cases hilbert's own float64.
SINGLE_BEST = Target("float32: ≤ 1.0× the best anchor", BEST, 1.0)
SINGLE_SPEEDUP = Target("float32 ≥ 1.6× faster than hilbert's float64", TWIN, 1 / 1.6)
#: Issue 23's target for the layer norm, the recurrent network and causal attention in
#: float64, under the default threads (HILBERT_THREADS unset: every core).
DOUBLE_BEST = Target("float64, default threads: ≤ 1.0× the best anchor", BEST, 1.0)
#: Issue 53's target for the large dense product: its FLOP rate ≥ 85% of the machine's peak
#: multiply-add rate in its dtype, on every core (benchmarks/peak.py).
NEAR_PEAK = Target("≥ 85% of the machine's peak FMA rate", metric="peak_share", min_value=0.85)


@dataclass
class Measured:
    """Timings a case measured itself (one-shot work such as path search): seconds per
    contestant, errors per contestant, and extra metrics."""

    times: dict[str, list[float]]
    errors: dict[str, str] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)


@dataclass
class Setup:
    """A case prepared for one run: the same inputs are already bound into every callable."""

    ours: Callable[[], Any] | None
    anchors: list[Anchor] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)
    flops: float | None = None       # the work one call needs, for GFLOP/s and BLAS-bound %
    rtol: float = 1e-7
    atol: float = 1e-9
    compare: bool = True             # False: outputs are not comparable (compile time)
    metrics: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    ours_error: str | None = None    # ours could not even be prepared; recorded, not raised
    measure: Callable[[Config], Measured] | None = None


@dataclass(frozen=True)
class Case:
    """One benchmark: `build(config)` makes its Setup; `isolate` first runs one call of ours in
    a separate, memory-capped process with a time limit, so a call that would exhaust memory
    or run for hours becomes an error entry instead of taking the runner down."""

    name: str
    group: str
    title: str
    measures: str
    build: Callable[[Config], Setup]
    targets: tuple[Target, ...] = ()
    isolate: bool = False
    blas_bound: bool = False


def naive_cost(spec: str, shapes) -> float:
    """Multiply-adds of numpy.einsum(optimize=False): one per point of the full index space,
    per operand."""
    inputs = spec.split("->")[0].split(",")
    sizes = {ch: n for term, shape in zip(inputs, shapes, strict=True)
             for ch, n in zip(term, shape, strict=True)}
    return float(math.prod(sizes.values())) * max(len(inputs) - 1, 1)


def last_words(text: str) -> str:
    """The last informative lines of a traceback or error output (no caret-only lines)."""
    kept = [line.strip() for line in text.splitlines() if line.strip().strip("^~ ")]
    return " | ".join(kept[-2:])[-400:] or "(no output)"


_MODULES: dict[tuple, Any] = {}


def networks(config: Config):
    """Prelude.Networks compiled for the run's executor (compiled once per process)."""
    return _module(("open", "Prelude.Networks"), config)


def example(name: str, config: Config, math: str = "exact"):
    """examples/<name>.hb compiled for the run's executor (once per process), in maths `math`."""
    return _module(("load", str(EXAMPLES / f"{name}.hb")), config, math)


def _module(key: tuple, config: Config, math: str = "exact"):
    import hilbert

    full = (*key, config.executor, math)
    if full not in _MODULES:
        how, what = key
        _MODULES[full] = (hilbert.open(what, executor=config.executor, math=math) if how == "open"
                          else hilbert.load(what, executor=config.executor, math=math))
    return _MODULES[full]


def einsum_source(spec: str, arity: int, name: str = "contract") -> str:
    """The .hb text of one entry point that is a single einsum over its parameters."""
    params = ", ".join(f"t{i}" for i in range(arity))
    return f'fn {name}({params}) ↦ einsum("{spec}", {params})\n'


def plan_flops(function, shapes) -> tuple[int | None, str]:
    """Our plan's total FLOPs for these shapes, and how it was obtained (or why not)."""
    shapes = tuple(tuple(int(n) for n in s) for s in shapes)
    try:
        if hasattr(function, "plan"):
            plan, how = function.plan(*shapes), "Function.plan"
        else:
            plan, how = getattr(function.program(shapes), "plan", None), "program.plan"
    except Exception as err:  # noqa: BLE001 - an unfinished planner must not stop the suite
        return None, f"planning failed: {type(err).__name__}: {err}"
    if plan is None or not hasattr(plan, "to_dict"):
        return None, "no plan object with to_dict() yet"
    flops = plan.to_dict().get("flops")
    return (int(flops) if flops is not None else None), how
