"""Cold compile and first call of the startup programs (benchmarks/cases/startup.py's start-*)
under the LLVM back end, with where the time goes: each program run in fresh processes with
an empty cache directory and HILBERT_COMPILE=eager, beside jax.jit's
trace, compile and first call (benchmarks/first_results.py runs both), medians kept.

    .venv/bin/python -m benchmarks.llvm_startup                 # every program, 3 runs each
    .venv/bin/python -m benchmarks.llvm_startup --only block --runs 1
    .venv/bin/python -m benchmarks.llvm_startup --child circle  # one measurement (JSON)

A child times hilbert's stages by wrapping the functions that do them (inclusive wall times,
summed over calls; a stage inside another is counted in both, and the table indents it):
the front half (Lark's parser tables, parsing, the modules' checks, the entries: inlining, ∂
and the passes; planning) and the back half (the loop IR and its LLVM IR, LLVM's optimiser
and code generator, loading the machine code, the entry from Python), and the first call
(`Lowered.__call__`, the compiled function run once its code is there). It also lists each
LLVM module compiled: its optimisation level, its size, the thread that compiled it (modules
compile side by side: executor/llvm/parts.py) and its LLVM time (wall and that thread's
processor time; the stages' sums above add threads' times together), and the
processor time the process spent after the import (all its threads: steadier than the wall
time on a loaded machine). What is left of the time after the import is Python's glue
around these (the model's or function's objects, the host tier's setup)."""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROGRAMS = ("circle", "mlp", "lstm", "block")
RUNS = 3

#: (stage, depth in the table, module, attribute: a function, or Class.method).
STAGES = (
    ("front: shipped parser tables loaded", 1, "hilbert.grammar.tables", "use_shipped"),
    ("front: Lark's parser tables", 1, "hilbert.grammar.tables", "lark_parser"),
    ("front: parse (tables included)", 0, "hilbert.compiler.parsed", "_parse"),
    ("front: modules (resolve, checks)", 0, "hilbert.compiler.driver", "compile_module"),
    ("front: entries (inline, ∂, passes)", 0, "hilbert.compiler.kept", "kept_entry"),
    ("front: ∂ (inside entries)", 1, "hilbert.compiler.passes.derivative", "differentiate"),
    ("front: plan", 0, "hilbert.compiler.driver", "plan_entry"),
    ("back: loop IR and LLVM IR", 0, "hilbert.executor.numba.tiers", "TieredProgram.generated"),
    ("back: LLVM IR (lowering)", 1, "hilbert.executor.llvm.lower", "Lowering.__init__"),
    ("back: LLVM compile (all modules)", 0, "hilbert.executor.llvm.compile", "_object_code"),
    ("back: LLVM optimiser", 1, "hilbert.executor.llvm.compile", "_optimise"),
    ("back: LLVM machine code", 1, "hilbert.executor.llvm.unlocked", "object_code"),
    ("back: machine code loaded", 0, "hilbert.executor.llvm.compile", "_loaded"),
    ("back: entry from Python (its module)", 0, "hilbert.executor.llvm.cpython", "_module"),
    ("first call", 0, "hilbert.executor.llvm.call", "Lowered.__call__"),
    ("disk cache: pickles written (inside the above)", 0, "hilbert.compiler.pickles", "write"),
)


def _wrapped(function, stage: str, spent: dict):
    @functools.wraps(function)
    def timed(*args, **kwargs):
        began = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            spent[stage] = spent.get(stage, 0.0) + time.perf_counter() - began
    return timed


def _install(spent: dict, modules: list) -> None:
    """Wrap every stage's function wherever a loaded module names it (modules import them by
    name), and record each LLVM module compiled in `modules`."""
    for stage, _, module_name, attribute in STAGES:
        module = importlib.import_module(module_name)
        owner_name, _, name = attribute.rpartition(".")
        if owner_name:
            owner = getattr(module, owner_name)
            setattr(owner, name, _wrapped(getattr(owner, name), stage, spent))
            continue
        original = getattr(module, name)
        timed = _wrapped(original, stage, spent)
        for loaded in list(sys.modules.values()):
            names = getattr(loaded, "__dict__", {})
            for key, value in list(names.items()):
                if value is original:
                    setattr(loaded, key, timed)
    compile_ = importlib.import_module("hilbert.executor.llvm.compile")
    made = compile_._object_code

    def recorded(text: str, level: int, passes: int = 1) -> bytes:
        began, worked = time.perf_counter(), time.thread_time()
        code = made(text, level, passes)
        first = text.split("define ", 1)[1].split("(", 1)[0].split("@", 1)[1]
        modules.append({"first": first.strip('"'), "level": level, "passes": passes,
                        "kib": len(text) // 1024, "wall_s": time.perf_counter() - began,
                        "thread_s": time.thread_time() - worked,
                        "thread": threading.current_thread().name})
        return code
    compile_._object_code = recorded


def child(program: str) -> dict:
    """One cold run of `program` in this (fresh) process: first_results' times, the stages'
    times and the LLVM modules compiled."""
    from benchmarks import first_results

    parts = first_results.PROGRAMS[program]
    inputs = parts[0]()
    spent: dict[str, float] = {}
    modules: list[dict] = []
    began = time.perf_counter()
    import hilbert  # noqa: F401  (the import timed here, before the stages are wrapped)

    imported = time.perf_counter() - began
    for name in ("hilbert.executor.llvm.call", "hilbert.executor.llvm.cpython",
                 "hilbert.executor.numba.tiers", "hilbert.compiler.models"):
        importlib.import_module(name)  # (so that each stage's function is there to wrap)
    _install(spent, modules)
    began, worked = time.perf_counter(), time.process_time()
    parts[1](inputs, lambda _: None)
    after, cpu = time.perf_counter() - began, time.process_time() - worked
    return {"import_s": imported, "after_import_s": after, "cpu_s": cpu, "stages": spent,
            "modules": modules, "numba_loaded": "numba" in sys.modules}


def _fresh(program: str, contestant: str) -> dict:
    """One run in a fresh process with an empty cache directory."""
    with tempfile.TemporaryDirectory(prefix="hilbert-llvm-startup-") as cache:
        env = dict(os.environ, HILBERT_CACHE_DIR=cache,
                   HILBERT_COMPILE="eager")
        env.pop("NUMBA_DISABLE_JIT", None)
        if contestant == "hilbert":
            command = [sys.executable, "-m", "benchmarks.llvm_startup", "--child", program]
        else:
            command = [sys.executable, "-c", "from benchmarks.first_results import child; "
                       f"child({program!r}, {contestant!r})"]
        done = subprocess.run(command, cwd=ROOT, env=env, check=True, capture_output=True,
                              text=True, timeout=900)
    found = json.loads(done.stdout.strip().splitlines()[-1])
    if contestant != "hilbert":
        found["after_import_s"] = found["total_s"] - found["import_s"]
    return found


def report(program: str, runs: int) -> None:
    """Print `program`'s medians: hilbert against jax.jit, then hilbert's stages."""
    from benchmarks.cases.startup import bytecode

    bytecode()
    ours = [_fresh(program, "hilbert") for _ in range(runs)]
    jax = [_fresh(program, "jax.jit") for _ in range(runs)]

    def median(rows, get) -> float:
        return statistics.median(get(r) for r in rows)

    mine, theirs = median(ours, lambda r: r["after_import_s"]), \
        median(jax, lambda r: r["after_import_s"])
    print(f"## start-{program}: after the import, hilbert {mine:.2f} s, jax.jit {theirs:.2f} s "
          f"(×{mine / theirs:.1f}); import {median(ours, lambda r: r['import_s']):.2f} s "
          f"against {median(jax, lambda r: r['import_s']):.2f} s; hilbert's processor time "
          f"after the import (all its threads) {median(ours, lambda r: r['cpu_s']):.2f} s; "
          f"medians of {runs}")
    for stage, depth, _, _ in STAGES:
        value = median(ours, lambda r, s=stage: r["stages"].get(s, 0.0))
        print(f"{'    ' * depth}- {stage}: {value:.3f} s")
    print(f"- Numba imported: {ours[0]['numba_loaded']}; LLVM modules (first run):")
    for m in ours[0]["modules"]:
        rounds = "" if m.get("passes", 1) == 1 else f" ×{m['passes']}"
        print(f"    - {m['first']} O{m['level']}{rounds} {m['kib']} KiB on {m['thread']}: "
              f"{m['wall_s']:.3f} s, {m['thread_s']:.3f} s of its thread's processor time")
    sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", choices=PROGRAMS)
    parser.add_argument("--only", choices=PROGRAMS)
    parser.add_argument("--runs", type=int, default=RUNS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child)))
        return
    for program in PROGRAMS:
        if args.only in (None, program):
            report(program, args.runs)


if __name__ == "__main__":
    main()
