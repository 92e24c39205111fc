"""The bridges (issue 26): what hilbert.torch.function and hilbert.jax.function add to a call of
a small hilbert function (a dense layer, 8×16 by 16×4, float64), over the bare call on NumPy
arrays: the forward call alone, and a forward and backward pass against f.vjp and its
pullback. The metric `overhead_us` is the difference of the medians, in µs per call (target
≤ 20 µs). JAX's calls are under jax.jit (how a bridge is used there).

Part of that overhead is the framework's own, paid by any extension of it: the anchor
`floor` times what the framework's own mechanism costs doing nothing (a torch.autograd.Function
that hands back an empty tensor, forward and backward; a jitted jax.pure_callback that hands
back its argument, once per callback the bridge's call makes), and `beyond_floor_us` is the
overhead left once it is taken away: the bridge's own conversions and bookkeeping."""

from __future__ import annotations

import numpy as np

from benchmarks import anchors as A
from benchmarks.cases.base import OURS, Case, Config, Measured, Setup, Skip, Target

BARE = "hilbert alone"
FLOOR = "floor"
SHAPES = ((8, 16), (16, 4))


def _dense(config: Config):
    import hilbert

    module = hilbert.compile_source('fn dense(a, w) ↦ einsum("np,pq->nq", a, w)',
                                    executor=config.executor)
    g = np.random.default_rng(26)
    a, w = (g.standard_normal(s) for s in SHAPES)
    ct = g.standard_normal((SHAPES[0][0], SHAPES[1][1]))
    return module.dense, a, w, ct


def _measured(calls: dict, config: Config, check, floors: int = 1) -> Measured:
    """Every call timed in turns; overhead_us = ours − the bare call, and beyond_floor_us that
    less `floors` times the floor, medians in µs."""
    from hilbert.timing import time_interleaved

    for call in calls.values():
        call()  # warm-up: compiles and traces
    timings, failed = time_interleaved(calls, config.schedule)
    times = {name: t["times_s"] for name, t in timings.items()}
    metrics = {"agrees": bool(check())}
    if OURS in timings and BARE in timings:
        metrics["overhead_us"] = (timings[OURS]["median_s"] - timings[BARE]["median_s"]) * 1e6
    if FLOOR in timings and "overhead_us" in metrics:
        metrics["floor_us"] = floors * timings[FLOOR]["median_s"] * 1e6
        metrics["beyond_floor_us"] = metrics["overhead_us"] - metrics["floor_us"]
    return Measured(times, failed, metrics)


def _switched_on(config: Config) -> None:
    if not config.optional:
        raise Skip("optional anchors are off")


def _torch(config: Config):
    _switched_on(config)
    torch = A.torch_module()
    import hilbert.torch as bridge

    return torch, bridge


def torch_forward(config: Config) -> Setup:
    def measure(config: Config) -> Measured:
        torch, bridge = _torch(config)
        f, a, w, _ = _dense(config)
        layer = bridge.function(f)
        x, v = torch.from_numpy(a).requires_grad_(True), torch.from_numpy(w).requires_grad_(True)
        nothing = _nothing(torch)
        return _measured({OURS: lambda: layer(x, v), BARE: lambda: f(a, w),
                          FLOOR: lambda: nothing.apply(x)}, config,
                         lambda: np.allclose(layer(x, v).detach().numpy(), a @ w))

    return _setup(measure, "a forward call through the torch bridge (arguments requiring grad: "
                           "an autograd node is recorded)")


def torch_backward(config: Config) -> Setup:
    def measure(config: Config) -> Measured:
        torch, bridge = _torch(config)
        f, a, w, ct = _dense(config)
        layer = bridge.function(f)
        x, v = torch.from_numpy(a).requires_grad_(True), torch.from_numpy(w).requires_grad_(True)
        cotangent = torch.from_numpy(ct)

        def ours():
            x.grad = v.grad = None
            layer(x, v).backward(cotangent)

        def bare():
            _, pullback = f.vjp(a, w)
            return pullback(ct)

        def check():
            ours()
            return np.allclose(v.grad.numpy(), a.T @ ct) and np.allclose(x.grad.numpy(),
                                                                         ct @ w.T)

        nothing, seed = _nothing(torch), torch.ones(())

        def floor():
            x.grad = None
            nothing.apply(x).backward(seed)

        return _measured({OURS: ours, BARE: bare, FLOOR: floor}, config, check)

    return _setup(measure, "forward and backward through the torch bridge against f.vjp and "
                           "its pullback on the same arrays")


def _nothing(torch):
    """A torch.autograd.Function doing nothing: a 0-d tensor forward, a zero gradient back."""

    class Nothing(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.shape = x.shape
            return x.new_empty(())

        @staticmethod
        def backward(ctx, seed):
            return seed.new_zeros(ctx.shape)

    return Nothing


def _jax(config: Config):
    _switched_on(config)
    jax, jnp, _ = A.jax_modules()
    import hilbert.jax as bridge

    return jax, jnp, bridge


def _floor(jax, jnp, a):
    """A jitted pure_callback that does nothing but hand its argument back."""
    shape = jax.ShapeDtypeStruct(a.shape, a.dtype)
    nothing = jax.jit(lambda x: jax.pure_callback(np.asarray, shape, x))
    return lambda: nothing(a).block_until_ready()


def jax_forward(config: Config) -> Setup:
    def measure(config: Config) -> Measured:
        jax, jnp, bridge = _jax(config)
        f, a, w, _ = _dense(config)
        with jax.enable_x64(True):
            layer = jax.jit(bridge.function(f))
            x, v = jnp.asarray(a), jnp.asarray(w)
            return _measured({OURS: lambda: layer(x, v).block_until_ready(),
                              BARE: lambda: f(a, w), FLOOR: _floor(jax, jnp, x)}, config,
                             lambda: np.allclose(layer(x, v), a @ w))

    return _setup(measure, "a forward call through the JAX bridge under jax.jit (64-bit types "
                           "on, in a scope)")


def jax_backward(config: Config) -> Setup:
    def measure(config: Config) -> Measured:
        jax, jnp, bridge = _jax(config)
        f, a, w, ct = _dense(config)
        with jax.enable_x64(True):
            layer = bridge.function(f)
            x, v, c = jnp.asarray(a), jnp.asarray(w), jnp.asarray(ct)

            def pulled(x, v, c):
                y, pullback = jax.vjp(layer, x, v)
                return pullback(c)

            both = jax.jit(pulled)

            def bare():
                _, pullback = f.vjp(a, w)
                return pullback(ct)

            def check():
                dx, dv = both(x, v, c)
                return np.allclose(dv, a.T @ ct) and np.allclose(dx, ct @ w.T)

            return _measured({OURS: lambda: jax.block_until_ready(both(x, v, c)), BARE: bare,
                              FLOOR: _floor(jax, jnp, x)}, config, check, floors=2)

    return _setup(measure, "jax.vjp and its pullback through the JAX bridge, under jax.jit, "
                           "against f.vjp and its pullback")


HAND = "jax.jit by hand"


def jax_inline(config: Config) -> Setup:
    """The function on the jax executor: the bridge traces its lowered program (and its vjp's)
    into the caller's; the bare call here is the same work written in jax.numpy and jitted."""
    def measure(config: Config) -> Measured:
        jax, jnp, bridge = _jax(config)
        f, a, w, ct = _dense(config)
        with jax.enable_x64(True):
            layer = bridge.function(f.using("jax"))
            x, v, c = jnp.asarray(a), jnp.asarray(w), jnp.asarray(ct)

            def pulled(forward):
                def run(x, v, c):
                    return jax.vjp(forward, x, v)[1](c)
                return jax.jit(run)

            ours, hand = pulled(layer), pulled(lambda x, v: jnp.einsum("np,pq->nq", x, v))

            def check():
                dx, dv = ours(x, v, c)
                return np.allclose(dv, a.T @ ct) and np.allclose(dx, ct @ w.T)

            timed = _measured({OURS: lambda: jax.block_until_ready(ours(x, v, c)),
                               HAND: lambda: jax.block_until_ready(hand(x, v, c))},
                              config, check)
        ours_s, hand_s = (float(np.median(timed.times[k])) for k in (OURS, HAND))
        timed.metrics["overhead_us"] = (ours_s - hand_s) * 1e6
        return timed

    return _setup(measure, "jax.vjp and its pullback, jitted, through the JAX bridge over a "
                           "function on the jax executor (traced in: no callback), against "
                           "the same einsum's vjp written in jax.numpy and jitted")


def _setup(measure, note: str) -> Setup:
    return Setup(ours=None, measure=measure, compare=False,
                 params={"shapes": " · ".join("×".join(map(str, s)) for s in SHAPES),
                         "dtype": "float64"},
                 notes=[note])


_TARGETS = (Target("overhead ≤ 20 µs per call", metric="overhead_us", max_value=20.0),
            Target("the bridge's answer is the bare call's", metric="agrees", expect=True))

CASES = [
    Case("bridge-torch-forward", "bridges", "hilbert.torch.function: forward call overhead",
         "a dense layer's call through the torch bridge against the bare hilbert call",
         torch_forward, _TARGETS),
    Case("bridge-torch-backward", "bridges", "hilbert.torch.function: forward + backward",
         "forward and backward through the torch bridge against f.vjp and its pullback",
         torch_backward, _TARGETS),
    Case("bridge-jax-forward", "bridges", "hilbert.jax.function: jitted call overhead",
         "a dense layer's jitted call through the JAX bridge against the bare hilbert call",
         jax_forward, _TARGETS),
    Case("bridge-jax-backward", "bridges", "hilbert.jax.function: jitted vjp",
         "jax.vjp through the JAX bridge, jitted, against f.vjp and its pullback",
         jax_backward, _TARGETS),
    Case("bridge-jax-inline", "bridges", "hilbert.jax.function on the jax executor: jitted vjp",
         "jax.vjp through the JAX bridge over a jax-executor function (no callback), jitted, "
         "against the same vjp written in jax.numpy", jax_inline, _TARGETS),
]
