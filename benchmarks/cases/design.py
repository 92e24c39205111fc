"""The rows of DESIGN.md §6: call overhead, the seed's fit, a real MLP fit, a large dense
layer, mlpPredict's shared fit, attention, convolution, and compile / warm-start time."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import numpy as np

from benchmarks import anchors as A
from benchmarks.cases.base import (
    BEST,
    EINSUM,
    JAX,
    NEAR_PEAK,
    NUMPY,
    OE,
    ROOT,
    SINGLE_BEST,
    SINGLE_RTOL,
    SINGLE_SPEEDUP,
    TORCH,
    Anchor,
    Case,
    Config,
    Setup,
    Target,
    example,
    float64_twins,
    last_words,
    networks,
)
from benchmarks.first_results import mlp_problem

SEED_X = np.array([[0, 1], [1, 1], [2, 1], [3, 1]], dtype=float)
SEED_Y = np.array([[1], [3], [5], [7]], dtype=float)
SEED_W1 = np.array([[0.5, 0.3], [0.2, 0.4]])
SEED_W2 = np.array([[0.5], [0.5]])
SEED_RATE = 0.05
#: The anchor of call-overhead-scalars: hilbert given only arrays (its fast path).
ARRAYS = "hilbert, arrays only"


def call_overhead(config: Config) -> Setup:
    a = np.array([[1.0, 2.0], [3.0, 4.0]])
    w = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]])
    dense = networks(config).dense
    return Setup(
        ours=lambda: dense(a, w),
        anchors=[A.numpy_anchor(np.matmul, a, w, note="a @ w"),
                 *A.einsum_anchors(config, "np,pq->nq", [a, w])],
        params={"a": "2×2", "w": "2×3"})


def _step_first_numpy(r, x, y, w1, w2):
    """One gradient step on w1 by hand: W1 − r Xᵀ ((relu(X W1) W2 − Y)/n W2ᵀ ⊙ [X W1 > 0])."""
    pre = x @ w1
    delta = (np.maximum(pre, 0) @ w2 - y) / x.shape[0]
    return w1 - r * (x.T @ ((delta @ w2.T) * (pre > 0)))


def call_overhead_scalars(config: Config) -> Setup:
    x, y, w1, w2 = (v.astype(np.float32) for v in (SEED_X, SEED_Y, SEED_W1, SEED_W2))
    step = networks(config).stepFirst
    rate = np.asarray(SEED_RATE, np.float32)
    return Setup(
        ours=lambda: step(SEED_RATE, x, y, w1, w2),
        anchors=[Anchor(ARRAYS, lambda: (lambda: step(rate, x, y, w1, w2)),
                        "the same call with the rate as a float32 array"),
                 A.numpy_anchor(_step_first_numpy, np.float32(SEED_RATE), x, y, w1, w2,
                                note="the step by hand")],
        params={"r": SEED_RATE, "x": "4×2", "w1": "2×2", "w2": "2×1", "dtype": "float32"},
        **SINGLE_RTOL["float32"])


def _mlp_anchors(config: Config, t, r, x, y, w1, w2, z) -> list[Anchor]:
    return [
        A.numpy_anchor(A.mlp_numpy, t, r, x, y, w1, w2, z, note="NumPy loop, gradients by hand"),
        A.torch_anchor(config, A.mlp_torch, t, r, x, y, w1, w2, z,
                       note="eager loop, gradients by hand"),
        A.jax_anchor(config, A.mlp_jax, t, r, x, y, w1, w2, z, note="jit + lax.fori_loop"),
    ]


def seed_fit(config: Config) -> Setup:
    fits = example("Fits", config)
    t = 500
    args = (float(t), SEED_RATE, SEED_X, SEED_Y, SEED_W1, SEED_W2)
    return Setup(
        ours=lambda: fits.trainedOutputs(*args),
        anchors=_mlp_anchors(config, t, SEED_RATE, SEED_X, SEED_Y, SEED_W1, SEED_W2, SEED_X),
        params={"x": "4×2", "w1": "2×2", "w2": "2×1", "t": t, "r": SEED_RATE},
        flops=A.mlp_flops(t, 4, 2, 2, 1, 4))


def mlp_fit(config: Config, dtype: str = "float64") -> Setup:
    n, p, h, q = 1024, 64, 256, 10
    t, r = config.pick(100, 20), 0.01
    wide = mlp_problem(n, p, h, q)  # (the twin's values: float64, bound now)
    fit = networks(config).mlpFit
    twin = float64_twins(dtype, lambda: fit(float(t), r, *wide))
    x, y, w1, w2 = (v.astype(dtype) for v in wide)
    return Setup(
        ours=lambda: fit(float(t), r, x, y, w1, w2),
        anchors=[*_mlp_anchors(config, t, r, x, y, w1, w2, x), *twin],
        params={"x": f"{n}×{p}", "w1": f"{p}×{h}", "w2": f"{h}×{q}", "t": t, "r": r,
                "dtype": dtype},
        flops=A.mlp_flops(t, n, p, h, q, n),
        **SINGLE_RTOL.get(dtype, {"rtol": 1e-6, "atol": 1e-9}))


def large_dense(config: Config, dtype: str = "float64") -> Setup:
    n, p, q = 2048, 1024, 1024
    rng = np.random.default_rng(1)
    a, w = (v.astype(dtype) for v in (rng.standard_normal((n, p)), rng.standard_normal((p, q))))
    dense = networks(config).dense
    return Setup(
        ours=lambda: dense(a, w),
        anchors=[A.numpy_anchor(np.matmul, a, w, note="a @ w"),
                 *A.einsum_anchors(config, "np,pq->nq", [a, w])],
        params={"a": f"{n}×{p}", "w": f"{p}×{q}", "dtype": dtype}, flops=2.0 * n * p * q,
        # (float32: the sums of 1024 products round differently per library)
        **({"rtol": 1e-9, "atol": 1e-9} if dtype == "float64" else {"rtol": 1e-4, "atol": 1e-3}))


def mlp_predict(config: Config) -> Setup:
    n, p, h, q, m = 256, 32, 64, 4, 64
    t, r = config.pick(200, 50), 0.01
    x, y, w1, w2 = mlp_problem(n, p, h, q, seed=2)
    z = np.random.default_rng(3).standard_normal((m, p))
    nets = networks(config)
    args = (float(t), r, x, y, w1, w2)

    def two_fits():
        return nets.outputs(z, nets.mlpFirst(*args), nets.mlpSecond(*args))

    return Setup(
        ours=lambda: nets.mlpPredict(*args, z),
        anchors=[Anchor("two fits", lambda: two_fits,
                        "hilbert: outputs(z, mlpFirst(…), mlpSecond(…)), three calls"),
                 A.numpy_anchor(A.mlp_numpy, t, r, x, y, w1, w2, z, note="NumPy loop, one fit")],
        params={"x": f"{n}×{p}", "w1": f"{p}×{h}", "w2": f"{h}×{q}", "z": f"{m}×{p}", "t": t},
        flops=A.mlp_flops(t, n, p, h, q, m), rtol=1e-6)


def attention(config: Config, dtype: str = "float64") -> Setup:
    n, e = config.pick(2048, 1024), 64
    rng = np.random.default_rng(4)
    wide = tuple(rng.standard_normal((n, e)) for _ in range(3))
    d = float(e)
    attend = example("Layers", config).attend
    twin = float64_twins(dtype, lambda: attend(*wide, d))
    q, k, v = (a.astype(dtype) for a in wide)
    return Setup(
        ours=lambda: attend(q, k, v, d),
        anchors=[A.numpy_anchor(A.attention_numpy, q, k, v, d, note="softmax(Q Kᵀ/√d) V"),
                 A.torch_anchor(config, A.attention_torch, q, k, v, d, note="torch.softmax"),
                 A.jax_anchor(config, lambda jnp, lax: A.attention_jax(jnp), q, k, v, d),
                 *twin],
        params={"q, k, v": f"{n}×{e}", "d": d, "dtype": dtype}, flops=4.0 * n * n * e,
        **SINGLE_RTOL.get(dtype, {}))


def _convolve_setup(config: Config, b: int, length: int, width: int,
                    dtype: str = "float64") -> Setup:
    rng = np.random.default_rng(5)
    wide = (rng.standard_normal((b, length)), rng.standard_normal(width))
    filtered = example("Layers", config).filtered
    twin = float64_twins(dtype, lambda: filtered(*wide))
    x, k = (a.astype(dtype) for a in wide)
    return Setup(
        ours=lambda: filtered(x, k),
        anchors=[A.numpy_anchor(A.correlate_numpy, x, k, note="np.correlate per row"),
                 A.numpy_anchor(A.correlate_windows, x, k, name="numpy windows",
                                note="sliding_window_view @ k"), *twin],
        params={"x": f"{b}×{length}", "k": width, "dtype": dtype,
                "window tensor": f"{length}×{width}×{length} = {length * width * length:.3g} "
                                 "elements if built literally"},
        flops=2.0 * b * length * width, **SINGLE_RTOL.get(dtype, {}))


def convolve(config: Config, dtype: str = "float64") -> Setup:
    return _convolve_setup(config, 4, 100_000, 16, dtype)


def convolve_small(config: Config) -> Setup:
    return _convolve_setup(config, 4, config.pick(1024, 256), 16)


_SECOND_PROCESS = """
import json, sys, time
t0 = time.perf_counter()
import hilbert
t1 = time.perf_counter()
nets = hilbert.open("Prelude.Networks", executor=sys.argv[1])
t2 = time.perf_counter()
nets.mlpFit(500.0, 0.05, [[0, 1], [1, 1], [2, 1], [3, 1]], [[1], [3], [5], [7]],
            [[0.5, 0.3], [0.2, 0.4]], [[0.5], [0.5]])
t3 = time.perf_counter()
nets.dense([[1, 2], [3, 4]], [[1, 0, 1], [0, 1, 1]])
t4 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "compile_s": t2 - t1, "first_fit_s": t3 - t2,
                  "first_dense_s": t4 - t3, "first_result_s": t3 - t0}))
"""


def _second_process(executor: str) -> dict:
    begun = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _SECOND_PROCESS, executor], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the second process failed: {last_words(done.stderr)}")
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    figures["process_wall_s"] = time.perf_counter() - begun
    return figures


def compile_time(config: Config) -> Setup:
    import hilbert

    metrics: dict[str, object] = {}
    try:
        runs = [_second_process(config.executor) for _ in range(config.pick(4, 2))][1:]
        middle = sorted(runs, key=lambda f: f["first_result_s"])[len(runs) // 2]
        metrics = {f"second_process_{k}": v for k, v in middle.items()}
    except (RuntimeError, OSError, subprocess.TimeoutExpired, ValueError) as err:
        metrics["second_process_error"] = str(err)
    source = (ROOT / "prelude" / "Networks.hb").read_text(encoding="utf-8")
    return Setup(
        ours=lambda: hilbert.compile_source(source, name="Networks.hb", export_all=True,
                                            executor=config.executor),
        compare=False, metrics=metrics,
        params={"module": "prelude/Networks.hb (its opens: Arithmetic, Statistics)",
                "second process": "the median of later runs after one run warmed the caches"},
        notes=["hilbert time = compiling the text of Networks.hb (parse, resolve, check, "
               "inline, fuse) in this process; the modules it opens may come from the "
               "process's Prelude cache",
               "second_process_compile_s = hilbert.open('Prelude.Networks') as the first "
               "compile of a fresh process (grammar and Prelude loaded cold)",
               "second_process_first_result_s = from `import hilbert` to the first mlpFit "
               "result (4×2, t = 500) in a fresh Python process, with the disk cache warm"])


CASES = [
    Case("call-overhead", "design", "call overhead: dense on 2×2·2×3",
         "the fixed cost of one call (argument checks, plan look-up, dispatch) on a tiny einsum",
         call_overhead,
         (Target("≤ 1.5× numpy.einsum", EINSUM, 1.5), Target("ahead of torch", TORCH, 1.0),
          Target("ahead of JAX jit", JAX, 1.0), Target("ahead of opt_einsum", OE, 1.0))),
    Case("call-overhead-scalars", "design",
         "call overhead: stepFirst, a Python float beside float32 arrays",
         "the cost of binding Python numbers (weak: they take the arrays' float32) on a tiny "
         "compiled call, against the same call given only arrays",
         call_overhead_scalars, (Target("≤ 1.5× the call given arrays", ARRAYS, 1.5),)),
    Case("seed-fit", "design", "the seed's fit: mlpFit 4×2, t = 500",
         "a whole training loop of tiny steps: host turns per step dominate",
         seed_fit,
         (Target("≤ JAX jit + fori_loop", JAX, 1.0),
          Target("≥ 10× faster than a NumPy loop", NUMPY, 0.1))),
    Case("mlp-fit", "design", "MLP fit 1024×64→256→10",
         "a training loop whose steps are BLAS-sized; % of BLAS-bound time says how close to "
         "the machine's GEMM rate the whole fit runs",
         mlp_fit, (Target("≤ the best anchor", BEST, 1.0),), blas_bound=True),
    Case("large-dense", "design", "large dense 2048×1024·1024×1024",
         "throughput of one big contraction against NumPy's @ (BLAS)",
         large_dense, (Target("≥ 90% of NumPy @ throughput", NUMPY, 1 / 0.9), NEAR_PEAK,
                       Target("≤ 1.0× jax.jit", JAX, 1.0)), blas_bound=True),
    Case("large-dense-f32", "design", "large dense 2048×1024·1024×1024 in float32",
         "the same product on float32 values (sgemm), against every anchor in float32; its "
         "share of the machine's peak float32 FMA rate",
         lambda config: large_dense(config, "float32"),
         (NEAR_PEAK, Target("≤ 1.0× jax.jit", JAX, 1.0)), blas_bound=True),
    Case("mlp-predict", "design", "mlpPredict: one fit, not two",
         "mlpPredict names the same fit twice (mlpFirst, mlpSecond); shared loops run it once",
         mlp_predict, (Target("≥ 1.8× faster than two fits", "two fits", 1 / 1.8),)),
    Case("attention", "design", "attention n = 2048, e = 64",
         "two contractions and a row softmax at a size where memory traffic matters",
         attention, (Target("≤ 1.2× hand-written NumPy", NUMPY, 1.2),)),
    Case("convolve", "design", "convolve L = 100 000, K = 16",
         "the Prelude's convolve is written with an L×K×L window tensor; it must run without "
         "building it", convolve,
         (Target("runs", runs=True), Target("≤ 2× np.correlate-based code", NUMPY, 2.0)),
         isolate=True),
    Case("convolve-small", "design", "convolve on short signals (L = 1024, K = 16)",
         "the same convolve at a size where even a literal window tensor would fit in memory: "
         "the fixed costs of the call",
         convolve_small, (), isolate=True),
    Case("mlp-fit-f32", "design", "MLP fit 1024×64→256→10 in float32",
         "the MLP fit on float32 values (sgemm), against every anchor in float32",
         lambda config: mlp_fit(config, "float32"),
         (SINGLE_BEST, SINGLE_SPEEDUP),
         blas_bound=True),
    Case("attention-f32", "design", "attention n = 2048, e = 64, in float32",
         "attention on float32 values, against every anchor in float32",
         lambda config: attention(config, "float32"),
         (SINGLE_BEST,)),
    Case("convolve-f32", "design", "convolve L = 100 000, K = 16, in float32",
         "the convolve on float32 signals, against NumPy's in float32",
         lambda config: convolve(config, "float32"),
         (SINGLE_BEST,), isolate=True),
    Case("compile", "design", "compile Networks.hb; first call in a second process",
         "compile time of the seed module, and time to the first result in a fresh process "
         "with the disk cache warm", compile_time,
         (Target("compile ≤ 0.2 s", metric="ours_median_s", max_value=0.2),
          Target("first call in a second process ≤ 1 s",
                 metric="second_process_first_result_s", max_value=1.0))),
]
