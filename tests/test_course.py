"""The course seed's numbers, reproduced by examples/Course.hb and examples/CircleClassifier.hb.

Each expected value is a number the seed printed (with a tolerance of half a unit in the last
digit it printed) or an independent computation written here in NumPy, SciPy or closed form;
hilbert's own code is never its own oracle. Float32 effects the seed shows (a variance of 0,
an underflow at −120, a sigmoid that rounds to 1) are tested as what float64 gives instead.
The circle classifier is checked against a NumPy implementation of the seed's loop written
here and, when PyTorch is installed, against the seed's loop itself run by torch in float64.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from scipy.special import erf

import hilbert
from tests.conftest import ROOT, example_script

EXAMPLES = ROOT / "examples"


@functools.cache
def course(executor: str):
    return hilbert.load(EXAMPLES / "Course.hb", executor=executor)


@functools.cache
def circle(executor: str):
    return hilbert.load(EXAMPLES / "CircleClassifier.hb", executor=executor)


def printed(value, decimals: int) -> dict:
    """The tolerance of a number printed with `decimals` decimals: half a unit in the last one."""
    return {"rtol": 0, "atol": 0.5 * 10.0 ** -decimals}


def gelu(z):
    return 0.5 * z * (1 + erf(z / math.sqrt(2)))


def gelu_slope(z):
    """Φ(z) + z φ(z), GELU's derivative by the product rule."""
    return (1 + erf(z / math.sqrt(2))) / 2 + z * np.exp(-z * z / 2) / math.sqrt(2 * math.pi)


def sigmoid(z):
    return 1 / (1 + np.exp(-z))


# The tiny network, dual numbers, activations

TINY = {"x": [[2.0, 1.0]], "t": [[1.0]], "w1": [[0.5, -1.0], [0.25, 0.5]], "b1": [0.1, 0.0],
        "w2": [[0.8], [-0.6]], "b2": [0.2]}


def lab1_backward(x, t, w1, b1, w2, b2):
    """The seed's Lab 1 forward and backward, line for line."""
    x, t, w1, b1, w2, b2 = (np.asarray(a, dtype=float) for a in (x, t, w1, b1, w2, b2))
    z1 = x @ w1 + b1
    h1 = np.maximum(z1, 0)
    dy = 2 * (h1 @ w2 + b2 - t) / x.shape[0]
    dz1 = dy @ w2.T * (z1 > 0)
    return x.T @ dz1, dz1.sum(0), h1.T @ dy, dy.sum(0)


def test_tiny_network_gradients_by_derivative(executor):
    grads = course(executor).tinyGradients(**TINY)
    seed = ([[0.896, 0.0], [0.448, 0.0]], [0.448, 0.0], [[0.756], [0.0]], [0.56])
    for got, want, by_hand in zip(grads, seed, lab1_backward(**TINY), strict=True):
        np.testing.assert_allclose(got, want, **printed(want, 4))
        np.testing.assert_allclose(got, by_hand, rtol=1e-14, atol=1e-15)


def test_dual_number_example(executor):
    f, dx1, dx2 = course(executor).dualExample(2.0, 5.0)
    assert f == pytest.approx(11.6521, abs=5e-5)
    assert dx1 == pytest.approx(5.5, abs=5e-5)
    assert dx2 == pytest.approx(1.7163, abs=5e-5)
    assert (f, dx1, dx2) == pytest.approx(
        (math.log(2) + 10 - math.sin(5), 1 / 2 + 5, 2 - math.cos(5)), rel=1e-14)


ACTIVATION_TABLE = {  # the seed's table: φ′ at z = −3, 0, 1, 2, 5
    "sigmoid": [0.0452, 0.2500, 0.1966, 0.1050, 0.0066],
    "tanh": [0.0099, 1.0000, 0.4200, 0.0707, 0.0002],
    "relu": [0.0, 0.0, 1.0, 1.0, 1.0],
    "gelu": [-0.0119, 0.5000, 1.0833, 1.0852, 1.0000],
    "silu": [-0.0881, 0.5000, 0.9277, 1.0908, 1.0265],
}


def test_activation_derivative_table(executor):
    z = np.array([-3.0, 0.0, 1.0, 2.0, 5.0])
    slopes = dict(zip(ACTIVATION_TABLE, course(executor).activationSlopes(z), strict=True))
    s = sigmoid(z)
    calculus = {"sigmoid": s * (1 - s), "tanh": 1 - np.tanh(z) ** 2, "relu": (z > 0) * 1.0,
                "gelu": gelu_slope(z), "silu": s + z * s * (1 - s)}
    for name, want in ACTIVATION_TABLE.items():
        np.testing.assert_allclose(slopes[name], want, **printed(want, 4), err_msg=name)
        np.testing.assert_allclose(slopes[name], calculus[name], rtol=1e-12, atol=1e-15,
                                   err_msg=name)
    assert slopes["relu"][1] == 0.0  # PyTorch's choice at the kink


def test_gelu_and_silu_minima_by_gradient_steps(executor):
    module = course(executor)
    gelu_at, gelu_low, gelu_slope = module.geluMinimum(-1.0)
    silu_at, silu_low, silu_slope = module.siluMinimum(-1.0)
    assert (gelu_low, gelu_at) == pytest.approx((-0.170, -0.752), abs=5e-4)
    assert (silu_low, silu_at) == pytest.approx((-0.278, -1.278), abs=5e-4)
    assert abs(gelu_slope) < 1e-12 and abs(silu_slope) < 1e-12
    want_gelu = minimize_scalar(gelu, bracket=(-2, -0.5, 0), tol=1e-12)
    want_silu = minimize_scalar(lambda v: v * sigmoid(v), bracket=(-3, -1, 0), tol=1e-12)
    assert gelu_at == pytest.approx(want_gelu.x, abs=1e-6)
    assert silu_at == pytest.approx(want_silu.x, abs=1e-6)
    assert gelu_low == pytest.approx(want_gelu.fun, abs=1e-12)


def test_gelu_tanh_approximation_gap(executor):
    z = np.linspace(-6.0, 6.0, 12001)
    gap, where = course(executor).tanhGap(z)
    approximation = 0.5 * z * (1 + np.tanh(math.sqrt(2 / math.pi) * (z + 0.044715 * z ** 3)))
    numpy_gap = np.abs(gelu(z) - approximation)
    assert gap == pytest.approx(numpy_gap.max(), rel=1e-9)
    assert where == z[numpy_gap.argmax()]
    assert gap < 4.75e-4 and round(gap, 5) == 4.7e-4      # "at most 4.7e-4"
    assert round(abs(where), 1) == 2.7                      # "largest near |z| = 2.7"


# The digits network

def test_digits_network_shapes_and_counts(executor, rng):
    net = course(executor).DigitsNetwork(0)
    x = rng.normal(size=(64, 64))
    logits = net.eval(x)
    assert logits.shape == (64, 10)
    w = net.weights
    h = np.maximum(x @ w["w1"] + w["b1"], 0)
    h = np.maximum(h @ w["w2"] + w["b2"], 0)
    np.testing.assert_allclose(logits, h @ w["w3"] + w["b3"], rtol=1e-12, atol=1e-12)
    assert net.parameters() == 26122
    decayed = sum(v.size for v in w.values() if v.ndim >= 2)
    assert (decayed, net.parameters() - decayed) == (25856, 266)
    assert net.parameters() * 16 == 417952
    assert np.std(w["w1"]) == pytest.approx(math.sqrt(2 / 64), rel=0.05)  # He's scale


# Losses and numerics

def test_softmax_by_hand_overflows_and_the_prelude_does_not(executor):
    module = course(executor)
    z = np.array([[1000.0, 999.0, 998.0]])
    assert np.isnan(module.softmaxByHand(z)).all()
    shifted = np.exp(z - z.max())
    np.testing.assert_allclose(module.softmaxStable(z), shifted / shifted.sum(), rtol=1e-14)
    loss = module.crossEntropyOf(z, [0])
    assert loss == pytest.approx(0.407606, abs=5e-7)
    assert loss == pytest.approx(math.log(np.exp(z - 1000).sum()), rel=1e-14)


def test_log_of_softmax_underflows_and_log_softmax_does_not(executor):
    module = course(executor)
    # float32 loses e^−120 (the seed's −inf); float64 keeps it and loses e^−800 instead
    np.testing.assert_allclose(module.logOfSoftmax([[0.0, -120.0]]), [[0.0, -120.0]], atol=1e-12)
    assert module.logOfSoftmax([[0.0, -800.0]])[0, 1] == -math.inf
    np.testing.assert_array_equal(module.logSoftmaxOf([[0.0, -120.0]]), [[0.0, -120.0]])
    np.testing.assert_array_equal(module.logSoftmaxOf([[0.0, -800.0]]), [[0.0, -800.0]])


def test_binary_cross_entropy_needs_no_clamp(executor):
    module = course(executor)
    exact = 17 + math.log1p(math.exp(-17))                # 17.0000000414, the seed's "17.0"
    assert module.binaryCrossEntropyOf([[17.0]], [[0.0]]) == pytest.approx(exact, rel=1e-15)
    assert round(exact, 10) == 17.0000000414
    # through a sigmoid, 1 − σ(17) cancels: right to about 1e-8 in float64 (exactly 1 in float32)
    assert module.binaryCrossEntropyByHand([[17.0]], [[0.0]]) == pytest.approx(exact, abs=1e-8)
    # once σ(z) rounds to 1 the naive form is infinite (PyTorch would clamp it to 100)
    assert module.binaryCrossEntropyByHand([[40.0]], [[0.0]]) == math.inf
    from_logits = module.binaryCrossEntropyOf([[40.0]], [[0.0]])
    assert from_logits == pytest.approx(40 + math.exp(-40), rel=1e-15)


def test_huber_residual_of_three(executor):
    huber, square = course(executor).huberAgainstSquare(np.array([3.0, -3.0, 0.5]), 1.0)
    np.testing.assert_array_equal(huber, [2.5, 2.5, 0.125])
    np.testing.assert_array_equal(square, [4.5, 4.5, 0.125])


def test_variance_two_ways(executor):
    by_deviations, by_moments = course(executor).spreads([10000.0, 10001.0, 10002.0])
    assert by_deviations == pytest.approx(2 / 3, rel=1e-15)
    assert round(by_deviations, 4) == 0.6667
    # float64 keeps 8 of its 16 digits through the cancellation (float32, the seed's 0, keeps none)
    assert by_moments == pytest.approx(2 / 3, abs=1e-7)
    x32 = np.float32([10000, 10001, 10002])
    assert (x32 * x32).mean() - x32.mean() ** 2 == 0.0


# Batch normalisation

def test_batch_norm_train_and_eval(executor):
    module = course(executor)
    z = np.array([[2.0], [4.0], [6.0], [8.0]])
    out, mean, var = module.batchNormStep(z, [0.0], [1.0], 0.1)
    np.testing.assert_allclose(out.ravel(), [-1.342, -0.447, 0.447, 1.342], **printed(0, 3))
    np.testing.assert_allclose(out, (z - z.mean()) / np.sqrt(z.var() + 1e-5), rtol=1e-14)
    assert mean[0] == pytest.approx(0.5, abs=5e-4)
    assert var[0] == pytest.approx(1.567, abs=5e-4)
    assert var[0] == pytest.approx(0.9 + 0.1 * z.var(ddof=1), rel=1e-15)
    evaluated = module.batchNormAfter([[6.0]], mean, var)[0, 0]
    assert evaluated == pytest.approx(4.394, abs=5e-4)
    assert evaluated == pytest.approx((6 - 0.5) / math.sqrt(0.9 + 0.1 * 20 / 3 + 1e-5), rel=1e-14)


# Optimiser arithmetic

def test_adam_bias_correction_factor(executor):
    t = np.arange(1.0, 10001.0)
    late = course(executor).correctionFactor(t, 0.9, 0.999)
    fast = course(executor).correctionFactor(t, 0.9, 0.95)
    np.testing.assert_allclose(late, (1 - 0.9 ** t) / np.sqrt(1 - 0.999 ** t), rtol=1e-13)
    assert (round(late[0], 2), round(late.max(), 2), t[late.argmax()], round(late[999], 2)) \
        == (3.16, 6.57, 12, 1.26)
    assert round(fast[0], 2) == 0.45 and fast.max() < 1.10 and round(fast.max(), 2) == 1.10


def test_adam_after_a_gradient_spike(executor):
    module = course(executor)
    m, v, root, step = module.spike(100.0, 0.9, 0.999)
    assert (m, v) == pytest.approx((0.9 + 0.1 * 100, 0.999 + 0.001 * 100 ** 2), rel=1e-15)
    assert (round(v, 1), round(root, 1), round(m, 1)) == (11.0, 3.3, 10.9)
    assert step == pytest.approx(m / math.sqrt(v), rel=1e-15) and round(step) == 3
    # √v back within 10%: the excess v − 1 decays by β2 per step until v ≤ 1.1²
    excess, want = v - 1, 0
    while math.sqrt(1 + excess) > 1.1:
        excess, want = 0.999 * excess, want + 1
    steps = module.recoverySteps(100.0, 0.9, 0.999, 0.1)
    assert steps == want
    assert steps == pytest.approx(3860, rel=1e-3)           # "about 3,860 steps"


def test_momentum_is_a_low_pass_filter(executor):
    module = course(executor)
    across, along = module.momentumGain(300, 0.9, -1), module.momentumGain(300, 0.9, 1)
    assert across == pytest.approx(1 / 1.9, abs=1e-12) and round(across, 2) == 0.53
    assert along == pytest.approx(10, abs=1e-12)
    assert round(along / across) == 19


def iteration_radius(kind: str, rate: float, mu: float) -> float:
    """The spectral radius of one step of each optimiser on f(θ) = θ²/2 (λ = 1), from its
    update written as a 2×2 matrix on (θ, v)."""
    # rows: θ' and v'. Heavy ball: v' = μv + θ, θ' = θ − ηv'. Nesterov: θ' = θ − η(θ + μv').
    step = {"sgd": [[1 - rate, 0], [0, 0]],
            "momentum": [[1 - rate, -rate * mu], [1, mu]],
            "nesterov": [[1 - rate * (1 + mu), -rate * mu * mu], [1, mu]]}[kind]
    return max(abs(np.linalg.eigvals(np.array(step, dtype=float))))


LIMITS = [("sgd", 0.0, 2.0), ("momentum", 0.9, 3.8), ("nesterov", 0.9, 2 * 1.9 / 2.8)]


@pytest.mark.parametrize("kind,mu,limit", LIMITS)
def test_stability_limits_as_optimiser_trajectories(kind, mu, limit, executor):
    module, curvature = course(executor), 4.0

    def trajectory(steps, product):
        rate = product / curvature
        if kind == "sgd":
            return module.descentTrajectory(steps, 1.0, rate, curvature)
        run = module.heavyBallTrajectory if kind == "momentum" else module.nesterovTrajectory
        return run(steps, 1.0, rate, mu, curvature)

    assert iteration_radius(kind, limit - 0.01, mu) < 1 < iteration_radius(kind, limit + 0.01, mu)
    assert round(limit, 2) == {"sgd": 2.0, "momentum": 3.8, "nesterov": 1.36}[kind]
    assert abs(trajectory(2000, limit - 0.01)) < 1e-6        # converges just below the limit
    assert abs(trajectory(2000, limit + 0.01)) > 1e6         # diverges just above it
    theta, v, rate = 1.0, 0.0, (limit - 0.5) / curvature      # the same steps in NumPy
    for _ in range(50):
        g = curvature * theta
        v = mu * v + g
        theta -= rate * (g + mu * v if kind == "nesterov" else v)
    assert trajectory(50, limit - 0.5) == pytest.approx(theta, rel=1e-12, abs=1e-300)


# The schedule

def schedule_closed_form(step: float) -> float:
    """The seed's SequentialLR: LinearLR from 1e-3 over 500 steps, then cosine to 3e-5."""
    if step < 500:
        return 3e-3 * (1e-3 + (1 - 1e-3) * step / 500)
    return 3e-5 + (3e-3 - 3e-5) * (1 + math.cos(math.pi * (step - 500) / 9500)) / 2


SCHEDULE_STEPS = [0, 1, 250, 499, 500, 501, 2500, 5000, 7500, 9999, 10000]


def test_warmup_cosine_schedule(executor):
    module = course(executor)
    for step in SCHEDULE_STEPS:
        assert module.courseSchedule(step) == pytest.approx(schedule_closed_form(step), rel=1e-12)
    assert module.courseSchedule(500) == 3e-3
    assert module.courseSchedule(10000) == pytest.approx(3e-5, rel=1e-12)


def test_warmup_cosine_matches_torch_sequential_lr():
    pytest.importorskip("torch")
    rates = example_script("course").torch_schedule(10_001)  # torch's SequentialLR(LinearLR, CosineAnnealingLR)
    module = course("numba")
    for step in SCHEDULE_STEPS:
        assert module.courseSchedule(step) == pytest.approx(rates[step], rel=1e-10)


# The circle classifier

TRAIN, BATCH, EPOCHS = 1536, 64, 2


def numpy_circle_loop(params: list, x, labels, orders, epochs, clip=1.0):
    """The seed's loop written out in NumPy: GELU MLP, cross-entropy on logits, hand-written
    backward pass, clip_grad_norm_(clip), AdamW(3e-3, weight decay 1e-2), cosine over 400 epochs
    stepped per epoch. Answers every batch's loss (before its step) and the final parameters."""
    params = [np.array(p, dtype=float) for p in params]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    losses, taken = [], 0
    for epoch in range(epochs):
        rate = 3e-3 * (1 + math.cos(math.pi * epoch / 400)) / 2
        for start in range(0, len(orders[epoch]), BATCH):
            batch = orders[epoch][start:start + BATCH]
            loss, grads = numpy_circle_gradients(params, x[batch], labels[batch].astype(int))
            losses.append(loss)
            scale = min(1.0, clip / (math.sqrt(sum((g * g).sum() for g in grads)) + 1e-6))
            taken += 1
            for i, g in enumerate(grads):
                g = g * scale
                params[i] = params[i] * (1 - rate * 1e-2)
                m[i] = 0.9 * m[i] + 0.1 * g
                v[i] = 0.999 * v[i] + 0.001 * g * g
                denominator = np.sqrt(v[i]) / math.sqrt(1 - 0.999 ** taken) + 1e-8
                params[i] = params[i] - rate / (1 - 0.9 ** taken) * m[i] / denominator
    return losses, params


def numpy_circle_gradients(params, x, labels):
    """Cross-entropy of the 2→h→h→2 GELU network and its gradients, by the chain rule."""
    w1, b1, w2, b2, w3, b3 = params
    z1 = x @ w1 + b1
    h1 = gelu(z1)
    z2 = h1 @ w2 + b2
    h2 = gelu(z2)
    z3 = h2 @ w3 + b3
    top = z3.max(1, keepdims=True)
    log_shares = z3 - top - np.log(np.exp(z3 - top).sum(1, keepdims=True))
    n = len(labels)
    loss = -log_shares[np.arange(n), labels].mean()
    d3 = np.exp(log_shares)
    d3[np.arange(n), labels] -= 1
    d3 /= n
    d2 = d3 @ w3.T * gelu_slope(z2)
    d1 = d2 @ w2.T * gelu_slope(z1)
    return loss, [x.T @ d1, d1.sum(0), h1.T @ d2, d2.sum(0), h2.T @ d3, d3.sum(0)]


def hilbert_circle_loop(module, initial, x, labels, orders, epochs):
    """The same loop through CircleClassifier.hb, one train call per batch."""
    net = module.CircleClassifier(32, 0)
    net.restart(*initial)
    losses = []
    for epoch in range(epochs):
        for start in range(0, len(orders[epoch]), BATCH):
            batch = orders[epoch][start:start + BATCH]
            losses.append(net.loss(x[batch], labels[batch]))
            net.train(x[batch], labels[batch], epoch)
    return losses, net


NAMES = ("w1", "b1", "w2", "b2", "w3", "b3")


def linear_init(rng) -> list:
    """Parameters drawn as nn.Linear draws them, uniform on ±1/√d_in, stored d_in×d_out."""
    shapes = [((2, 32), 2), ((32,), 2), ((32, 32), 32), ((32,), 32), ((32, 2), 32), ((2,), 32)]
    return [rng.uniform(-1, 1, shape) / math.sqrt(d_in) for shape, d_in in shapes]


def circle_data(rng):
    points = rng.random((2048, 2)) * 2 - 1
    labels = ((points ** 2).sum(1) < 0.5).astype(float)
    train = points[:TRAIN]
    return (points - train.mean(0)) / train.std(0, ddof=1), labels


def test_circle_classifier_standardises_with_training_statistics(executor, rng):
    points = rng.random((300, 2)) * 2 - 1
    module = circle(executor)
    mu, sd = module.trainingStatistics(points[:200])
    np.testing.assert_allclose(mu, points[:200].mean(0), rtol=1e-14)
    np.testing.assert_allclose(sd, points[:200].std(0, ddof=1), rtol=1e-14)
    np.testing.assert_allclose(module.standardise(points, mu, sd),
                               (points - points[:200].mean(0)) / points[:200].std(0, ddof=1),
                               rtol=1e-13)


def test_circle_classifier_loop_agrees_with_numpy(executor, rng):
    x, labels = circle_data(rng)
    initial = linear_init(rng)
    orders = [rng.permutation(TRAIN) for _ in range(EPOCHS)]
    ours, net = hilbert_circle_loop(circle(executor), initial, x, labels, orders, EPOCHS)
    want, params = numpy_circle_loop(initial, x, labels, orders, EPOCHS)
    np.testing.assert_allclose(ours, want, rtol=1e-10)
    for name, value in zip(NAMES, params, strict=True):
        np.testing.assert_allclose(getattr(net, name), value, rtol=1e-10, atol=1e-12, err_msg=name)
    assert ours[-1] < 0.5 * ours[0]                         # and it learns
    hidden = gelu(gelu(x[TRAIN:] @ params[0] + params[1]) @ params[2] + params[3])
    logits = hidden @ params[4] + params[5]                 # accuracy by NumPy
    assert net.accuracyOn(x[TRAIN:], labels[TRAIN:]) == np.mean(logits.argmax(1) == labels[TRAIN:])


def test_circle_classifier_clips_the_global_gradient_norm(executor, rng):
    x, labels = circle_data(rng)
    # weights four times nn.Linear's scale give a gradient norm well above the threshold 1
    initial = [4 * w for w in linear_init(rng)]
    net = circle(executor).CircleClassifier(32, 0)
    net.restart(*initial)
    _, grads = numpy_circle_gradients(initial, x[:64], labels[:64].astype(int))
    norm = math.sqrt(sum((g * g).sum() for g in grads))
    assert norm > 2
    for start in (0, 64, 128):                               # Adam's first step is scale-free:
        net.train(x[start:start + 64], labels[start:start + 64], 0)   # clipping shows later
    order = [np.arange(192)]
    _, clipped = numpy_circle_loop(initial, x, labels, order, 1)
    _, unclipped = numpy_circle_loop(initial, x, labels, order, 1, clip=math.inf)
    for name, want, other in zip(NAMES, clipped, unclipped, strict=True):
        np.testing.assert_allclose(getattr(net, name), want, rtol=1e-11, atol=1e-14, err_msg=name)
        assert np.abs(want - other).max() > 1e-7, name       # clipping made a difference


def test_circle_classifier_matches_the_seed_loop_in_torch_float64(executor):
    torch = pytest.importorskip("torch")
    import torch.nn as nn
    import torch.nn.functional as F

    torch.set_num_threads(1)
    torch.manual_seed(0)                                     # the seed's draws, in its order
    X = torch.rand(2048, 2) * 2 - 1
    T = ((X ** 2).sum(1) < 0.5).long()
    model = nn.Sequential(nn.Linear(2, 32), nn.GELU(), nn.Linear(32, 32), nn.GELU(),
                          nn.Linear(32, 2)).double()
    initial = [p.detach().numpy().T.copy() for p in model.parameters()]
    X = X.double()
    Xtr, Ttr, Xva, Tva = X[:TRAIN], T[:TRAIN], X[TRAIN:], T[TRAIN:]
    mu, sd = Xtr.mean(0), Xtr.std(0)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-2)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=400)
    rows, orders = [], []
    for _ in range(EPOCHS):
        perm = torch.randperm(TRAIN)
        orders.append(perm.numpy().copy())
        for i in range(0, TRAIN, BATCH):
            idx = perm[i:i + BATCH]
            loss = F.cross_entropy(model((Xtr[idx] - mu) / sd), Ttr[idx])
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
        sched.step()
        with torch.no_grad():
            accuracy = (model((Xva - mu) / sd).argmax(1) == Tva).double().mean().item()
        rows.append((loss.item(), accuracy))

    module = circle(executor)
    points, labels = X.numpy(), T.double().numpy()
    x = module.standardise(points, *module.trainingStatistics(points[:TRAIN]))
    net = module.CircleClassifier(32, 0)
    net.restart(*initial)
    for epoch in range(EPOCHS):
        for start in range(0, TRAIN, BATCH):
            batch = orders[epoch][start:start + BATCH]
            last = net.loss(x[batch], labels[batch])
            net.train(x[batch], labels[batch], epoch)
        loss, accuracy = rows[epoch]
        assert last == pytest.approx(loss, rel=1e-8), f"epoch {epoch + 1}"
        assert net.accuracyOn(x[TRAIN:], labels[TRAIN:]) == accuracy
