"""The jax executor (docs/jax-executor.md) beside the numba executor and JAX written by hand, on
the same work: an MLP fit (a loop of GEMMs), attention, an LSTM walked over a sequence, and a
matrix-product-state norm (a tensor network along hilbert's path). Ours is always
executor="jax", whatever the run's executor; the numba executor is an anchor (its code built
before it is timed), so the report's ratios read as "jax executor / numba" and "jax executor /
jax.jit by hand". On a CPU-only machine this measures XLA's CPU code; on a GPU, the device."""

from __future__ import annotations

import numpy as np

from benchmarks import anchors as A
from benchmarks.cases.base import JAX, Anchor, Case, Config, Setup, Target
from benchmarks.cases.networks import _anchors as network_anchors
from benchmarks.cases.networks import _chain, _operands
from benchmarks.cases.sequences import _problem, lstm_numpy
from benchmarks.first_results import mlp_problem

NUMBA = "hilbert numba"
GROUP = "jax-executor"


def _on(executor: str, what: str):
    """A Prelude module, or an examples/ file, on `executor` (made once per process)."""
    from benchmarks.cases.base import EXAMPLES, _module

    how = "open" if what.startswith("Prelude.") else "load"
    target = what if how == "open" else str(EXAMPLES / f"{what}.hb")
    return _module((how, target), Config(executor=executor))


def _numba(function, *args, note: str = "the numba executor, its code built first") -> Anchor:
    """The same function on the numba executor, built before it is timed."""
    def make():
        function.build(*args)
        return lambda: function(*args)
    return Anchor(NUMBA, make, note)


def mlp_fit(config: Config) -> Setup:
    n, p, h, q = config.pick((1024, 64, 256, 10), (256, 32, 64, 4))
    t, r = config.pick(100, 20), 0.01
    x, y, w1, w2 = mlp_problem(n, p, h, q)
    ours = _on("jax", "Prelude.Networks").mlpFit
    args = (float(t), r, x, y, w1, w2)
    return Setup(
        ours=lambda: ours(*args),
        anchors=[_numba(_on("numba", "Prelude.Networks").function("mlpFit"), *args),
                 A.jax_anchor(config, A.mlp_jax, t, r, x, y, w1, w2, x,
                              note="jit + lax.fori_loop, gradients by hand")],
        params={"x": f"{n}×{p}", "w1": f"{p}×{h}", "w2": f"{h}×{q}", "t": t},
        flops=A.mlp_flops(t, n, p, h, q, n), rtol=1e-6, atol=1e-9)


def attention(config: Config) -> Setup:
    n, e = config.pick((2048, 64), (512, 64))
    rng = np.random.default_rng(4)
    q, k, v = (rng.standard_normal((n, e)) for _ in range(3))
    d = float(e)
    ours = _on("jax", "Layers").attend
    return Setup(
        ours=lambda: ours(q, k, v, d),
        anchors=[_numba(_on("numba", "Layers").function("attend"), q, k, v, d),
                 A.jax_anchor(config, lambda jnp, lax: A.attention_jax(jnp), q, k, v, d)],
        params={"q, k, v": f"{n}×{e}"}, flops=4.0 * n * n * e, rtol=1e-9, atol=1e-12)


def lstm_jax(jnp, lax):
    """sequences.lstm_numpy under jax.jit: the input products in one GEMM, then lax.scan."""
    def run(x, h, c, wx, wh, b):
        steps, batch, width = x.shape
        hidden = h.shape[1]
        inputs = (x.reshape(steps * batch, width) @ wx.reshape(width, hidden * 4)).reshape(
            steps, batch, hidden, 4)
        u = wh.reshape(hidden, hidden * 4)

        def step(state, a):
            h, c = state
            z = a + (h @ u).reshape(batch, hidden, 4) + b
            c = (1 / (1 + jnp.exp(-z[..., 1]))) * c + (1 / (1 + jnp.exp(-z[..., 0]))) * jnp.tanh(
                z[..., 2])
            h = (1 / (1 + jnp.exp(-z[..., 3]))) * jnp.tanh(c)
            return (h, c), None

        (h, c), _ = lax.scan(step, (h, c), inputs)
        return jnp.concatenate([h.ravel(), c.ravel()])
    return run


def lstm(config: Config) -> Setup:
    x, h, c, wx, wh, b = _problem(config.pick(100, 10), 4, 20)[:6]
    ours = _on("jax", "Prelude.Sequences").function("lstm")
    theirs = _on("numba", "Prelude.Sequences").function("lstm")

    def joined(values):
        return np.concatenate([np.ravel(v) for v in values])

    def numba():
        theirs.build(x, h, c, wx, wh, b)
        return lambda: joined(theirs(x, h, c, wx, wh, b))

    return Setup(
        ours=lambda: joined(ours(x, h, c, wx, wh, b)),
        anchors=[Anchor(NUMBA, numba, "the numba executor, its code built first"),
                 A.numpy_anchor(lstm_numpy, x, h, c, wx, wh, b,
                                note="input products in one GEMM, then a loop"),
                 A.jax_anchor(config, lstm_jax, x, h, c, wx, wh, b,
                              note="input products in one GEMM, then lax.scan")],
        params={"x": "×".join(map(str, x.shape)), "hidden": h.shape[1]},
        flops=float(2 * x.shape[0] * x.shape[1] * (x.shape[2] + h.shape[1]) * 4 * h.shape[1]),
        rtol=1e-9, atol=1e-12)


def mps_norm(config: Config) -> Setup:
    import hilbert

    spec, shapes = _chain(config.pick(40, 12), config.pick(16, 8))
    ops = _operands(shapes, 5)
    path, info = hilbert.contract_path(spec, *ops, memory_limit="1T")
    ours = hilbert.contract_expression(spec, *shapes, optimize=path, executor="jax")
    theirs = hilbert.contract_expression(spec, *shapes, optimize=path, executor="numba")

    def numba():
        theirs.build()
        return lambda: theirs(*ops)

    anchors = [a for a in network_anchors(config, spec, ops, path) if a.name == JAX]
    return Setup(
        ours=lambda: ours(*ops),
        anchors=[Anchor(NUMBA, numba, "the numba executor on the same path, built first"),
                 *anchors],
        params={"tensors": len(shapes), "indices": len(set(spec) - set(",->"))},
        flops=float(info.flops), rtol=1e-7, atol=1e-12)


_AGAINST_JAX = Target("≤ 1.5× jax.jit by hand on the same work", JAX, 1.5)
_AGAINST_NUMBA = Target("≤ 3× the numba executor", NUMBA, 3.0)

CASES = [
    Case("jax-mlp-fit", GROUP, "MLP fit on executor=\"jax\" (1024×64 → 256 → 10, 100 steps)",
         "one warm fit: jax executor against numba and jax.jit by hand", mlp_fit,
         (_AGAINST_JAX, _AGAINST_NUMBA)),
    Case("jax-attention", GROUP, "attention on executor=\"jax\" (n = 2048, d = 64)",
         "one warm call: jax executor against numba and jax.jit by hand", attention,
         (_AGAINST_JAX, _AGAINST_NUMBA)),
    Case("jax-lstm", GROUP, "Sequences.lstm on executor=\"jax\" (B = 32, T = 100, 512 → 768)",
         "one warm walk: jax executor against numba, NumPy and jax.jit + lax.scan", lstm,
         (_AGAINST_JAX, _AGAINST_NUMBA)),
    Case("jax-mps", GROUP, "⟨ψ|ψ⟩ of a 40-site MPS, bond 16, on executor=\"jax\"",
         "one warm contraction along hilbert's path: jax executor against numba and jax.jit",
         mps_norm, (_AGAINST_JAX, _AGAINST_NUMBA)),
]
