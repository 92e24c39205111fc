"""Automatic gradients (∂): the seed's two-layer network trained with ∂ against the same
network with hand-written gradients (hilbert and NumPy), torch.autograd and JAX grad + jit.

Every contestant minimises L = 1/(2n)‖relu(X W1) W2 − Y‖² by full-batch gradient descent and
answers the trained network's outputs on X (or, for one step, the new weights)."""

from __future__ import annotations

import numpy as np

from benchmarks import anchors as A
from benchmarks.cases.base import (
    JAX,
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
)
from benchmarks.cases.design import SEED_RATE, SEED_W1, SEED_W2, SEED_X, SEED_Y
from benchmarks.first_results import jax_mlp_step, loss_torch, mlp_problem, torch_mlp_step

HAND = "hilbert, by hand"


def _autograd_fit(torch):
    """t steps of the fit in PyTorch eager, each gradient by loss.backward()."""
    def fit(t, r, x, y, w1, w2):
        w1, w2 = w1.clone().requires_grad_(), w2.clone().requires_grad_()
        for _ in range(int(t)):
            g1, g2 = torch.autograd.grad(loss_torch(torch, x, y, w1, w2), (w1, w2))
            with torch.no_grad():
                w1, w2 = (w1 - r * g1).requires_grad_(), (w2 - r * g2).requires_grad_()
        with torch.no_grad():
            return torch.clamp_min(x @ w1, 0.0) @ w2
    return fit


def _grad_fit(jnp, lax):
    """The fit under jax.jit: the loop as lax.fori_loop, each gradient by jax.grad."""
    import jax

    def fit(t, r, x, y, w1, w2):
        def loss(weights):
            v1, v2 = weights
            return ((jnp.maximum(x @ v1, 0.0) @ v2 - y) ** 2).sum() / (2 * x.shape[0])

        def step(_, weights):
            g1, g2 = jax.grad(loss)(weights)
            return weights[0] - r * g1, weights[1] - r * g2

        v1, v2 = lax.fori_loop(0, t, step, (w1, w2))
        return jnp.maximum(x @ v1, 0.0) @ v2
    return fit


def _torch_autograd(config: Config, build, *args, note: str) -> Anchor:
    """A torch anchor that keeps autograd on (A.torch_anchor runs under no_grad)."""
    def make():
        torch = A.torch_module()
        fn = build(torch)
        targs = [torch.from_numpy(np.ascontiguousarray(a)) if isinstance(a, np.ndarray) else a
                 for a in args]
        return lambda: fn(*targs)

    anchor = Anchor(TORCH, make, note)
    return anchor if config.optional else A._optional(config, anchor)


def _fit_setup(config: Config, t: int, r: float, x, y, w1, w2,
               dtype: str = "float64") -> Setup:
    gradients = example("Gradients", config)
    wide = (float(t), r, x, y, w1, w2)  # (the twin's values: float64, bound now)
    twin = float64_twins(dtype, lambda: gradients.autoFit(*wide))
    x, y, w1, w2 = (v.astype(dtype) for v in wide[2:])
    args = (float(t), r, x, y, w1, w2)
    return Setup(
        ours=lambda: gradients.autoFit(*args),
        anchors=[Anchor(HAND, lambda: (lambda: gradients.handFit(*args)),
                        "the same fit in hilbert, Prelude.Networks' hand-written gradients"),
                 A.numpy_anchor(A.mlp_numpy, t, r, x, y, w1, w2, x,
                                note="NumPy loop, gradients by hand"),
                 _torch_autograd(config, _autograd_fit, t, r, x, y, w1, w2,
                                 note="eager loop, torch.autograd.grad per step"),
                 A.jax_anchor(config, _grad_fit, t, r, x, y, w1, w2, static=(0,),
                              note="jit + lax.fori_loop, jax.grad per step"),
                 *twin],
        params={"x": "×".join(map(str, x.shape)), "w1": "×".join(map(str, w1.shape)),
                "w2": "×".join(map(str, w2.shape)), "t": t, "r": r, "dtype": dtype},
        flops=A.mlp_flops(t, x.shape[0], x.shape[1], w1.shape[1], w2.shape[1], x.shape[0]),
        **SINGLE_RTOL.get(dtype, {"rtol": 1e-6, "atol": 1e-9}))


def seed_fit(config: Config, dtype: str = "float64") -> Setup:
    return _fit_setup(config, 500, SEED_RATE, SEED_X, SEED_Y, SEED_W1, SEED_W2, dtype)


def mlp_fit(config: Config, dtype: str = "float64") -> Setup:
    x, y, w1, w2 = mlp_problem(1024, 64, 256, 10)
    return _fit_setup(config, config.pick(100, 20), 0.01, x, y, w1, w2, dtype)


def mlp_step(config: Config, dtype: str = "float64") -> Setup:
    wide = mlp_problem(1024, 64, 256, 10)
    x, y, w1, w2 = (v.astype(dtype) for v in wide)
    r = 0.01
    gradients = example("Gradients", config)

    def joined(pair):
        return np.concatenate([np.ravel(p) for p in pair])

    def jax_anchor():
        jax, jnp, lax = A.jax_modules()
        fn = jax.jit(jax_mlp_step(jax, jnp, r))
        jargs = [jnp.asarray(a) for a in (x, y, w1, w2)]  # (in the case's dtype)
        return lambda: fn(*jargs).block_until_ready()

    def torch_anchor():
        torch = A.torch_module()
        fn = torch_mlp_step(torch, r)
        targs = [torch.from_numpy(a) for a in (x, y, w1, w2)]
        return lambda: joined([p.detach().numpy() for p in fn(*targs)])

    return Setup(
        ours=lambda: joined(gradients.autoStep(r, x, y, w1, w2)),
        anchors=[Anchor(HAND, lambda: (lambda: joined(gradients.handStep(r, x, y, w1, w2))),
                        "hilbert: stepFirst and stepSecond of Prelude.Networks"),
                 A._optional(config, Anchor(TORCH, torch_anchor, "torch.autograd.grad")),
                 A._optional(config, Anchor(JAX, jax_anchor, "jax.jit(jax.grad)")),
                 *float64_twins(dtype, lambda: joined(gradients.autoStep(r, *wide)))],
        params={"x": "1024×64", "w1": "64×256", "w2": "256×10", "r": r, "dtype": dtype},
        flops=float(4 * 1024 * 64 * 256 + 6 * 1024 * 256 * 10),
        **SINGLE_RTOL.get(dtype, {"rtol": 1e-9, "atol": 1e-12}))


_TARGETS = (Target("≤ 1.2× the same fit with hand-written gradients", HAND, 1.2),
            Target("ahead of torch.autograd", TORCH, 1.0),
            Target("ahead of JAX grad + jit", JAX, 1.0))

CASES = [
    Case("grad-seed-fit", "gradients", "∂: the seed's fit 4×2, t = 500, gradients by ∂",
         "a whole training loop of tiny steps whose gradients the compiler derives",
         seed_fit, _TARGETS),
    Case("grad-seed-fit-f32", "gradients", "∂: the seed's fit 4×2, t = 500, in float32",
         "the seed's fit on float32 values, against every anchor in float32",
         lambda config: seed_fit(config, "float32"),
         (SINGLE_BEST,)),
    Case("grad-mlp-fit", "gradients", "∂: MLP fit 1024×64→256→10, gradients by ∂",
         "BLAS-sized steps: the derivative must plan to the same GEMMs as the hand-written one",
         mlp_fit, _TARGETS, blas_bound=True),
    Case("grad-mlp-fit-f32", "gradients", "∂: MLP fit 1024×64→256→10 in float32",
         "the MLP fit on float32 values (sgemm), against every anchor in float32",
         lambda config: mlp_fit(config, "float32"),
         (SINGLE_BEST, SINGLE_SPEEDUP),
         blas_bound=True),
    Case("grad-mlp-step", "gradients", "∂: one training step 1024×64→256→10",
         "one call: forward, backward and the update, without a loop",
         mlp_step, (Target("≤ 1.2× hand-written gradients", HAND, 1.2),
                    Target("ahead of torch.autograd", TORCH, 1.0),
                    Target("ahead of JAX grad + jit", JAX, 1.0))),
    Case("grad-mlp-step-f32", "gradients", "∂: one training step 1024×64→256→10 in float32",
         "the training step on float32 values (sgemm), against every anchor in float32",
         lambda config: mlp_step(config, "float32"), (SINGLE_BEST, SINGLE_SPEEDUP),
         blas_bound=True),
]
