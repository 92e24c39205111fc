"""Prelude.Sequences against NumPy written here (always) and torch.nn (when torch is
installed), in float64, and the seed's parameter counts from the Prelude's own models."""

import numpy as np
import pytest

import hilbert

try:
    import torch
except ImportError:  # the NumPy references still run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")

T, B, E, D = 5, 3, 4, 6


@pytest.fixture(scope="module", params=["reference", "numba"])
def seq(request):
    return hilbert.open("Prelude.Sequences", executor=request.param)


def sigmoid(z):
    return 1 / (1 + np.exp(-z))


def numpy_lstm(x, h, c, wx, wh, b, p=None):
    for t in range(x.shape[0]):
        z = np.einsum("be,edg->bdg", x[t], wx) + np.einsum("bk,kdg->bdg", h, wh) + b
        i, f, g, o = (z[..., k] for k in range(4))
        if p is not None:
            i, f = i + c * p[:, 0], f + c * p[:, 1]
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
        if p is not None:
            o = o + c * p[:, 2]
        h = sigmoid(o) * np.tanh(c)
    return h, c


def numpy_gru(x, h, wx, wh, bx, bh):
    for t in range(x.shape[0]):
        a = np.einsum("be,edg->bdg", x[t], wx) + bx
        u = np.einsum("bk,kdg->bdg", h, wh) + bh
        r = sigmoid(a[..., 0] + u[..., 0])
        z = sigmoid(a[..., 1] + u[..., 1])
        n = np.tanh(a[..., 2] + r * u[..., 2])
        h = (1 - z) * n + z * h
    return h


def numpy_cho(x, h, wx, wh, b):
    for t in range(x.shape[0]):
        a = np.einsum("be,edg->bdg", x[t], wx) + b
        r = sigmoid(a[..., 0] + h @ wh[..., 0])
        z = sigmoid(a[..., 1] + h @ wh[..., 1])
        n = np.tanh(a[..., 2] + (r * h) @ wh[..., 2])
        h = z * h + (1 - z) * n
    return h


def numpy_heads(x, wq, wk, wv, wo, causal=False):
    q = np.einsum("btm,nmf->bntf", x, wq)
    k = np.einsum("btm,nmf->bntf", x, wk)
    v = np.einsum("btm,nml->bntl", x, wv)
    s = np.einsum("bntf,bnsf->bnts", q, k) / np.sqrt(wq.shape[2])
    if causal:
        t = s.shape[-1]
        s = np.where(np.triu(np.ones((t, t)), 1) > 0, -np.inf, s)
    s = np.exp(s - s.max(-1, keepdims=True))
    s = s / s.sum(-1, keepdims=True)
    return np.einsum("bntl,nlo->bto", np.einsum("bnts,bnsl->bntl", s, v), wo)


@pytest.fixture
def sequence(rng):
    return rng.normal(size=(T, B, E)), rng.normal(size=(B, D)) * 0.5, rng.normal(size=(B, D)) * 0.5


def test_lstm_against_numpy(seq, sequence, rng):
    x, h, c = sequence
    wx, wh, b = rng.normal(size=(E, D, 4)) * 0.4, rng.normal(size=(D, D, 4)) * 0.4, rng.normal(size=(D, 4))
    got = seq.function("lstm")(x, h, c, wx, wh, b)
    for g, w in zip(got, numpy_lstm(x, h, c, wx, wh, b), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)


def test_peephole_lstm_against_numpy(seq, sequence, rng):
    x, h, c = sequence
    wx, wh, b = rng.normal(size=(E, D, 4)) * 0.4, rng.normal(size=(D, D, 4)) * 0.4, rng.normal(size=(D, 4))
    p = rng.normal(size=(D, 3))
    got = seq.function("peepholeLstm")(x, h, c, wx, wh, b, p)
    for g, w in zip(got, numpy_lstm(x, h, c, wx, wh, b, p), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)


def test_grus_against_numpy(seq, sequence, rng):
    x, h, _ = sequence
    wx, wh = rng.normal(size=(E, D, 3)) * 0.4, rng.normal(size=(D, D, 3)) * 0.4
    bx, bh = rng.normal(size=(D, 3)), rng.normal(size=(D, 3))
    np.testing.assert_allclose(seq.function("gru")(x, h, wx, wh, bx, bh),
                               numpy_gru(x, h, wx, wh, bx, bh), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(seq.function("choGru")(x, h, wx, wh, bx),
                               numpy_cho(x, h, wx, wh, bx), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("causal", [False, True])
def test_multi_head_attention_against_numpy(seq, causal, rng):
    n, m, f, lw = 3, 8, 4, 5
    x = rng.normal(size=(2, 6, m))
    wq, wk = rng.normal(size=(n, m, f)), rng.normal(size=(n, m, f))
    wv, wo = rng.normal(size=(n, m, lw)), rng.normal(size=(n, lw, m))
    name = "causalMultiHead" if causal else "multiHead"
    np.testing.assert_allclose(seq.function(name)(x, wq, wk, wv, wo),
                               numpy_heads(x, wq, wk, wv, wo, causal), rtol=1e-11, atol=1e-12)


def test_single_head_and_causal_attend(seq, rng):
    x = rng.normal(size=(2, 6, 8))
    wq, wk, wv = rng.normal(size=(8, 4)), rng.normal(size=(8, 4)), rng.normal(size=(8, 5))
    want = numpy_heads(x, wq[None], wk[None], wv[None], np.eye(5)[None])
    np.testing.assert_allclose(seq.function("attention")(x, wq, wk, wv), want, rtol=1e-11)
    q, k, v = x @ wq, x @ wk, x @ wv
    s = np.einsum("btf,bsf->bts", q, k) / 2.0
    s = np.where(np.triu(np.ones((6, 6)), 1) > 0, -np.inf, s)
    s = np.exp(s - s.max(-1, keepdims=True))
    want = np.einsum("bts,bsl->btl", s / s.sum(-1, keepdims=True), v)
    np.testing.assert_allclose(seq.function("causalAttend")(q, k, v), want, rtol=1e-11)


def test_layer_norm_of_a_sequence(seq, rng):
    x = rng.normal(size=(2, 3, 5))
    gain, shift = rng.normal(size=5), rng.normal(size=5)
    mean = x.mean(-1, keepdims=True)
    want = (x - mean) / np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + 1e-5) * gain + shift
    np.testing.assert_allclose(seq.function("layerNormSeq")(x, gain, shift), want, rtol=1e-12)


def test_the_seeds_parameter_counts_from_the_models():
    seq = hilbert.open("Prelude.Sequences")
    e, d = 512, 768
    assert seq.PeepholeLSTM(e, d, 0).parameters() == 3_937_536
    assert seq.LSTM(e, d, 0).parameters() == 4 * d * (e + d + 1)
    assert seq.GRU(e, d, 0).parameters() == 2_953_728
    cho = seq.ChoGRU(e, d, 0)
    assert cho.parameters() == 2_951_424
    assert cho.weights["wx"].size + cho.weights["wh"].size == 2_949_120
    assert seq.Attention(768, 64, 64, 0).parameters() == 147_456
    heads = seq.MultiHeadAttention(768, 12, 64, 64, 0)
    sizes = {name: w.size for name, w in heads.weights.items()}
    assert sizes["wq"] + sizes["wk"] + sizes["wv"] == 1_769_472
    assert sizes["wo"] == 589_824
    assert heads.parameters() == 1_769_472 + 589_824


def test_lstm_cost_is_linear_in_the_sequence_length():
    seq = hilbert.open("Prelude.Sequences")
    weights = [(B, D), (B, D), (E, D, 4), (D, D, 4), (D, 4)]
    flops = [seq.function("lstm").plan((t, B, E), *weights).flops for t in (10, 20, 40)]
    step = (flops[1] - flops[0]) / 10
    assert step > 0
    assert flops[2] - flops[1] == 20 * step  # each step costs the same: no T² term
    # what does not grow with T is the weights' one rearrangement (middle: D·D·4 + D·4 entries)
    assert flops[0] - 10 * step <= D * D * 4 + D * 4


# ---------------------------------------------------------------- torch with copied weights

def _gates(weight, gates):
    """PyTorch's (G·D)×E (or D×D) stack of gate weights as E×D×G, the gate axis last."""
    w = weight.detach().double().numpy()
    dd = w.shape[0] // gates
    return w.reshape(gates, dd, -1).transpose(2, 1, 0).copy()


def _bias(bias, gates):
    b = bias.detach().double().numpy()
    return b.reshape(gates, -1).T.copy()


@needs_torch
def test_lstm_equals_torch(seq, sequence):
    torch.manual_seed(0)
    x, h, c = sequence
    net = torch.nn.LSTM(E, D).double()
    out, (hn, cn) = net(torch.tensor(x), (torch.tensor(h)[None], torch.tensor(c)[None]))
    wx, wh = _gates(net.weight_ih_l0, 4), _gates(net.weight_hh_l0, 4)
    b = _bias(net.bias_ih_l0, 4) + _bias(net.bias_hh_l0, 4)
    got_h, got_c = seq.function("lstm")(x, h, c, wx, wh, b)
    np.testing.assert_allclose(got_h, hn[0].detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got_c, cn[0].detach().numpy(), rtol=1e-10, atol=1e-12)
    for t in range(1, T):  # every output, as the state after a prefix
        prefix_h, _ = seq.function("lstm")(x[:t], h, c, wx, wh, b)
        np.testing.assert_allclose(prefix_h, out[t - 1].detach().numpy(), rtol=1e-10, atol=1e-12)


@needs_torch
def test_gru_equals_torch(seq, sequence):
    torch.manual_seed(1)
    x, h, _ = sequence
    net = torch.nn.GRU(E, D).double()
    _, hn = net(torch.tensor(x), torch.tensor(h)[None])
    args = (_gates(net.weight_ih_l0, 3), _gates(net.weight_hh_l0, 3),
            _bias(net.bias_ih_l0, 3), _bias(net.bias_hh_l0, 3))
    np.testing.assert_allclose(seq.function("gru")(x, h, *args), hn[0].detach().numpy(),
                               rtol=1e-10, atol=1e-12)


@needs_torch
@pytest.mark.parametrize("causal", [False, True])
def test_multi_head_attention_equals_torch(seq, causal):
    torch.manual_seed(2)
    m, n, t = 12, 3, 5
    net = torch.nn.MultiheadAttention(m, n, bias=False, batch_first=True).double()
    x = torch.randn(2, t, m, dtype=torch.float64)
    mask = torch.triu(torch.full((t, t), float("-inf"), dtype=torch.float64), 1) if causal else None
    want, _ = net(x, x, x, attn_mask=mask, need_weights=False)
    f = m // n
    w = net.in_proj_weight.detach().numpy()
    wq, wk, wv = (w[i * m:(i + 1) * m].reshape(n, f, m).transpose(0, 2, 1).copy() for i in range(3))
    wo = net.out_proj.weight.detach().numpy().T.reshape(n, f, m).copy()
    name = "causalMultiHead" if causal else "multiHead"
    got = seq.function(name)(x.numpy(), wq, wk, wv, wo)
    np.testing.assert_allclose(got, want.detach().numpy(), rtol=1e-10, atol=1e-12)
