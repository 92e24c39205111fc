"""Cold compile time of generated functions under the LLVM back end (executor/llvm), program by
program: each measured in a fresh process with an empty cache directory, three times, medians
kept (docs/architecture.md, "The LLVM back end (stage 1)", holds the figures, with Numba's
front end's beside them, measured before it was removed).

    .venv/bin/python -m benchmarks.llvm_compile            # a table of medians
    .venv/bin/python -m benchmarks.llvm_compile --only fitted   # one program's row
    .venv/bin/python -m benchmarks.llvm_compile --child P SHAPE DTYPE   # one measurement

A measurement imports Numba and plans the program first (`f.plan`), then times `f.build`
(generating the code and compiling it: the kernels it calls included, which an empty cache
holds none of) and the first call that follows, and reports which back end built the
function. A sum of more than 1024 entries adds pairwise blocks (K.partials): `total` at
64×100; `mlp` is two dense layers' products (products.py), past K.SMALL_PRODUCT at 64×100 and
below it at 8×6."""

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

ROOT = Path(__file__).resolve().parents[1]

SOURCE = """
open Prelude.Arithmetic
open Prelude.Networks
fn softmax(x) ↦ softmaxRows(x)
fn normed(x) ↦ layerNorm(x)
fn logistic(x) ↦ sigmoid(x)
fn total(x) ↦ einsum("ij->", x)
fn rowMax(x) ↦ maximum(x, 1)
fn shaped(x) ↦ ln(1 + x²) + tanh(x) · abs(x) − floor(x) + sqrt(abs(x)) + max(x, 0.5)
def fit(t, w, x, y, r) ≔ if t = 0 then w else fit(t − 1, w − r · einsum("ni,n->i", x, einsum("ni,i->n", x, w) − y), x, y, r)
fn fitted(x) ↦ fit(50, 0 · einsum("ni->i", x), x, einsum("ni->n", x), 0.001)
fn mlp(x) ↦ tanh(dense(hiddenOf(x, einsum("ni,nj->ij", x, x)), einsum("ni,nj->ij", x, x)))
"""

#: (function, shape, dtype) measured.
CASES = [("softmax", (64, 100), "float64"), ("softmax", (64, 100), "float32"),
         ("normed", (64, 100), "float64"), ("normed", (64, 100), "float32"),
         ("logistic", (64, 100), "float64"), ("total", (16, 64), "float64"),
         ("total", (64, 100), "float64"),
         ("rowMax", (64, 100), "float64"), ("shaped", (64, 100), "float64"),
         ("fitted", (20, 3), "float64"),  # (a loop: 50 steps of least squares' gradient)
         # products (products.py): two dense layers' four (the product kernel's), and the
         # same small (the module's loops)
         ("mlp", (64, 100), "float64"), ("mlp", (8, 6), "float64")]
BACKENDS = ("llvm",)
RUNS = 3


def child(name: str, shape: tuple[int, ...], dtype: str) -> dict:
    """One measurement in this (fresh) process (Numba imported first, as the figures before
    Numba's front end was removed imported it: the build is what is timed)."""
    import numba  # noqa: F401
    import numpy as np

    import hilbert

    function = hilbert.compile_source(SOURCE, name="llvm_compile.hb").function(name)
    x = np.random.default_rng(0).normal(size=shape).astype(dtype)
    function.plan(shape)
    began = time.perf_counter()
    plan = function.build(x)
    built = time.perf_counter()
    function(x)
    called = time.perf_counter()
    notes = [n.split("built by ")[1] for n in plan.all_notes if "built by" in n]
    return {"build_s": built - began, "first_call_s": called - built,
            "backend": notes[0] if notes else "nothing"}


def measure(name: str, shape: tuple[int, ...], dtype: str, backend: str) -> dict:
    """`child` in a fresh process with an empty cache directory (`backend`: llvm)."""
    with tempfile.TemporaryDirectory(prefix="hilbert-llvm-compile-") as cache:
        return in_fresh_process("benchmarks.llvm_compile", name, shape, dtype, backend, cache)


def in_fresh_process(module: str, name: str, shape: tuple[int, ...], dtype: str,
                     backend: str, cache: str) -> dict:
    """What `module --child name shape dtype` prints last (JSON), run in a fresh process with
    HILBERT_CACHE_DIR=cache (`backend`: llvm, the one), compiling first, on one thread."""
    env = dict(os.environ, HILBERT_CACHE_DIR=cache, HILBERT_COMPILE="eager",
               HILBERT_THREADS="1")
    done = subprocess.run([sys.executable, "-m", module, "--child", name, json.dumps(shape),
                           dtype], cwd=ROOT, env=env, check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", nargs=3, metavar=("FUNCTION", "SHAPE", "DTYPE"))
    parser.add_argument("--only", help="measure this function's cases only")
    args = parser.parse_args()
    if args.child:
        name, shape, dtype = args.child
        print(json.dumps(child(name, tuple(json.loads(shape)), dtype)))
        return
    print("| program | dtype | llvm build (s) | built by |")
    print("|---|---|---|---|")
    for name, shape, dtype in CASES:
        if args.only and name != args.only:
            continue
        medians, backend = {}, ""
        for chosen in BACKENDS:
            runs = [measure(name, shape, dtype, chosen) for _ in range(RUNS)]
            medians[chosen] = statistics.median(r["build_s"] for r in runs)
            backend = runs[0]["backend"]
        print(f"| {name} {'×'.join(map(str, shape))} | {dtype} | {medians['llvm']:.3f} | "
              f"{backend} |", flush=True)


if __name__ == "__main__":
    main()
