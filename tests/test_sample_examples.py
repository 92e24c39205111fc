"""The examples written after the original language's samples (Line, Classifier, Nearest,
Bandit, QTable, Sarsa, Reserve, Credit, and the scripts bandit.py and cliff_walk.py): each is
loaded and what it computes is checked against NumPy written here, on both executors."""

import zlib
from functools import cache

import numpy as np
import pytest
from conftest import EXECUTORS, ROOT, example_script
from test_prelude_samples import marks, nearest, split, ucb_policy

import hilbert

EXAMPLES = ROOT / "examples"


@cache
def example(name: str, executor: str):
    return hilbert.load(EXAMPLES / f"{name}.hb", executor=executor)


@pytest.fixture(scope="module", params=EXECUTORS)
def executor(request) -> str:
    return request.param


@pytest.fixture
def rng():
    return np.random.default_rng(6)


# ---------------------------------------------------------------- Line

def test_the_least_squares_line(executor, rng):
    line = example("Line", executor)
    x = rng.uniform(0, 1, 25)
    y = 2 * x + 1 + rng.normal(0, 0.1, 25)
    slope, intercept = np.polyfit(x, y, 1)
    np.testing.assert_allclose(line.lineOf(x, y), [slope, intercept], rtol=1e-10)
    z = np.array([-1.0, 0.5, 3.0])
    np.testing.assert_allclose(line.predictedAt(x, y, z), slope * z + intercept, rtol=1e-10)
    residuals = y - (slope * x + intercept)
    assert line.spreadOf(x, y) == pytest.approx(np.std(residuals, ddof=1), rel=1e-9)
    assert line.explainedBy(x, y) == pytest.approx(1 - residuals @ residuals / np.sum((y - y.mean()) ** 2),
                                                   rel=1e-10)


def test_the_line_learner_descends_to_the_same_line(executor, rng):
    learner = example("Line", executor).LineLearner
    x = rng.uniform(0, 1, 25)
    y = 2 * x + 1 + rng.normal(0, 0.1, 25)
    design = np.column_stack([x, np.ones(25)])
    b = np.zeros(2)
    for _ in range(50):                                  # the gradient of the mean squared error
        b = b - 0.1 * 2 / 25 * design.T @ (design @ b - y)
    net = learner(2)
    net.train(design, y, 0.1, steps=50)
    np.testing.assert_allclose(net.b, b, rtol=1e-12)
    assert net.loss(design, y) == pytest.approx(np.mean((design @ b - y) ** 2), rel=1e-12)
    net.train(design, y, 0.1, steps=950)
    np.testing.assert_allclose(net.b, np.polyfit(x, y, 1), atol=1e-6)
    np.testing.assert_allclose(net.eval(design), design @ net.b, rtol=1e-14)


# ---------------------------------------------------------------- Classifier

XOR_X = np.array([[0, 0, 1], [0, 1, 1], [1, 0, 1], [1, 1, 1]], dtype=float)
XOR_Y = np.array([[1, 0], [0, 1], [0, 1], [1, 0]], dtype=float)


def network_step(x, y, w1, w2, rate):
    """One gradient step of relu(x w1) w2 on (1/2n) ‖out − y‖², both layers at once."""
    hidden = x @ w1
    delta = (np.maximum(hidden, 0) @ w2 - y) / len(x)
    back = (delta @ w2.T) * (hidden > 0)
    return w1 - rate * x.T @ back, w2 - rate * np.maximum(hidden, 0).T @ delta


def test_the_classifier_draws_trains_and_answers(executor):
    net = example("Classifier", executor).Classifier(3, 8, 2, seed=1)
    for name, shape in (("first", (3, 8)), ("second", (8, 2))):
        drawn = np.random.default_rng([1, zlib.crc32(name.encode())]).standard_normal(shape) * 0.5
        np.testing.assert_array_equal(getattr(net, name), drawn)
    w1, w2 = net.first, net.second
    for _ in range(40):
        w1, w2 = network_step(XOR_X, XOR_Y, w1, w2, 0.5)
    net.train(XOR_X, XOR_Y, 0.5, steps=40)
    np.testing.assert_allclose(net.first, w1, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(net.second, w2, rtol=1e-10, atol=1e-12)
    scores = np.maximum(XOR_X @ w1, 0) @ w2
    np.testing.assert_allclose(net.eval(XOR_X), scores, rtol=1e-10, atol=1e-12)
    shares = np.exp(scores - scores.max(axis=1, keepdims=True))
    np.testing.assert_allclose(net.shares(XOR_X), shares / shares.sum(axis=1, keepdims=True),
                               rtol=1e-9)
    np.testing.assert_array_equal(net.winner(XOR_X), marks(net.eval(XOR_X), np.max))
    assert net.loss(XOR_X, XOR_Y) == pytest.approx(np.sum((scores - XOR_Y) ** 2) / 4, rel=1e-9)


def test_the_trained_classifier_picks_every_xor_class(executor):
    net = example("Classifier", executor).Classifier(3, 8, 2, seed=1)
    net.train(XOR_X, XOR_Y, 0.5, steps=500)
    np.testing.assert_array_equal(net.winner(XOR_X), XOR_Y)


def test_without_the_ones_column_the_origin_ties(executor):
    net = example("Classifier", executor).Classifier(2, 8, 2, seed=7)
    net.train(XOR_X[:, :2], XOR_Y, 0.5, steps=100)
    np.testing.assert_array_equal(net.eval(XOR_X[:1, :2]), [[0.0, 0.0]])
    np.testing.assert_array_equal(net.winner(XOR_X[:1, :2]), [[1.0, 1.0]])   # a tie marks both


# ---------------------------------------------------------------- Nearest

def test_nearest_neighbours_and_centroids(executor, rng):
    near = example("Nearest", executor)
    x = rng.integers(-3, 4, (16, 2)).astype(float)        # exact distances, with ties
    z = rng.integers(-3, 4, (5, 2)).astype(float)
    g = np.eye(3)[rng.integers(0, 3, 16)]
    y = rng.standard_normal(16)
    chosen = nearest(z, x, 5)
    np.testing.assert_array_equal(near.classifyNear(z, x, g, 5), marks(chosen @ g, np.max))
    np.testing.assert_allclose(near.sharesNear(z, x, g, 5), chosen @ g / 5, rtol=1e-15)
    np.testing.assert_allclose(near.regressNear(z, x, y, 5), chosen @ y / 5, rtol=1e-13)
    np.testing.assert_allclose(near.howFar(z, x), np.sqrt(((z[:, None, :] - x[None, :, :]) ** 2).sum(axis=2)),
                               rtol=1e-15)
    centres = g.T @ x / g.sum(axis=0)[:, None]
    d = ((z[:, None, :] - centres[None, :, :]) ** 2).sum(axis=2)
    np.testing.assert_array_equal(near.nearestCentre(z, x, g), marks(d, np.min))


# ---------------------------------------------------------------- Bandit

def test_the_bandits_published_figures(executor):
    """The bandit sample's figures: optimism, 0.8 for the best of three at ε = 0.3, ties split."""
    Bandit = example("Bandit", executor).Bandit
    hopeful = Bandit(3, 10.0)
    hopeful.train([1], [0.5])
    np.testing.assert_allclose(hopeful.means(), [[10.0, 0.5, 10.0]], rtol=1e-15)
    np.testing.assert_allclose(hopeful.choose(0.0), [[0.5, 0.0, 0.5]], rtol=1e-15)
    steady = Bandit(3, 0.0)
    for arm, pays in enumerate((0.1, 0.5, 0.9)):
        steady.train([arm] * 5, [pays] * 5)
    np.testing.assert_allclose(steady.choose(0.3), [[0.1, 0.1, 0.8]], rtol=1e-14)
    np.testing.assert_allclose(steady.choose(0.0), [[0.0, 0.0, 1.0]], atol=1e-15)
    np.testing.assert_array_equal(steady.counts, [[5.0, 5.0, 5.0]])
    np.testing.assert_allclose(Bandit(3, 5.0).choose(0.0), [[1 / 3] * 3], rtol=1e-15)


def test_the_bandit_against_numpy(executor, rng):
    bandit = example("Bandit", executor).Bandit(4, 2.0)
    arms = rng.integers(0, 3, 12)                          # arm 3 is never pulled
    rewards = rng.standard_normal(12)
    bandit.train(arms[:5], rewards[:5])
    bandit.train(arms[5:], rewards[5:])
    total, counts = np.zeros(4), np.zeros(4)
    np.add.at(total, arms, rewards)
    np.add.at(counts, arms, 1.0)
    means = np.where(counts == 0, 2.0, total / np.where(counts == 0, 1.0, counts))[None]
    np.testing.assert_allclose(bandit.total, total[None], rtol=1e-14)
    np.testing.assert_array_equal(bandit.counts, counts[None])
    np.testing.assert_allclose(bandit.means(), means, rtol=1e-14)
    np.testing.assert_allclose(bandit.choose(0.2), 0.8 * split(means) + 0.05, rtol=1e-14)
    np.testing.assert_allclose(bandit.ucb(1.5), ucb_policy(means, 1.5, counts[None]), rtol=1e-15)
    bandit.train([3], [0.0])                               # every arm tried: the bounds decide
    counts[3] += 1
    means[0, 3] = 0.0
    np.testing.assert_allclose(bandit.ucb(1.5), ucb_policy(means, 1.5, counts[None]), rtol=1e-15)


# ---------------------------------------------------------------- QTable and Sarsa

def test_one_step_moves_one_entry(executor):
    """The grid-world sample: from zeros, one step at rate 0.5 makes q[14, 0] = −0.5 and leaves
    the other 83 entries at exactly 0; Q-learning aims at the best next action (10 → 5) where
    SARSA aims at the action taken (0 → 0)."""
    table = example("QTable", executor).QTable(21, 4)
    table.train([14], [0], [-1], [7], [0], 0.5, 1.0)
    assert table.q[14, 0] == -0.5 and np.count_nonzero(table.q) == 1
    off = example("QTable", executor).QTable(21, 4)
    on = example("Sarsa", executor).Sarsa(21, 4)
    off.train([5], [1], [10], [5], [1], 1.0, 1.0)
    on.train([5], [1], [10], [5], [1], [1], 1.0, 1.0)
    off.train([0], [0], [0], [5], [0], 0.5, 1.0)
    on.train([0], [0], [0], [5], [0], [0], 0.5, 1.0)
    assert off.q[0, 0] == 5.0 and on.q[0, 0] == 0.0


def td_step(q, s, a, rw, s2, done, rate, gamma, a2=None):
    """One batch of Q-learning (or SARSA, given a2) steps, all from the table as it was."""
    landing = q[s2].max(axis=1) if a2 is None else q[s2, a2]
    new = q.copy()
    np.add.at(new, (s, a), rate * (rw + gamma * (1 - done) * landing - q[s, a]))
    return new


@pytest.mark.parametrize("kind", ["QTable", "Sarsa"])
def test_tables_against_numpy(executor, rng, kind):
    learner = getattr(example(kind, executor), kind)(6, 3)
    q = np.zeros((6, 3))
    for _ in range(4):
        s, a, s2, a2 = (rng.integers(0, k, 5) for k in (6, 3, 6, 3))
        s[1], a[1] = s[0], a[0]                            # one pair twice in the batch
        rw, done = rng.standard_normal(5), (rng.uniform(size=5) < 0.3).astype(float)
        if kind == "QTable":
            learner.train(s, a, rw, s2, done, 0.4, 0.9)
            q = td_step(q, s, a, rw, s2, done, 0.4, 0.9)
        else:
            learner.train(s, a, rw, s2, a2, done, 0.4, 0.9)
            q = td_step(q, s, a, rw, s2, done, 0.4, 0.9, a2)
    np.testing.assert_allclose(learner.q, q, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(learner.worth(), q.max(axis=1), rtol=1e-15)
    np.testing.assert_allclose(learner.plan(), split(q), rtol=1e-15)
    np.testing.assert_allclose(learner.act([4, 0, 4], 0.1), (0.9 * split(q) + 0.1 / 3)[[4, 0, 4]],
                               rtol=1e-14)


# ---------------------------------------------------------------- Reserve and Credit

def test_the_reserve_example(executor):
    reserve = example("Reserve", executor)
    assert reserve.loadingOf(12000, 0.5, 18000) == pytest.approx(1 / 3, rel=1e-12)
    assert reserve.adjustmentOf(12000, 0.5, 18000) == pytest.approx(1 / 18000 - 0.5 / 12000, rel=1e-12)
    assert reserve.reserveFor(12000, 0.5, 18000, 0.05) == pytest.approx(215692.72, abs=0.01)
    assert reserve.ruinBound(reserve.reserveFor(12000, 0.5, 18000, 0.05), 12000, 0.5, 18000) == \
        pytest.approx(0.05, rel=1e-12)
    assert reserve.ruinExactly(0, 12000, 0.5, 18000) == pytest.approx(0.75, rel=1e-12)
    assert reserve.reserveFor(8000, 0.5, 18000, 0.05) == np.inf   # no reserve is enough
    assert reserve.afterOneYear(20000, 12000, 7000) == 25000.0


def test_the_credit_example(executor, rng):
    credit = example("Credit", executor)
    x = np.column_stack([rng.uniform(0.6, 0.95, 6), rng.uniform(0.03, 0.08, 6), np.ones(6)])
    b = np.array([4.0, 20.0, -6.0])
    price = rng.uniform(1e5, 3e5, 6)
    hazard = np.exp(x @ b)
    np.testing.assert_allclose(credit.defaultHazard(x, b), hazard, rtol=1e-14)
    np.testing.assert_allclose(credit.defaultChance(hazard), 1 - np.exp(-hazard), rtol=1e-14)
    loss = price * np.maximum(x[:, 0] - 0.75, 0)
    np.testing.assert_allclose(credit.expectedLoss(x, b, price, 0.75), (1 - np.exp(-hazard)) * loss,
                               rtol=1e-13)
    assert credit.lossGivenDefault(280000, 0.943, 0.75) == pytest.approx(54040.0, rel=1e-12)
    assert credit.lossGivenDefault(200000, 0.607, 0.75) == 0.0


# ---------------------------------------------------------------- the scripts

def chances(q_row: np.ndarray, eps: float) -> np.ndarray:
    return (1 - eps) * split(q_row[None])[0] + eps / len(q_row)


@pytest.mark.parametrize("kind", ["q", "sarsa"])
def test_the_cliff_walk_is_the_numpy_walk(executor, kind):
    """cliff_walk.run against the same walk with its table kept by NumPy, drawing from the same
    generator: the same actions, returns and table."""
    walk = example_script("cliff_walk")
    world = walk.Cliff(3, 5)
    table, returns = walk.run(kind, world, episodes=6, seed=4, executor=executor)
    draws, q, expected = np.random.default_rng(4), np.zeros((world.states, 4)), []
    for _ in range(6):
        state, total = world.start, 0.0
        action = int(draws.choice(4, p=chances(q[state], 0.1)))
        for _ in range(60):
            landed, reward, done = world.step(state, action)
            following = int(draws.choice(4, p=chances(q[landed], 0.1)))
            q = td_step(q, [state], [action], reward, [landed], float(done), 0.5, 1.0,
                        None if kind == "q" else [following])
            total += reward
            state, action = landed, following
            if done:
                break
        expected.append(total)
    assert returns == expected
    np.testing.assert_allclose(table, q, rtol=1e-12, atol=1e-12)


def test_the_cliff_walk_prints_both_learners(capsys):
    assert example_script("cliff_walk").main(["--episodes", "3", "--rows", "2", "--columns", "4"]) == 0
    out = capsys.readouterr().out
    assert "Q-learning: greedy path" in out and "SARSA: greedy path" in out and "S C C G" in out


@pytest.mark.parametrize("ucb", [None, 0.8])
def test_the_bandit_script_is_the_numpy_bandit(executor, ucb):
    bandit, arms = example_script("bandit").play([0.1, 0.5, 0.9], pulls=25, seed=5, eps=0.2, start=1.0,
                                         ucb=ucb, executor=executor)
    draws, total, counts, expected = np.random.default_rng(5), np.zeros(3), np.zeros(3), []
    for _ in range(25):
        means = np.where(counts == 0, 1.0, total / np.where(counts == 0, 1.0, counts))
        p = chances(means, 0.2) if ucb is None else ucb_policy(means[None], ucb, counts[None])[0]
        arm = int(draws.choice(3, p=p))
        total[arm] += draws.normal([0.1, 0.5, 0.9][arm], 0.2)
        counts[arm] += 1
        expected.append(arm)
    assert arms == expected
    np.testing.assert_allclose(bandit.total, total[None], rtol=1e-13)


def test_the_bandit_script_prints_its_estimates(capsys):
    assert example_script("bandit").main(["--pulls", "12", "--ucb", "1"]) == 0
    out = capsys.readouterr().out
    assert "12 pulls, UCB with c = 1.0" in out and out.count("\n") == 5
