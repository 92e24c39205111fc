"""Prelude.Networks: every public definition and building block against NumPy, with the edges.

Expected values come from the NumPy references below (written from the seed's formulas), from
central finite differences of losses written here, or from np.linalg; never from hilbert.
"""

import numpy as np
import pytest
from conftest import EXECUTORS

import hilbert


@pytest.fixture(scope="module", params=EXECUTORS)
def nets(request):
    return hilbert.open("Prelude.Networks", executor=request.param)


@pytest.fixture
def rng():
    return np.random.default_rng(1729)


# ---------------------------------------------------------------- NumPy references

def relu(z):
    return np.maximum(z, 0.0)


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def softmax_rows(m):
    e = np.exp(m - m.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def mlp_loss(x, y, w1, w2):
    """L = 1/(2n) ‖relu(X W1) W2 − Y‖²."""
    return 0.5 / len(x) * np.sum((relu(x @ w1) @ w2 - y) ** 2)


def mlp_step(r, x, y, w1, w2):
    """One simultaneous gradient step on both layers (the seed's backward formulas)."""
    out = (relu(x @ w1) @ w2 - y) / len(x)
    hid = (out @ w2.T) * (x @ w1 > 0)
    return w1 - r * x.T @ hid, w2 - r * relu(x @ w1).T @ out


def mlp_fit(t, r, x, y, w1, w2):
    for _ in range(t):
        w1, w2 = mlp_step(r, x, y, w1, w2)
    return w1, w2


def auto_loss(x, w1, w2):
    """1/(2n) ‖X W1 W2 − X‖²."""
    return 0.5 / len(x) * np.sum((x @ w1 @ w2 - x) ** 2)


def auto_fit(t, r, x, w1, w2):
    for _ in range(t):
        delta = (x @ w1 @ w2 - x) / len(x)
        w1, w2 = w1 - r * x.T @ delta @ w2.T, w2 - r * (x @ w1).T @ delta
    return w1, w2


def critic_loss_unfloored(real, fake, wd):
    return -np.mean(np.log(sigmoid(real @ wd))) - np.mean(np.log(1 - sigmoid(fake @ wd)))


def maker_loss_unfloored(z, wg, wd):
    return -np.mean(np.log(sigmoid(z @ wg @ wd)))


def gan_step(r, real, z, wg, wd):
    """One simultaneous step of both players, from the seed's gradients."""
    fake = z @ wg
    critic_grad = fake.T @ sigmoid(fake @ wd) / len(fake) - real.T @ (1 - sigmoid(real @ wd)) / len(real)
    maker_grad = -np.outer(z.T @ (1 - sigmoid(fake @ wd)), wd) / len(z)
    return wg - r * maker_grad, wd - r * critic_grad


def gan_fit(t, r, real, z, wg, wd):
    for _ in range(t):
        wg, wd = gan_step(r, real, z, wg, wd)
    return wg, wd


def window_sums(x, k):
    """Cross-correlation y_it = Σ_j x_i,t+j k_j with x read as zero past its end."""
    b, length = x.shape
    padded = np.hstack([x, np.zeros((b, len(k)))])
    return np.array([[padded[i, t:t + len(k)] @ k for t in range(length)] for i in range(b)])


def window_maxima(x, width):
    b, length = x.shape
    padded = np.hstack([x, np.zeros((b, width))])
    return np.array([[padded[i, t:t + width].max() for t in range(length)] for i in range(b)])


def central_difference(loss, w, h=1e-5):
    """The gradient of loss at w by central differences, one entry at a time."""
    grad = np.zeros_like(w)
    for index in np.ndindex(w.shape):
        up, down = w.copy(), w.copy()
        up[index] += h
        down[index] -= h
        grad[index] = (loss(up) - loss(down)) / (2 * h)
    return grad


def assert_gradient(got, expected, rel=1e-6):
    got = np.asarray(got)
    assert got.shape == expected.shape
    assert np.linalg.norm(got - expected) <= rel * np.linalg.norm(expected)


@pytest.fixture
def mlp(rng):
    """A small regression problem: x 6×3, y 6×2, w1 3×4, w2 4×2."""
    x = rng.standard_normal((6, 3))
    y = rng.standard_normal((6, 2))
    w1 = rng.standard_normal((3, 4)) * 0.5
    w2 = rng.standard_normal((4, 2)) * 0.5
    return x, y, w1, w2


# ---------------------------------------------------------------- the module itself

def test_opens_from_any_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    nets = hilbert.open("Prelude.Networks")
    np.testing.assert_array_equal(nets.dense([[1, 2]], [[1], [1]]), [[3]])


def test_user_source_opens_networks():
    m = hilbert.compile_source("open Prelude.Networks\nfn f(a, w) ↦ hiddenOf(a, w)")
    np.testing.assert_array_equal(m.f([[1, -2]], [[1, 0], [0, 1]]), [[1, 0]])


def test_docstrings_come_from_the_comment_blocks(nets):
    assert "One linear layer without a bias" in nets.dense.__doc__
    assert "Instead:" in nets.meanPool.__doc__


# ---------------------------------------------------------------- forward

def test_dense(nets, rng):
    a = rng.standard_normal((5, 3))
    w = rng.standard_normal((3, 2))
    np.testing.assert_allclose(nets.dense(a, w), a @ w, rtol=1e-13)


def test_dense_checks_shapes(nets):
    with pytest.raises(hilbert.HilbertError):
        nets.dense(np.ones((2, 3)), np.ones((2, 3)))


def test_pre_hidden_hidden_and_outputs(nets, mlp):
    x, _, w1, w2 = mlp
    np.testing.assert_allclose(nets.preHidden(x, w1), x @ w1, rtol=1e-13)
    np.testing.assert_allclose(nets.hiddenOf(x, w1), relu(x @ w1), rtol=1e-13)
    np.testing.assert_allclose(nets.outputs(x, w1, w2), relu(x @ w1) @ w2, rtol=1e-12)


# ---------------------------------------------------------------- backward

def test_deltas(nets, mlp):
    x, y, w1, w2 = mlp
    out = (relu(x @ w1) @ w2 - y) / len(x)
    np.testing.assert_allclose(nets.outDelta(x, y, w1, w2), out, rtol=1e-12)
    np.testing.assert_allclose(nets.hidDelta(x, y, w1, w2), (out @ w2.T) * (x @ w1 > 0), rtol=1e-12, atol=1e-15)


def test_grad_second_is_the_gradient_of_the_loss(nets, mlp):
    x, y, w1, w2 = mlp
    expected = central_difference(lambda w: mlp_loss(x, y, w1, w), w2)
    assert_gradient(nets.gradSecond(x, y, w1, w2), expected)


def test_grad_first_is_the_gradient_of_the_loss(nets, mlp):
    x, y, w1, w2 = mlp
    expected = central_difference(lambda w: mlp_loss(x, y, w, w2), w1)
    assert_gradient(nets.gradFirst(x, y, w1, w2), expected)


def test_steps(nets, mlp):
    x, y, w1, w2 = mlp
    new1, new2 = mlp_step(0.1, x, y, w1, w2)
    np.testing.assert_allclose(nets.stepFirst(0.1, x, y, w1, w2), new1, rtol=1e-12)
    np.testing.assert_allclose(nets.stepSecond(0.1, x, y, w1, w2), new2, rtol=1e-12)


def test_relu_derivative_is_zero_at_zero(nets):
    """A unit whose pre-activation is exactly 0 on every row gets no gradient."""
    x = np.array([[1.0, 1.0], [2.0, 2.0], [-1.0, -1.0]])
    w1 = np.array([[1.0, 0.5], [-1.0, 0.25]])    # unit 0: x w = 0 exactly; unit 1 active
    w2 = np.array([[2.0], [1.0]])
    y = np.array([[1.0], [0.0], [3.0]])
    assert np.all(x @ w1[:, 0] == 0)
    stepped = nets.stepFirst(0.5, x, y, w1, w2)
    np.testing.assert_array_equal(stepped[:, 0], w1[:, 0])
    assert np.all(stepped[:, 1] != w1[:, 1])
    np.testing.assert_allclose(stepped, mlp_step(0.5, x, y, w1, w2)[0], rtol=1e-13)


# ---------------------------------------------------------------- the fit

def test_mlp_first_and_second_equal_the_steps_iterated_by_hand(nets, mlp):
    x, y, w1, w2 = mlp
    h1, h2 = w1, w2
    for _ in range(5):
        h1, h2 = nets.stepFirst(0.2, x, y, h1, h2), nets.stepSecond(0.2, x, y, h1, h2)
    got1 = nets.mlpFirst(t=5, r=0.2, x=x, y=y, w1=w1, w2=w2)
    got2 = nets.mlpSecond(t=5, r=0.2, x=x, y=y, w1=w1, w2=w2)
    np.testing.assert_allclose(got1, h1, rtol=1e-11)
    np.testing.assert_allclose(got2, h2, rtol=1e-11)


def test_mlp_fit_matches_numpy(nets, mlp):
    x, y, w1, w2 = mlp
    f1, f2 = mlp_fit(40, 0.1, x, y, w1, w2)
    np.testing.assert_allclose(nets.mlpFirst(40, 0.1, x, y, w1, w2), f1, rtol=1e-10)
    np.testing.assert_allclose(nets.mlpSecond(40, 0.1, x, y, w1, w2), f2, rtol=1e-10)
    np.testing.assert_allclose(nets.firstLoop(40, 0.1, x, y, w1, w2), f1, rtol=1e-10)
    np.testing.assert_allclose(nets.secondLoop(40, 0.1, x, y, w1, w2), f2, rtol=1e-10)
    np.testing.assert_allclose(nets.mlpFit(40, 0.1, x, y, w1, w2), relu(x @ f1) @ f2, rtol=1e-10)


def test_zero_steps_answer_the_starting_weights(nets, mlp):
    x, y, w1, w2 = mlp
    np.testing.assert_array_equal(nets.mlpFirst(0, 0.1, x, y, w1, w2), w1)
    np.testing.assert_array_equal(nets.mlpSecond(0, 0.1, x, y, w1, w2), w2)


def test_mlp_fit_lowers_the_loss(nets, mlp):
    x, y, w1, w2 = mlp
    trained = nets.mlpFit(60, 0.1, x, y, w1, w2)
    before = 0.5 / len(x) * np.sum((relu(x @ w1) @ w2 - y) ** 2)
    after = 0.5 / len(x) * np.sum((trained - y) ** 2)
    assert after < before


def test_mlp_predict(nets, mlp, rng):
    x, y, w1, w2 = mlp
    z = rng.standard_normal((3, 3))
    f1, f2 = mlp_fit(20, 0.1, x, y, w1, w2)
    np.testing.assert_allclose(nets.mlpPredict(20, 0.1, x, y, w1, w2, z), relu(z @ f1) @ f2, rtol=1e-10)


def test_mlp_shares(nets, mlp, rng):
    x, y, w1, w2 = mlp
    z = rng.standard_normal((4, 3))
    f1, f2 = mlp_fit(20, 0.1, x, y, w1, w2)
    shares = nets.mlpShares(20, 0.1, x, y, w1, w2, z)
    np.testing.assert_allclose(shares.sum(axis=1), np.ones(4), rtol=1e-14)
    assert np.all(shares > 0)
    np.testing.assert_allclose(shares, softmax_rows(relu(z @ f1) @ f2), rtol=1e-10)


# ---------------------------------------------------------------- the autoencoder

@pytest.fixture
def auto(rng):
    """Data x 8×3 and weights w1 3×2, w2 2×3."""
    return rng.standard_normal((8, 3)), rng.standard_normal((3, 2)) * 0.5, rng.standard_normal((2, 3)) * 0.5


def test_encoded_and_rebuilt(nets, auto):
    x, w1, w2 = auto
    np.testing.assert_allclose(nets.encoded(x, w1), x @ w1, rtol=1e-13)
    np.testing.assert_allclose(nets.rebuilt(x, w1, w2), x @ w1 @ w2, rtol=1e-12)
    np.testing.assert_allclose(nets.rebuildDelta(x, w1, w2), (x @ w1 @ w2 - x) / len(x), rtol=1e-12)


def test_rebuild_second_is_the_gradient_of_the_loss(nets, auto):
    x, w1, w2 = auto
    expected = central_difference(lambda w: auto_loss(x, w1, w), w2)
    assert_gradient(nets.rebuildSecond(x, w1, w2), expected)


def test_rebuild_first_is_the_gradient_of_the_loss(nets, auto):
    x, w1, w2 = auto
    expected = central_difference(lambda w: auto_loss(x, w, w2), w1)
    assert_gradient(nets.rebuildFirst(x, w1, w2), expected)


def test_auto_code_and_build_match_numpy(nets, auto):
    x, w1, w2 = auto
    f1, f2 = auto_fit(30, 0.1, x, w1, w2)
    np.testing.assert_allclose(nets.autoCode(30, 0.1, x, w1, w2), f1, rtol=1e-10)
    np.testing.assert_allclose(nets.autoBuild(30, 0.1, x, w1, w2), f2, rtol=1e-10)
    np.testing.assert_allclose(nets.codeLoop(30, 0.1, x, w1, w2), f1, rtol=1e-10)
    np.testing.assert_allclose(nets.buildLoop(30, 0.1, x, w1, w2), f2, rtol=1e-10)
    np.testing.assert_allclose(nets.autoFit(30, 0.1, x, w1, w2), x @ f1 @ f2, rtol=1e-10)


def test_auto_fit_reaches_the_rank_k_svd_error():
    """On centred rank-2 data a 2-unit linear autoencoder rebuilds as well as the rank-2 SVD."""
    rng = np.random.default_rng(5)
    n, p, k = 10, 3, 2
    u, _ = np.linalg.qr(rng.standard_normal((n, p)))
    v, _ = np.linalg.qr(rng.standard_normal((p, p)))
    x = u @ np.diag([1.0, 0.7, 0.0]) @ v.T * np.sqrt(n)
    x = x - x.mean(axis=0)
    w1 = rng.standard_normal((p, k)) * 0.4
    w2 = rng.standard_normal((k, p)) * 0.4

    su, s, svt = np.linalg.svd(x, full_matrices=False)
    best = su[:, :k] @ np.diag(s[:k]) @ svt[:k]
    best_error = np.sum((best - x) ** 2)
    scale = np.sum(x ** 2)

    nets = hilbert.open("Prelude.Networks")
    fitted = nets.autoFit(200, 0.5, x, w1, w2)
    error = np.sum((fitted - x) ** 2)
    assert best_error <= 1e-20 * scale
    assert error <= best_error + 1e-12 * scale
    np.testing.assert_allclose(fitted, best, atol=1e-6)


# ---------------------------------------------------------------- layer normalisation

def test_layer_norm(nets, rng):
    a = rng.standard_normal((4, 5)) * 3 + 2
    mu = a.mean(axis=1, keepdims=True)
    var = a.var(axis=1, keepdims=True)
    np.testing.assert_allclose(nets.layerNorm(a), (a - mu) / np.sqrt(var + 1e-5), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(nets.rowCentre(a), a - mu, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(nets.rowVar(a), a.var(axis=1), rtol=1e-12)


def test_layer_norm_of_a_single_column_is_zero(nets):
    np.testing.assert_array_equal(nets.layerNorm([[3.0], [-7.5], [0.0]]), np.zeros((3, 1)))


# ---------------------------------------------------------------- attention

def test_attention(nets, rng):
    q = rng.standard_normal((2, 4))
    k = rng.standard_normal((5, 4))
    v = rng.standard_normal((5, 3))
    scores = q @ k.T / np.sqrt(4.0)
    np.testing.assert_allclose(nets.attentionScores(q, k, 4.0), scores, rtol=1e-12)
    np.testing.assert_allclose(nets.attentionOf(q, k, v, 4.0), softmax_rows(scores) @ v, rtol=1e-12)


def test_self_attention(nets, rng):
    a = rng.standard_normal((5, 3))
    wq, wk, wv = rng.standard_normal((3, 2)), rng.standard_normal((3, 2)), rng.standard_normal((3, 4))
    expected = softmax_rows((a @ wq) @ (a @ wk).T / np.sqrt(2.0)) @ (a @ wv)
    np.testing.assert_allclose(nets.selfAttention(a, wq, wk, wv, 2.0), expected, rtol=1e-11)


def test_causal_attention(nets, rng):
    n = 5
    q, k, v = rng.standard_normal((n, 3)), rng.standard_normal((n, 3)), rng.standard_normal((n, 2))
    scores = q @ k.T / np.sqrt(3.0)
    masked = np.where(np.tril(np.ones((n, n))) == 1, scores, -np.inf)
    got = nets.causalAttention(q, k, v, 3.0)
    np.testing.assert_allclose(got, softmax_rows(masked) @ v, rtol=1e-12)
    # Row 0 reads only itself; the last row reads everything, as unmasked attention does.
    np.testing.assert_array_equal(got[0], v[0])
    np.testing.assert_allclose(got[-1], (softmax_rows(scores) @ v)[-1], rtol=1e-12)


def test_causal_mask_and_scores(nets, rng):
    s = rng.standard_normal((4, 4))
    np.testing.assert_array_equal(nets.causalOf(s), np.tril(np.ones((4, 4))))
    q, k = rng.standard_normal((4, 2)), rng.standard_normal((4, 2))
    scores = q @ k.T / np.sqrt(2.0)
    got = nets.causalScores(q, k, 2.0)
    below = np.tril(np.ones((4, 4))) == 1
    np.testing.assert_allclose(got[below], scores[below], rtol=1e-12)
    np.testing.assert_allclose(got[~below], -1e300, rtol=1e-12)
    assert np.all(np.isfinite(got))


# ---------------------------------------------------------------- dropout

def test_dropped(nets, rng):
    a = rng.standard_normal((3, 4))
    u = rng.uniform(size=(3, 4))
    np.testing.assert_allclose(nets.dropped(a, u, 0.3), a * (u >= 0.3) / 0.7, rtol=1e-14)
    np.testing.assert_array_equal(nets.dropped(a, u, 0.0), a)


def test_dropped_with_p_one_returns_zeros(nets, rng):
    a = rng.standard_normal((3, 4))
    u = rng.uniform(size=(3, 4))
    got = nets.dropped(a, u, 1.0)
    assert np.all(np.isfinite(got))
    np.testing.assert_array_equal(got, np.zeros((3, 4)))


# ---------------------------------------------------------------- convolution and pooling

def test_window_building_blocks(nets):
    x = np.zeros((2, 4))
    k = np.zeros(3)
    t, j, s = np.meshgrid(np.arange(4), np.arange(3), np.arange(4), indexing="ij")
    np.testing.assert_array_equal(nets.siteIds(x), np.arange(4))
    np.testing.assert_array_equal(nets.tapIds(k), np.arange(3))
    np.testing.assert_array_equal(nets.windowFrom(x, k), t + j)
    np.testing.assert_array_equal(nets.windowTo(x, k), s)
    np.testing.assert_array_equal(nets.windowOf(x, k), (s == t + j).astype(float))


def test_gathered(nets, rng):
    x = rng.standard_normal((2, 5))
    got = nets.gathered(x, np.ones(3))
    padded = np.hstack([x, np.zeros((2, 3))])
    expected = np.stack([padded[:, t:t + 3] for t in range(5)], axis=1)
    np.testing.assert_array_equal(got, expected)


def test_convolve(nets, rng):
    x = rng.standard_normal((3, 7))
    k = rng.standard_normal(3)
    got = nets.convolve(x, k)
    np.testing.assert_allclose(got, window_sums(x, k), rtol=1e-12, atol=1e-15)
    # np.correlate agrees on the positions that see no padding.
    np.testing.assert_allclose(got[0, :5], np.correlate(x[0], k, mode="valid"), rtol=1e-12)


def test_convolve_tail_reads_zero_padding(nets):
    x = np.array([[1.0, 2.0, 3.0, 4.0, 5.0]])
    got = nets.convolve(x, np.array([1.0, 10.0, 100.0]))
    np.testing.assert_allclose(got, [[321.0, 432.0, 543.0, 54.0, 5.0]], rtol=1e-15)


def test_max_pool(nets, rng):
    x = rng.standard_normal((2, 6)) + 1
    np.testing.assert_array_equal(nets.maxPool(x, np.zeros(3)), window_maxima(x, 3))


def test_max_pool_last_windows_read_at_least_zero_on_a_negative_signal(nets):
    x = np.array([[-3.0, -1.0, -2.0, -5.0, -4.0]])
    got = nets.maxPool(x, np.ones(3))
    np.testing.assert_array_equal(got, [[-1.0, -1.0, -2.0, 0.0, 0.0]])
    assert np.all(got[:, -2:] >= 0)


def test_mean_pool_with_a_vector_window_fails_clearly(nets):
    with pytest.raises(hilbert.HilbertError) as caught:
        nets.meanPool([[1.0, 2.0, 3.0, 4.0]], np.ones(2))
    message = str(caught.value)
    assert "columns" in message
    assert "vector" in message and "no columns" in message
    assert "convolve" in message


def test_mean_pool_alternative_is_convolve_with_equal_weights(nets, rng):
    x = rng.standard_normal((2, 6))
    padded = np.hstack([x, np.zeros((2, 3))])
    means = np.stack([padded[:, t:t + 3].mean(axis=1) for t in range(6)], axis=1)
    np.testing.assert_allclose(nets.convolve(x, np.full(3, 1 / 3)), means, rtol=1e-12, atol=1e-15)


# ---------------------------------------------------------------- recurrence

def test_state_step(nets, rng):
    h = rng.standard_normal((3, 2))
    xt = rng.standard_normal(3)
    wh = rng.standard_normal((2, 2))
    wx = rng.standard_normal(2)
    np.testing.assert_allclose(nets.stateStep(h, xt, wh, wx), np.tanh(h @ wh + np.outer(xt, wx)), rtol=1e-13)


def test_at_time(nets, rng):
    x = rng.standard_normal((3, 4))
    for t in range(4):
        np.testing.assert_array_equal(nets.atTime(x, np.arange(4.0), t), x[:, t])


def test_recurrent_equals_a_hand_loop(nets, rng):
    b, w, steps = 3, 2, 5
    x = rng.standard_normal((b, steps))
    wh = rng.standard_normal((w, w)) * 0.8
    wx = rng.standard_normal(w)
    h0 = rng.standard_normal((b, w)) * 0.1
    h = h0
    for s in range(steps):
        h = np.tanh(h @ wh + np.outer(x[:, s], wx))
    np.testing.assert_allclose(nets.recurrent(x, wh, wx, h0), h, rtol=1e-12)
    np.testing.assert_allclose(nets.stateLoop(steps, x, np.arange(float(steps)), wh, wx, h0), h, rtol=1e-12)
    np.testing.assert_array_equal(nets.stateLoop(0, x, np.arange(float(steps)), wh, wx, h0), h0)


def test_recurrent_walks_forwards(nets):
    """Reversing the sequence changes the final state: order matters."""
    wh, wx, h0 = [[0.5]], np.array([1.0]), [[0.0]]
    forwards = nets.recurrent([[1.0, 0.0, 0.0]], wh, wx, h0)
    backwards = nets.recurrent([[0.0, 0.0, 1.0]], wh, wx, h0)
    np.testing.assert_allclose(backwards, [[np.tanh(1.0)]], rtol=1e-14)
    assert abs(forwards[0, 0] - backwards[0, 0]) > 0.5


# ---------------------------------------------------------------- the gated cell

def test_gated_cell(nets, rng):
    h = rng.standard_normal((3, 2))
    xt = rng.standard_normal(3)
    wh = rng.standard_normal((2, 2))
    wx = rng.standard_normal(2)
    pre = h @ wh + np.outer(xt, wx)
    np.testing.assert_allclose(nets.gateOf(h, xt, wh, wx), sigmoid(pre), rtol=1e-13)
    np.testing.assert_allclose(nets.candidateOf(h, xt, wh, wx), np.tanh(pre), rtol=1e-13)
    c, f, i, g, o = (rng.standard_normal((3, 2)) for _ in range(5))
    np.testing.assert_allclose(nets.cellMemory(c, f, i, g), f * c + i * g, rtol=1e-14)
    np.testing.assert_allclose(nets.cellHidden(c, o), o * np.tanh(c), rtol=1e-14)


def test_gates_start_half_open_with_zero_weights(nets, rng):
    h = rng.standard_normal((2, 3))
    got = nets.gateOf(h, np.ones(2), np.zeros((3, 3)), np.zeros(3))
    np.testing.assert_array_equal(got, np.full((2, 3), 0.5))


# ---------------------------------------------------------------- the adversarial pair

@pytest.fixture
def gan(rng):
    """real 6×3, noise z 5×2, maker wg 2×3, critic wd 3."""
    real = rng.standard_normal((6, 3)) + 1.0
    z = rng.standard_normal((5, 2))
    wg = rng.standard_normal((2, 3)) * 0.5
    wd = rng.standard_normal(3) * 0.5
    return real, z, wg, wd


def test_critic_and_maker(nets, gan):
    real, z, wg, wd = gan
    np.testing.assert_allclose(nets.critic(real, wd), sigmoid(real @ wd), rtol=1e-13)
    np.testing.assert_allclose(nets.madeFrom(z, wg), z @ wg, rtol=1e-13)


def test_losses(nets, gan):
    real, z, wg, wd = gan
    fake = z @ wg
    critic_loss = nets.criticLoss(real, fake, wd)
    maker_loss = nets.makerLoss(fake, wd)
    assert isinstance(critic_loss, float) and isinstance(maker_loss, float)
    assert critic_loss == pytest.approx(critic_loss_unfloored(real, fake, wd), rel=1e-13)
    assert maker_loss == pytest.approx(maker_loss_unfloored(z, wg, wd), rel=1e-13)


def test_critic_loss_is_finite_at_a_critic_of_exactly_0_or_1(nets):
    """σ(−1000) is exactly 0 and σ(40) exactly 1 in float64; the floor keeps the logs finite."""
    wd = np.array([1.0, 0.0])
    assert 1 / (1 + np.exp(-40.0)) == 1.0
    floor_log = -np.log(1e-12)
    at_zero = nets.criticLoss([[-1000.0, 0.0]], [[0.0, 0.0]], wd)    # D(real) = 0
    at_one = nets.criticLoss([[0.0, 0.0]], [[40.0, 0.0]], wd)        # D(fake) = 1
    both = nets.criticLoss([[-1000.0, 0.0]], [[40.0, 0.0]], wd)
    assert np.isfinite(at_zero) and np.isfinite(at_one) and np.isfinite(both)
    assert at_zero == pytest.approx(floor_log + np.log(2.0), rel=1e-13)
    assert at_one == pytest.approx(np.log(2.0) + floor_log, rel=1e-13)
    assert both == pytest.approx(2 * floor_log, rel=1e-13)
    assert nets.makerLoss([[-1000.0, 0.0]], wd) == pytest.approx(floor_log, rel=1e-13)


def test_critic_grad_is_the_gradient_of_the_unfloored_loss(nets, gan):
    real, z, wg, wd = gan
    fake = z @ wg
    expected = central_difference(lambda w: critic_loss_unfloored(real, fake, w), wd)
    assert_gradient(nets.criticGrad(real, fake, wd), expected)


def test_maker_grad_is_the_gradient_of_the_unfloored_loss(nets, gan):
    _, z, wg, wd = gan
    expected = central_difference(lambda w: maker_loss_unfloored(z, w, wd), wg)
    assert_gradient(nets.makerGrad(z, wg, wd), expected)


def test_gan_steps(nets, gan):
    real, z, wg, wd = gan
    new_wg, new_wd = gan_step(0.1, real, z, wg, wd)
    np.testing.assert_allclose(nets.criticStep(0.1, real, z, wg, wd), new_wd, rtol=1e-12)
    np.testing.assert_allclose(nets.makerStep(0.1, z, wg, wd), new_wg, rtol=1e-12)


def test_gan_fit_matches_numpy(nets, gan):
    real, z, wg, wd = gan
    f_wg, f_wd = gan_fit(15, 0.1, real, z, wg, wd)
    np.testing.assert_allclose(nets.ganCritic(15, 0.1, real, z, wg, wd), f_wd, rtol=1e-10)
    np.testing.assert_allclose(nets.ganMaker(15, 0.1, real, z, wg, wd), f_wg, rtol=1e-10)
    np.testing.assert_allclose(nets.criticLoop(15, 0.1, real, z, wg, wd), f_wd, rtol=1e-10)
    np.testing.assert_allclose(nets.makerLoop(15, 0.1, real, z, wg, wd), f_wg, rtol=1e-10)
    np.testing.assert_allclose(nets.ganSamples(15, 0.1, real, z, wg, wd), z @ f_wg, rtol=1e-10)


def test_gan_loops_equal_the_steps_iterated_by_hand(nets, gan):
    real, z, wg, wd = gan
    h_wg, h_wd = wg, wd
    for _ in range(4):
        h_wg, h_wd = nets.makerStep(0.2, z, h_wg, h_wd), nets.criticStep(0.2, real, z, h_wg, h_wd)
    np.testing.assert_allclose(nets.ganMaker(t=4, r=0.2, real=real, z=z, wg=wg, wd=wd), h_wg, rtol=1e-11)
    np.testing.assert_allclose(nets.ganCritic(t=4, r=0.2, real=real, z=z, wg=wg, wd=wd), h_wd, rtol=1e-11)
