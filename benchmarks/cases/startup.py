"""Time to the first result: each program in a fresh process, timed from before its library is
imported to its first answer, for hilbert beside jax.jit (trace, compile, first call) and
torch eager (first call).

hilbert is run four ways, each in fresh processes: with its default tiers (the first call runs
on the host while the code compiles in the background) and with HILBERT_COMPILE=eager (the
code compiled before the first call, what JAX's jit does), each with an empty cache directory
(cold: nothing of hilbert's ever compiled on this machine, shared kernels included) and with
the cache one such process left (warm: a second process). Inputs are made before the clock
starts; importing NumPy is not counted for anyone. hilbert's modules are compiled to bytecode
first (`bytecode`), as `pip install` leaves them and as the anchors' packages are: in an
environment with PYTHONDONTWRITEBYTECODE set, every process measured would otherwise compile
hilbert's sources again (about 0.2 s), and only hilbert's.

The programs (benchmarks/first_results.py, which runs each in its process): the course's circle
classifier (examples/CircleClassifier.hb: a 2→32→32→2 GELU network, cross-entropy, ∂ for six
parameters, clipping, AdamW; one train call), one gradient step of an MLP 1024×64→256→10
(examples/Gradients.hb autoStep, ∂), Sequences.lstm over 50 steps (B = 16, 64 → 128), and a
pre-norm transformer block with causal multi-head attention trained with Adam
(examples/Transformer.hb: vocabulary 64, width 32, 4 heads of 8, MLP 128, batch 16 × 32
tokens, ∂ over 15 parameters; one train call). The block's cold compilation takes minutes, so
each way of running it is measured once, in the full run as in the quick one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from benchmarks.cases.base import JAX, OURS, ROOT, TORCH, Case, Config, Measured, Setup, Target

#: How hilbert is run: the HILBERT_COMPILE setting and whether the cache starts empty.
WAYS = {"first_cold": ("", True), "first_warm": ("", False),
        "eager_cold": ("eager", True), "eager_warm": ("eager", False)}
#: What a new process with a warm cache should take to its first result (import included).
WARM_TARGET_S = 0.5


def _run(program: str, contestant: str, cache: Path | None, compile_setting: str) -> dict:
    env = dict(os.environ)
    env.pop("HILBERT_COMPILE", None)  # the runner's eager is not the user's default
    env.pop("NUMBA_DISABLE_JIT", None)
    if compile_setting:
        env["HILBERT_COMPILE"] = compile_setting
    if cache is not None:
        env["HILBERT_CACHE_DIR"] = str(cache)
    code = f"from benchmarks.first_results import child; child({program!r}, {contestant!r})"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=900)
    if done.returncode != 0:
        raise RuntimeError((done.stderr.strip().splitlines() or ["no output"])[-1])
    return json.loads(done.stdout.splitlines()[-1])


def bytecode() -> None:
    """hilbert's Python modules (and the benchmark's own) compiled to bytecode beside them, as
    an installed package's are; a no-op when they already are."""
    import compileall

    for folder in ("hilbert", "compiler", "executor", "grammar", "prelude", "benchmarks"):
        compileall.compile_dir(ROOT / folder, quiet=1)


def _measure(program: str, config: Config, repeats: int | None = None) -> Measured:
    bytecode()
    repeats = repeats or config.pick(3, 1)
    runs: dict[str, list[dict]] = {way: [] for way in WAYS}
    anchors: dict[str, list[dict]] = {TORCH: [], JAX: []}
    errors: dict[str, str] = {}
    for _ in range(repeats):
        for setting in ("", "eager"):
            with tempfile.TemporaryDirectory(prefix="hilbert-startup-") as folder:
                cache = Path(folder) / "cache"
                for cold in (True, False):  # the second process finds what the first left
                    way = next(w for w, (s, c) in WAYS.items() if s == setting and c == cold)
                    try:
                        runs[way].append(_run(program, OURS, cache, setting))
                    except (RuntimeError, subprocess.TimeoutExpired) as err:
                        errors[OURS] = f"{way}: {err}"
        for name in anchors:
            try:
                anchors[name].append(_run(program, name, None, ""))
            except (RuntimeError, subprocess.TimeoutExpired) as err:
                errors[name] = str(err)
    if OURS in errors:
        return Measured({}, errors)

    def median(rows: list[dict], key: str) -> float:
        return float(np.median([r[key] for r in rows]))

    # what the main table compares: everything after the import, the way JAX's jit is timed
    # (compile and first call): hilbert compiled first (eager), with an empty cache
    after = {way: [r["total_s"] - r["import_s"] for r in rows] for way, rows in runs.items()}
    times = {OURS: after["eager_cold"] if program != "import" else
             [r["import_s"] for r in runs["first_cold"]]}
    for name, rows in anchors.items():
        if rows:
            times[name] = [r["total_s"] - r["import_s"] if program != "import" else r["import_s"]
                           for r in rows]
    metrics = {f"{way}_s": median(rows, "total_s") for way, rows in runs.items()}
    metrics |= {f"{way}_after_import_s": float(np.median(after[way])) for way in WAYS}
    metrics["import_s"] = median(runs["first_cold"], "import_s")
    for name, rows in anchors.items():
        if rows:
            metrics[f"{name}_s"] = median(rows, "total_s")
            metrics[f"{name}_after_import_s"] = median(rows, "total_s") - median(rows, "import_s")
    if program != "import":
        metrics["warm_first_result_s"] = metrics["first_warm_s"]
        if anchors[JAX]:
            metrics["cold_compile_vs_jax"] = (metrics["eager_cold_after_import_s"]
                                              / metrics[f"{JAX}_after_import_s"])
    checksums = {way: [r["checksum"] for r in rows] for way, rows in runs.items()}
    metrics["checksums_agree"] = bool(np.allclose(
        [c for rows in checksums.values() for c in rows], checksums["eager_cold"][0],
        rtol=1e-9, atol=1e-12))
    return Measured(times, errors, metrics)


def _case(program: str, title: str, measures: str, targets=(), repeats: int | None = None) -> Case:
    def build(config: Config) -> Setup:
        return Setup(ours=None, measure=lambda config: _measure(program, config, repeats),
                     compare=False,
                     params={"processes": f"{repeats or config.pick(3, 1)} per way"},
                     notes=["hilbert's time in the table: HILBERT_COMPILE=eager with an empty "
                            "cache, after its import (compile + first call, as jax.jit's); "
                            "every way of running it is in the metrics: first_* with the "
                            "default tiers, eager_* compiled first, *_cold with an empty cache, "
                            "*_warm the next process (import included unless "
                            "*_after_import_s)"])
    return Case(f"start-{program}", "startup", title, measures, build, targets)


_TARGETS = (Target("cold compile + first call ≤ 2× jax.jit's", JAX, 2.0),
            Target(f"a new process with the cache warm: first result ≤ {WARM_TARGET_S} s",
                   metric="warm_first_result_s", max_value=WARM_TARGET_S))

CASES = [
    _case("import", "import hilbert (torch, jax)",
          "a fresh process: the library's import alone (NumPy imported before)",
          (Target("import hilbert ≤ 0.3 s", metric="import_s", max_value=0.3),)),
    _case("circle", "first train call of the circle classifier",
          "load, one AdamW step with ∂ and clipping, in a fresh process", _TARGETS),
    _case("mlp", "first gradient step of an MLP 1024×64→256→10",
          "load, one step with ∂, in a fresh process", _TARGETS),
    _case("lstm", "first Sequences.lstm, T = 50, B = 16, 64 → 128",
          "load, one LSTM walk, in a fresh process", _TARGETS),
    _case("block", "first train call of a transformer block (Adam, 15 weights)",
          "load, one Adam step with ∂ of a pre-norm causal-attention block, in a fresh process",
          _TARGETS, repeats=1),
]
