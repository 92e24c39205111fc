"""hilbert's own large products (executor/numba/panels.py) against NumPy's OpenBLAS and jax.jit on
the large dense product, 2048×1024·1024×1024, as shares of the machine's peak (benchmarks/peak.py).

Run it without an OpenBLAS pin, so that OpenBLAS runs the kernel it chooses for the CPU:

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python -m benchmarks.gemm_rates

Measured, per dtype, in one process, the contestants taking turns round after round:
- one core: a thread's block, 1024×1024·1024×1024 (what each of two threads computes), by the
  thread's CPU time: own_products.multiply against np.matmul with OpenBLAS on one thread;
- both cores, by the wall clock: own_products.shared_product (two blocks of rows on hilbert's
  threads) against np.matmul on OpenBLAS's threads and jax.jit(jnp.dot), each contestant's
  calls in a row, three times, half a second apart (OpenBLAS's and XLA's threads spin for a
  while after their work, and would take the cores from the next contestant's); and own's
  rate by the CPU time each of two threads was given (the rate of the cores while they ran
  it, whatever else shared the machine);
then own_product's compile time in a new process with an empty cache and with the cache that
process left (`--compile`).
Rates are medians (and bests) of `--rounds` rounds; the peak is the best of its runs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

from benchmarks import peak

#: The product: a is M×K, b K×N.
M, K, N = 2048, 1024, 1024


def _median_best(seconds: list[float], flops: float) -> dict:
    return {"median_gflops": round(flops / float(np.median(seconds)) / 1e9, 1),
            "best_gflops": round(flops / min(seconds) / 1e9, 1),
            "median_ms": round(float(np.median(seconds)) * 1e3, 2)}


def _timed(run, clock) -> float:
    begun = clock()
    run()
    return clock() - begun


def one_core(dtype, rounds: int) -> dict:
    """A thread's block on one core, by CPU time: own against OpenBLAS on one thread."""
    from hilbert.executor.numba import own_products
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(s).astype(dtype) for s in ((M // 2, K), (K, N)))
    out = np.empty((M // 2, N), dtype)
    runs = {"own": lambda: own_products.multiply(a, b, out),
            "openblas": lambda: np.matmul(a, b, out=out)}
    seconds: dict[str, list[float]] = {name: [] for name in runs}
    with threadpool_limits(1, "blas"):
        for run in runs.values():
            run()
        for _ in range(rounds):
            for name, run in runs.items():
                seconds[name].append(_timed(run, time.thread_time))
    flops = 2.0 * M // 2 * K * N
    return {name: _median_best(s, flops) for name, s in seconds.items()}


def _per_thread_rate(dtype, rounds: int) -> list[float]:
    """GFLOP/s of two threads each computing a block of own products at once, each by the CPU
    time it was given, summed: one entry per round."""
    from hilbert.executor.numba import own_products

    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal(s).astype(dtype) for s in ((M, K), (K, N)))
    out = np.empty((M, N), dtype)
    halves = [(a[:M // 2], b, out[:M // 2]), (a[M // 2:], b, out[M // 2:])]
    rates = []
    for _ in range(rounds + 1):
        cpu: list[float] = []
        start = threading.Barrier(2)

        def work(part, cpu=cpu, start=start):
            start.wait()
            cpu.append(_timed(lambda: own_products.multiply(*part), time.thread_time))

        threads = [threading.Thread(target=work, args=(h,)) for h in halves]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        rates.append(sum(2.0 * M // 2 * K * N / c for c in cpu) / 1e9)
    return rates[1:]


def both_cores(dtype, rounds: int) -> dict:
    """The whole product on both cores, by the wall clock: own (two blocks on hilbert's
    threads), OpenBLAS's threads, jax.jit; and own's per-thread CPU-time rate."""
    from hilbert.executor.numba import own_products

    rng = np.random.default_rng(2)
    a, b = (rng.standard_normal(s).astype(dtype) for s in ((M, K), (K, N)))
    out = np.empty((M, N), dtype)
    runs = {"own": lambda: own_products.shared_product(a, b),
            "openblas": lambda: np.matmul(a, b, out=out)}
    try:
        import jax
        import jax.numpy as jnp

        jax.config.update("jax_enable_x64", True)
        ja, jb = jnp.asarray(a), jnp.asarray(b)
        dot = jax.jit(jnp.dot)
        runs["jax.jit"] = lambda: dot(ja, jb).block_until_ready()
    except ImportError:
        pass
    seconds: dict[str, list[float]] = {name: [] for name in runs}
    for run in runs.values():
        run()
    for _ in range(3):  # each contestant's calls in a row, after the others' threads sleep
        for name, run in runs.items():  # (OpenBLAS's and XLA's spin for a while after work)
            time.sleep(0.5)
            seconds[name] += [_timed(run, time.perf_counter) for _ in range(rounds)]
    flops = 2.0 * M * K * N
    found = {name: _median_best(s, flops) for name, s in seconds.items()}
    cpu = _per_thread_rate(dtype, rounds)
    found["own_cpu_time"] = {"median_gflops": round(float(np.median(cpu)), 1),
                             "best_gflops": round(max(cpu), 1)}
    return found


_COMPILE = """\
import json, time
import numpy as np
begun = time.perf_counter()
from hilbert.executor.numba import own_products
loaded = time.perf_counter()
for dtype in (np.float64, np.float32):
    own_products.prepare(dtype)
made = time.perf_counter()
print(json.dumps({"import_s": loaded - begun, "prepare_s": made - loaded}))
"""


def compile_times() -> dict:
    """own_product's making for both dtypes in a new process: with an empty cache (compiled),
    then with the cache it left (loaded)."""
    found = {}
    with tempfile.TemporaryDirectory() as folder:
        env = dict(os.environ, HILBERT_CACHE_DIR=folder)
        for way in ("cold", "warm"):
            done = subprocess.run([sys.executable, "-c", _COMPILE], env=env, check=True,
                                  capture_output=True, text=True)
            found[way] = {k: round(v, 3) for k, v in
                          json.loads(done.stdout.splitlines()[-1]).items()}
    return found


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--compile", action="store_true", help="also time own_product's making")
    args = parser.parse_args(argv)
    from threadpoolctl import threadpool_info

    rates = peak.peak_rates(repeats=5)
    report: dict = {"pin": {k: os.environ.get(k) for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")},
                    "blas": [(i["internal_api"], i.get("architecture"), i["num_threads"])
                             for i in threadpool_info()],
                    "peak": rates}
    for dtype in (np.float64, np.float32):
        name = np.dtype(dtype).name
        core, every = rates[name]["core_gflops"], rates[name]["all_cores_gflops"]
        found = {"one_core": one_core(dtype, args.rounds), "both_cores": both_cores(dtype, args.rounds)}
        for where, table in found.items():
            yardstick = core if where == "one_core" else every
            for row in table.values():
                row["median_share_of_peak"] = round(row["median_gflops"] / yardstick, 3)
        report[name] = found
    if args.compile:
        report["compile"] = compile_times()
    print(json.dumps(report, indent=1))
    return report


if __name__ == "__main__":
    main()
