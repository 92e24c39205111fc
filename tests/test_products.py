"""Vector-Jacobian and Jacobian-vector products (`f.vjp`, `f.jvp`): on every differentiable
definition of the Prelude, against finite differences, and against each other.

The table of how to call each definition, which parameters are differentiable, the weights ω
(one per result) and the fourth-order central differences of Σ ⟨ω, result⟩ along sampled
unit directions all come from tests/test_prelude_gradients.py (its `expected` is computed from
values alone). Here:
- the pullback of ω, read along each direction, must equal those differences;
- Σ ⟨ω, jvp along the direction⟩ must equal them too (a forward sweep: other code);
- ⟨ȳ, J ẋ⟩ = ⟨Jᵀ ȳ, ẋ⟩ for random ȳ and ẋ over every differentiable parameter at once (the
  two sweeps are each other's transpose).
The reference executor runs the whole table (nothing to compile); numba runs a handful.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_prelude_gradients import ATOL, CHECKS, RTOL, _weights, directions, expected, prelude

import hilbert
from hilbert import HilbertError

KEYS = sorted(CHECKS)


def _call(module: str, key: str, executor: str = "reference"):
    check = CHECKS[module, key]
    function = prelude(module).function(check.name)
    if executor != "reference":
        function = function.using(executor)
    params = function.entry.params
    return check, function, params, [check.args[p] for p in params]


@pytest.mark.parametrize("module,key", KEYS, ids=[f"{m}.{k}" for m, k in KEYS])
def test_pullback_equals_finite_differences(module, key):
    check, function, params, args = _call(module, key)
    weights = _weights(check)
    outputs, pullback = function.vjp(*args)
    grads = pullback(weights[0] if not isinstance(outputs, tuple) else tuple(weights))
    assert len(grads) == len(params)
    for p in check.wrt:
        g = np.asarray(grads[params.index(p)])
        assert g.shape == check.args[p].shape
        along = directions(check, p)
        np.testing.assert_allclose([np.sum(g * e) for e in along], expected(module, key, p),
                                   rtol=RTOL, atol=ATOL, err_msg=f"vjp of {check.name} in {p}")


@pytest.mark.parametrize("module,key", KEYS, ids=[f"{m}.{k}" for m, k in KEYS])
def test_tangent_equals_finite_differences(module, key):
    check, function, params, args = _call(module, key)
    weights = _weights(check)
    for p in check.wrt:
        got = []
        for e in directions(check, p):
            tangents = [e if q == p else np.zeros_like(a) for q, a in zip(params, args, strict=True)]
            _, tangent = function.jvp(tuple(args), tuple(tangents))
            tangent = tangent if isinstance(tangent, tuple) else (tangent,)
            got.append(sum(np.sum(w * t) for w, t in zip(weights, tangent, strict=True)))
        np.testing.assert_allclose(got, expected(module, key, p), rtol=RTOL, atol=ATOL,
                                   err_msg=f"jvp of {check.name} in {p}")


def _transpose_check(module: str, key: str, executor: str) -> None:
    check, function, params, args = _call(module, key, executor)
    g = np.random.default_rng(len(key))
    tangents = tuple(g.normal(size=np.shape(a)) if p in check.wrt else np.zeros(np.shape(a))
                     for p, a in zip(params, args, strict=True))
    outputs, tangent = function.jvp(tuple(args), tangents)
    results = outputs if isinstance(outputs, tuple) else (outputs,)
    cotangents = tuple(g.normal(size=np.shape(r)) for r in results)
    _, pullback = function.vjp(*args)
    grads = pullback(cotangents if isinstance(outputs, tuple) else cotangents[0])
    tangent = tangent if isinstance(tangent, tuple) else (tangent,)
    forward = sum(np.sum(c * t) for c, t in zip(cotangents, tangent, strict=True))
    backward = sum(np.sum(grads[params.index(p)] * tangents[params.index(p)]) for p in check.wrt)
    assert forward == pytest.approx(backward, rel=1e-10, abs=1e-12)


@pytest.mark.parametrize("module,key", KEYS, ids=[f"{m}.{k}" for m, k in KEYS])
def test_jvp_and_vjp_are_transposes(module, key):
    _transpose_check(module, key, "reference")


#: A handful on the numba executor (generated code for the products' own entries): a layer,
#: a loop (the jvp carries tangents in the loop's state; the vjp runs it backwards), a
#: reduction with ties possible, an index into a sequence.
ON_NUMBA = [("Networks", "dense"), ("Networks", "recurrent"), ("Arithmetic", "softmaxRows"),
            ("Networks", "maxPool"),
            ("Sequences", "gruCell")]


@pytest.mark.parametrize("module,key", ON_NUMBA, ids=[f"{m}.{k}" for m, k in ON_NUMBA])
def test_products_on_numba_equal_the_reference(module, key):
    _transpose_check(module, key, "numba")
    check, function, params, args = _call(module, key, "numba")
    _, reference, _, _ = _call(module, key)
    weights = _weights(check)
    outputs, pullback = function.vjp(*args)
    single = not isinstance(outputs, tuple)
    got = pullback(weights[0] if single else tuple(weights))
    _, pullback = reference.vjp(*args)
    want = pullback(weights[0] if single else tuple(weights))
    for p in check.wrt:
        i = params.index(p)
        np.testing.assert_allclose(got[i], want[i], rtol=1e-12, atol=1e-13)


# ---------------------------------------------------------------- the API

SOURCE = """
def dense(a, w) ≔ tanh(einsum("np,pq->nq", a, w))
def two(x) ≔ (x · x, einsum("i->", x))
def spin(t, x) ≔ if t = 0 then x else spin(t − 1, sin(x) · 1.5)
def fitted(r, w, x) ≔ w − r · ∂ einsum("i->", (w · x)²) / ∂ w
"""


@pytest.fixture(scope="module")
def module():
    return hilbert.compile_source(SOURCE, export_all=True, executor="reference")


def test_vjp_of_a_layer_is_the_chain_rule_written_in_numpy(module):
    g = np.random.default_rng(1)
    a, w = g.normal(size=(3, 4)), g.normal(size=(4, 2))
    y, pullback = module.dense.vjp(a, w)
    np.testing.assert_allclose(y, np.tanh(a @ w), rtol=1e-15)
    cotangent = g.normal(size=y.shape)
    da, dw = pullback(cotangent)
    back = cotangent * (1 - np.tanh(a @ w) ** 2)
    np.testing.assert_allclose(da, back @ w.T, rtol=1e-13)
    np.testing.assert_allclose(dw, a.T @ back, rtol=1e-13)
    assert "vjp of dense" in str(pullback.plan) and pullback.plan.einsums


def test_jvp_of_a_layer(module):
    g = np.random.default_rng(2)
    a, w = g.normal(size=(3, 4)), g.normal(size=(4, 2))
    da, dw = g.normal(size=a.shape), g.normal(size=w.shape)
    y, dy = module.dense.jvp((a, w), (da, dw))
    np.testing.assert_allclose(y, np.tanh(a @ w), rtol=1e-15)
    np.testing.assert_allclose(dy, (1 - np.tanh(a @ w) ** 2) * (da @ w + a @ dw), rtol=1e-12)


def test_products_of_a_tuple_of_results(module):
    x = np.array([0.5, -1.0, 2.0])
    (square, total), pullback = module.two.vjp(x)
    (grad,) = pullback((np.ones(3), 2.0))
    np.testing.assert_array_equal(grad, 2 * x + 2.0)
    (square, total), (d_square, d_total) = module.two.jvp((x,), (np.array([1.0, 0.0, 2.0]),))
    np.testing.assert_array_equal(d_square, 2 * x * np.array([1.0, 0.0, 2.0]))
    assert d_total == 3.0


def test_products_through_a_loop(module):
    """spin applies x ↦ 1.5 sin(x) t times: the derivative is the product of the slopes."""
    x = np.array([0.1, 0.7, -0.4])
    value, slope = x, np.ones(3)
    for _ in range(4):
        slope = slope * 1.5 * np.cos(value)
        value = 1.5 * np.sin(value)
    out, pullback = module.spin.vjp(4.0, x)
    np.testing.assert_allclose(out, value, rtol=1e-15)
    dt, dx = pullback(np.ones(3))
    np.testing.assert_allclose(dx, slope, rtol=1e-13)
    assert dt == 0.0  # a loop count: whole, so constant
    _, tangent = module.spin.jvp((4.0, x), (0.0, np.ones(3)))
    np.testing.assert_allclose(tangent, slope, rtol=1e-13)


def test_float32_calls_give_float32_products(module):
    a = np.ones((2, 3), np.float32)
    w = np.full((3, 2), 0.1, np.float32)
    y, pullback = module.dense.vjp(a, w)
    assert y.dtype == np.float32
    assert all(g.dtype == np.float32 for g in pullback(np.ones((2, 2))))
    _, tangent = module.dense.jvp((a, w), (a, w))
    assert tangent.dtype == np.float32


def test_wrong_cotangents_and_tangents_are_coded(module):
    a, w = np.ones((2, 3)), np.ones((3, 2))
    _, pullback = module.dense.vjp(a, w)
    with pytest.raises(HilbertError, match="shaped like") as err:
        pullback(np.ones((2, 3)))
    assert err.value.code == "E600"
    _, pullback = module.two.vjp(np.ones(3))
    with pytest.raises(HilbertError, match="tuple of 2") as err:
        pullback(np.ones(3))
    assert err.value.code == "E600"
    with pytest.raises(HilbertError, match="tuple of 2") as err:
        module.dense.jvp((a, w), (a,))
    assert err.value.code == "E600"
    with pytest.raises(HilbertError, match="array of numbers") as err:
        pullback(("x", 1.0))
    assert err.value.code == "E600"


def test_none_is_a_zero_cotangent_or_tangent_for_scalars_and_arrays(module):
    """None stands for zeros (docs/interop.md), a scalar's as an array's: NumPy turned it into
    NaN, so a scalar's None gave NaN gradients where an array's was refused."""
    x = np.array([0.5, -1.0, 2.0])
    _, pullback = module.two.vjp(x)
    (grad,) = pullback((None, 2.0))  # the sum's cotangent alone: 2 per entry
    np.testing.assert_array_equal(grad, np.full(3, 2.0))
    (grad,) = pullback((np.ones(3), None))  # the squares' alone: 2x
    np.testing.assert_array_equal(grad, 2 * x)
    m = hilbert.compile_source("fn sq(x) ↦ x · x", executor="reference")
    for point in (3.0, x):
        y, pullback = m.sq.vjp(point)
        (grad,) = pullback(None)
        np.testing.assert_array_equal(grad, np.zeros(np.shape(point)))
        value, tangent = m.sq.jvp((point,), (None,))
        np.testing.assert_array_equal(tangent, np.zeros(np.shape(point)))
        np.testing.assert_array_equal(value, np.square(point))
    a, w = np.ones((2, 3)), np.full((3, 2), 0.5)
    _, dy = module.dense.jvp((a, w), (None, np.ones_like(w)))  # a held still
    np.testing.assert_allclose(dy, (1 - np.tanh(a @ w) ** 2) * (a @ np.ones_like(w)), rtol=1e-13)


def test_cotangents_with_holes_are_refused(module):
    """None inside a list (or a ragged list) is no array of numbers: NumPy makes NaN of it."""
    _, pullback = module.two.vjp(np.ones(3))
    for holed in ([None, 1.0, 1.0], [[1.0], [1.0, 2.0], 1.0]):
        with pytest.raises(HilbertError, match="array of numbers") as err:
            pullback((holed, 1.0))
        assert err.value.code == "E600"


def test_products_of_a_derivative_are_refused(module):
    with pytest.raises(HilbertError) as err:
        module.fitted.vjp(0.1, np.ones(3), np.ones(3))
    assert err.value.code == "E323"
    with pytest.raises(HilbertError) as err:
        module.fitted.jvp((0.1, np.ones(3), np.ones(3)), (0.0, np.ones(3), np.zeros(3)))
    assert err.value.code == "E323"


def test_complex_products_are_refused(module):
    with pytest.raises(HilbertError) as err:
        module.dense.vjp(np.ones((2, 3), complex), np.ones((3, 2)))
    assert err.value.code == "E325"


def test_cumprod_has_a_vjp_and_no_jvp_yet():
    m = hilbert.compile_source("fn running(x) ↦ cumprod(x, 0)", executor="reference")
    x = np.array([0.5, 2.0, 0.0, 3.0])
    _, pullback = m.running.vjp(x)
    (grad,) = pullback(np.ones(4))
    slopes = [sum(np.prod(np.delete(x[:j + 1], i)) for j in range(i, 4)) for i in range(4)]
    np.testing.assert_allclose(grad, slopes)
    with pytest.raises(HilbertError) as err:
        m.running.jvp((x,), (np.ones(4),))
    assert err.value.code == "E326"


def test_every_op_has_a_forward_rule():
    from hilbert.compiler.ops.primitives import BY_OP

    assert [op for op, row in BY_OP.items() if row.tangent is None] == []
