"""The anchors: hand-written NumPy, numpy.einsum, opt_einsum, PyTorch and JAX versions of each
workload, each prepared outside the timing and returned as a zero-argument callable."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from benchmarks.cases.base import (
    EINSUM,
    EINSUM_OPT,
    JAX,
    NUMPY,
    OE,
    OE_EXPR,
    TORCH,
    Anchor,
    Config,
    Skip,
    naive_cost,
)

# --------------------------------------------------------------------------------------------
# Optional libraries


def torch_module():
    """PyTorch, or Skip saying how to install it."""
    try:
        import torch
    except ImportError:
        raise Skip("PyTorch is not installed (pip install -e '.[bench]')") from None
    return torch


def jax_modules():
    """(jax, jax.numpy, jax.lax) in float64 mode, or Skip saying how to install JAX."""
    try:
        import jax
    except ImportError:
        raise Skip("JAX is not installed (pip install -e '.[bench]')") from None
    jax.config.update("jax_enable_x64", True)  # every contestant computes in float64
    import jax.numpy as jnp
    from jax import lax

    return jax, jnp, lax


def _optional(config: Config, anchor: Anchor) -> Anchor:
    if config.optional:
        return anchor

    def refused():
        raise Skip("optional anchors (PyTorch, JAX) are turned off for this run")

    return Anchor(anchor.name, refused, anchor.note)


def numpy_anchor(fn: Callable, *args, name: str = NUMPY, note: str = "") -> Anchor:
    """A hand-written NumPy (or any plain Python) function applied to `args`."""
    return Anchor(name, lambda: (lambda: fn(*args)), note)


def torch_anchor(config: Config, build: Callable, *args, name: str = TORCH,
                 note: str = "") -> Anchor:
    """`build(torch)` returns a function of torch tensors; arrays in `args` become float64
    tensors sharing memory with them, numbers stay numbers."""

    def make():
        torch = torch_module()
        fn = build(torch)
        targs = [torch.from_numpy(np.ascontiguousarray(a)) if isinstance(a, np.ndarray) else a
                 for a in args]

        def call():
            with torch.no_grad():
                return fn(*targs)
        return call

    return _optional(config, Anchor(name, make, note))


def jax_anchor(config: Config, build: Callable, *args, static: Sequence[int] = (),
               name: str = JAX, note: str = "") -> Anchor:
    """`build(jnp, lax)` returns a function of JAX arrays; it is jitted and each call waits
    for its result (block_until_ready), so asynchronous dispatch is not mistaken for speed."""

    def make():
        jax, jnp, lax = jax_modules()
        fn = jax.jit(build(jnp, lax), static_argnums=tuple(static))
        jargs = [jnp.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
        return lambda: fn(*jargs).block_until_ready()

    return _optional(config, Anchor(name, make, note))


# --------------------------------------------------------------------------------------------
# One einsum, every way


def einsum_anchors(config: Config, spec: str, operands: Sequence[np.ndarray],
                   torch_jax: bool = True) -> list[Anchor]:
    """numpy.einsum without and with path optimisation, opt_einsum's contract and
    contract_expression (its path found once, outside the timing), torch.einsum and a jitted
    jnp.einsum, all on the same operands. The unoptimised numpy.einsum is skipped when its
    full index space is beyond the run's limit (it would take minutes to hours)."""
    import opt_einsum

    ops = list(operands)
    shapes = [o.shape for o in ops]
    cost = naive_cost(spec, shapes)

    def naive():
        if cost > config.naive_limit:
            raise Skip(f"numpy.einsum(optimize=False) would make {cost:.2g} multiply-adds "
                       f"(limit {config.naive_limit:.0e} in this mode)")
        return lambda: np.einsum(spec, *ops, optimize=False)

    def optimised():
        # NumPy's greedy path stops where an intermediate would outgrow the largest input and
        # contracts the rest in one unoptimised step: on some instances, hours of work.
        steps = np.einsum_path(spec, *ops, optimize=True)[1]
        flops = float(next(line.split(":")[1] for line in steps.splitlines()
                           if "Optimized FLOP count" in line))
        if flops > config.naive_limit:
            raise Skip(f"numpy.einsum(optimize=True) would make {flops:.2g} FLOPs along its own "
                       f"path (limit {config.naive_limit:.0e} in this mode)")
        return lambda: np.einsum(spec, *ops, optimize=True)

    def expression():
        expr = opt_einsum.contract_expression(spec, *shapes)
        return lambda: expr(*ops)

    anchors = [
        Anchor(EINSUM, naive),
        Anchor(EINSUM_OPT, optimised),
        Anchor(OE, lambda: (lambda: opt_einsum.contract(spec, *ops))),
        Anchor(OE_EXPR, expression),
    ]
    if torch_jax:
        anchors.append(torch_anchor(config, lambda torch: lambda *t: torch.einsum(spec, *t),
                                    *ops, note="torch.einsum"))
        anchors.append(jax_anchor(config, lambda jnp, lax: lambda *t: jnp.einsum(spec, *t),
                                  *ops, note="jnp.einsum"))
    return anchors


# --------------------------------------------------------------------------------------------
# The two-layer network (Prelude.Networks' mlp… definitions)
#
# L = 1/(2n)‖relu(X W1) W2 − Y‖², full-batch gradient descent on both layers at once, the
# rectifier's derivative taken as [z > 0]; the answer is the trained network's outputs on z.


def mlp_numpy(t: int, r: float, x, y, w1, w2, z):
    """t steps of the fit as a NumPy loop, then the forward pass on z."""
    n = x.shape[0]
    for _ in range(int(t)):
        pre = x @ w1
        hid = np.maximum(pre, 0.0)
        d_out = (hid @ w2 - y) / n
        d_hid = (d_out @ w2.T) * (pre > 0)
        w1, w2 = w1 - r * (x.T @ d_hid), w2 - r * (hid.T @ d_out)
    return np.maximum(z @ w1, 0.0) @ w2


def mlp_torch(torch):
    """The same fit in PyTorch eager, with the gradients written out (no autograd)."""
    def fit(t, r, x, y, w1, w2, z):
        n = x.shape[0]
        for _ in range(int(t)):
            pre = x @ w1
            hid = torch.clamp_min(pre, 0.0)
            d_out = (hid @ w2 - y) / n
            d_hid = (d_out @ w2.T) * (pre > 0)
            w1, w2 = w1 - r * (x.T @ d_hid), w2 - r * (hid.T @ d_out)
        return torch.clamp_min(z @ w1, 0.0) @ w2
    return fit


def mlp_jax(jnp, lax):
    """The same fit under jax.jit with the loop as lax.fori_loop (no host turns)."""
    def fit(t, r, x, y, w1, w2, z):
        n = x.shape[0]

        def step(_, weights):
            w1, w2 = weights
            pre = x @ w1
            hid = jnp.maximum(pre, 0.0)
            d_out = (hid @ w2 - y) / n
            d_hid = (d_out @ w2.T) * (pre > 0)
            return w1 - r * (x.T @ d_hid), w2 - r * (hid.T @ d_out)

        w1, w2 = lax.fori_loop(0, t, step, (w1, w2))
        return jnp.maximum(z @ w1, 0.0) @ w2
    return fit


def mlp_flops(t: int, n: int, p: int, h: int, q: int, m: int) -> float:
    """FLOPs the fit cannot avoid: per step X W1, H W2, δ W2ᵀ, Hᵀ δ and Xᵀ δhid (two per
    multiply-add), then the forward pass on m queries."""
    return float(t * (4 * n * p * h + 6 * n * h * q) + 2 * m * (p * h + h * q))


# --------------------------------------------------------------------------------------------
# Attention, layer norm, dropout, convolution, pooling


def attention_numpy(q, k, v, d, causal: bool = False):
    """softmaxRows(Q Kᵀ / √d) V, the row maximum subtracted first; the causal version drops
    the scores above the diagonal."""
    s = (q @ k.T) / np.sqrt(d)
    if causal:
        s[np.triu_indices(s.shape[0], 1)] = -np.inf
    s -= s.max(axis=1, keepdims=True)
    np.exp(s, out=s)
    s /= s.sum(axis=1, keepdims=True)
    return s @ v


def attention_torch(torch, causal: bool = False):
    def attend(q, k, v, d):
        s = (q @ k.T) / d ** 0.5
        if causal:
            s = s.masked_fill(torch.ones_like(s, dtype=torch.bool).triu(1), float("-inf"))
        return torch.softmax(s, dim=1) @ v
    return attend


def attention_jax(jnp, causal: bool = False):
    def attend(q, k, v, d):
        s = (q @ k.T) / jnp.sqrt(d)
        if causal:
            s = jnp.where(jnp.tril(jnp.ones(s.shape, dtype=bool)), s, -jnp.inf)
        s = s - s.max(axis=1, keepdims=True)
        e = jnp.exp(s)
        return (e / e.sum(axis=1, keepdims=True)) @ v
    return attend


def layer_norm_numpy(a):
    centred = a - a.mean(axis=1, keepdims=True)
    return centred / np.sqrt((centred * centred).mean(axis=1, keepdims=True) + 1e-5)


def dropout_numpy(a, u, p):
    return a * (u >= p) / max(1.0 - p, 1e-12)


def correlate_numpy(x, k):
    """y_it = Σ_j x_i,t+j k_j with zeros past the end, row by row with np.correlate."""
    padded = np.pad(x, ((0, 0), (0, len(k) - 1)))
    return np.stack([np.correlate(row, k, mode="valid") for row in padded])


def correlate_windows(x, k):
    """The same convolution as one matrix-vector product over a strided window view."""
    padded = np.pad(x, ((0, 0), (0, len(k) - 1)))
    return np.lib.stride_tricks.sliding_window_view(padded, len(k), axis=1) @ k


def max_pool_numpy(x, width: int):
    """The largest entry of each window of `width`, zeros past the end."""
    padded = np.pad(x, ((0, 0), (0, width - 1)))
    return np.lib.stride_tricks.sliding_window_view(padded, width, axis=1).max(axis=2)


# --------------------------------------------------------------------------------------------
# Loops of the seed's Fits.hb: the recurrent network and the autoencoder


def recurrent_numpy(x, wh, wx, h):
    for t in range(x.shape[1]):
        h = np.tanh(h @ wh + np.outer(x[:, t], wx))
    return h


def recurrent_torch(torch):
    def run(x, wh, wx, h):
        for t in range(x.shape[1]):
            h = torch.tanh(h @ wh + torch.outer(x[:, t], wx))
        return h
    return run


def recurrent_jax(jnp, lax):
    def run(x, wh, wx, h):
        step = lambda t, h: jnp.tanh(h @ wh + jnp.outer(x[:, t], wx))  # noqa: E731
        return lax.fori_loop(0, x.shape[1], step, h)
    return run


def autoencoder_numpy(t: int, r: float, x, w1, w2):
    """t simultaneous gradient steps of the linear autoencoder, then X W1 W2."""
    n = x.shape[0]
    for _ in range(int(t)):
        code = x @ w1
        delta = (code @ w2 - x) / n
        w1, w2 = w1 - r * (x.T @ (delta @ w2.T)), w2 - r * (code.T @ delta)
    return x @ w1 @ w2


def autoencoder_torch(torch):
    def fit(t, r, x, w1, w2):
        n = x.shape[0]
        for _ in range(int(t)):
            code = x @ w1
            delta = (code @ w2 - x) / n
            w1, w2 = w1 - r * (x.T @ (delta @ w2.T)), w2 - r * (code.T @ delta)
        return x @ w1 @ w2
    return fit


def autoencoder_jax(jnp, lax):
    def fit(t, r, x, w1, w2):
        n = x.shape[0]

        def step(_, weights):
            w1, w2 = weights
            code = x @ w1
            delta = (code @ w2 - x) / n
            return w1 - r * (x.T @ (delta @ w2.T)), w2 - r * (code.T @ delta)

        w1, w2 = lax.fori_loop(0, t, step, (w1, w2))
        return x @ w1 @ w2
    return fit


def critic_loss_numpy(real, fake, wd):
    """−mean ln D(real) − mean ln(1 − D(fake)), D(a) = σ(a w_d), probabilities floored."""
    def score(a):
        return 1.0 / (1.0 + np.exp(-(a @ wd)))
    return float(-np.mean(np.log(np.maximum(score(real), 1e-12)))
                 - np.mean(np.log(np.maximum(1.0 - score(fake), 1e-12))))


def to_array(value: Any) -> np.ndarray:
    """Any contestant's output as a float64 ndarray, or complex128 when it is complex (torch
    tensors and JAX arrays included)."""
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    value = np.asarray(value)
    return value.astype(np.complex128 if value.dtype.kind == "c" else np.float64)
