"""hilbert.torch.function: hilbert functions inside PyTorch's autograd (docs/interop.md).

Every differentiable definition of the Prelude passes torch.autograd.gradcheck through the
bridge (the table of tests/test_prelude_gradients.py says how to call each one and in which
parameters it is differentiable), on the reference executor, and a handful on numba. A layer
written in .hb inside an nn.Module trains as the same module written in torch does, and every
error a user can make is coded. Expected values come from torch itself and from finite
differences (gradcheck's), never from hilbert.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from test_prelude_gradients import CHECKS, Check, prelude  # noqa: E402

import hilbert  # noqa: E402
import hilbert.torch as hilbert_torch  # noqa: E402

#: Definitions also checked on the numba executor (quick to compile: each builds its forward
#: and its vjp program).
ON_NUMBA = [("Networks", "dense"), ("Norms", "gelu"), ("Losses", "mse"),
            ("Statistics", "variance"), ("Arithmetic", "softmaxRows")]


def _gradcheck(check: Check, function: hilbert.Function) -> None:
    """gradcheck of `function` (check's definition) in every differentiable parameter; the
    fixed ones are passed as tensors that need no grad. A symmetric parameter moves along
    symmetric directions only (its contract: a + aᵀ over 2 is fed in); for a `lower_only`
    case only the entries on and below the diagonal are compared (those above hold −1e300,
    where a finite difference is lost in rounding)."""
    bridge = hilbert_torch.function(function)
    params = function.entry.params
    moving = [p for p in params if p in check.wrt]
    fixed = {p: torch.from_numpy(check.args[p].copy()) for p in params if p not in check.wrt}

    def call(*values):
        given = dict(zip(moving, values, strict=True))
        for p in check.case.symmetric:
            given[p] = (given[p] + given[p].T) / 2
        out = bridge(*[given.get(p, fixed.get(p)) for p in params])
        return out * torch.ones(out.shape[-2:], dtype=out.dtype).tril() if check.case.lower_only \
            else out

    inputs = tuple(torch.tensor(check.args[p], requires_grad=True) for p in moving)
    assert torch.autograd.gradcheck(call, inputs, eps=1e-6, atol=1e-7, rtol=1e-5)


@pytest.mark.parametrize("module,key", list(CHECKS), ids=[f"{m}.{k}" for m, k in CHECKS])
def test_prelude_gradcheck_on_the_reference_executor(module, key):
    check = CHECKS[module, key]
    _gradcheck(check, prelude(module).function(check.name))


@pytest.mark.parametrize("module,key", ON_NUMBA, ids=[f"{m}.{k}" for m, k in ON_NUMBA])
def test_prelude_gradcheck_on_numba(module, key):
    check = CHECKS[module, key]
    _gradcheck(check, hilbert.open(f"Prelude.{module}").function(check.name))


# ---------------------------------------------------------------- a layer in an nn.Module

LAYER = """
open Prelude.Arithmetic
-- layer(x, w, b) · x n×p · w p×q · b q → tanh(x w + b), n×q
fn layer(x, w, b) ↦ tanh(einsum("np,pq->nq", x, w) + stacked(einsum("np,pq->nq", x, w), b))
"""


class Layer(torch.nn.Module):
    """tanh(x w + b), computed by `forward` (the .hb layer through the bridge, or torch)."""

    def __init__(self, forward, p: int, q: int, seed: int):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.w = torch.nn.Parameter(torch.randn(p, q, generator=g, dtype=torch.float64) / p)
        self.b = torch.nn.Parameter(torch.randn(q, generator=g, dtype=torch.float64))
        self.through = forward

    def forward(self, x):
        return self.through(x, self.w, self.b)


def _by_torch(x, w, b):
    return torch.tanh(x @ w + b)


def _network(forward) -> torch.nn.Module:
    """Two layers of `forward`, then torch's Linear, all from fixed seeds."""
    torch.manual_seed(0)
    return torch.nn.Sequential(Layer(forward, 3, 5, 1), Layer(forward, 5, 4, 2),
                               torch.nn.Linear(4, 1, dtype=torch.float64))


@pytest.mark.parametrize("optimiser", ["SGD", "Adam"])
def test_an_hb_layer_trains_inside_an_nn_module_as_torch_does(optimiser):
    layer = hilbert_torch.function(hilbert.compile_source(LAYER, executor="reference").layer)
    g = torch.Generator().manual_seed(3)
    x = torch.randn(16, 3, generator=g, dtype=torch.float64)
    y = torch.sin(x.sum(dim=1, keepdim=True))
    trained = []
    for forward in (layer, _by_torch):
        net = _network(forward)
        step = getattr(torch.optim, optimiser)(net.parameters(), lr=0.05)
        losses = []
        for _ in range(25):
            step.zero_grad()
            loss = torch.nn.functional.mse_loss(net(x), y)
            loss.backward()
            step.step()
            losses.append(loss.item())
        trained.append((losses, [p.detach().clone() for p in net.parameters()]))
    (ours, ours_weights), (theirs, theirs_weights) = trained
    assert ours[-1] < ours[0]  # it learnt something
    np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)
    for a, b in zip(ours_weights, theirs_weights, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------- how calls behave


@pytest.fixture(scope="module")
def nets():
    return hilbert.compile_source("""
open Prelude.Networks
fn both(a, w) ↦ (dense(a, w), einsum("np->", a))
fn one(a, w) ↦ dense(a, w)
fn total(a) ↦ einsum("np->", a)
fn scaled(t, a) ↦ t · a
""", executor="reference")


def _pair(requires_grad: bool = True, dtype=torch.float64):
    g = torch.Generator().manual_seed(7)
    return (torch.randn(3, 2, generator=g, dtype=dtype, requires_grad=requires_grad),
            torch.randn(2, 4, generator=g, dtype=dtype, requires_grad=requires_grad))


def test_tuple_results_are_a_tuple_of_tensors_and_scalars_0d_tensors(nets):
    a, w = _pair()
    y, s = hilbert_torch.function(nets.both)(a, w)
    torch.testing.assert_close(y, a @ w, rtol=1e-15, atol=0)
    assert s.shape == () and s.dtype == torch.float64
    (y * torch.arange(4.0, dtype=torch.float64)).sum().add(3 * s).backward()
    weights = torch.arange(4.0, dtype=torch.float64).expand(3, 4)
    torch.testing.assert_close(a.grad, weights @ w.detach().T + 3, rtol=1e-15, atol=1e-15)
    torch.testing.assert_close(w.grad, a.detach().T @ weights, rtol=1e-15, atol=1e-15)


def test_under_no_grad_a_call_records_no_graph(nets):
    a, w = _pair()
    with torch.no_grad():
        y = hilbert_torch.function(nets.one)(a, w)
    assert not y.requires_grad and y.grad_fn is None
    torch.testing.assert_close(y, (a @ w).detach(), rtol=1e-15, atol=0)


def test_arguments_that_need_no_grad_get_none(nets):
    a, w = _pair()
    a.requires_grad_(False)
    hilbert_torch.function(nets.one)(a, w).sum().backward()
    assert a.grad is None
    torch.testing.assert_close(w.grad, a.T @ torch.ones(3, 4, dtype=torch.float64))


def test_the_vjp_runs_once_per_backward_and_never_without_a_graph(nets, monkeypatch):
    a, w = _pair()
    bridge = hilbert_torch.function(nets.one)
    vjp = nets.one.product("vjp")
    calls = []
    monkeypatch.setattr(type(bridge), "vjp", property(lambda self: calls.append(1) or vjp))
    with torch.no_grad():
        bridge(a, w)
    bridge(a.detach(), w.detach())
    assert calls == []
    bridge(a, w).sum().backward()
    assert calls == [1]


def test_numbers_and_arrays_pass_beside_tensors(nets):
    a = torch.ones(2, 3, dtype=torch.float64, requires_grad=True)
    y = hilbert_torch.function(nets.scaled)(2.5, a)
    y.sum().backward()
    torch.testing.assert_close(a.grad, torch.full((2, 3), 2.5, dtype=torch.float64))
    t = torch.tensor(2.0, dtype=torch.float64, requires_grad=True)
    hilbert_torch.function(nets.scaled)(t, a.detach()).sum().backward()
    assert t.grad.shape == () and float(t.grad) == 6.0


def test_float32_computes_in_float32_and_gradients_keep_each_arguments_dtype(nets):
    a, w = _pair(dtype=torch.float32)
    y = hilbert_torch.function(nets.one)(a, w)
    assert y.dtype == torch.float32
    y.sum().backward()
    assert a.grad.dtype == w.grad.dtype == torch.float32
    a64 = a.detach().double().requires_grad_(True)
    hilbert_torch.function(nets.one)(a64, w).sum().backward()  # computed in float64
    assert w.grad.dtype == torch.float32 and a64.grad.dtype == torch.float64


def test_views_and_transposes_are_read_in_place(nets):
    a, w = _pair()
    wt = w.detach().T.contiguous().T.requires_grad_(True)  # a Fortran-ordered view
    y = hilbert_torch.function(nets.one)(a[::1], wt)
    y.sum().backward()
    torch.testing.assert_close(y, a @ w, rtol=1e-15, atol=0)
    torch.testing.assert_close(wt.grad, a.detach().T @ torch.ones(3, 4, dtype=torch.float64))


def test_an_argument_changed_in_place_before_backward_is_torchs_error(nets):
    a, w = _pair()
    y = hilbert_torch.function(nets.one)(a, w)
    with torch.no_grad():
        w.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


# ---------------------------------------------------------------- errors


def test_a_plain_call_with_a_tensor_that_requires_grad_is_e600(nets):
    a, w = _pair()
    with pytest.raises(hilbert.ArgumentError) as raised:
        nets.one(a, w)
    assert raised.value.code == "E600"
    assert "hilbert.torch.function" in str(raised.value) and "a.detach()" in str(raised.value)
    torch.testing.assert_close(torch.from_numpy(nets.one(a.detach(), w.detach())),
                               (a @ w).detach())


@pytest.mark.parametrize("device", ["meta"])
def test_a_tensor_on_another_device_is_e600(nets, device):
    bridge = hilbert_torch.function(nets.one)
    for requires_grad in (False, True):
        a = torch.empty(3, 2, device=device, dtype=torch.float64, requires_grad=requires_grad)
        with pytest.raises(hilbert.ArgumentError) as raised:
            bridge(a, torch.ones(2, 4, dtype=torch.float64))
        assert raised.value.code == "E600"
        assert ".cpu()" in str(raised.value) and 'executor="jax"' in str(raised.value)


def test_a_dtype_numpy_cannot_hold_is_e601(nets):
    a, w = _pair(requires_grad=False)
    with pytest.raises(hilbert.ArgumentError) as raised:
        hilbert_torch.function(nets.one)(a.bfloat16(), w)
    assert raised.value.code == "E601" and ".float()" in str(raised.value)


def test_wrapping_something_else_is_e600():
    with pytest.raises(hilbert.ArgumentError) as raised:
        hilbert_torch.function(torch.tanh)
    assert raised.value.code == "E600"


def test_wrong_argument_counts_are_hilberts_e600(nets):
    a, w = _pair()
    with pytest.raises(hilbert.ArgumentError) as raised:
        hilbert_torch.function(nets.one)(a, w, w)
    assert raised.value.code == "E600"


def test_wrong_cotangent_shapes(nets):
    """torch checks a backward's gradient against its output before the bridge sees it;
    hilbert's own pullback refuses a cotangent of the wrong shape (E600)."""
    a, w = _pair()
    y = hilbert_torch.function(nets.one)(a, w)
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        y.backward(torch.ones(4, 3, dtype=torch.float64))
    _, pullback = nets.one.vjp(a.detach().numpy(), w.detach().numpy())
    with pytest.raises(hilbert.ArgumentError) as raised:
        pullback(np.ones((4, 3)))
    assert raised.value.code == "E600"
    _, pullback = nets.both.vjp(a.detach().numpy(), w.detach().numpy())
    with pytest.raises(hilbert.ArgumentError) as raised:
        pullback(np.ones((3, 4)))  # one cotangent for a tuple of two results
    assert raised.value.code == "E600"


def test_a_derivative_of_the_gradient_is_e600(nets):
    """The gradient in w of Σ a w depends on a: asked for with create_graph=True (to be
    differentiated again), it is refused rather than silently treated as a constant."""
    a, w = _pair()
    with pytest.raises(hilbert.ArgumentError) as raised:
        torch.autograd.grad(hilbert_torch.function(nets.one)(a, w).sum(), w, create_graph=True)
    assert raised.value.code == "E600" and "create_graph" in str(raised.value)
