"""examples/Transformer.hb: a pre-norm transformer block trained with Adam (the startup
benchmark's program). Its loss equals the block written here in NumPy, its gradients equal
central differences of that NumPy loss, and one train call is the Adam step written here.
Calls stay on the host tier (HILBERT_COMPILE=never): compiling the train step takes minutes
on a CI core, and the benchmark checks that its compiled code gives what the host gives."""

from __future__ import annotations

import math

import numpy as np
import pytest

import hilbert

NAMES = ("emb", "g1", "s1", "wq", "wk", "wv", "wo", "g2", "s2", "w1", "c1", "w2", "c2", "out", "d")
SIZES = dict(vocab=7, width=8, heads=2, key=3, hidden=12)
B, T = 2, 5


pytestmark = pytest.mark.usefixtures("on_the_host")  # (tests/conftest.py)


@pytest.fixture(scope="module")
def model(on_the_host):
    module = hilbert.load("examples/Transformer.hb")
    block = module.Block(*SIZES.values(), 3)
    for seed in (1, 2):  # two steps: the gains and shifts move off their 1 and 0
        block.train(*_tokens(seed))
    return block


def _tokens(seed: int):
    rng = np.random.default_rng(seed)
    return (rng.integers(0, SIZES["vocab"], size=(B, T)).astype(float),
            rng.integers(0, SIZES["vocab"], size=(B, T)).astype(float))


def _layer_norm(x, gain, shift):
    centred = x - x.mean(-1, keepdims=True)
    return centred / np.sqrt((centred ** 2).mean(-1, keepdims=True) + 1e-5) * gain + shift


def _gelu(z):
    return 0.5 * z * (1 + np.vectorize(math.erf)(z / math.sqrt(2)))


def numpy_loss(w: dict, tok, nxt) -> float:
    """The block, written out in NumPy."""
    x = w["emb"][tok.astype(int)]
    a = _layer_norm(x, w["g1"], w["s1"])
    q = np.einsum("btm,nmf->bntf", a, w["wq"])
    k = np.einsum("btm,nmf->bntf", a, w["wk"])
    v = np.einsum("btm,nmf->bntf", a, w["wv"])
    s = np.einsum("bntf,bnsf->bnts", q, k) / math.sqrt(w["wq"].shape[-1])
    s = np.where(np.arange(T)[None, None, None, :] > np.arange(T)[None, None, :, None], -np.inf, s)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    h = x + np.einsum("bnts,bnsl,nlo->bto", p, v, w["wo"])
    u = _gelu(_layer_norm(h, w["g2"], w["s2"]) @ w["w1"] + w["c1"])
    y = h + u @ w["w2"] + w["c2"]
    z = y @ w["out"] + w["d"]
    logp = z - z.max(-1, keepdims=True)
    logp -= np.log(np.exp(logp).sum(-1, keepdims=True))
    picked = np.take_along_axis(logp, nxt.astype(int)[..., None], axis=-1)
    return float(-picked.mean())


def test_the_loss_is_the_block_written_in_numpy(model):
    tok, nxt = _tokens(5)
    assert model.loss(tok, nxt) == pytest.approx(numpy_loss(model.weights, tok, nxt), rel=1e-12)


def test_gradients_are_central_differences_of_the_numpy_loss(model):
    tok, nxt = _tokens(6)
    grads = dict(zip(NAMES, model.gradients(tok, nxt), strict=True))
    weights = {n: np.array(a, dtype=float) for n, a in model.weights.items()}
    rng = np.random.default_rng(7)
    h = 1e-6
    for name in NAMES:
        for flat in rng.choice(weights[name].size, size=min(4, weights[name].size), replace=False):
            at = np.unravel_index(flat, weights[name].shape)
            up = {**weights, name: weights[name].copy()}
            down = {**weights, name: weights[name].copy()}
            up[name][at] += h
            down[name][at] -= h
            want = (numpy_loss(up, tok, nxt) - numpy_loss(down, tok, nxt)) / (2 * h)
            assert grads[name][at] == pytest.approx(want, rel=1e-5, abs=1e-8), (name, at)


def test_one_train_call_is_an_adam_step():
    module = hilbert.load("examples/Transformer.hb")
    block = module.Block(*SIZES.values(), 8)
    tok, nxt = _tokens(9)
    before = {n: np.array(block.weights[n]) for n in NAMES}
    grads = dict(zip(NAMES, block.gradients(tok, nxt), strict=True))
    block.train(tok, nxt)
    for name in NAMES:  # Adam from zero moments at step 1 (Prelude.Optimisers.adam's formula)
        m = (1 - 0.9) * grads[name]
        v = (1 - 0.999) * grads[name] ** 2
        want = before[name] - 1e-3 / (1 - 0.9) * m / (np.sqrt(v) / np.sqrt(1 - 0.999) + 1e-8)
        np.testing.assert_allclose(block.weights[name], want, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(block.weights["m." + name], m, rtol=1e-15)
        np.testing.assert_allclose(block.weights["v." + name], v, rtol=1e-15)
    assert float(block.weights["taken"]) == 1.0
