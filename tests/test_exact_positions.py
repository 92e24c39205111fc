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


def test_the_host_tier_counts_exactly_and_answers_in_float32(monkeypatch):
    """The numba executor's first tier, nothing compiled (the tests above compile eagerly):
    a call with no `if` runs as straight-line steps (executor/straight.py), which count as
    the host runtime does (a float32 call's counted result, argmax's marks, was float64)."""
    monkeypatch.setenv("HILBERT_COMPILE", "never")
    m = hilbert.compile_source(PROGRAM, export_all=True)
    q = marked(BIG + 2, {BIG: 5.0, BIG + 1: 7.0})
    assert m.last(q) == np.float32(7.0) and m.last.tier == "host"
    assert m.at(q, BIG + 1) == np.float32(7.0)
    assert m.picked(q, BIG + 1) == np.float32(7.0)
    assert m.excess(np.zeros(BIG + 1, np.float32)) == np.float32(1.0)
    marks = m.largest(marked(BIG + 2, {BIG + 1: 1.0}))
    assert marks.dtype == np.float32 and np.flatnonzero(marks).tolist() == [BIG + 1]
    assert m.largest.tier == "host"
    assert m.tail(q, 2, np.float32(0.0)) == np.float32(12.0)


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


# ------------------------------------------------------------------ a matrix's lines

ALONG = """
fn largestAlong(q) ↦ argmax(q, 1)
fn smallestAlong(q) ↦ argmin(q, 1)
fn pastAlong(q) ↦ minimum(einsum("b,ab->ab", positions(q, 1), q = q)
                             + (1 − (q = 1)) · 9007199254740992, 1) − 16777216
"""


def first_marks(q: np.ndarray, find) -> np.ndarray:
    """What argmax (argmin) answers, by NumPy: each row's first extreme marked 1."""
    want = np.zeros(q.shape, q.dtype)
    want[np.arange(q.shape[0]), find(q, axis=1)] = 1
    return want


@pytest.fixture(scope="module")
def long_rows() -> np.ndarray:
    """Two float32 rows of 2²⁴ + 3 entries (128 MiB), each largest first at 2²⁴ + 1, which
    float32 rounds to 2²⁴ (row 1 has a tie at 2²⁴ + 2: the first one is marked)."""
    q = np.zeros((2, BIG + 3), np.float32)
    q[0, BIG + 1] = 1.0
    q[1, BIG + 1] = q[1, BIG + 2] = 1.0
    return q


@pytest.fixture(params=EXECUTORS + ("numba-host",))
def tier(request, monkeypatch) -> str:
    """Each executor, and the numba executor's host tier (nothing compiled)."""
    if request.param == "numba-host":
        monkeypatch.setenv("HILBERT_COMPILE", "never")
        return "numba"
    if request.param == "dask":
        needs("dask")
    if request.param == "jax":
        pytest.importorskip("jax")
    return request.param


def test_argmax_along_a_row_longer_than_two_to_the_24(long_rows, tier):
    """The first positions of a matrix's rows were kept in a float32 buffer by compiled
    float32 code, between the nest that finds them and the one that marks them: position
    2²⁴ + 1 became 2²⁴, a neighbour was marked. A fresh module: each tier its own programs."""
    along = hilbert.compile_source(ALONG, export_all=True)
    marks = along.largestAlong.using(tier)(long_rows)
    assert marks.dtype == np.float32
    np.testing.assert_array_equal(marks, first_marks(long_rows, np.argmax))
    marks = along.smallestAlong.using(tier)(-long_rows)
    np.testing.assert_array_equal(marks, first_marks(long_rows, np.argmax))
    past = along.pastAlong.using(tier)(long_rows)  # (each row's first 1, less 2²⁴)
    assert past.dtype == np.float32  # (a counted result is handed back in the call's dtype)
    np.testing.assert_array_equal(past, np.float32([1, 1]))


# ------------------------------------------------------------------ counted tensors compiled

STORED = """
fn branches(s, q) ↦ if s > 0 then positions(q, 0) else positions(q, 0) + 1
fn walked(t, q) ↦ walk(t, positions(q, 0)) · q
def walk(t, p) ≔ if t = 0 then p else walk(t − 1, p + 1)
fn pair(q) ↦ (positions(q, 0), q)
fn weighed(x, w) ↦ einsum("ab,bc->ac", einsum("b,ab->ab", positions(x, 1), x = x), w)
"""


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_counted_tensors_in_branches_loops_results_and_products(dtype):
    """A counted tensor stored in float64 in float32 code (emitter.widened) read by what
    takes data: an `if`'s branches, a loop's state, the call's result (in the call's dtype),
    a matrix product; against NumPy. (Both branches once wrote one buffer, made only in the
    first: the second branch's answer was an empty array, in float64 too.)"""
    m = hilbert.compile_source(STORED, export_all=True)
    q = np.arange(1.0, 10.0, dtype=dtype)
    n = np.arange(9.0)
    for s, want in ((1, n), (-1, n + 1)):
        got = m.branches(s, q)
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(m.walked(3, q), (n + 3) * q)
    first, second = m.pair(q)
    assert first.dtype == second.dtype == dtype
    np.testing.assert_array_equal(first, n)
    x, w = q.reshape(3, 3), np.ones((3, 2), dtype)
    np.testing.assert_allclose(m.weighed(x, w), np.tile(np.arange(3.0), (3, 1)) @ w)
    assert m.weighed.tier == "compiled"


# ------------------------------------------------------------------ vjp and jvp

@pytest.mark.parametrize("executor_", ["reference", "numba"])
def test_vjp_and_jvp_read_the_position_they_are_given(module, executor_):
    """A position past 2²⁴ given as a Python number, through f.vjp (its forward value and
    its pullback) and f.jvp, reads the entry the plain call reads (it was bound in the
    call's float32: 2²⁴ + 1 read 2²⁴)."""
    f = hilbert.compile_source("fn tripled(q, t) ↦ q[t] · 3").tripled.using(executor_)
    q = marked(BIG + 2, {BIG: 5.0, BIG + 1: 7.0})
    assert f(q, BIG + 1) == np.float32(21.0)
    value, pullback = f.vjp(q, BIG + 1)
    assert value == np.float32(21.0)
    slope, _ = pullback(np.float32(1.0))
    assert slope.dtype == np.float32
    assert np.flatnonzero(slope).tolist() == [BIG + 1] and slope[BIG + 1] == 3.0
    tangent_q = marked(BIG + 2, {BIG: 1.0, BIG + 1: 2.0})
    value, tangent = f.jvp((q, BIG + 1), (tangent_q, 0.0))
    assert (value, tangent) == (np.float32(21.0), np.float32(6.0))


# ------------------------------------------------------------------ from JAX, and exported

@pytest.mark.parametrize("executor_", ["numba", "jax"])
def test_a_jax_trace_without_64_bit_types_counts_exactly(module, executor_):
    """Through hilbert.jax under jax.jit, JAX's 64-bit types off (JAX's int32 holds 2²⁴ + 1):
    the position and the step count reach the function exactly, on the host callback
    (numba) and traced inline (jax), forward and backward (they were made the call's
    float32: 2²⁴ + 1 read 2²⁴, and ran 2²⁴ steps)."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    import hilbert.jax as hilbert_jax

    assert not jax.config.jax_enable_x64
    q = marked(BIG + 2, {BIG: 5.0, BIG + 1: 7.0})
    at = hilbert_jax.function(module.at.using(executor_))
    for t in (BIG + 1, jnp.int32(BIG + 1)):
        assert jax.jit(at)(jnp.asarray(q), t) == np.float32(7.0)
    slope = np.asarray(jax.jit(jax.grad(at))(jnp.asarray(q), BIG + 1))
    assert slope.dtype == np.float32 and np.flatnonzero(slope).tolist() == [BIG + 1]
    flips = hilbert_jax.function(module.flips.using(executor_))
    assert jax.jit(flips)(BIG + 1, jnp.float32(0.0)) == np.float32(1.0)
    assert not jax.config.jax_enable_x64


def test_labels_past_two_to_the_24_from_jax_are_read_exactly_or_refused(module):
    """oneHot's labels as a JAX int32 array: traced inline (the jax executor) they are read
    exactly; a host callback would make them the call's float32 (2²⁴ + 1 becoming 2²⁴), so
    it refuses them, E601, rather than pick another entry."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    import hilbert.jax as hilbert_jax

    picks = hilbert.compile_source('fn picks(l, q) ↦ einsum("ab,b->a", oneHot(l, rows(q)), q)')
    q = marked(BIG + 2, {0: 3.0, BIG: 5.0, BIG + 1: 7.0})
    labels = jnp.asarray([BIG + 1, 0], jnp.int32)
    inline = hilbert_jax.function(picks.picks.using("jax"))
    np.testing.assert_array_equal(jax.jit(inline)(labels, jnp.asarray(q)), np.float32([7, 3]))
    with pytest.raises(Exception, match="E601"):  # (JAX's error around the callback's)
        jax.jit(hilbert_jax.function(picks.picks))(labels, jnp.asarray(q)).block_until_ready()


def test_a_traceable_program_counts_exactly_in_a_trace_without_64_bit_types(module):
    """The jax executor's program traced into a caller's jit with 64-bit types off (what
    hilbert.jax does within a scope that turns them on): its counted values are float64
    still (they were float32 there: rows(q) − 1 = 2²⁴ + 1 read entry 2²⁴)."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    q = marked(BIG + 2, {BIG: 5.0, BIG + 1: 7.0})
    traced = module.last.using("jax").program(((BIG + 2,),), "float32").traceable()
    assert not jax.config.jax_enable_x64
    got = jax.jit(traced)(jnp.asarray(q))
    assert got.dtype == np.float32 and got == np.float32(7.0)


def test_an_exported_float32_program_takes_its_position_exactly(module):
    """A float32 export's position parameter is a float64 (its counted values are float64 in
    the text, as the jax executor computes them): run as written, it reads entry 2²⁴ + 1."""
    jax = pytest.importorskip("jax")
    from jax._src.compiler import get_compile_options
    from jax.extend.backend import get_backend

    from hilbert.export import stablehlo

    text = stablehlo(module.at, (BIG + 2,), (), dtype="float32")
    assert f"%arg0: tensor<{BIG + 2}xf32>, %arg1: tensor<f64>" in text
    backend = get_backend("cpu")
    executable = backend.compile_and_load(text, backend.devices()[:1], get_compile_options(1, 1))
    q = marked(BIG + 2, {BIG: 5.0, BIG + 1: 7.0})
    with jax.enable_x64(True):  # (a float64 buffer for the position)
        got = executable.execute([jax.device_put(q), jax.device_put(np.float64(BIG + 1))])[0]
    assert np.asarray(got) == np.float32(7.0)
