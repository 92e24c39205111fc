"""A training run from a fresh process (issue 48's second target): the transformer block of
examples/Transformer.hb trained `--steps` Adam steps, one step a call, in a new process with an
empty cache, timed from before the library's import to the first step's result, to the last's
("done"), and to the process's end ("exit": from the child's last line to when the parent saw
it end, which is what a wait for builds at exit would lengthen).

    .venv/bin/python -m benchmarks.training_run [--runs 3] [--steps 300] [--one-thread]

The contestants are benchmarks/first_results.py's block functions (the same model, inputs and
Adam; float64): hilbert two ways, with every call compiled first
(HILBERT_COMPILE=eager, the new default) and with the host tier first (background builds),
each in a process with an empty HILBERT_CACHE_DIR and then in a second process with the cache
the first left (warm); jax.jit (one jitted Adam step, its step number a traced value so it
compiles once; JAX's persistent compilation cache is off: JAX_COMPILATION_CACHE_DIR unset and
JAX_ENABLE_COMPILATION_CACHE=false, so each process compiles); torch eager.
`--one-thread` runs every library on one thread: on a 2-core machine loaded by other work,
threads that wait for each other (OpenMP's, OpenBLAS's, hilbert's nests') made torch's steps
and hilbert's ×10–25 slower than on one thread (docs/architecture.md, "A training run").
Each process writes to files, not pipes, so that a process left behind by a build (Numba's
HILBERT_BUILDS=process) cannot hold the parent's reading open. Medians of `--runs` runs."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.first_results import CONTESTANTS, JAX, OURS, PROGRAMS, ROOT, TORCH

#: hilbert's ways of running: a row's name and its settings.
LLVM_WAYS = {"llvm, compiled first (the default)": {"HILBERT_COMPILE": "eager"},
             "llvm, host tier first": {"HILBERT_COMPILE": "background"}}
#: Settings that would change what is measured, taken out of each child's environment.
CLEARED = ("HILBERT_COMPILE", "NUMBA_DISABLE_JIT", "JAX_COMPILATION_CACHE_DIR")
#: `--one-thread`: every library's threads (BLAS, OpenMP, XLA's Eigen pool, hilbert's nests).
ONE_THREAD = {"HILBERT_THREADS": "1", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
              "MKL_NUM_THREADS": "1",
              "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false"}
#: What each child reports, in the table's order: seconds from before the import.
COLUMNS = ("import_s", "first_s", "done_s", "exit_s", "process_s")


def child(contestant: str, steps: int) -> None:
    """In a fresh process: train the block `steps` steps; print the times as JSON, the last
    line's time (time.time()) taken as the process's last action."""
    inputs_of, train = PROGRAMS["block"][0], PROGRAMS["block"][CONTESTANTS[contestant]]
    inputs = inputs_of()
    imported = sorted(m for m in ("hilbert", "torch", "jax", "numba") if m in sys.modules)
    begun = time.perf_counter()
    marks: dict[str, float] = {}
    answer = train(inputs, lambda name: marks.setdefault(name, time.perf_counter() - begun),
                   steps)
    done = time.perf_counter() - begun
    print(json.dumps({"import_s": marks["import"], "first_s": marks["first step"],
                      "done_s": done, "imported_before": imported,
                      "checksum": float(answer.sum()), "printed_at": time.time()}), flush=True)


def measure(contestant: str, steps: int, cache: Path, settings: dict[str, str]) -> dict:
    """`child` in a fresh process with HILBERT_CACHE_DIR=cache and `settings` (added to the
    environment): its report, with `exit_s` (its last line to its end) and `process_s` (its
    start to its end)."""
    env = {k: v for k, v in os.environ.items() if k not in CLEARED}
    env |= {"HILBERT_CACHE_DIR": str(cache), "JAX_ENABLE_COMPILATION_CACHE": "false"} | settings
    command = [sys.executable, "-m", "benchmarks.training_run", "--child", contestant,
               "--steps", str(steps)]
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        started = time.time()
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=err)
        code = process.wait(timeout=3600)
        ended = time.time()
        out.seek(0)
        err.seek(0)
        lines = out.read().splitlines()
        if code != 0 or not lines:
            raise RuntimeError(f"{contestant} {settings}: exit {code}: {err.read()[-2000:]}")
    report = json.loads(lines[-1])
    assert not report["imported_before"], report  # (the clock starts before any import)
    return report | {"exit_s": ended - report["printed_at"], "process_s": ended - started}


def one_run(steps: int, ways: dict[str, dict[str, str]], common: dict[str, str]) -> dict:
    """Every row once, each process given `common` settings: each of hilbert's ways cold then
    warm (a fresh cache directory each way), then jax.jit and torch (each with an empty cache
    directory of its own)."""
    rows = {}
    for name, settings in ways.items():
        with tempfile.TemporaryDirectory(prefix="hilbert-training-run-") as folder:
            for warmth in ("cold", "warm"):  # (the second process finds what the first left)
                rows[f"hilbert {name}, {warmth}"] = measure(OURS, steps, Path(folder),
                                                            common | settings)
    for anchor in (JAX, TORCH):
        with tempfile.TemporaryDirectory(prefix="hilbert-training-run-") as folder:
            rows[anchor] = measure(anchor, steps, Path(folder), common)
    return rows


def table(runs: list[dict[str, dict]]) -> str:
    """The medians of every row's times, and its "done" over jax.jit's, as Markdown."""
    medians = {row: {c: statistics.median(r[row][c] for r in runs) for c in COLUMNS}
               for row in runs[0]}
    jax_done = medians[JAX]["done_s"]
    lines = ["| contestant | import | first step | done | done / jax.jit's | exit after "
             "last line | process |", "|---|---|---|---|---|---|---|"]
    for row, m in medians.items():
        lines.append(f"| {row} | {m['import_s']:.2f} s | {m['first_s']:.2f} s | "
                     f"{m['done_s']:.2f} s | ×{m['done_s'] / jax_done:.2f} | "
                     f"{m['exit_s']:.2f} s | {m['process_s']:.2f} s |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--one-thread", action="store_true",
                        help="every library on one thread (BLAS, OpenMP, XLA, hilbert's nests)")
    parser.add_argument("--child", choices=sorted(CONTESTANTS), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.steps)
        return
    from benchmarks.cases.startup import bytecode

    bytecode()  # (as an installed package's modules are: benchmarks/cases/startup.py)
    ways = LLVM_WAYS
    runs = []
    for number in range(args.runs):
        runs.append(one_run(args.steps, ways, ONE_THREAD if args.one_thread else {}))
        print(f"run {number + 1} of {args.runs}:", flush=True)
        for row, r in runs[-1].items():  # (each run's figures, and the final weights' sum)
            print(f"  {row}: " + ", ".join(f"{c} {r[c]:.2f}" for c in COLUMNS)
                  + f", sum {r['checksum']!r}", flush=True)
    print(f"{args.steps} steps, one a call{', one thread' if args.one_thread else ''}; medians "
          f"of {args.runs} runs, load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} "
          "cores\n")
    print(table(runs))


if __name__ == "__main__":
    main()
