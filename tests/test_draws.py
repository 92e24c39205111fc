"""Counter-based random draws (compiler/ops/draws.py, issue 28): Philox-4x32-10 against the
known-answer vectors published with Random123, the distributions (moments and a
Kolmogorov–Smirnov test at fixed keys), exact equality across executors, dtypes, loops and
compiled code, reproducibility of any step without the steps before it, draws as constants
under ∂, dropout and shuffling in a trained model."""

from __future__ import annotations

import numpy as np
import pytest
from hilbert.compiler.ops import draws

import hilbert
from hilbert import HilbertError

SOURCE = """
open Prelude.Norms
fn u(k, t, x) ↦ uniform(k, t, x)
fn g(k, t, x) ↦ gaussian(k, t, x)
fn b(p, k, t, x) ↦ bernoulli(p, k, t, x)
fn order(k, t, v) ↦ permutation(k, t, v)
fn summed(n, x) ↦ walk(n, x, x ^ 0 · 0)
def walk(n, x, acc) ≔ if n = 0 then acc else walk(n − 1, x, acc + gaussian(7, n, x))
fn slope(w, x) ↦ ∂ einsum("i->", w · uniform(3, 1, x) + gaussian(3, 2, w)) / ∂ w
fn dropped(x, p, k, t) ↦ dropout(x, p, k, t)
"""


def _words(counter, key):
    arrays = tuple(np.array([c], dtype=np.uint64) for c in counter)
    return [int(w[0]) for w in draws._rounds(arrays, *key)]


def test_philox_gives_the_published_known_answers():
    # Random123's kat_vectors for philox4x32_10: counter, key, then the four output words
    assert _words((0, 0, 0, 0), (0, 0)) == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]
    assert _words((0xFFFFFFFF,) * 4, (0xFFFFFFFF, 0xFFFFFFFF)) == \
        [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]
    assert _words((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0)) \
        == [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]


def test_the_distributions_are_uniform_and_normal():
    stats = pytest.importorskip("scipy.stats")
    u = draws.uniform(1, 1, (200_000,))
    assert 0 <= u.min() and u.max() < 1
    assert abs(u.mean() - 0.5) < 4 * np.sqrt(1 / 12 / u.size)
    assert abs(u.var() - 1 / 12) < 0.002
    assert stats.kstest(u, "uniform").pvalue > 0.01
    z = draws.gaussian(2, 3, (200_000,))
    assert abs(z.mean()) < 4 / np.sqrt(z.size) and abs(z.var() - 1) < 0.01
    assert stats.kstest(z, "norm").pvalue > 0.01
    # one entry per step, and per key: the streams along the counter's other words are uniform
    by_step = np.array([draws.uniform(9, t, (1,))[0] for t in range(5000)])
    by_key = np.array([draws.uniform(k, 0, (1,))[0] for k in range(5000)])
    assert stats.kstest(by_step, "uniform").pvalue > 0.01
    assert stats.kstest(by_key, "uniform").pvalue > 0.01
    assert abs(np.corrcoef(u[:5000], draws.uniform(1, 2, (5000,)))[0, 1]) < 0.05
    f = draws.uniform(1, 1, (100_000,), np.float32)
    assert f.dtype == np.float32 and f.max() < 1 and abs(f.mean() - 0.5) < 0.005


@pytest.fixture(scope="module", params=["numba", "reference", "dask"])
def module(request):
    return hilbert.compile_source(SOURCE, executor=request.param)


def test_every_executor_draws_the_same_numbers(module):
    x = np.zeros((3, 4))
    np.testing.assert_array_equal(module.u(5, 2, x), draws.uniform(5, 2, (3, 4)))
    np.testing.assert_array_equal(module.g(5, 2, x), draws.gaussian(5, 2, (3, 4)))
    np.testing.assert_array_equal(module.b(0.3, 5, 2, x), draws.uniform(5, 2, (3, 4)) < 0.3)
    order = module.order(4, 1, np.zeros(10))
    np.testing.assert_array_equal(np.sort(order), np.arange(10))
    np.testing.assert_array_equal(order, np.argsort(draws.uniform(4, 1, (10,)), kind="stable"))
    f = module.u(5, 2, np.zeros(6, np.float32))
    assert f.dtype == np.float32
    np.testing.assert_array_equal(f, draws.uniform(5, 2, (6,), np.float32))


def test_a_step_inside_a_loop_is_the_step_drawn_alone(module):
    x = np.zeros(5)
    want = sum(draws.gaussian(7, n, (5,)) for n in range(1, 9))
    np.testing.assert_allclose(module.summed(8, x), want, rtol=1e-15, atol=1e-15)
    assert not np.array_equal(module.g(7, 3, x), module.g(7, 4, x))
    assert not np.array_equal(module.g(7, 3, x), module.g(8, 3, x))


def test_draws_are_constants_under_the_derivative(module):
    x = np.zeros(4)
    np.testing.assert_array_equal(module.slope(np.ones(4), x), draws.uniform(3, 1, (4,)))


def test_dropout_keeps_a_fraction_and_rescales(module):
    x = np.ones((200, 50))
    y = module.dropped(x, 0.25, 11, 3)
    kept = draws.uniform(11, 3, x.shape) < 0.75
    np.testing.assert_allclose(y, np.where(kept, 1 / 0.75, 0.0), rtol=1e-15)
    assert abs(kept.mean() - 0.75) < 0.01


@pytest.mark.parametrize("key", [-1, 0.5, np.inf, np.nan, 2.0 ** 64])
def test_a_key_or_step_that_is_no_whole_number_is_E512(module, key):
    with pytest.raises(HilbertError) as err:
        module.u(key, 0, np.zeros(2))
    assert err.value.code == "E512"
    with pytest.raises(HilbertError) as err:
        module.u(0, key, np.zeros(2))
    assert err.value.code == "E512" and "step" in err.value.message


def test_a_draw_with_the_wrong_number_of_arguments_is_E201():
    with pytest.raises(HilbertError) as err:
        hilbert.compile_source("fn f(k, x) ↦ uniform(k, x)")
    assert err.value.code == "E201" and "(key, step, x)" in err.value.message


def test_a_draw_in_a_loop_is_not_moved_before_it():
    # a loop of no steps never draws, so its bad key raises nothing
    module = hilbert.compile_source("""
fn f(n, k, x) ↦ walk(n, k, x, x)
def walk(n, k, y, acc) ≔ if n = 0 then acc else walk(n − 1, k, y, acc + uniform(k, 0, y))
""")
    np.testing.assert_array_equal(module.f(0, 0.5, np.zeros(3)), np.zeros(3))
    with pytest.raises(HilbertError) as err:
        module.f(2, 0.5, np.zeros(3))
    assert err.value.code == "E512"


def test_a_seeded_draw_outside_an_initialiser_is_still_E207_and_says_how_to_draw():
    with pytest.raises(HilbertError) as err:
        hilbert.compile_source("fn f(s) ↦ gaussian(s)")
    assert err.value.code == "E207" and "gaussian(key, step, x)" in err.value.message


def test_a_model_trains_with_dropout_and_a_shuffled_batch_reproducibly():
    source = """
open Prelude.Norms
model Net : Learner {
  weight w : Tensor[3] from 0.5
  state t : Tensor[] from 0
  def train(xs, ys) {
    w ≔ w − 0.1 · ∂ loss(xs, ys, t) / ∂ w
    t ≔ t + 1
  }
  def loss(xs, ys, step) ≔
    let i ≔ permutation(1, step, ys)[0]
    in (einsum("j,j->", dropout(xs[i], 0.5, 2, step), w) − ys[i])²
}
"""
    xs = np.arange(12.0).reshape(4, 3) / 10
    ys = np.array([1.0, -1.0, 0.5, 2.0])
    results = []
    for executor in ("numba", "reference"):
        net = hilbert.compile_source(source, executor=executor).Net()
        net.train(xs, ys, steps=6)
        results.append(np.array(net.w))
    w = np.full(3, 0.5)  # the same steps in NumPy, from the draws' own definitions
    for t in range(6):
        i = int(np.argsort(draws.uniform(1, t, (4,)), kind="stable")[0])
        mask = (draws.uniform(2, t, (3,)) < 0.5) / 0.5
        x = xs[i] * mask
        w = w - 0.1 * 2 * (x @ w - ys[i]) * x
    for got in results:
        np.testing.assert_allclose(got, w, rtol=1e-13)
    np.testing.assert_array_equal(results[0], results[1])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_compiled_code_draws_the_hosts_bits(dtype):
    module = hilbert.compile_source(SOURCE)
    x = np.zeros((7, 9), dtype)
    for name, want in (("u", draws.uniform(5, 2, x.shape, dtype)),
                       ("g", draws.gaussian(5, 2, x.shape, dtype))):
        function = getattr(module, name)
        plan = function.build(5, 2, x)
        assert any("draw" == unit.kind for region in plan.schedule.regions for unit in region.units)
        got = function(5, 2, x)
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, want)
    module.order.build(4, 1, np.zeros(50, dtype))
    np.testing.assert_array_equal(module.order(4, 1, np.zeros(50, dtype)),
                                  draws.permutation(4, 1, 50, dtype))
    module.summed.build(8, x)
    want = sum(draws.gaussian(7, n, x.shape, dtype) for n in range(8, 0, -1))
    np.testing.assert_array_equal(module.summed(8, x), want)
    with pytest.raises(HilbertError) as err:
        module.u(1.5, 0, x)
    assert err.value.code == "E512" and "1.5" in err.value.message
