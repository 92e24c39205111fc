"""The Prelude modules the original language's samples open (Multivariate, Kernels, Neighbours,
Policies, Temporal, Fields, LinearAlgebra's lowest and highest, Sequences' hazardOf): every
definition against NumPy written here, on random inputs, on both executors; the documented
ties, zero counts and bounds; and figures published with the samples."""

from functools import cache

import numpy as np
import pytest
from conftest import EXECUTORS

import hilbert


@cache
def prelude(name: str, executor: str):
    return hilbert.open(f"Prelude.{name}", executor=executor)


@pytest.fixture(scope="module", params=EXECUTORS)
def executor(request) -> str:
    return request.param


@pytest.fixture
def rng():
    return np.random.default_rng(15)


def marks(t: np.ndarray, extreme) -> np.ndarray:
    """1 at every entry equal to its row's extreme (every tie), as float."""
    return (t == extreme(t, axis=1, keepdims=True)).astype(float)


def split(t: np.ndarray) -> np.ndarray:
    """Every row's largest entries sharing 1 equally."""
    best = marks(t, np.max)
    return best / best.sum(axis=1, keepdims=True)


def hint_of(err: pytest.ExceptionInfo) -> str:
    return "\n".join(n for n in err.value.notes if n.startswith("Instead:"))


# ---------------------------------------------------------------- LinearAlgebra: lowest, highest

def test_lowest_and_highest_mark_every_tie(executor, rng):
    la = prelude("LinearAlgebra", executor)
    tied = rng.integers(0, 3, (7, 4)).astype(float)      # small integers: ties in most rows
    smooth = rng.standard_normal((5, 6))
    for t in (tied, smooth):
        np.testing.assert_array_equal(la.lowest(t), marks(t, np.min))
        np.testing.assert_array_equal(la.highest(t), marks(t, np.max))
    np.testing.assert_array_equal(la.highest([[2.0, 2.0, 2.0]]), [[1.0, 1.0, 1.0]])


def test_a_row_holding_nan_has_no_mark(executor):
    la = prelude("LinearAlgebra", executor)
    t = np.array([[1.0, np.nan, 0.0], [3.0, 1.0, 3.0]])
    np.testing.assert_array_equal(la.lowest(t), [[0, 0, 0], [0, 1, 0]])
    np.testing.assert_array_equal(la.highest(t), [[0, 0, 0], [1, 0, 1]])


def test_lowest_of_a_vector_is_refused_with_a_hint(executor):
    with pytest.raises(hilbert.HilbertError) as err:
        prelude("LinearAlgebra", executor).lowest(np.ones(3))
    assert "minimum(v, 0)" in hint_of(err)


# ---------------------------------------------------------------- Multivariate

def design(rng, n: int, scales=(1.0, 1.0, 1.0)) -> np.ndarray:
    """n rows of random columns at the given scales, and a column of ones last."""
    return np.column_stack([rng.standard_normal((n, len(scales))) * scales, np.ones(n)])


def test_coefficients_are_numpys_least_squares(executor, rng):
    mv = prelude("Multivariate", executor)
    for scales in ((1.0, 1.0, 1.0), (1e4, 1.0, 1e-3)):
        x = design(rng, 40, scales)
        x[:, 0] += 3 * scales[0]                          # a column that correlates with the ones
        # the second design's condition number is about 1e7, its scaled columns' about 10
        y = rng.standard_normal(40)
        expected, *_ = np.linalg.lstsq(x, y, rcond=None)
        np.testing.assert_allclose(mv.coefficients(x, y), expected, rtol=1e-9)


def test_the_answers_of_a_fit(executor, rng):
    mv = prelude("Multivariate", executor)
    x, y = design(rng, 30), rng.standard_normal(30)
    b, *_ = np.linalg.lstsq(x, y, rcond=None)
    np.testing.assert_allclose(mv.apply(x, b), x @ b, rtol=1e-13)
    np.testing.assert_allclose(mv.fitted(x, y), x @ b, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(mv.residuals(x, y), y - x @ b, rtol=1e-9, atol=1e-12)
    assert mv.rSquared(x, y) == pytest.approx(1 - np.sum((y - x @ b) ** 2) / np.sum((y - y.mean()) ** 2),
                                               rel=1e-10)
    assert abs(np.sum(mv.residuals(x, y))) < 1e-10      # an intercept column: residuals sum to 0


def test_the_normal_equations_and_the_design(executor, rng):
    mv = prelude("Multivariate", executor)
    x, y = rng.standard_normal((6, 3)), rng.standard_normal(6)
    np.testing.assert_allclose(mv.gram(x), x.T @ x, rtol=1e-13)
    np.testing.assert_allclose(mv.moment(x, y), x.T @ y, rtol=1e-13)
    np.testing.assert_array_equal(mv.withIntercept(x), np.column_stack([x, np.ones(6)]))
    np.testing.assert_array_equal(mv.onesColumn(x), np.ones((6, 1)))
    lengths = np.sqrt((x ** 2).sum(axis=0))
    np.testing.assert_allclose(mv.columnScales(x), 1 / lengths, rtol=1e-14)
    np.testing.assert_allclose(mv.scaledColumns(x), x / lengths, rtol=1e-14)


def test_a_column_of_zeros_gets_coefficient_zero(executor, rng):
    mv = prelude("Multivariate", executor)
    x = design(rng, 20)
    x[:, 1] = 0.0
    y = rng.standard_normal(20)
    kept = np.delete(x, 1, axis=1)
    expected = np.insert(np.linalg.lstsq(kept, y, rcond=None)[0], 1, 0.0)
    np.testing.assert_allclose(mv.coefficients(x, y), expected, rtol=1e-9, atol=1e-12)
    assert mv.columnScales(x)[1] == 1.0


def test_a_target_matrix_is_refused_with_a_hint(executor):
    with pytest.raises(hilbert.HilbertError) as err:
        prelude("Multivariate", executor).coefficients(np.ones((4, 2)), np.ones((4, 2)))
    assert "each column on its own" in hint_of(err)


# ---------------------------------------------------------------- Kernels

def test_distances_and_kernels(executor, rng):
    kn = prelude("Kernels", executor)
    z, x = rng.standard_normal((4, 3)), rng.standard_normal((5, 3))
    diff = z[:, None, :] - x[None, :, :]
    square = (diff ** 2).sum(axis=2)
    np.testing.assert_allclose(kn.sqDistances(z, x), square, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(kn.distances(z, x), np.sqrt(square), rtol=1e-12, atol=1e-7)
    np.testing.assert_allclose(kn.cityBlock(z, x), np.abs(diff).sum(axis=2), rtol=1e-13)
    np.testing.assert_allclose(kn.linearKernel(z, x), z @ x.T, rtol=1e-13)
    np.testing.assert_allclose(kn.gaussianKernel(z, x, 1.5), np.exp(-square / 4.5), rtol=1e-12)
    np.testing.assert_allclose(kn.polynomialKernel(z, x, 1.0, 3.0), (z @ x.T + 1) ** 3, rtol=1e-12)
    scores = rng.standard_normal((3, 4)) * 50
    shares = np.exp(scores - scores.max(axis=1, keepdims=True))
    np.testing.assert_allclose(kn.softmaxRows(scores), shares / shares.sum(axis=1, keepdims=True),
                               rtol=1e-12)


def test_the_distance_of_a_point_to_itself_is_zero_not_negative(executor, rng):
    kn = prelude("Kernels", executor)
    x = rng.standard_normal((6, 4)) * 1e3
    square = kn.sqDistances(x, x)
    assert square.min() >= 0.0
    np.testing.assert_allclose(np.diag(square), 0.0, atol=1e-9 * np.max(square))


def test_softmax_rows_from_both_modules_must_be_qualified():
    both = "open Prelude.Arithmetic\nopen Prelude.Kernels\n"
    with pytest.raises(hilbert.HilbertError) as err:
        hilbert.compile_source(both + "fn f(m) ↦ softmaxRows(m)")
    assert err.value.code == "E202"
    mod = hilbert.compile_source(both + "fn f(m) ↦ Kernels.softmaxRows(m) − Arithmetic.softmaxRows(m)")
    np.testing.assert_array_equal(mod.f([[1.0, 2.0, 3.0]]), [[0.0, 0.0, 0.0]])


# ---------------------------------------------------------------- Neighbours

def nearest(z, x, k) -> np.ndarray:
    """0/1 marks of each query's k nearest rows of x, equal distances in row order."""
    d = ((z[:, None, :] - x[None, :, :]) ** 2).sum(axis=2)
    out = np.zeros_like(d)
    for i, row in enumerate(d):
        out[i, np.argsort(row, kind="stable")[:int(k)]] = 1.0
    return out


def grid_points(rng, n: int) -> np.ndarray:
    """Points with small integer coordinates: exact distances, many of them equal."""
    return rng.integers(-2, 3, (n, 2)).astype(float)


def test_nearest_neighbours_take_equal_distances_in_row_order(executor, rng):
    nb = prelude("Neighbours", executor)
    z, x = grid_points(rng, 6), grid_points(rng, 9)
    for k in (1, 3, 4, 9, 12):
        np.testing.assert_array_equal(nb.nearestOf(z, x, k), nearest(z, x, min(k, 9)))


def test_votes_shares_and_the_majority(executor, rng):
    nb = prelude("Neighbours", executor)
    z, x = rng.standard_normal((7, 3)), rng.standard_normal((20, 3))
    g = np.eye(3)[rng.integers(0, 3, 20)]
    for k in (1, 4, 5):
        votes = nearest(z, x, k) @ g
        np.testing.assert_array_equal(nb.knnVotes(z, x, g, k), votes)
        np.testing.assert_allclose(nb.knnShares(z, x, g, k), votes / k, rtol=1e-15)
        np.testing.assert_array_equal(nb.knnClassify(z, x, g, k), marks(votes, np.max))


def test_a_tied_vote_marks_every_tied_class(executor):
    nb = prelude("Neighbours", executor)
    x = np.array([[1.0, 0.0], [-2.0, 0.0], [0.0, 3.0], [0.0, -4.0]])
    g = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0]])
    z = np.zeros((1, 2))
    np.testing.assert_array_equal(nb.knnClassify(z, x, g, 2), [[1.0, 1.0]])
    np.testing.assert_array_equal(nb.knnShares(z, x, g, 2), [[0.5, 0.5]])
    np.testing.assert_array_equal(nb.knnClassify(z, x, g, 3), [[1.0, 0.0]])


def test_regression_averages_the_nearest_values(executor, rng):
    nb = prelude("Neighbours", executor)
    z, x, y = rng.standard_normal((5, 2)), rng.standard_normal((12, 2)), rng.standard_normal(12)
    for k in (1, 3, 20):
        chosen = nearest(z, x, min(k, 12))
        np.testing.assert_allclose(nb.knnRegress(z, x, y, k), chosen @ y / chosen.sum(axis=1),
                                   rtol=1e-13)
    with pytest.raises(hilbert.HilbertError) as err:
        nb.knnRegress(z, x, np.ones((12, 2)), 3)
    assert "knnShares" in hint_of(err)


def test_k_must_be_a_whole_number_and_zero_leaves_nothing_to_average(executor, rng):
    nb = prelude("Neighbours", executor)
    z, x, g = rng.standard_normal((2, 2)), rng.standard_normal((4, 2)), np.eye(2)[[0, 1, 0, 1]]
    for k in (2.5, -1.0):
        with pytest.raises(hilbert.HilbertError) as err:
            nb.knnShares(z, x, g, k)
        assert err.value.code == "E500"
    assert np.isnan(nb.knnShares(z, x, g, 0)).all()


def test_pick_nearest_takes_the_nearest_not_yet_chosen(executor, rng):
    nb = prelude("Neighbours", executor)
    d = rng.integers(0, 4, (3, 5)).astype(float)
    chosen = np.zeros((3, 5))
    np.testing.assert_array_equal(nb.pickNearest(0, d, chosen), chosen)
    first = np.eye(5)[np.argmin(d, axis=1)]
    np.testing.assert_array_equal(nb.pickNearest(1, d, chosen), first)
    second = np.eye(5)[np.argmin(d + 1e300 * first, axis=1)]
    np.testing.assert_array_equal(nb.pickNearest(1, d, first), first + second)


def test_nearest_centroid(executor, rng):
    nb = prelude("Neighbours", executor)
    x, z = rng.standard_normal((15, 3)), rng.standard_normal((6, 3))
    g = np.eye(3)[rng.integers(0, 3, 15)]
    sizes = g.sum(axis=0)
    centres = g.T @ x / sizes[:, None]
    np.testing.assert_array_equal(nb.classSizes(g), sizes)
    np.testing.assert_allclose(nb.centroids(x, g), centres, rtol=1e-13)
    d = ((z[:, None, :] - centres[None, :, :]) ** 2).sum(axis=2)
    np.testing.assert_array_equal(nb.centroidPredict(z, x, g), marks(d, np.min))


def test_an_empty_class_is_never_the_nearest_centroid(executor):
    nb = prelude("Neighbours", executor)
    x = np.array([[5.0, 5.0], [6.0, 5.0]])
    g = np.array([[1.0, 0.0], [1.0, 0.0]])               # class 1 has no points
    np.testing.assert_array_equal(nb.centroids(x, g), [[5.5, 5.0], [0.0, 0.0]])
    np.testing.assert_array_equal(nb.centroidPredict(np.zeros((1, 2)), x, g), [[1.0, 0.0]])


def test_the_samples_two_clusters():
    """The published figures of the nearest-neighbour sample: two clusters far apart."""
    nb = prelude("Neighbours", "numba")
    known = np.array([[0, 0], [0, 1], [1, 0], [10, 10], [10, 11], [11, 10]], dtype=float)
    classes = np.repeat(np.eye(2), 3, axis=0)
    asked = np.array([[0.5, 0.5], [10.5, 10.5]])
    np.testing.assert_array_equal(nb.knnClassify(asked, known, classes, 2), np.eye(2))
    np.testing.assert_array_equal(nb.knnShares(asked, known, classes, 3), np.eye(2))
    np.testing.assert_array_equal(nb.centroidPredict(asked, known, classes), np.eye(2))
    one = nb.knnRegress([[0.9]], [[0.0], [1.0], [2.0], [10.0]], [0.0, 10.0, 20.0, 100.0], 3)
    np.testing.assert_allclose(one, [10.0], rtol=1e-15)


# ---------------------------------------------------------------- Policies

def ucb_policy(v, c, n) -> np.ndarray:
    """UCB as documented: untried actions first, sharing the row; then the best upper bound."""
    out = np.zeros_like(v)
    for s in range(v.shape[0]):
        untried = n[s] == 0
        if untried.any():
            out[s] = untried / untried.sum()
        else:
            bound = v[s] + c * np.sqrt(np.log(max(n[s].sum(), 1.0)) / n[s])
            out[s] = split(bound[None])[0]
    return out


def test_epsilon_greedy_splits_ties(executor, rng):
    po = prelude("Policies", executor)
    v = rng.integers(0, 3, (6, 4)).astype(float)
    for eps in (0.0, 0.25, 1.0):
        np.testing.assert_allclose(po.exploring(v, eps), (1 - eps) * split(v) + eps / 4,
                                   rtol=1e-15)
    np.testing.assert_allclose(po.greedyShares(v), split(v), rtol=1e-15)


def test_the_best_arm_gets_one_minus_epsilon_plus_epsilon_over_a(executor):
    """The figures of the bandit sample: ε = 0.3 over three arms is 0.8 for the best."""
    po = prelude("Policies", executor)
    np.testing.assert_allclose(po.exploring([[0.1, 0.5, 0.9]], 0.3), [[0.1, 0.1, 0.8]], rtol=1e-14)
    np.testing.assert_allclose(po.exploring([[5.0, 5.0, 5.0]], 0.0), [[1 / 3] * 3], rtol=1e-15)
    np.testing.assert_allclose(po.exploring([[0.1, 10.0, 10.0]], 0.1),
                               [[0.1 / 3, 0.45 + 0.1 / 3, 0.45 + 0.1 / 3]], rtol=1e-14)
    assert np.isnan(po.exploring([[1.0, np.nan]], 0.1)).all()


def test_upper_confidence_bounds(executor, rng):
    po = prelude("Policies", executor)
    v = rng.standard_normal((5, 4))
    n = rng.integers(0, 4, (5, 4)).astype(float)
    n[0] = [3, 1, 2, 5]                                   # rows with every action tried
    n[1] = [1, 0, 0, 0]                                   # N = 1: ln N is 0
    n[2] = 0                                              # nothing tried yet
    bound = v + 2.0 * np.sqrt(np.log(np.maximum(n.sum(axis=1, keepdims=True), 1)) / np.where(n == 0, 1, n))
    np.testing.assert_allclose(po.upperBounds(v, 2.0, n), bound, rtol=1e-14)
    np.testing.assert_allclose(po.confident(v, 2.0, n), ucb_policy(v, 2.0, n), rtol=1e-15)
    tied = po.confident([[1.0, 1.0, 0.0]], 1.0, [[2.0, 2.0, 2.0]])
    np.testing.assert_allclose(tied, [[0.5, 0.5, 0.0]], rtol=1e-15)


def test_marks_ids_and_tallies(executor, rng):
    po = prelude("Policies", executor)
    a = rng.integers(0, 4, 9).astype(float)
    np.testing.assert_array_equal(po.marked(np.arange(4.0), a), np.eye(4)[a.astype(int)])
    np.testing.assert_array_equal(po.marked(np.arange(4.0), 2.0), [0.0, 0.0, 1.0, 0.0])
    np.testing.assert_array_equal(po.actionIds(np.zeros((2, 5))), np.arange(5.0))
    w = rng.standard_normal(9)
    expected = np.zeros((1, 4))
    np.add.at(expected[0], a.astype(int), w)
    np.testing.assert_allclose(po.tally(np.zeros((1, 4)), a, w), expected, rtol=1e-14)
    np.testing.assert_array_equal(po.ones(w), np.ones(9))
    np.testing.assert_array_equal(po.safe([[0.0, 2.0], [0.0, 0.5]]), [[1.0, 2.0], [1.0, 0.5]])


def test_an_id_outside_the_axis_is_an_error(executor):
    po = prelude("Policies", executor)
    for bad in ([0.0, 4.0], [1.5], [-1.0]):
        with pytest.raises(hilbert.HilbertError) as err:
            po.marked(np.arange(4.0), bad)
        assert err.value.code == "E511"


# ---------------------------------------------------------------- Temporal

@pytest.fixture
def batch(rng):
    """A random table and a batch of 8 steps, some state-action pairs repeated."""
    states, actions = 5, 3
    q = rng.standard_normal((states, actions))
    s, a = rng.integers(0, states, 8), rng.integers(0, actions, 8)
    s[1], a[1] = s[0], a[0]
    s2, a2 = rng.integers(0, states, 8), rng.integers(0, actions, 8)
    rw, done = rng.standard_normal(8), (rng.uniform(size=8) < 0.3).astype(float)
    hot = np.eye(states), np.eye(actions)
    return dict(q=q, s=s, a=a, s2=s2, a2=a2, rw=rw, done=done,
                S=hot[0][s], A=hot[1][a], S2=hot[0][s2], A2=hot[1][a2])


def test_targets(executor, batch, rng):
    tm = prelude("Temporal", executor)
    b, gamma = batch, 0.9
    q = b["q"]
    np.testing.assert_allclose(tm.qTarget(q, b["S2"], b["rw"], gamma, b["done"]),
                               b["rw"] + gamma * (1 - b["done"]) * q[b["s2"]].max(axis=1), rtol=1e-14)
    np.testing.assert_allclose(tm.sarsaTarget(q, b["S2"], b["A2"], b["rw"], gamma, b["done"]),
                               b["rw"] + gamma * (1 - b["done"]) * q[b["s2"], b["a2"]], rtol=1e-14)
    policy = rng.uniform(size=q.shape)
    policy /= policy.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(tm.expectedSarsaTarget(q, b["S2"], policy, b["rw"], gamma, b["done"]),
                               b["rw"] + gamma * (1 - b["done"]) * (policy * q)[b["s2"]].sum(axis=1),
                               rtol=1e-13)
    np.testing.assert_allclose(tm.taken(q, b["S"], b["A"]), q[b["s"], b["a"]], rtol=1e-15)


def test_nudged_moves_each_named_entry_by_the_sum_of_its_steps(executor, batch):
    tm = prelude("Temporal", executor)
    b = batch
    target = b["rw"] + 0.5
    expected = b["q"].copy()
    np.add.at(expected, (b["s"], b["a"]), 0.3 * (target - b["q"][b["s"], b["a"]]))
    np.testing.assert_allclose(tm.nudged(b["q"], b["S"], b["A"], target, 0.3), expected,
                               rtol=1e-13)


def test_one_step_from_an_empty_table(executor):
    """The figure of the grid-world sample: from zeros, state 14, action 0, reward −1 into state
    7 at rate 0.5 makes that entry −0.5 and leaves the other 83 at exactly 0."""
    tm = prelude("Temporal", executor)
    q = np.zeros((21, 4))
    s, a, s2 = np.eye(21)[[14]], np.eye(4)[[0]], np.eye(21)[[7]]
    new = tm.nudged(q, s, a, tm.qTarget(q, s2, [-1.0], 1.0, [0.0]), 0.5)
    assert new[14, 0] == -0.5 and np.count_nonzero(new) == 1


def test_reading_the_table(executor, rng):
    tm = prelude("Temporal", executor)
    q = rng.integers(0, 3, (6, 4)).astype(float)
    np.testing.assert_array_equal(tm.stateIds(q), np.arange(6.0))
    np.testing.assert_array_equal(tm.rowMost(q), q.max(axis=1))
    np.testing.assert_allclose(tm.greedyOf(q), split(q), rtol=1e-15)


# ---------------------------------------------------------------- Sequences: hazardOf

def test_proportional_hazards_are_clamped(executor, rng):
    sq = prelude("Sequences", executor)
    x, b = rng.standard_normal((6, 3)), rng.standard_normal(3)
    x[0] = [1e4, 0.0, 0.0]
    x[1] = [-1e4, 0.0, 0.0]
    b[0] = 1.0
    np.testing.assert_allclose(sq.hazardOf(x, b), np.exp(np.clip(x @ b, -700, 700)), rtol=1e-13)
    h = sq.hazardOf(x, b)
    assert np.isfinite(h).all() and (h > 0).all()
    assert h[0] == pytest.approx(1.0142320547350045e304, rel=1e-14)
    assert np.isnan(sq.hazardOf([[np.nan, 1.0, 1.0]], b)).all()


def test_the_credit_samples_hazards(executor):
    """Figures published with the credit sample: exp(4 ltv + 20 rate − 6)."""
    sq = prelude("Sequences", executor)
    h = sq.hazardOf([[0.607, 0.0615, 1.0], [0.943, 0.0595, 1.0]], [4.0, 20.0, -6.0])
    np.testing.assert_allclose(h, [0.096135, 0.354162], atol=5e-7)


# ---------------------------------------------------------------- Fields

def lundberg_root(c: float, lam: float, m: float) -> float:
    """The positive root of λ (E e^(R X) − 1) = c R for exponential X of mean m, by bisection."""
    def f(r):
        return lam * (1 / (1 - r * m) - 1) - c * r
    lo, hi = 1e-9 / m, (1 - 1e-12) / m
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if f(mid) < 0 else (lo, mid)
    return (lo + hi) / 2


def test_the_reserve_samples_figures(executor):
    """Published with the reserve sample: premium 12 000, claims at rate 0.5 of mean 18 000."""
    f = prelude("Fields", executor)
    assert f.safetyLoading(12000, 0.5, 18000) == pytest.approx(1 / 3, rel=1e-12)
    assert f.adjustment(12000, 0.5, 18000) == pytest.approx(1.388889e-5, rel=1e-6)
    reserve = np.log(1 / 0.05) / f.adjustment(12000, 0.5, 18000)
    assert reserve == pytest.approx(215692.72, abs=0.01)
    assert f.lundberg(reserve, 12000, 0.5, 18000) == pytest.approx(0.05, rel=1e-12)
    assert f.surplusAfter(20000, 12000, 1, 7000) == 25000.0


@pytest.mark.parametrize("premium", [8000.0, 9000.0])
def test_without_a_positive_loading_ruin_is_certain(executor, premium):
    f = prelude("Fields", executor)
    assert f.safetyLoading(premium, 0.5, 18000) <= 0
    assert f.adjustment(premium, 0.5, 18000) == 0.0
    assert f.lundberg(1e6, premium, 0.5, 18000) == 1.0
    assert f.ruinChance(1e6, premium, 0.5, 18000) == 1.0


def test_the_adjustment_coefficient_solves_lundbergs_equation(executor, rng):
    f = prelude("Fields", executor)
    for _ in range(5):
        lam, m = rng.uniform(0.2, 3.0), rng.uniform(1.0, 100.0)
        c = lam * m * rng.uniform(1.05, 3.0)
        assert f.adjustment(c, lam, m) == pytest.approx(lundberg_root(c, lam, m), rel=1e-9)


def test_entrywise_over_tensors(executor):
    f = prelude("Fields", executor)
    c = np.array([12000.0, 9000.0, 15000.0])
    np.testing.assert_allclose(f.adjustment(c, 0.5, 18000.0), np.maximum(1 / 18000 - 0.5 / c, 0),
                               rtol=1e-14)
    np.testing.assert_allclose(f.surplusAfter(c, 100.0, 2.0, c), [200.0] * 3)


def test_the_exact_ruin_chance_against_a_simulation(executor):
    """ψ(u) with exponential claims, against 10 000 simulated funds (300 claims each: after
    them a fund is about 100 mean claims ahead and ruin is beyond e^−25). 0.02 is over four
    standard errors of the simulated share."""
    f = prelude("Fields", executor)
    lam, m, c = 0.5, 18000.0, 12000.0
    draws = np.random.default_rng(2)
    gaps = draws.exponential(1 / lam, (10_000, 300))
    sizes = draws.exponential(m, (10_000, 300))
    for u in (0.0, 18000.0, 60000.0):
        surplus = u + c * np.cumsum(gaps, axis=1) - np.cumsum(sizes, axis=1)
        simulated = np.mean(surplus.min(axis=1) < 0)
        exact = f.ruinChance(u, c, lam, m)
        assert exact == pytest.approx(simulated, abs=0.02)
        assert exact <= f.lundberg(u, c, lam, m)
    assert f.ruinChance(0.0, c, lam, m) == pytest.approx(0.75, rel=1e-12)   # 1 / (1 + θ)
