"""Warm calls on small inputs, where the call's own cost is most of the time: each program
built by the LLVM back end twice in one process (HILBERT_COMPILE=eager), called through its
entry made as machine code (executor/llvm/cpython.py) and through
the ctypes path that came before it (call.py's `_called`), timed in alternating rounds; the
median of ROUNDS rounds of CALLS calls, in µs a call (docs/architecture.md, "Calls from
Python", holds the figures).

    .venv/bin/python -m benchmarks.llvm_calls
"""

from __future__ import annotations

import gc
import os
import statistics
import time

SOURCE = """
open Prelude.Arithmetic
open Prelude.Networks
open Prelude.Losses
fn normed(x) ↦ layerNorm(x)
fn logistic(x) ↦ sigmoid(x)
fn softmax(x) ↦ softmaxRows(x)
fn loss(z, labels) ↦ crossEntropy(z, labels)
"""
#: (function, shape) measured.
CASES = [("normed", (4, 4)), ("logistic", (8,)), ("softmax", (4, 4)), ("softmax", (64, 64)),
         ("normed", (256, 64)), ("loss", (256, 64))]
WAYS = ("llvm", "llvm, ctypes path")
ROUNDS, CALLS = 15, 2000


def built(way: str, name: str, shape: tuple[int, ...]):
    """The function `name` built `way` for `shape`, and its arguments (`loss`: logits of
    `shape` and a label for each row)."""
    import numpy as np
    from hilbert.executor.llvm import call

    import hilbert

    before = {id(o) for o in gc.get_objects() if isinstance(o, call.Lowered)}
    module = hilbert.compile_source(SOURCE, name=f"llvm_calls_{len(before)}_{way[:4]}.hb")
    function = module.function(name)
    rng = np.random.default_rng(0)
    args = [rng.normal(size=shape)]
    if name == "loss":
        args.append(rng.integers(0, shape[1], shape[0]).astype(float))
    notes = [n for n in function.build(*args).all_notes if "built by" in n]
    assert all("built by llvm" in n for n in notes), notes
    if way.endswith("ctypes path"):
        for made in gc.get_objects():
            if isinstance(made, call.Lowered) and id(made) not in before:
                made.compile()
                made._entry = made._called
    function(*args)
    return function, args


def main() -> None:
    os.environ["HILBERT_COMPILE"] = "eager"
    os.environ.setdefault("HILBERT_THREADS", "1")
    print(f"{'case':<22}" + "".join(f"{w:>20}" for w in WAYS) + "   (µs a call, medians)")
    for name, shape in CASES:
        made = {way: built(way, name, shape) for way in WAYS}
        times: dict[str, list[float]] = {way: [] for way in WAYS}
        calls = max(CALLS * 16 // max(1, shape[0] * shape[-1]), 20)
        for _ in range(ROUNDS):
            for way in WAYS:
                function, args = made[way]
                began = time.perf_counter()
                for _ in range(calls):
                    function(*args)
                times[way].append((time.perf_counter() - began) / calls * 1e6)
        print(f"{name + ' ' + 'x'.join(map(str, shape)):<22}"
              + "".join(f"{statistics.median(times[w]):>20.2f}" for w in WAYS))


if __name__ == "__main__":
    main()
