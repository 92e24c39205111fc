"""Warm speed of the vector maths, the LLVM back end's (executor/llvm/maths32.py, maths.py)
against Numba's front end's (vmath32.py, vmath.py), over a million entries:

    .venv/bin/python -m benchmarks.llvm_maths              # exact maths
    .venv/bin/python -m benchmarks.llvm_maths --math fast  # math="fast"
    .venv/bin/python -m benchmarks.llvm_maths --dtype float64   # float64 code's (maths.py)

Each function is built twice in this process, once per back end (HILBERT_CODEGEN, read when
it is built), checked to give the same bits, then called in alternating rounds (llvm, numba,
llvm, …) so that a load on the machine falls on both; medians of the rounds are printed."""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

SOURCE = """
open Prelude.Arithmetic
fn exponential(x) ↦ exp(x)
fn hyperbolic(x) ↦ tanh(x)
fn logistic(x) ↦ sigmoid(x)
"""
NAMES = ("exponential", "hyperbolic", "logistic")


def built(backend: str, math: str, x: np.ndarray) -> dict:
    """Each function of SOURCE built by `backend` (its regions checked to say so)."""
    from hilbert.executor.numba.executor import regions_of

    import hilbert

    os.environ["HILBERT_CODEGEN"] = backend
    module = hilbert.compile_source(SOURCE, name=f"llvm_maths_{backend}.hb")
    made = {}
    for name in NAMES:
        function = module.function(name).using(math=math)
        function.build(x)  # (compiled now: its calls run compiled code at once)
        prepared = function._prepare((x.shape,), x.dtype.name)
        backends = [r.backend for r in regions_of(prepared.runner)]
        assert backends and all(b.startswith(backend) for b in backends), backends
        made[name] = function
    return made


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--math", default="exact", choices=("exact", "fast"))
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--dtype", default="float32", choices=("float32", "float64"))
    args = parser.parse_args()
    os.environ.setdefault("HILBERT_COMPILE", "eager")
    x = np.random.default_rng(1).normal(0, 3, (1000, 1000)).astype(args.dtype)
    functions = {b: built(b, args.math, x) for b in ("llvm", "numba")}
    print(f"{args.dtype}, 1000×1000, math={args.math}: median ms of {args.rounds} alternating rounds")
    for name in NAMES:
        bits = np.uint32 if args.dtype == "float32" else np.uint64
        same = np.array_equal(np.asarray(functions["llvm"][name](x)).view(bits),
                              np.asarray(functions["numba"][name](x)).view(bits))
        times: dict[str, list[float]] = {"llvm": [], "numba": []}
        for _ in range(args.rounds):
            for backend in ("llvm", "numba"):
                start = time.perf_counter()
                functions[backend][name](x)
                times[backend].append(1e3 * (time.perf_counter() - start))
        llvm_ms, numba_ms = (statistics.median(times[b]) for b in ("llvm", "numba"))
        print(f"  {name:12} llvm {llvm_ms:7.3f}  numba {numba_ms:7.3f}  "
              f"llvm/numba {llvm_ms / numba_ms:5.2f}  same bits: {same}")


if __name__ == "__main__":
    main()
