"""hilbert.jax.function: hilbert functions inside jax.jit, jax.grad and jax.vmap
(docs/interop.md).

Every differentiable definition of the Prelude passes jax.test_util.check_grads (reverse mode,
first order: the bridge's VJP rule against JAX's finite differences) through the bridge, in
float64 (64-bit types enabled for those tests only, with jax.enable_x64, never globally), on
the reference executor, and a handful on numba, also under jit. float32 works without 64-bit
types. Expected values come from jax.numpy written here, never from hilbert.
"""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import jax.numpy as jnp  # noqa: E402
from jax.test_util import check_grads  # noqa: E402
from test_prelude_gradients import CHECKS, Check, prelude  # noqa: E402

import hilbert  # noqa: E402
import hilbert.jax as hilbert_jax  # noqa: E402

#: Definitions also checked on the numba executor, under jax.jit.
ON_NUMBA = [("Networks", "dense"), ("Norms", "gelu"), ("Losses", "mse"),
            ("Statistics", "variance"), ("Arithmetic", "softmaxRows")]


@pytest.fixture
def x64():
    """64-bit types for one test (JAX's setting, scoped: never flipped for the process)."""
    with jax.enable_x64(True):
        yield


def _check_grads(check: Check, function: hilbert.Function, jit: bool = False) -> None:
    """check_grads of `function` in its differentiable parameters (the fixed ones closed
    over); a symmetric parameter is fed in as (a + aᵀ)/2, a `lower_only` case compares the
    entries on and below the diagonal (those above are −1e300). check_grads's differences are
    second-order central ones: at its default step (1e-4) their truncation error on the
    training loops of Networks is 2e-5 relative, so the step here is 1e-6."""
    bridge = hilbert_jax.function(function)
    params = function.entry.params
    moving = [p for p in params if p in check.wrt]

    def call(*values):
        given = dict(zip(moving, values, strict=True))
        for p in check.case.symmetric:
            given[p] = (given[p] + given[p].T) / 2
        out = bridge(*[given[p] if p in given else jnp.asarray(check.args[p]) for p in params])
        if check.case.lower_only:
            return out * jnp.tril(jnp.ones(out.shape[-2:]))
        return out

    inputs = tuple(jnp.asarray(check.args[p]) for p in moving)
    check_grads(jax.jit(call) if jit else call, inputs, order=1, modes=["rev"],
                eps=1e-6, atol=1e-7, rtol=1e-5)


@pytest.mark.parametrize("module,key", list(CHECKS), ids=[f"{m}.{k}" for m, k in CHECKS])
def test_prelude_check_grads_on_the_reference_executor(module, key, x64):
    check = CHECKS[module, key]
    _check_grads(check, prelude(module).function(check.name))


@pytest.mark.parametrize("module,key", ON_NUMBA, ids=[f"{m}.{k}" for m, k in ON_NUMBA])
def test_prelude_check_grads_on_numba_under_jit(module, key, x64):
    check = CHECKS[module, key]
    _check_grads(check, hilbert.open(f"Prelude.{module}").function(check.name), jit=True)


# ---------------------------------------------------------------- jit, grad, vmap


@pytest.fixture(scope="module")
def nets():
    return hilbert.compile_source("""
open Prelude.Networks
fn both(a, w) ↦ (dense(a, w), einsum("np->", a))
fn one(a, w) ↦ dense(a, w)
fn scaled(t, a) ↦ t · a
fn loss(a, w) ↦ einsum("nq->", tanh(dense(a, w))²)
""", executor="reference")


def _pair(dtype=np.float64):
    g = np.random.default_rng(5)
    return jnp.asarray(g.normal(size=(3, 2)), dtype), jnp.asarray(g.normal(size=(2, 4)), dtype)


def _loss(a, w):
    return jnp.sum(jnp.tanh(a @ w) ** 2)


def test_jit_and_grad_equal_jax_numpy(nets, x64):
    a, w = _pair()
    loss = hilbert_jax.function(nets.loss)
    value, grads = jax.jit(jax.value_and_grad(loss, argnums=(0, 1)))(a, w)
    want, wanted = jax.value_and_grad(_loss, argnums=(0, 1))(a, w)
    np.testing.assert_allclose(value, want, rtol=1e-14)
    for got, expected in zip(grads, wanted, strict=True):
        assert got.dtype == jnp.float64
        np.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-15)


def test_vmap_calls_once_per_batch_element(nets, x64):
    a, w = _pair()
    batch = jnp.stack([a, 2 * a, a - 1])
    one = hilbert_jax.function(nets.one)
    np.testing.assert_allclose(jax.vmap(one, in_axes=(0, None))(batch, w), batch @ w,
                               rtol=1e-14)
    loss = hilbert_jax.function(nets.loss)
    got = jax.jit(jax.vmap(jax.grad(loss, argnums=1), in_axes=(0, None)))(batch, w)
    want = jax.vmap(jax.grad(_loss, argnums=1), in_axes=(0, None))(batch, w)
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)


def test_tuple_results_and_scalars(nets, x64):
    a, w = _pair()
    both = hilbert_jax.function(nets.both)
    y, s = both(a, w)
    assert s.shape == () and s.dtype == jnp.float64
    np.testing.assert_allclose(y, a @ w, rtol=1e-14)

    def objective(a, w):
        y, s = both(a, w)
        return jnp.sum(y * jnp.arange(4.0)) + 3 * s

    def reference(a, w):
        return jnp.sum((a @ w) * jnp.arange(4.0)) + 3 * jnp.sum(a)

    for got, want in zip(jax.jit(jax.grad(objective, argnums=(0, 1)))(a, w),
                         jax.grad(reference, argnums=(0, 1))(a, w), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)


def test_float32_without_64_bit_types(nets):
    assert not jax.config.jax_enable_x64
    a, w = _pair(np.float32)
    loss = hilbert_jax.function(nets.loss)
    value, grad = jax.jit(jax.value_and_grad(loss, argnums=1))(a, w)
    assert value.dtype == grad.dtype == jnp.float32
    np.testing.assert_allclose(grad, jax.grad(_loss, argnums=1)(a, w), rtol=1e-5, atol=1e-6)
    assert not jax.config.jax_enable_x64  # (the bridge left the setting alone)


def test_numbers_and_whole_numbers_get_no_gradient_but_pass(nets, x64):
    a, _ = _pair()
    scaled = hilbert_jax.function(nets.scaled)
    np.testing.assert_allclose(jax.grad(lambda a: scaled(3, a).sum())(a), jnp.full((3, 2), 3.0))
    np.testing.assert_allclose(jax.grad(lambda t: scaled(t, a).sum())(2.0), a.sum(), rtol=1e-14)
    assert jax.jit(scaled)(jnp.int32(2), a).dtype == jnp.float64


def test_concrete_calls_need_no_trace(nets, x64):
    """Outside any transformation a call is f called at once (no callback)."""
    a, w = _pair()
    y = hilbert_jax.function(nets.one)(a, w)
    assert isinstance(y, jax.Array)
    np.testing.assert_allclose(y, a @ w, rtol=1e-14)


# ---------------------------------------------------------------- errors


def test_wrong_shapes_are_hilberts_error_when_traced(nets, x64):
    a, w = _pair()
    with pytest.raises(hilbert.CheckError) as raised:
        jax.jit(hilbert_jax.function(nets.one))(a, w.T)
    assert raised.value.code == "E305"


def test_wrong_argument_counts_are_e600(nets, x64):
    a, w = _pair()
    with pytest.raises(hilbert.ArgumentError) as raised:
        hilbert_jax.function(nets.one)(a, w, w)
    assert raised.value.code == "E600" and "by position" in str(raised.value)


def test_complex_arguments_are_e601(nets, x64):
    a, w = _pair()
    with pytest.raises(hilbert.ArgumentError) as raised:
        hilbert_jax.function(nets.one)(a.astype(jnp.complex64), w)
    assert raised.value.code == "E601"


def test_wrapping_something_else_is_e600():
    with pytest.raises(hilbert.ArgumentError) as raised:
        hilbert_jax.function(jnp.tanh)
    assert raised.value.code == "E600"


def test_wrong_cotangent_shapes(nets, x64):
    """JAX checks a VJP's cotangent against the output before the bridge sees it; hilbert's
    own pullback refuses a cotangent of the wrong shape (E600)."""
    a, w = _pair()
    _, pullback = jax.vjp(hilbert_jax.function(nets.one), a, w)
    with pytest.raises((ValueError, TypeError)):
        pullback(jnp.ones((4, 3)))
    _, pullback = nets.one.vjp(np.asarray(a), np.asarray(w))
    with pytest.raises(hilbert.ArgumentError) as raised:
        pullback(np.ones((4, 3)))
    assert raised.value.code == "E600"


# ---------------------------------------------------------------- on the jax executor: inline

INLINE = """
open Prelude.Networks
fn loss(a, w) ↦ einsum("nq->", tanh(dense(a, w))²)
fn spin(t, x) ↦ if t = 0 then x else spin(t − 1, sin(x) · 1.5)
fn slope(t, x) ↦ ∂ einsum("i->", spin(t, x)) / ∂ x
"""


@pytest.fixture(scope="module")
def on_jax():
    return hilbert.compile_source(INLINE, executor="jax")


def _callbacks(function, *args) -> int:
    """How many host callbacks the jaxpr of `function` at `args` makes."""
    return str(jax.make_jaxpr(function)(*args)).count("pure_callback")


def test_on_the_jax_executor_the_program_is_traced_in_with_no_callback(on_jax, x64):
    a, w = _pair()
    loss = hilbert_jax.function(on_jax.loss)
    grad = jax.value_and_grad(loss, argnums=(0, 1))
    assert _callbacks(grad, a, w) == 0  # forward and hilbert's VJP rule both traced in
    value, grads = jax.jit(grad)(a, w)
    want, wanted = jax.value_and_grad(_loss, argnums=(0, 1))(a, w)
    np.testing.assert_allclose(value, want, rtol=1e-14)
    for got, expected in zip(grads, wanted, strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-15)
    batch = jnp.stack([a, 2 * a])
    np.testing.assert_allclose(jax.vmap(loss, in_axes=(0, None))(batch, w),
                               jax.vmap(_loss, in_axes=(0, None))(batch, w), rtol=1e-14)
    # the same function on numba calls back to the host, forward and backward
    assert _callbacks(jax.value_and_grad(hilbert_jax.function(
        on_jax.loss.using("numba")), argnums=(0, 1)), a, w) == 2


def _spun_slope(x, steps: int):
    """The derivative of `steps` turns of x ↦ 1.5 sin x, by the chain rule written out."""
    value, slope = x, jnp.ones(x.shape)
    for _ in range(steps):
        slope = slope * 1.5 * jnp.cos(value)
        value = 1.5 * jnp.sin(value)
    return slope


def test_inline_loops_with_a_count_from_an_argument(on_jax, x64):
    """A loop's count from an argument is a traced number inside jit: fori_loop runs it
    forwards in the caller's program; its VJP runs it backwards, whose tape's length comes
    from that count, so the VJP rule alone calls back to the host."""
    spin = hilbert_jax.function(on_jax.spin)
    x = jnp.asarray([0.1, 0.7, -0.4])
    slope = _spun_slope(x, 4)
    grad = jax.jit(jax.grad(lambda t, x: spin(t, x).sum(), argnums=1))
    np.testing.assert_allclose(grad(4.0, x), slope, rtol=1e-13)
    assert _callbacks(spin, 4.0, x) == 0
    assert _callbacks(jax.grad(lambda t, x: spin(t, x).sum(), argnums=1), 4.0, x) == 1


def test_a_loop_run_backwards_by_an_arguments_count_keeps_the_callback(on_jax, x64):
    """slope's forward already runs spin's loop backwards (its ∂), whose tape's length comes
    from t: not fixed when traced, so that program goes through the host."""
    slope = hilbert_jax.function(on_jax.slope)
    x = jnp.asarray([0.1, 0.7, -0.4])
    np.testing.assert_allclose(jax.jit(slope)(3.0, x), _spun_slope(x, 3), rtol=1e-13)
    assert _callbacks(slope, 3.0, x) == 1


def test_inline_float32_without_64_bit_types(on_jax):
    a, w = _pair(np.float32)
    loss = hilbert_jax.function(on_jax.loss)
    value, grad = jax.jit(jax.value_and_grad(loss, argnums=1))(a, w)
    assert value.dtype == jnp.float32 and grad.dtype == jnp.float32
    np.testing.assert_allclose(grad, jax.grad(_loss, argnums=1)(a, w), rtol=2e-5, atol=1e-6)
