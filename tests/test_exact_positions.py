"""Sizes, positions and counters are exact whole numbers whatever the data's dtype
(compiler/counting.py, docs/semantics.md "Counting"): a float32 call past 2²⁴ entries reads
`q[rows(q) − 1]` at the true last entry, refuses a position only when it is truly outside,
counts a loop of 2²⁴ + 1 steps exactly, finds argmax past 2²⁴, and draws with the step it was
given, on every executor. The vectors are 2²⁴ + a few float32 entries (64 MiB); expected
values are positions written here in Python integers. The reference executor is checked on
reads only (a Python loop of 2²⁴ steps would take minutes); long loops run compiled."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import needs
from hilbert.compiler.ops import draws
from hilbert.grammar.errors import HilbertError

import hilbert

PROGRAM = """
fn last(q) ↦ q[rows(q) − 1]
fn at(q, t) ↦ q[t]
fn excess(q) ↦ rows(q) − 16777216
fn lastPosition(q) ↦ maximum(positions(q, 0) · (q = q), 0) − 16777216
fn picked(q, t) ↦ einsum("s,s->", q, oneHot(t, rows(q)))
fn largest(q) ↦ argmax(q, 0)
fn tail(q, t, a) ↦ if t = 0 then a else tail(q, t − 1, a + q[rows(q) − t])
fn flips(t, c) ↦ if t = 0 then c else flips(t − 1, 1 − c)
fn flipsOf(q, c) ↦ flips(rows(q), c)
fn drawn(t, x) ↦ uniform(7, t, x)
"""

BIG = 2 ** 24  # float32 holds every whole number up to here, and no odd one past it

EXECUTORS = ("reference", "numba", "dask", "jax")


@pytest.fixture(scope="module")
def module():
    return hilbert.compile_source(PROGRAM, export_all=True)


@pytest.fixture(params=EXECUTORS)
def executor(request) -> str:
    if request.param == "dask":
        needs("dask")
    if request.param == "jax":
        pytest.importorskip("jax")
    return request.param


def marked(n: int, marks: dict[int, float]) -> np.ndarray:
    """A float32 vector of n zeros with the given entries set."""
    q = np.zeros(n, np.float32)
    for position, value in marks.items():
        q[position] = value
    return q


def test_the_last_entry_is_read_past_two_to_the_24(module, executor):
    q = marked(BIG + 2, {BIG: 5.0, BIG + 1: 7.0})
    assert module.last.using(executor)(q) == np.float32(7.0)


def test_the_last_entry_of_an_odd_length_is_no_false_e510(module, executor):
    # float32(2²⁴ + 3) is 2²⁴ + 4: one less was read as a position past the end (E510)
    q = marked(BIG + 3, {BIG + 1: 5.0, BIG + 2: 7.0})
    assert module.last.using(executor)(q) == np.float32(7.0)


def test_a_position_given_as_a_python_number_is_exact(module, executor):
    q = marked(BIG + 2, {BIG: 5.0, BIG + 1: 7.0})
    f = module.at.using(executor)
    assert f(q, BIG + 1) == np.float32(7.0)
    assert f(q, BIG) == np.float32(5.0)
    with pytest.raises(HilbertError) as raised:  # truly outside: E510
        f(q, BIG + 2)
    assert raised.value.code == "E510"


def test_sizes_and_positions_count_exactly(module, executor):
    q = np.zeros(BIG + 1, np.float32)  # float32(2²⁴ + 1) would be 2²⁴: an excess of 0
    assert module.excess.using(executor)(q) == np.float32(1.0)
    assert module.lastPosition.using(executor)(q) == np.float32(0.0)
    assert module.lastPosition.using(executor)(np.zeros(BIG + 2, np.float32)) == np.float32(1.0)


def test_a_one_hot_read_at_a_value_is_exact(module, executor):
    q = marked(BIG + 2, {BIG: 5.0, BIG + 1: 7.0})
    assert module.picked.using(executor)(q, BIG + 1) == np.float32(7.0)


def test_argmax_marks_the_first_largest_past_two_to_the_24(module, executor):
    q = marked(BIG + 2, {BIG + 1: 1.0})
    marks = module.largest.using(executor)(q)
    assert marks.dtype == np.float32
    assert np.flatnonzero(marks).tolist() == [BIG + 1]


def test_a_loop_counter_reads_positions_exactly(module, executor):
    # two steps: t = 2 reads q[2²⁴], t = 1 reads q[2²⁴ + 1] (in float32, 2²⁴ + 2 − 1 is 2²⁴)
    q = marked(BIG + 2, {BIG: 5.0, BIG + 1: 7.0})
    assert module.tail.using(executor)(q, 2, np.float32(0.0)) == np.float32(12.0)


@pytest.mark.parametrize("executor_", ["numba", "jax"])
def test_a_counted_loop_of_two_to_the_24_plus_one_steps_runs_them_all(module, executor_):
    """An odd number of flips of 0 is 1; 2²⁴ of them (what a float32 count ran) give 0. The
    loop runs compiled (numba) or as XLA's loop (jax): a Python loop of 2²⁴ steps would take
    minutes, so the host's counting is checked above, on reads."""
    if executor_ == "jax":
        pytest.importorskip("jax")
    f = module.flips.using(executor_)
    assert f(BIG + 1, np.float32(0.0)) == np.float32(1.0)
    assert f(BIG, np.float32(0.0)) == np.float32(0.0)
    q = np.zeros(BIG + 1, np.float32)
    assert module.flipsOf.using(executor_)(q, np.float32(0.0)) == np.float32(1.0)


def test_a_draw_takes_the_step_it_is_given(module, executor):
    x = np.zeros(4, np.float32)
    for step in (BIG, BIG + 1):
        want = draws.uniform(7, step, (4,), np.float32)
        np.testing.assert_array_equal(module.drawn.using(executor)(step, x), want)


# ------------------------------------------------------------------ the analysis itself

ANALYSED = """
fn sized(q) ↦ q[rows(q) − 1] · 2
fn stepped(t, q) ↦ if t = 0 then q else stepped(t − 1, q · 0.5)
fn both(q, t, r) ↦ q[t] · r
def inner(n, s) ≔ if n = 0 then s else inner(n − 1, s · 2)
def outer(t, v) ≔ if t = 0 then v else outer(t − 1, inner(rows(v), v))
fn nested(t, v) ↦ outer(t, v)
"""


def _analysed(name: str):
    from hilbert.compiler.counting import counting

    entry = getattr(hilbert.compile_source(ANALYSED, export_all=True), name).entry
    return entry.masked, counting(entry.masked)


def test_sizes_and_whole_arithmetic_count_and_the_data_read_does_not():
    from hilbert.compiler import ir

    root, found = _analysed("sized")
    counted = found.at(None)
    ops = {n.op for n in counted if isinstance(n, ir.Prim)}
    assert {"rows", "sub"} <= ops
    assert root not in counted and root.args[0] not in counted  # x[t] · 2 and x[t]: data
    assert found.params == frozenset()


def test_a_step_count_is_a_counted_parameter_and_its_counter_a_counted_component():
    _, found = _analysed("stepped")
    assert found.params == frozenset({0})
    (loop, components), = found.components.items()
    assert components == frozenset({loop.counter})


def test_a_position_is_a_counted_parameter_but_not_a_factor():
    _, found = _analysed("both")
    assert found.params == frozenset({1})


def test_each_loop_counts_its_own_state():
    """State(0) is the counter of the outer loop and data (s) in the inner one: each scope
    says so of its own."""
    from hilbert.compiler import ir

    _, found = _analysed("nested")
    counters = {loop.counter for loop, components in found.components.items()
                if loop.counter in components}
    assert len(found.components) == 2 and counters == {0}
    for loop, components in found.components.items():
        state_one = ir.State(1, None)
        assert (state_one in found.at(loop)) == (1 in components)


FLIP = """
model Flip : Learner {
  weight w : Tensor[] from 0
  def train(r) { w ≔ r − w }
  def at(q, t) ≔ q[t] + w
}
"""


def test_a_float32_models_train_steps_and_positions_count_exactly():
    """A train call of 2²⁴ + 1 steps flips w an odd number of times (its count was bound in
    the model's float32, 2²⁴ steps); a method reads the position it was given."""
    net = hilbert.compile_source(FLIP).Flip(dtype="float32")
    net.train(1, steps=BIG + 1)
    assert net.w == np.float32(1.0)
    q = marked(BIG + 2, {BIG: 5.0, BIG + 1: 7.0})
    assert net.at(q, BIG + 1) == np.float32(8.0)
