"""A fresh process's first call with the disk cache empty (cold) and filled by an earlier process
(warm), under the LLVM back end, program by program:
three fresh processes each, medians kept (docs/architecture.md, "The LLVM back end", holds the
figures). The programs are benchmarks/llvm_compile.py's.

    .venv/bin/python -m benchmarks.llvm_disk_cache              # a table of medians
    .venv/bin/python -m benchmarks.llvm_disk_cache --only fitted

A measurement compiles the module (its parse and plans: kept on disk too), then times the first
call of the function (HILBERT_COMPILE=eager: its code built, or loaded, before it runs) to its
result, and of that the time in executor/llvm/compile.py's compile_module (LLVM's optimiser
and code generator cold, the object file read and loaded warm; a warm run must compile
nothing); the process's whole time, interpreter start to result, is reported beside it. Each
cold run has a cache directory of its own; the warm runs share one filled by a process before
them."""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time

from .llvm_compile import BACKENDS, CASES, RUNS, SOURCE, in_fresh_process


def child(name: str, shape: tuple[int, ...], dtype: str) -> dict:
    """One measurement in this (fresh) process: the first call, and of it the time in
    compile_module (LLVM's optimiser and code generator, or the load from disk)."""
    import numpy as np
    from hilbert.executor.llvm import compile

    import hilbert

    spent = [0.0]
    compile_module = compile.compile_module

    def timed(*args):
        began = time.perf_counter()
        try:
            return compile_module(*args)
        finally:
            spent[0] += time.perf_counter() - began

    compile.compile_module = timed
    function = hilbert.compile_source(SOURCE, name="llvm_compile.hb").function(name)
    x = np.random.default_rng(0).normal(size=shape).astype(dtype)
    began = time.perf_counter()
    function(x)
    return {"first_call_s": time.perf_counter() - began, "machine_code_s": spent[0],
            "counts": dict(compile.COUNTS)}


def measure(name: str, shape: tuple[int, ...], dtype: str, backend: str, cache: str) -> dict:
    """`child` in a fresh process with the cache directory `cache`, under `backend`."""
    began = time.perf_counter()
    found = in_fresh_process("benchmarks.llvm_disk_cache", name, shape, dtype, backend, cache)
    return {**found, "process_s": time.perf_counter() - began}


def medians(name: str, shape: tuple[int, ...], dtype: str, backend: str) -> dict:
    """The medians of RUNS cold and RUNS warm measurements."""
    cold, warm = [], []
    with tempfile.TemporaryDirectory(prefix="hilbert-disk-") as root:
        for run in range(RUNS):
            cold.append(measure(name, shape, dtype, backend, f"{root}/cold{run}"))
        for _ in range(RUNS):  # (cold0 was filled by the first cold run)
            warm.append(measure(name, shape, dtype, backend, f"{root}/cold0"))
    assert all(r["counts"]["loaded"] == 0 for r in cold)
    assert all(r["counts"]["compiled"] == 0 for r in warm)
    return {f"{when}_{what}": statistics.median(r[what] for r in runs)
            for when, runs in (("cold", cold), ("warm", warm))
            for what in ("first_call_s", "machine_code_s", "process_s")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", nargs=3, metavar=("FUNCTION", "SHAPE", "DTYPE"))
    parser.add_argument("--only", help="measure this function's cases only")
    args = parser.parse_args()
    if args.child:
        name, shape, dtype = args.child
        print(json.dumps(child(name, tuple(json.loads(shape)), dtype)))
        return
    print("| program | dtype | code generator | first call cold | warm | of which machine code "
          "cold | warm | process cold | warm |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, shape, dtype in CASES:
        if args.only and name != args.only:
            continue
        for backend in BACKENDS:
            m = medians(name, shape, dtype, backend)
            print(f"| {name} {'×'.join(map(str, shape))} | {dtype} | {backend} | "
                  f"{m['cold_first_call_s']:.3f} s | {m['warm_first_call_s'] * 1000:.0f} ms | "
                  f"{m['cold_machine_code_s'] * 1000:.0f} ms | "
                  f"{m['warm_machine_code_s'] * 1000:.1f} ms | "
                  f"{m['cold_process_s']:.2f} s | {m['warm_process_s']:.2f} s |", flush=True)


if __name__ == "__main__":
    main()
