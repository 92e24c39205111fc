"""What programs compute, checked against NumPy computed here, on every executor."""

import numpy as np
import pytest

import hilbert

SOURCE = """
fn transpose(a) ↦ einsum("ij->ji", a)
fn trace(a) ↦ einsum("ii->", a)
fn diagonal(a) ↦ einsum("ii->i", a)
fn outer(x, y) ↦ einsum("i,j->ij", x, y)
fn chain(a, b, c) ↦ einsum("ij,jk,kl->il", a, b, c)
fn chained(a, b, c) ↦ einsum("ik,kl->il", einsum("ij,jk->ik", a, b), c)
fn batched(a, b) ↦ einsum("bij,bjk->bik", a, b)
fn total(a) ↦ einsum("ij->", a)
fn scaled(s, a) ↦ einsum(",ij->ij", s, a)
fn spaced(a, b) ↦ einsum(" ij , jk -> ik ", a, b)

fn eq(a, b) ↦ a = b
fn ne(a, b) ↦ a ≠ b
fn lt(a, b) ↦ a < b
fn gt(a, b) ↦ a > b
fn le(a, b) ↦ a ≤ b
fn ge(a, b) ↦ a ≥ b

fn ones(x) ↦ x ^ 0
fn squared(x) ↦ x²
fn power(x, y) ↦ x ^ y
fn negated(x) ↦ −x
fn minusZero(x) ↦ 0 − x
fn arithmetic(x, y) ↦ 2 · x − y / 4 + 1
fn precedence(x) ↦ −x ^ 2 + 2 ^ 3 ^ 2 − 8 / 4 / 2

fn larger(a, b) ↦ max(a, b)
fn smaller(a, b) ↦ min(a, b)
fn rowMax(a) ↦ maximum(a, 1)
fn columnMin(a) ↦ minimum(a, 0)
fn sizes(a) ↦ rows(a) + 10 · columns(a)
fn indices(a) ↦ positions(a, 1)

fn exps(x) ↦ exp(x)
fn logs(x) ↦ ln(x)
fn roots(x) ↦ sqrt(x)
fn tanhs(x) ↦ tanh(x)
fn sines(x) ↦ sin(x)
fn cosines(x) ↦ cos(x)
fn tangents(x) ↦ tan(x)
fn absolutes(x) ↦ abs(x)
fn floors(x) ↦ floor(x)

fn sign(x) ↦ if x > 0 then 1 else if x < 0 then 0 − 1 else 0
fn guarded(c, x) ↦ if c > 0 then x else count(0 − 1, x)
fn lazy(c, x) ↦ if c > 0 then x else count(1e15, x)
def count(t, x) ≔ if t = 0 then x else count(t − 1, x + 1)
fn counted(t, x) ↦ count(t, x)
def halve(x) ≔ if x < 1 then x else halve(x / 2)
fn halved(x) ↦ halve(x)
def half ≔ 0.5
fn halfOf(x) ↦ half · x
fn perEntry(c, a, b) ↦ c · a + (1 − c) · b
"""


@pytest.fixture(scope="module")
def modules():
    return {name: hilbert.compile_source(SOURCE, name="semantics.hb", executor=name)
            for name in ("reference", "numba")}


@pytest.fixture
def mod(modules, executor):
    return modules[executor]


def test_einsum_transpose_trace_diagonal_outer(mod, rng):
    a = rng.standard_normal((3, 4))
    m = rng.standard_normal((4, 4))
    x, y = rng.standard_normal(3), rng.standard_normal(5)
    np.testing.assert_array_equal(mod.transpose(a), a.T)
    assert mod.trace(m) == pytest.approx(np.trace(m), rel=1e-14)
    assert isinstance(mod.trace(m), float)
    np.testing.assert_array_equal(mod.diagonal(m), np.diag(m))
    np.testing.assert_allclose(mod.outer(x, y), np.outer(x, y), rtol=1e-15)


def test_matrix_chain(mod, rng):
    a, b, c = rng.standard_normal((2, 3)), rng.standard_normal((3, 4)), rng.standard_normal((4, 5))
    np.testing.assert_allclose(mod.chain(a, b, c), a @ b @ c, rtol=1e-12)
    np.testing.assert_allclose(mod.chained(a, b, c), a @ b @ c, rtol=1e-12)


def test_more_einsum_forms(mod, rng):
    a, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 4, 5))
    np.testing.assert_allclose(mod.batched(a, b), a @ b, rtol=1e-12)
    m = rng.standard_normal((3, 4))
    assert mod.total(m) == pytest.approx(m.sum(), rel=1e-12)
    np.testing.assert_allclose(mod.scaled(2.5, m), 2.5 * m, rtol=1e-15)
    np.testing.assert_allclose(mod.spaced(m, m.T), m @ m.T, rtol=1e-12)


@pytest.mark.parametrize("name, op", [("eq", np.equal), ("ne", np.not_equal), ("lt", np.less),
                                      ("gt", np.greater), ("le", np.less_equal),
                                      ("ge", np.greater_equal)])
def test_comparisons_give_zero_or_one(mod, name, op):
    a = np.array([[1.0, 2.0, 3.0], [-1.0, 0.0, np.nan]])
    b = np.array([[1.0, 3.0, 2.0], [-1.0, -0.0, np.nan]])
    got = getattr(mod, name)(a, b)
    np.testing.assert_array_equal(got, op(a, b).astype(float))
    assert set(np.unique(got)) <= {0.0, 1.0}
    np.testing.assert_array_equal(getattr(mod, name)(a, 2.0), op(a, 2.0).astype(float))
    assert getattr(mod, name)(1.0, 1.0) == float(op(1.0, 1.0))


def test_power_zero_is_ones(mod, rng):
    x = np.array([[0.0, -3.0, np.inf], [np.nan, 1e-300, 7.5]])
    np.testing.assert_array_equal(mod.ones(x), np.ones_like(x))
    assert mod.ones(0.0) == 1.0
    v = rng.standard_normal(6)
    np.testing.assert_array_equal(mod.squared(v), v**2)
    np.testing.assert_allclose(mod.power(np.abs(v), v), np.abs(v) ** v, rtol=1e-14)


def test_arithmetic_and_precedence(mod, rng):
    x, y = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    np.testing.assert_allclose(mod.arithmetic(x, y), 2 * x - y / 4 + 1, rtol=1e-15)
    np.testing.assert_array_equal(mod.negated(x), -x)
    np.testing.assert_array_equal(mod.minusZero(x), 0 - x)
    assert mod.precedence(3.0) == -(3.0**2) + 2 ** (3**2) - 8 / 4 / 2


def test_entrywise_max_min_and_reductions(mod, rng):
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    np.testing.assert_array_equal(mod.larger(a, b), np.maximum(a, b))
    np.testing.assert_array_equal(mod.smaller(a, 0.0), np.minimum(a, 0.0))
    np.testing.assert_array_equal(mod.rowMax(a), a.max(axis=1))
    np.testing.assert_array_equal(mod.columnMin(a), a.min(axis=0))
    assert mod.sizes(a) == 3 + 10 * 4
    np.testing.assert_array_equal(mod.indices(a), np.arange(4.0))


@pytest.mark.parametrize("name, ref, domain", [
    ("exps", np.exp, (-5, 5)), ("logs", np.log, (0.1, 9)), ("roots", np.sqrt, (0, 9)),
    ("tanhs", np.tanh, (-3, 3)), ("sines", np.sin, (-7, 7)), ("cosines", np.cos, (-7, 7)),
    ("tangents", np.tan, (-1.5, 1.5)), ("absolutes", np.abs, (-5, 5)),
    ("floors", np.floor, (-5, 5)),
])
def test_unary_primitives(mod, rng, name, ref, domain):
    x = rng.uniform(*domain, size=(4, 3))
    np.testing.assert_allclose(getattr(mod, name)(x), ref(x), rtol=1e-15)


def test_if_chooses_on_a_scalar(mod):
    assert [mod.sign(v) for v in (-2.0, 0.0, 3.0)] == [-1.0, 0.0, 1.0]
    a, b = np.array([1.0, 2.0]), np.array([5.0, 6.0])
    np.testing.assert_array_equal(mod.perEntry(np.array([1.0, 0.0]), a, b), [1.0, 6.0])


def test_if_evaluates_only_the_branch_taken(mod):
    # The other branch is a counted loop of −1 steps (an error) or of 10^15 steps (hours).
    assert mod.guarded(1.0, 4.0) == 4.0
    assert mod.lazy(1.0, 4.0) == 4.0
    with pytest.raises(hilbert.RuntimeHilbertError) as err:
        mod.guarded(0.0, 4.0)
    assert err.value.code == "E500"


def test_counted_and_conditional_loops(mod):
    assert mod.counted(0, 2.0) == 2.0
    assert mod.counted(37, 2.0) == 39.0
    np.testing.assert_array_equal(mod.counted(3, np.zeros((2, 2))), np.full((2, 2), 3.0))
    assert mod.halved(100.0) == 100.0 / 128


def test_nullary_definition_is_a_constant(mod):
    assert mod.halfOf(3.0) == 1.5


def test_qualified_calls(write_hb, executor):
    write_hb("lib/Shapes.hb", "def area(w, h) ≔ w · h\ndef side ≔ 3\n")
    write_hb("lib/Other.hb", "def area(w, h) ≔ w + h\n")
    main = write_hb("Main.hb", """
open lib.Shapes
open lib.Other
fn viaShapes(w, h) ↦ Shapes.area(w, h) + Shapes.side
fn viaOther(w, h) ↦ Other.area(w, h)
""")
    mod = hilbert.load(main, executor=executor)
    assert mod.viaShapes(2.0, 5.0) == 13.0
    assert mod.viaOther(2.0, 5.0) == 7.0


def test_qualified_prelude_call_and_local_hiding(executor, rng):
    mod = hilbert.compile_source("""
open Prelude.Networks
def dense(a, w) ≔ 2 · a
fn mine(a, w) ↦ dense(a, w)
fn theirs(a, w) ↦ Networks.dense(a, w)
""", executor=executor)
    a, w = rng.standard_normal((4, 2)), rng.standard_normal((2, 3))
    np.testing.assert_array_equal(mod.mine(a, w), 2 * a)
    np.testing.assert_allclose(mod.theirs(a, w), a @ w, rtol=1e-14)


def test_open_is_not_transitive(write_hb):
    write_hb("Base.hb", "def base(x) ≔ x\n")
    write_hb("Middle.hb", "open Base\ndef middle(x) ≔ base(x)\n")
    main = write_hb("Top.hb", "open Middle\nfn top(x) ↦ base(x)\n")
    with pytest.raises(hilbert.NameResolutionError) as err:
        hilbert.load(main)
    assert err.value.code == "E200"
    ok = write_hb("Top2.hb", "open Middle\nfn top(x) ↦ middle(x)\n")
    assert hilbert.load(ok).top(3.0) == 3.0


def test_definitions_in_any_order(executor):
    mod = hilbert.compile_source("fn f(x) ↦ g(x) + 1\ndef g(x) ≔ 2 · x", executor=executor)
    assert mod.f(1.0) == 3.0


def test_shared_work_is_computed_once_but_answers_the_same(executor, rng):
    mod = hilbert.compile_source("""
def heavy(a) ≔ einsum("ij,jk->ik", a, a)
fn twice(a) ↦ heavy(a) + heavy(a)
""", executor=executor)
    a = rng.standard_normal((3, 3))
    np.testing.assert_allclose(mod.twice(a), 2 * (a @ a), rtol=1e-14)


NESTED_LOOPS = """
def inner(k, x) ≔ if k = 0 then x else inner(k − 1, x · 0.5)
def outer(t, x) ≔ if t = 0 then x else outer(t − 1, inner(2, x) + x)
fn both(t, a, b) ↦ einsum("ij->", outer(t, a)) + einsum("ij->", outer(t, b))
fn pair(t, a, b) ↦ einsum("ij,kl->ijkl", outer(t, a), outer(t, b))
"""


def test_one_loop_nest_run_on_two_shapes_in_one_call(executor, rng):
    # The two `outer` loops differ only in their start, so their bodies, and the `inner`
    # loops in them, are equal: each still runs on its own state's shape (2×2, then 3×3).
    mod = hilbert.compile_source(NESTED_LOOPS, executor=executor)
    a, b = rng.standard_normal((2, 2)), rng.standard_normal((3, 3))

    def outer(t, x):
        for _ in range(t):
            x = x * 0.5 * 0.5 + x
        return x

    assert mod.both(3, a, b) == pytest.approx(outer(3, a).sum() + outer(3, b).sum(), rel=1e-13)
    np.testing.assert_allclose(mod.pair(4, a, b), np.einsum("ij,kl->ijkl", outer(4, a), outer(4, b)),
                               rtol=1e-13)
    states = sorted(loop.state for loop in mod.pair.plan(4.0, a, b).loops)
    assert states == [((), (2, 2)), ((), (2, 2)), ((), (3, 3)), ((), (3, 3))]


def test_a_train_block_shape_error_names_the_weight_and_the_argument(executor):
    mod = hilbert.compile_source("""
model Drift(n) : Learner {
  weight w : Tensor[n] from 0
  def train(x) {
    w ≔ w + x
  }
  def eval(x) ≔ w
}
""", executor=executor)
    net = mod.Drift(3)
    with pytest.raises(hilbert.CheckError) as err:
        net.train(np.ones((3, 2)))
    assert err.value.code == "E310"
    assert "w is a vector of 3 and x is a 3×2 matrix" in err.value.message
    np.testing.assert_array_equal(net.w, np.zeros(3))  # nothing ran


def test_a_loop_body_shape_error_names_its_state_by_parameter(executor):
    mod = hilbert.compile_source("def go(t, w, x) ≔ if t = 0 then w else go(t − 1, w + x, x)\n"
                                 "fn f(t, w, x) ↦ go(t, w, x)", executor=executor)
    with pytest.raises(hilbert.CheckError) as err:
        mod.f(2, np.ones(3), np.ones((3, 2)))
    assert err.value.code == "E310"
    assert "w is a vector of 3 and x is a 3×2 matrix" in err.value.message
