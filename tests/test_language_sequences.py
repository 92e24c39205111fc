"""let, tuples, x[t], x[a:b], concat, oneHot, argmax/argmin and erf, on both executors,
each against NumPy written here."""

import math

import numpy as np
import pytest

import hilbert


def test_let_binds_once_and_shares(executor):
    module = hilbert.compile_source("""
fn f(x) ↦ let y ≔ exp(x), z ≔ y + y in z · y
""", executor=executor)
    x = np.array([0.5, 1.0])
    np.testing.assert_allclose(module.f(x), 2 * np.exp(x) ** 2)


def test_let_hides_a_parameter_and_a_definition_inside_its_body_only(executor):
    module = hilbert.compile_source("""
def g(x) ≔ x + 100
fn f(x) ↦ (let x ≔ 2 · x, g ≔ 1 in x + g) + g(x)
""", executor=executor)
    assert module.f(3.0) == 6 + 1 + 103


def test_tuples_come_back_to_python_as_tuples(executor):
    module = hilbert.compile_source("""
def cell(x, h) ≔ (tanh(x + h), x · h)
fn both(x, h) ↦ cell(x, h)
fn first(x, h) ↦ let (a, b) ≔ cell(x, h) in a − b
""", executor=executor)
    x, h = np.array([0.1, 0.2]), np.array([0.3, -0.4])
    a, b = module.both(x, h)
    np.testing.assert_allclose(a, np.tanh(x + h))
    np.testing.assert_allclose(b, x * h)
    np.testing.assert_allclose(module.first(x, h), np.tanh(x + h) - x * h)


def test_a_loop_answers_several_values(executor):
    module = hilbert.compile_source("""
def fib(t, a, b) ≔ if t = 0 then (a, b) else fib(t − 1, b, a + b)
fn run(t) ↦ fib(t, 0, 1)
fn choose(t, c) ↦ if c > 0 then (t, 2 · t) else (3 · t, 4 · t)
""", executor=executor)
    assert module.run(10) == (55.0, 89.0)
    assert module.choose(1.0, 1.0) == (1.0, 2.0)
    assert module.choose(1.0, -1.0) == (3.0, 4.0)


def test_a_tuple_passed_to_a_definition(executor):
    module = hilbert.compile_source("""
def swap(p) ≔ let (a, b) ≔ p in (b, a)
fn f(x, y) ↦ let (u, v) ≔ swap((x, y)) in u − v
""", executor=executor)
    assert module.f(1.0, 5.0) == 4.0


def test_index_reads_one_slice_of_the_first_axis(executor, rng):
    module = hilbert.compile_source("""
fn at(x, t) ↦ x[t]
fn walk(x) ↦ total(rows(x), x, 0 · x[0])
def total(t, x, acc) ≔ if t = 0 then acc else total(t − 1, x, acc + x[t − 1] · t)
""", executor=executor)
    x = rng.normal(size=(5, 3))
    np.testing.assert_array_equal(module.at(x, 2), x[2])
    want = sum(x[t - 1] * t for t in range(1, 6))
    np.testing.assert_allclose(module.walk(x), want)


def test_index_out_of_range_is_a_coded_error_before_any_read(executor):
    module = hilbert.compile_source("fn at(x, t) ↦ x[t]", executor=executor)
    for bad in (5, -1, 1.5, math.nan):
        with pytest.raises(hilbert.HilbertError) as raised:
            module.at(np.ones((5, 2)), bad)
        assert raised.value.code == "E510"


def test_a_static_position_out_of_range_is_found_before_running():
    module = hilbert.compile_source("fn at(x) ↦ x[rows(x)]")
    with pytest.raises(hilbert.HilbertError) as raised:
        module.at(np.ones((3, 2)))
    assert raised.value.code == "E318"


def test_slices_with_bounds_known_from_shapes(executor, rng):
    module = hilbert.compile_source("""
fn middle(x) ↦ x[1 : rows(x) − 1]
fn differences(x) ↦ x[1 : rows(x)] − x[0 : rows(x) − 1]
""", executor=executor)
    x = rng.normal(size=(6, 2))
    np.testing.assert_array_equal(module.middle(x), x[1:5])
    np.testing.assert_allclose(module.differences(x), np.diff(x, axis=0))


def test_slice_bounds_from_values_are_refused():
    module = hilbert.compile_source("fn f(x, n) ↦ x[0 : n]")
    with pytest.raises(hilbert.HilbertError) as raised:
        module.f(np.ones(4), 2)
    assert raised.value.code == "E319"


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_concat_along_each_axis(axis, executor, rng):
    module = hilbert.compile_source(f"fn join(a, b) ↦ concat(a, b, {axis})", executor=executor)
    a = rng.normal(size=(2, 3, 4))
    shape = list(a.shape)
    shape[axis] = 5
    b = rng.normal(size=shape)
    np.testing.assert_array_equal(module.join(a, b), np.concatenate([a, b], axis=axis))


def test_one_hot_and_its_errors(executor):
    module = hilbert.compile_source("""
fn coded(labels) ↦ oneHot(labels, 4)
fn like(labels, z) ↦ oneHot(labels, columns(z))
""", executor=executor)
    labels = np.array([0.0, 3.0, 1.0])
    np.testing.assert_array_equal(module.coded(labels), np.eye(4)[[0, 3, 1]])
    np.testing.assert_array_equal(module.like(labels, np.ones((3, 5))), np.eye(5)[[0, 3, 1]])
    for bad in ([4.0], [-1.0], [0.5]):
        with pytest.raises(hilbert.HilbertError) as raised:
            module.coded(np.array(bad))
        assert raised.value.code == "E511"


@pytest.mark.parametrize("op,pick", [("argmax", np.argmax), ("argmin", np.argmin)])
@pytest.mark.parametrize("axis", [0, 1])
def test_arg_extremes_mark_the_first_extreme(op, pick, axis, executor, rng):
    module = hilbert.compile_source(f"fn f(x) ↦ {op}(x, {axis})", executor=executor)
    x = rng.integers(0, 3, size=(4, 5)).astype(float)  # many ties
    want = np.zeros_like(x)
    index = pick(x, axis=axis)
    if axis == 1:
        want[np.arange(4), index] = 1
    else:
        want[index, np.arange(5)] = 1
    np.testing.assert_array_equal(module.f(x), want)


def test_erf_is_the_error_function(executor):
    module = hilbert.compile_source("fn f(x) ↦ erf(x)", executor=executor)
    x = np.array([-3.0, -0.5, 0.0, 0.7, 2.5])
    np.testing.assert_allclose(module.f(x), [math.erf(v) for v in x], rtol=1e-15)


@pytest.mark.parametrize("source,code", [
    ("def p(x) ≔ (x, x)\nfn f(x) ↦ p(x) + 1", "E321"),
    ("def p(x) ≔ (x, x)\nfn f(x) ↦ let (a, b, c) ≔ p(x) in a", "E321"),
    ("fn f(x) ↦ let (a, b) ≔ x in a", "E321"),
    ("fn f(x) ↦ if x > 0 then (x, x) else x", "E321"),
    ("def p(x) ≔ (x, x)\nfn f(x) ↦ if p(x) then 1 else 0", "E321"),
    ("def s(t, p) ≔ if t = 0 then p else s(t − 1, p)\nfn f(x) ↦ s(2, (x, x))", "E321"),
    ("fn f(x) ↦ concat(x, x, 3)", "E324"),
])
def test_tuple_and_shape_errors(source, code):
    with pytest.raises(hilbert.HilbertError) as raised:
        hilbert.compile_source(source).f(np.ones((2, 2)))
    assert raised.value.code == code, str(raised.value)


def test_a_model_method_answers_a_tuple(executor):
    module = hilbert.compile_source("""
model Pair(n) : Learner {
  weight w : Tensor[n] from 1
  def both(x) ≔ (w · x, 2)
}
""", executor=executor)
    scaled, two = module.Pair(3).both(np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(scaled, [1.0, 2.0, 3.0])
    assert two == 2.0


def test_the_size_limit_counts_work_once_however_often_it_is_written(executor):
    """Issue 13, item 5: 300 calls of a 60-operation definition on the same argument are one
    computation, so the definition is far under the 10,000-operation limit (E701), which
    counts what calls add after equal work is shared."""
    big = " + ".join(f"exp(x · {i})" for i in range(60))
    source = f"def big(x) ≔ {big}\nfn f(x) ↦ " + " + ".join(["big(x)"] * 300)
    x = np.array([0.1, -0.2])
    want = 300 * sum(np.exp(x * i) for i in range(60))
    np.testing.assert_allclose(hilbert.compile_source(source, executor=executor).f(x), want,
                               rtol=1e-12)
