"""The seed's example workloads (examples/Layers.hb and Fits.hb) at realistic sizes."""

from __future__ import annotations

import numpy as np

from benchmarks import anchors as A
from benchmarks.cases.base import (
    DOUBLE_BEST,
    JAX,
    SINGLE_BEST,
    SINGLE_RTOL,
    Case,
    Config,
    Setup,
    Target,
    example,
    float64_twins,
)


def layer_norm(config: Config, math: str = "exact", dtype: str = "float64") -> Setup:
    n, p = config.pick((4096, 512), (1024, 256))
    wide = np.random.default_rng(10).standard_normal((n, p)) * 3 + 1  # (the twin's values)
    normalised = example("Layers", config, math).normalisedRows
    twin = float64_twins(dtype, lambda: normalised(wide))
    a = wide.astype(dtype)
    return Setup(
        ours=lambda: normalised(a),
        anchors=[A.numpy_anchor(A.layer_norm_numpy, a),
                 A.torch_anchor(config, lambda torch: lambda a: torch.nn.functional.layer_norm(
                     a, a.shape[1:], eps=1e-5), a, note="torch.nn.functional.layer_norm"),
                 A.jax_anchor(config, lambda jnp, lax: lambda a: (
                     a - a.mean(1, keepdims=True)) / jnp.sqrt(a.var(1, keepdims=True) + 1e-5), a),
                 *twin],
        params={"a": f"{n}×{p}", "dtype": dtype}, **SINGLE_RTOL.get(dtype, {}))


def causal_attention(config: Config, dtype: str = "float64") -> Setup:
    n, e = config.pick(1024, 512), 64
    rng = np.random.default_rng(11)
    wq, wv = rng.standard_normal((n, e)), rng.standard_normal((n, e))  # (the twin's values)
    d = float(e)
    attend = example("Layers", config).attendCausally
    twin = float64_twins(dtype, lambda: attend(wq, wq, wv, d))
    q, v = wq.astype(dtype), wv.astype(dtype)
    return Setup(
        ours=lambda: attend(q, q, v, d),
        anchors=[A.numpy_anchor(A.attention_numpy, q, q, v, d, True),
                 A.torch_anchor(config, lambda torch: A.attention_torch(torch, True), q, q, v, d),
                 A.jax_anchor(config, lambda jnp, lax: A.attention_jax(jnp, True), q, q, v, d),
                 *twin],
        params={"q = k, v": f"{n}×{e}", "d": d, "dtype": dtype}, flops=4.0 * n * n * e,
        **SINGLE_RTOL.get(dtype, {}))


def dropout(config: Config) -> Setup:
    n, p = config.pick((4096, 512), (1024, 512))
    rng = np.random.default_rng(12)
    a, u = rng.standard_normal((n, p)), rng.random((n, p))
    kept = example("Layers", config).kept
    return Setup(
        ours=lambda: kept(a, u, 0.3),
        anchors=[A.numpy_anchor(A.dropout_numpy, a, u, 0.3),
                 A.torch_anchor(config, lambda torch: lambda a, u, p: a * (u >= p) / (1 - p),
                                a, u, 0.3),
                 A.jax_anchor(config, lambda jnp, lax: lambda a, u, p: a * (u >= p) / (1 - p),
                              a, u, 0.3)],
        params={"a, u": f"{n}×{p}", "p": 0.3})


def max_pool(config: Config) -> Setup:
    b, length, width = 8, config.pick(1024, 256), 8
    x = np.random.default_rng(13).standard_normal((b, length))
    pooled = example("Layers", config).pooledMax
    k = np.ones(width)
    return Setup(
        ours=lambda: pooled(x, k),
        anchors=[A.numpy_anchor(A.max_pool_numpy, x, width, note="sliding_window_view max")],
        params={"x": f"{b}×{length}", "window": width})


def recurrent(config: Config, b: int = 64, w: int = 32, lengths: tuple[int, int] = (200, 50),
              math: str = "exact", dtype: str = "float64") -> Setup:
    length = config.pick(*lengths)
    rng = np.random.default_rng(14)
    x = rng.standard_normal((b, length))
    wh, wx = rng.standard_normal((w, w)) / np.sqrt(w), rng.standard_normal(w)
    h0 = np.zeros((b, w))
    unrolled = example("Fits", config, math).unrolled
    wide = (x, wh, wx, h0)  # (the twin's values: float64, bound now)
    twin = float64_twins(dtype, lambda: unrolled(*wide))
    x, wh, wx, h0 = (v.astype(dtype) for v in wide)
    return Setup(
        ours=lambda: unrolled(x, wh, wx, h0),
        anchors=[A.numpy_anchor(A.recurrent_numpy, x, wh, wx, h0, note="NumPy loop"),
                 A.torch_anchor(config, A.recurrent_torch, x, wh, wx, h0, note="eager loop"),
                 A.jax_anchor(config, A.recurrent_jax, x, wh, wx, h0, note="jit + fori_loop"),
                 *twin],
        params={"x": f"{b}×{length}", "wh": f"{w}×{w}", "dtype": dtype},
        flops=2.0 * length * b * w * (w + 1), **SINGLE_RTOL.get(dtype, {"rtol": 1e-6}))


def recurrent_long(config: Config) -> Setup:
    """A long sequence through a narrow state: each step's read of x at the counter must cost
    one column (compiler/passes/masks.py, `take`), not the whole sequence."""
    return recurrent(config, b=8, w=8, lengths=(4000, 1000))


def autoencoder(config: Config) -> Setup:
    n, p, k = 1000, 20, 5
    t, r = config.pick(300, 50), 0.01
    rng = np.random.default_rng(15)
    x = rng.standard_normal((n, k)) @ rng.standard_normal((k, p)) + 0.1 * rng.standard_normal((n, p))
    w1, w2 = rng.standard_normal((p, k)) * 0.1, rng.standard_normal((k, p)) * 0.1
    squeezed = example("Fits", config).squeezed
    return Setup(
        ours=lambda: squeezed(float(t), r, x, w1, w2),
        anchors=[A.numpy_anchor(A.autoencoder_numpy, t, r, x, w1, w2, note="NumPy loop"),
                 A.torch_anchor(config, A.autoencoder_torch, t, r, x, w1, w2, note="eager loop"),
                 A.jax_anchor(config, A.autoencoder_jax, t, r, x, w1, w2,
                              note="jit + fori_loop")],
        params={"x": f"{n}×{p}", "bottleneck": k, "t": t, "r": r},
        flops=float(t * 8 * n * p * k + 4 * n * p * k), rtol=1e-6)


def critic_loss(config: Config, dtype: str = "float64") -> Setup:
    n, p = config.pick((8192, 64), (2048, 64))
    rng = np.random.default_rng(16)
    real, fake = rng.standard_normal((n, p)) + 0.5, rng.standard_normal((n, p))
    wd = rng.standard_normal(p) * 0.1
    loss = example("Fits", config).criticLossOf
    wide = (real, fake, wd)  # (the twin's values: float64, bound now)
    twin = float64_twins(dtype, lambda: loss(*wide))
    real, fake, wd = (v.astype(dtype) for v in wide)

    def torch_loss(torch):
        def run(real, fake, wd):
            score = lambda a: torch.sigmoid(a @ wd).clamp_min(1e-12)  # noqa: E731
            return -torch.log(score(real)).mean() - torch.log(
                (1 - torch.sigmoid(fake @ wd)).clamp_min(1e-12)).mean()
        return run

    def jax_loss(jnp, lax):
        def run(real, fake, wd):
            sigma = lambda a: 1 / (1 + jnp.exp(-(a @ wd)))  # noqa: E731
            return (-jnp.log(jnp.maximum(sigma(real), 1e-12)).mean()
                    - jnp.log(jnp.maximum(1 - sigma(fake), 1e-12)).mean())
        return run

    return Setup(
        ours=lambda: loss(real, fake, wd),
        anchors=[A.numpy_anchor(A.critic_loss_numpy, real, fake, wd),
                 A.torch_anchor(config, torch_loss, real, fake, wd),
                 A.jax_anchor(config, jax_loss, real, fake, wd), *twin],
        params={"real, fake": f"{n}×{p}", "dtype": dtype}, flops=4.0 * n * p,
        **SINGLE_RTOL.get(dtype, {}))


def _case(name, title, build, measures, targets=()):
    return Case(name, "workloads", title, measures, build, targets)


CASES = [
    _case("layer-norm", "layerNorm (Layers.normalisedRows)", layer_norm,
          "row statistics and an entrywise chain: one pass over memory when fused",
          (DOUBLE_BEST,)),
    _case("causal-attention", "causal attention (Layers.attendCausally)", causal_attention,
          "attention with a mask built from positions, at n = 1024", (DOUBLE_BEST,)),
    _case("dropout", "dropout (Layers.kept)", dropout,
          "a purely entrywise chain (compare, multiply, divide)"),
    _case("max-pool", "max pooling (Layers.pooledMax)", max_pool,
          "windows gathered by a 0/1 window tensor, then a maximum over the window axis"),
    _case("recurrent", "recurrent network (Fits.unrolled)", recurrent,
          "a loop over time with a small contraction and tanh per step", (DOUBLE_BEST,)),
    _case("recurrent-long", "recurrent network, long sequence (Fits.unrolled)", recurrent_long,
          "the sequence read at the loop counter: one column per step, linear in T"),
    _case("recurrent-fast", "recurrent network, math=\"fast\" (Fits.unrolled)",
          lambda config: recurrent(config, math="fast"),
          "the recurrent case with tanh within 4 ulp (docs/semantics.md: math=\"fast\")",
          (Target("math=\"fast\": ≤ 1.0× jax.jit", JAX, 1.0),)),
    _case("layer-norm-fast", "layerNorm, math=\"fast\" (Layers.normalisedRows)",
          lambda config: layer_norm(config, math="fast"),
          "the layer norm with its divisions by a reciprocal, unchecked"),
    _case("layer-norm-f32", "layerNorm in float32 (Layers.normalisedRows)",
          lambda config: layer_norm(config, dtype="float32"),
          "the layer norm on float32 rows, against every anchor in float32",
          (SINGLE_BEST,)),
    _case("causal-attention-f32", "causal attention in float32 (Layers.attendCausally)",
          lambda config: causal_attention(config, dtype="float32"),
          "causal attention on float32 values, against every anchor in float32",
          (SINGLE_BEST,)),
    _case("recurrent-f32", "recurrent network in float32 (Fits.unrolled)",
          lambda config: recurrent(config, dtype="float32"),
          "the recurrent case on float32 values, against every anchor in float32",
          (SINGLE_BEST,)),
    _case("critic-loss-f32", "critic loss in float32 (Fits.criticLossOf)",
          lambda config: critic_loss(config, dtype="float32"),
          "the critic loss on float32 values, against every anchor in float32",
          (SINGLE_BEST,)),
    _case("autoencoder", "linear autoencoder fit (Fits.squeezed)", autoencoder,
          "twin loops (codeLoop/buildLoop) that should run as one fit"),
    _case("critic-loss", "critic loss (Fits.criticLossOf)", critic_loss,
          "matrix-vector products, a sigmoid, logs and means, to one scalar"),
]
