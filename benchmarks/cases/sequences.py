"""Prelude.Sequences: an LSTM and a GRU walked over a sequence (B = 32, 512 → 768), against
hand-written NumPy, torch.nn.LSTM / nn.GRU in float64 eager, and JAX (jit + lax.scan).

Each contestant answers the last state (and the LSTM's last memory), concatenated. The NumPy
and JAX versions compute every step's input product in one matrix product before the walk,
as hilbert's Prelude does; torch does what nn.LSTM does."""

from __future__ import annotations

import numpy as np

from benchmarks import anchors as A
from benchmarks.cases.base import (
    NUMPY,
    SINGLE_BEST,
    SINGLE_RTOL,
    SINGLE_SPEEDUP,
    TORCH,
    TWIN,
    Anchor,
    Case,
    Config,
    Setup,
    Target,
    float64_twins,
)
from benchmarks.first_results import torch_circle_step

B, E, D = 32, 512, 768


def _problem(steps: int, gates: int, seed: int):
    rng = np.random.default_rng(seed)
    scale = 1 / np.sqrt(D)
    x = rng.standard_normal((steps, B, E))
    h = rng.standard_normal((B, D)) * 0.1
    c = rng.standard_normal((B, D)) * 0.1
    wx = rng.uniform(-scale, scale, (E, D, gates))
    wh = rng.uniform(-scale, scale, (D, D, gates))
    b1 = rng.uniform(-scale, scale, (D, gates))
    b2 = rng.uniform(-scale, scale, (D, gates))
    return x, h, c, wx, wh, b1, b2


def _sigmoid(z):
    return 1 / (1 + np.exp(-z))


def lstm_steps(x, h, c, wx, wh, b, sigmoid, tanh):
    """The LSTM's steps on arrays of any library with NumPy's operators (NumPy's, PyTorch's
    tensors), its `sigmoid` and `tanh`: the input products in one GEMM, then a loop; the last
    (h, c)."""
    steps = x.shape[0]
    inputs = (x.reshape(steps * B, E) @ wx.reshape(E, D * 4)).reshape(steps, B, D, 4)
    u = wh.reshape(D, D * 4)
    for t in range(steps):
        z = inputs[t] + (h @ u).reshape(B, D, 4) + b
        c = sigmoid(z[..., 1]) * c + sigmoid(z[..., 0]) * tanh(z[..., 2])
        h = sigmoid(z[..., 3]) * tanh(c)
    return h, c


def lstm_numpy(x, h, c, wx, wh, b):
    h, c = lstm_steps(x, h, c, wx, wh, b, _sigmoid, np.tanh)
    return np.concatenate([h.ravel(), c.ravel()])


def gru_numpy(x, h, wx, wh, bx, bh):
    steps = x.shape[0]
    inputs = (x.reshape(steps * B, E) @ wx.reshape(E, D * 3)).reshape(steps, B, D, 3) + bx
    u = wh.reshape(D, D * 3)
    for t in range(steps):
        a = inputs[t]
        g = (h @ u).reshape(B, D, 3) + bh
        r = _sigmoid(a[..., 0] + g[..., 0])
        z = _sigmoid(a[..., 1] + g[..., 1])
        n = np.tanh(a[..., 2] + r * g[..., 2])
        h = (1 - z) * n + z * h
    return h.ravel()


def _torch_stack(torch, w, gates):
    """E×D×G (gate axis last) as PyTorch's (G·D)×E."""
    return torch.from_numpy(np.ascontiguousarray(w.transpose(2, 1, 0).reshape(gates * D, -1)))


def _torch_lstm(config, x, h, c, wx, wh, b):
    def make():
        torch = A.torch_module()
        net = torch.nn.LSTM(E, D).to(getattr(torch, x.dtype.name))
        with torch.no_grad():
            net.weight_ih_l0.copy_(_torch_stack(torch, wx, 4))
            net.weight_hh_l0.copy_(_torch_stack(torch, wh, 4))
            net.bias_ih_l0.copy_(torch.from_numpy(b.T.reshape(-1).copy()))
            net.bias_hh_l0.zero_()
        tx, th, tc = (torch.from_numpy(a) for a in (x, h[None], c[None]))

        def call():
            with torch.no_grad():
                _, (hn, cn) = net(tx, (th, tc))
            return np.concatenate([hn.numpy().ravel(), cn.numpy().ravel()])
        return call
    return A._optional(config, Anchor(TORCH, make, f"torch.nn.LSTM, {x.dtype.name}, eager"))


def _torch_gru(config, x, h, wx, wh, bx, bh):
    def make():
        torch = A.torch_module()
        net = torch.nn.GRU(E, D).to(getattr(torch, x.dtype.name))
        with torch.no_grad():
            net.weight_ih_l0.copy_(_torch_stack(torch, wx, 3))
            net.weight_hh_l0.copy_(_torch_stack(torch, wh, 3))
            net.bias_ih_l0.copy_(torch.from_numpy(bx.T.reshape(-1).copy()))
            net.bias_hh_l0.copy_(torch.from_numpy(bh.T.reshape(-1).copy()))
        tx, th = torch.from_numpy(x), torch.from_numpy(h[None])

        def call():
            with torch.no_grad():
                _, hn = net(tx, th)
            return hn.numpy().ravel()
        return call
    return A._optional(config, Anchor(TORCH, make, f"torch.nn.GRU, {x.dtype.name}, eager"))


def _sequences(config: Config):
    from benchmarks.cases.base import _module

    return _module(("open", "Prelude.Sequences"), config)


def lstm(steps: int, dtype: str = "float64"):
    def build(config: Config) -> Setup:
        wide = _problem(config.pick(steps, steps // 4), 4, 20)[:6]
        x, h, c, wx, wh, b = (v.astype(dtype) for v in wide)
        run = _sequences(config).function("lstm")

        def joined(values):
            return np.concatenate([np.ravel(v) for v in values])

        twin = float64_twins(dtype, lambda: joined(run(*wide)))
        return Setup(
            ours=lambda: joined(run(x, h, c, wx, wh, b)),
            anchors=[A.numpy_anchor(lstm_numpy, x, h, c, wx, wh, b,
                                    note="input products in one GEMM, then a loop"),
                     _torch_lstm(config, x, h, c, wx, wh, b), *twin],
            params={"x": "×".join(map(str, x.shape)), "hidden": D, "dtype": dtype},
            flops=float(2 * x.shape[0] * B * (E + D) * 4 * D),
            **SINGLE_RTOL.get(dtype, {"rtol": 1e-9, "atol": 1e-12}))
    return build


def gru(steps: int, dtype: str = "float64"):
    def build(config: Config) -> Setup:
        x, h, _, wx, wh, bx, bh = _problem(config.pick(steps, steps // 4), 3, 21)
        run = _sequences(config).function("gru")
        wide = (x, h, wx, wh, bx, bh)
        twin = float64_twins(dtype, lambda: np.ravel(run(*wide)))
        x, h, wx, wh, bx, bh = (v.astype(dtype) for v in wide)
        return Setup(
            ours=lambda: np.ravel(run(x, h, wx, wh, bx, bh)),
            anchors=[A.numpy_anchor(gru_numpy, x, h, wx, wh, bx, bh,
                                    note="input products in one GEMM, then a loop"),
                     _torch_gru(config, x, h, wx, wh, bx, bh), *twin],
            params={"x": "×".join(map(str, x.shape)), "hidden": D, "dtype": dtype},
            flops=float(2 * x.shape[0] * B * (E + D) * 3 * D),
            **SINGLE_RTOL.get(dtype, {"rtol": 1e-9, "atol": 1e-12}))
    return build


_TARGETS = (Target("≤ 1.2× hand-written NumPy", NUMPY, 1.2),
            Target("ahead of torch float64 eager", TORCH, 1.0))

CASES = [
    Case(f"{name}-{steps}", "sequences", f"{title}, B = 32, T = {steps}, 512 → 768",
         "a loop over time reading x[t]: one GEMM per step and the gates fused", build(steps),
         _TARGETS, blas_bound=True)
    for name, title, build in (("lstm", "LSTM (Sequences.lstm)", lstm),
                               ("gru", "GRU (Sequences.gru)", gru))
    for steps in (100, 400)
] + [
    Case(f"{name}-400-f32", "sequences", f"{title} in float32, B = 32, T = 400, 512 → 768",
         f"the {name.upper()} on float32 values: sgemm per step, against torch in float32",
         build(400, "float32"),
         (SINGLE_BEST, SINGLE_SPEEDUP),
         blas_bound=True)
    for name, title, build in (("lstm", "LSTM (Sequences.lstm)", lstm),
                               ("gru", "GRU (Sequences.gru)", gru))
]


def circle_step(config: Config, dtype: str = "float64") -> Setup:
    """One training step of the course seed's circle classifier (2→32→32→2, GELU, cross-entropy
    on logits, clip_grad_norm 1.0, AdamW): hilbert's examples/CircleClassifier.hb model (its
    weights in `dtype`) against the same step in torch eager in that dtype. Each call is a
    step from the weights the last left (the contestants train apart), so outputs are not
    compared here: tests/test_course.py checks hilbert's steps against NumPy and torch."""
    from benchmarks.cases.base import example

    rng = np.random.default_rng(22)
    x = rng.uniform(-1, 1, (64, 2))
    labels = ((x ** 2).sum(1) < 0.5).astype(float)
    classifier = example("CircleClassifier", config).CircleClassifier
    model = classifier(32, 0, dtype=np.dtype(dtype))
    xs, ls = x.astype(dtype), labels.astype(dtype)
    anchors = [A._optional(config, Anchor(
        TORCH, lambda: torch_circle_step(A.torch_module(), xs, labels, dtype=dtype),
        f"torch eager {dtype}: forward, backward, clip, AdamW"))]
    if dtype != "float64":
        twin = classifier(32, 0)
        anchors.append(Anchor(TWIN, lambda: (lambda: twin.train(x, labels, 0.0)),
                              "hilbert's model in float64, the same step"))
    return Setup(ours=lambda: model.train(xs, ls, 0.0), anchors=anchors,
                 params={"batch": "64×2", "widths": "2→32→32→2", "dtype": dtype},
                 compare=False)


CASES.append(Case("circle-step", "sequences", "one training step of the course's circle classifier",
                  "forward, ∂ of the cross-entropy for six parameters, clipping and AdamW: one call",
                  circle_step, (Target("ahead of torch float64 eager", TORCH, 1.0),)))
CASES.append(Case("circle-step-f32", "sequences",
                  "one training step of the circle classifier in float32",
                  "the same step with float32 weights and data, against torch eager float32",
                  lambda config: circle_step(config, "float32"), (SINGLE_BEST,)))
