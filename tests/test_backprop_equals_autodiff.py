"""The seed's hand-written backpropagation equals ∂ of the loss it was written for.

Prelude.Networks writes its gradients out by hand (gradFirst, rebuildFirst, criticGrad …).
Here each loss is written in .hb as the Prelude's comments define it, from primitives (not from
the Prelude's forward definitions), and the hand-written gradient, step and fit must equal
those made with ∂ of that loss to 1e-12 (relative; absolute 1e-12 where entries are tiny), on
both executors. The recurrent network has no hand-written gradient in the Prelude: ∂ of a loss
on recurrent(…) is compared with backpropagation through time written in NumPy here.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import EXECUTORS

import hilbert

SOURCE = """
open Prelude.Networks

-- The two-layer network: Ŷ = relu(X W1) W2, L = 1/(2n) ‖Ŷ − Y‖².
def mlpLoss(x, y, w1, w2) ≔
  let e ≔ einsum("nh,hq->nq", max(einsum("np,ph->nh", x, w1), 0), w2) − y
  in einsum("nq,nq->", e, e) / (2 · rows(x))

fn autoFirst(x, y, w1, w2) ↦ ∂ mlpLoss(x, y, w1, w2) / ∂ w1
fn autoSecond(x, y, w1, w2) ↦ ∂ mlpLoss(x, y, w1, w2) / ∂ w2
fn autoStepFirst(r, x, y, w1, w2) ↦ w1 − r · ∂ mlpLoss(x, y, w1, w2) / ∂ w1
fn autoStepSecond(r, x, y, w1, w2) ↦ w2 − r · ∂ mlpLoss(x, y, w1, w2) / ∂ w2

-- t simultaneous gradient steps on both layers, with ∂.
def fitFirst(t, r, x, y, w1, w2) ≔
  if t = 0 then w1
  else fitFirst(t − 1, r, x, y, w1 − r · ∂ mlpLoss(x, y, w1, w2) / ∂ w1,
                w2 − r · ∂ mlpLoss(x, y, w1, w2) / ∂ w2)
def fitSecond(t, r, x, y, w1, w2) ≔
  if t = 0 then w2
  else fitSecond(t − 1, r, x, y, w1 − r · ∂ mlpLoss(x, y, w1, w2) / ∂ w1,
                 w2 − r · ∂ mlpLoss(x, y, w1, w2) / ∂ w2)
fn autoMlpFirst(t, r, x, y, w1, w2) ↦ fitFirst(t, r, x, y, w1, w2)
fn autoMlpSecond(t, r, x, y, w1, w2) ↦ fitSecond(t, r, x, y, w1, w2)

-- The linear autoencoder: X̂ = X W1 W2, L = 1/(2n) ‖X̂ − X‖².
def autoLoss(x, w1, w2) ≔
  let e ≔ einsum("np,pk,kq->nq", x, w1, w2) − x in einsum("nq,nq->", e, e) / (2 · rows(x))

fn autoRebuildFirst(x, w1, w2) ↦ ∂ autoLoss(x, w1, w2) / ∂ w1
fn autoRebuildSecond(x, w1, w2) ↦ ∂ autoLoss(x, w1, w2) / ∂ w2

def codeFit(t, r, x, w1, w2) ≔
  if t = 0 then w1
  else codeFit(t − 1, r, x, w1 − r · ∂ autoLoss(x, w1, w2) / ∂ w1,
               w2 − r · ∂ autoLoss(x, w1, w2) / ∂ w2)
def buildFit(t, r, x, w1, w2) ≔
  if t = 0 then w2
  else buildFit(t − 1, r, x, w1 − r · ∂ autoLoss(x, w1, w2) / ∂ w1,
                w2 − r · ∂ autoLoss(x, w1, w2) / ∂ w2)
fn autoCodeFit(t, r, x, w1, w2) ↦ codeFit(t, r, x, w1, w2)
fn autoBuildFit(t, r, x, w1, w2) ↦ buildFit(t, r, x, w1, w2)

-- The adversarial pair: D(a) = σ(A w_d), G(z) = Z W_g, and the unfloored losses
-- L_D = −mean ln D(x_real) − mean ln(1 − D(fake)), L_G = −mean ln D(G(z)).
def judged(a, wd) ≔ 1 / (1 + exp(0 − einsum("np,p->n", a, wd)))
def criticLossOf(real, fake, wd) ≔
  0 − einsum("n->", ln(judged(real, wd))) / rows(real)
    − einsum("m->", ln(1 − judged(fake, wd))) / rows(fake)
def makerLossOf(z, wg, wd) ≔ 0 − einsum("m->", ln(judged(einsum("mq,qp->mp", z, wg), wd))) / rows(z)

fn autoCriticGrad(real, fake, wd) ↦ ∂ criticLossOf(real, fake, wd) / ∂ wd
fn autoMakerGrad(z, wg, wd) ↦ ∂ makerLossOf(z, wg, wd) / ∂ wg
fn flooredCriticGrad(real, fake, wd) ↦ ∂ criticLoss(real, fake, wd) / ∂ wd
fn flooredMakerGrad(z, wg, wd) ↦ ∂ makerLoss(madeFrom(z, wg), wd) / ∂ wg

def criticFit(t, r, real, z, wg, wd) ≔
  if t = 0 then wd
  else criticFit(t − 1, r, real, z, wg − r · ∂ makerLossOf(z, wg, wd) / ∂ wg,
                 wd − r · ∂ criticLossOf(real, einsum("mq,qp->mp", z, wg), wd) / ∂ wd)
def makerFit(t, r, real, z, wg, wd) ≔
  if t = 0 then wg
  else makerFit(t − 1, r, real, z, wg − r · ∂ makerLossOf(z, wg, wd) / ∂ wg,
                wd − r · ∂ criticLossOf(real, einsum("mq,qp->mp", z, wg), wd) / ∂ wd)
fn autoGanCritic(t, r, real, z, wg, wd) ↦ criticFit(t, r, real, z, wg, wd)
fn autoGanMaker(t, r, real, z, wg, wd) ↦ makerFit(t, r, real, z, wg, wd)

-- The recurrent network: L = 1/(2b) ‖h_T − Y‖², h_T = recurrent(x, wh, wx, h0).
def rnnLoss(x, wh, wx, h0, y) ≔
  let e ≔ recurrent(x, wh, wx, h0) − y in einsum("nh,nh->", e, e) / (2 · rows(x))

fn rnnValue(x, wh, wx, h0, y) ↦ rnnLoss(x, wh, wx, h0, y)
fn rnnByWh(x, wh, wx, h0, y) ↦ ∂ rnnLoss(x, wh, wx, h0, y) / ∂ wh
fn rnnByWx(x, wh, wx, h0, y) ↦ ∂ rnnLoss(x, wh, wx, h0, y) / ∂ wx
fn rnnByH0(x, wh, wx, h0, y) ↦ ∂ rnnLoss(x, wh, wx, h0, y) / ∂ h0
fn rnnByX(x, wh, wx, h0, y) ↦ ∂ rnnLoss(x, wh, wx, h0, y) / ∂ x
"""

#: Steps of the fits compared: enough for rounding to build up, few enough to stay quick.
STEPS = 25


@pytest.fixture(scope="module", params=EXECUTORS)
def both(request) -> tuple[hilbert.Module, hilbert.Module]:
    """The test's losses and fits, and Prelude.Networks, on one executor."""
    return (hilbert.compile_source(SOURCE, executor=request.param),
            hilbert.open("Prelude.Networks", executor=request.param))


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(31415)


def assert_same(hand, auto) -> None:
    """Equal to 1e-12, relative; absolute 1e-12 for entries near zero."""
    hand, auto = np.asarray(hand), np.asarray(auto)
    assert hand.shape == auto.shape
    np.testing.assert_allclose(hand, auto, rtol=1e-12, atol=1e-12)


@pytest.fixture
def mlp(rng):
    """x 6×3, y 6×2, w1 3×4, w2 4×2."""
    return (rng.normal(size=(6, 3)), rng.normal(size=(6, 2)), 0.5 * rng.normal(size=(3, 4)),
            0.5 * rng.normal(size=(4, 2)))


@pytest.fixture
def autoencoder(rng):
    """x 6×4, w1 4×2, w2 2×4."""
    return rng.normal(size=(6, 4)), 0.5 * rng.normal(size=(4, 2)), 0.5 * rng.normal(size=(2, 4))


@pytest.fixture
def gan(rng):
    """real 5×3, z 4×2, wg 2×3, wd 3."""
    return (rng.normal(size=(5, 3)), rng.normal(size=(4, 2)), rng.normal(size=(2, 3)),
            rng.normal(size=3))


# ---------------------------------------------------------------- the two-layer network

def test_mlp_gradients(both, mlp):
    mine, nets = both
    assert_same(nets.gradFirst(*mlp), mine.autoFirst(*mlp))
    assert_same(nets.gradSecond(*mlp), mine.autoSecond(*mlp))


def test_mlp_steps(both, mlp):
    mine, nets = both
    assert_same(nets.stepFirst(0.1, *mlp), mine.autoStepFirst(0.1, *mlp))
    assert_same(nets.stepSecond(0.1, *mlp), mine.autoStepSecond(0.1, *mlp))


def test_mlp_fits(both, mlp):
    mine, nets = both
    assert_same(nets.mlpFirst(STEPS, 0.05, *mlp), mine.autoMlpFirst(STEPS, 0.05, *mlp))
    assert_same(nets.mlpSecond(STEPS, 0.05, *mlp), mine.autoMlpSecond(STEPS, 0.05, *mlp))


# ---------------------------------------------------------------- the autoencoder

def test_autoencoder_gradients(both, autoencoder):
    mine, nets = both
    assert_same(nets.rebuildFirst(*autoencoder), mine.autoRebuildFirst(*autoencoder))
    assert_same(nets.rebuildSecond(*autoencoder), mine.autoRebuildSecond(*autoencoder))


def test_autoencoder_fits(both, autoencoder):
    mine, nets = both
    assert_same(nets.autoCode(STEPS, 0.05, *autoencoder), mine.autoCodeFit(STEPS, 0.05, *autoencoder))
    assert_same(nets.autoBuild(STEPS, 0.05, *autoencoder),
                mine.autoBuildFit(STEPS, 0.05, *autoencoder))


# ---------------------------------------------------------------- the adversarial pair

def test_critic_and_maker_gradients_of_the_unfloored_losses(both, gan):
    mine, nets = both
    real, z, wg, wd = gan
    fake = z @ wg
    assert_same(nets.criticGrad(real, fake, wd), mine.autoCriticGrad(real, fake, wd))
    assert_same(nets.makerGrad(z, wg, wd), mine.autoMakerGrad(z, wg, wd))


def test_the_floored_losses_have_the_same_gradients_above_the_floor(both, gan):
    """criticLoss and makerLoss floor D at 1e-12; with every D well above it the floor is
    inactive, so their ∂ is the hand-written gradient."""
    mine, nets = both
    real, z, wg, wd = gan
    fake = z @ wg
    assert_same(nets.criticGrad(real, fake, wd), mine.flooredCriticGrad(real, fake, wd))
    assert_same(nets.makerGrad(z, wg, wd), mine.flooredMakerGrad(z, wg, wd))


def test_critic_and_maker_steps_and_fits(both, gan):
    mine, nets = both
    real, z, wg, wd = gan
    assert_same(nets.criticStep(0.1, real, z, wg, wd), mine.autoGanCritic(1, 0.1, real, z, wg, wd))
    assert_same(nets.makerStep(0.1, z, wg, wd), mine.autoGanMaker(1, 0.1, real, z, wg, wd))
    assert_same(nets.ganCritic(STEPS, 0.1, real, z, wg, wd),
                mine.autoGanCritic(STEPS, 0.1, real, z, wg, wd))
    assert_same(nets.ganMaker(STEPS, 0.1, real, z, wg, wd),
                mine.autoGanMaker(STEPS, 0.1, real, z, wg, wd))


# ---------------------------------------------------------------- the recurrent network

def backprop_through_time(x, wh, wx, h0, y):
    """The loss 1/(2b) ‖h_T − Y‖² of h_t+1 = tanh(h_t W_h + x_t w_xᵀ) and its gradients in
    (wh, wx, h0, x), by the chain rule run backwards over the steps."""
    states = [h0]
    for t in range(x.shape[1]):
        states.append(np.tanh(states[-1] @ wh + np.outer(x[:, t], wx)))
    b = len(x)
    loss = 0.5 / b * np.sum((states[-1] - y) ** 2)
    d = (states[-1] - y) / b
    g_wh, g_wx, g_x = np.zeros_like(wh), np.zeros_like(wx), np.zeros_like(x)
    for t in reversed(range(x.shape[1])):
        pre = d * (1 - states[t + 1] ** 2)
        g_wh += states[t].T @ pre
        g_wx += x[:, t] @ pre
        g_x[:, t] = pre @ wx
        d = pre @ wh.T
    return loss, g_wh, g_wx, d, g_x


def test_recurrent_gradients_equal_backpropagation_through_time(both, rng):
    mine, _ = both
    x, wh, wx = rng.normal(size=(3, 5)), 0.6 * rng.normal(size=(4, 4)), rng.normal(size=4)
    h0, y = 0.5 * rng.normal(size=(3, 4)), 0.5 * rng.normal(size=(3, 4))
    loss, g_wh, g_wx, g_h0, g_x = backprop_through_time(x, wh, wx, h0, y)
    args = (x, wh, wx, h0, y)
    assert mine.rnnValue(*args) == pytest.approx(loss, rel=1e-12)
    assert_same(mine.rnnByWh(*args), g_wh)
    assert_same(mine.rnnByWx(*args), g_wx)
    assert_same(mine.rnnByH0(*args), g_h0)
    assert_same(mine.rnnByX(*args), g_x)
