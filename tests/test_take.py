"""An einsum against the one-hot [s = t] of a scalar value t (a loop counter: the seed's atTime)
reads the slice at t (compiler/passes/masks.py, `take`): equal to NumPy written here on every
executor, zeros where t is no position (outside, not whole, NaN, inf), inf and NaN of the
columns not read never leak, each step costs one slice (not the whole axis), and derivatives
through it match finite differences."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import EXECUTORS, needs
from hilbert.compiler.ops import meanings

import hilbert

#: walk(t, x, h): h ← ½h + x read at the value given by `at` (t counts down from columns(x),
#: so columns(x) − t walks the columns forwards), for every column.
PROGRAM = """
def walk(t, x, h) ≔ if t = 0 then h else walk(t − 1, x, 0.5 · h + einsum("is,s->i", x, positions(x, 1) = columns(x) − t))
def walkAfter(t, x, h) ≔ if t = 0 then h else walkAfter(t − 1, x, 0.5 · h + einsum("is,s->i", x, positions(x, 1) = columns(x) − t + 1))
def walkBefore(t, x, h) ≔ if t = 0 then h else walkBefore(t − 1, x, 0.5 · h + einsum("is,s->i", x, positions(x, 1) + 1 = columns(x) − t))
def walkHalf(t, x, h) ≔ if t = 0 then h else walkHalf(t − 1, x, 0.5 · h + einsum("is,s->i", x, positions(x, 1) = columns(x) − t + 0.5))
def walkOffHalf(t, x, h) ≔ if t = 0 then h else walkOffHalf(t − 1, x, 0.5 · h + einsum("is,s->i", x, positions(x, 1) + 0.5 = columns(x) − t))
def walkNaN(t, x, h) ≔ if t = 0 then h else walkNaN(t − 1, x, h + einsum("is,s->i", x, positions(x, 1) = (t − t) / (t − t)))
def walkInf(t, x, h) ≔ if t = 0 then h else walkInf(t − 1, x, h + einsum("is,s->i", x, positions(x, 1) = t / (t − t)))
def walkLast(n, x, h) ≔ walk(n, x, h)

fn read(x, h) ↦ walk(columns(x), x, h)
fn readAfter(x, h) ↦ walkAfter(columns(x), x, h)
fn readBefore(x, h) ↦ walkBefore(columns(x), x, h)
fn readHalf(x, h) ↦ walkHalf(columns(x), x, h)
fn readOffHalf(x, h) ↦ walkOffHalf(columns(x), x, h)
fn readNaN(x, h) ↦ walkNaN(columns(x), x, h)
fn readInf(x, h) ↦ walkInf(columns(x), x, h)
fn readLast(n, x, h) ↦ walkLast(n, x, h)

def fold(t, v, a) ≔ if t = 0 then a else fold(t − 1, v, 2 · a + einsum("s,s->", v, positions(v, 0) = t − 1))
fn folded(v) ↦ fold(rows(v), v, 0)
def rowWalk(t, m, a) ≔ if t = 0 then a else rowWalk(t − 1, m, 0.5 · a + einsum("sj,s->j", m, positions(m, 0) = rows(m) − t))
fn rowsWalked(m, a) ↦ rowWalk(rows(m), m, a)

def loss(x, w, h) ≔ einsum("i->", tanh(walkAfter(columns(x), x, h) · w) ^ 2)
fn lossOf(x, w, h) ↦ loss(x, w, h)
fn slopes(x, w, h) ↦ ∂ loss(x, w, h) / ∂ (x, w)
"""


@pytest.fixture(scope="module", params=EXECUTORS)
def module(request):
    return hilbert.compile_source(PROGRAM, executor=request.param)


def walked(x: np.ndarray, h: np.ndarray, offset: int = 0, first: int = 0) -> np.ndarray:
    """h ← ½h + x[:, s + offset] for s = first … T − 1, with zeros where s + offset is no column."""
    for s in range(first, x.shape[1]):
        column = x[:, s + offset] if 0 <= s + offset < x.shape[1] else np.zeros(len(x))
        h = 0.5 * h + column
    return h


def data(rows: int = 3, columns: int = 6, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((rows, columns)), rng.standard_normal(rows)


def test_reading_at_the_counter_equals_numpy(module):
    x, h = data()
    np.testing.assert_allclose(module.read(x, h), walked(x, h), rtol=1e-13)
    np.testing.assert_allclose(module.readAfter(x, h), walked(x, h, 1), rtol=1e-13)  # t + 1: the last is 0
    np.testing.assert_allclose(module.readBefore(x, h), walked(x, h, -1), rtol=1e-13)  # t − 1: the first is 0


def test_a_scalar_read_and_a_read_along_the_first_axis(module):
    """A vector read at t is a scalar (one statement in compiled code, not a loop nest); a
    matrix read along axis 0 is a row."""
    v = np.array([1.0, 2.0, 3.0, 4.0])
    want = 0.0
    for t in range(4, 0, -1):
        want = 2 * want + v[t - 1]
    assert module.folded(v) == want
    x, h = data()
    np.testing.assert_allclose(module.rowsWalked(x.T, h[:1].repeat(3)), walked(x, h[:1].repeat(3)), rtol=1e-13)


def test_a_value_that_is_no_position_reads_zeros(module):
    x, h = data()
    for name in ("readHalf", "readOffHalf"):  # not whole: on the value's side, or on the mask's
        np.testing.assert_array_equal(module.function(name)(x, h), walked(np.zeros_like(x), h))
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(module.readNaN(x, h), h)  # [s = NaN] is all zero
        np.testing.assert_array_equal(module.readInf(x, h), h)  # so is [s = ∞]


def test_inf_and_nan_in_columns_not_read_do_not_leak(module):
    x, h = data(columns=7)
    x[0, 0], x[1, 1], x[2, 0] = np.nan, np.inf, -np.inf
    got = module.readLast(4, x, h)  # reads columns 3 … 6 only
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, walked(x, h, first=3), rtol=1e-13)
    x[1, 5] = np.inf  # a column that is read: IEEE as usual
    assert module.readLast(4, x, h)[1] == np.inf


def test_each_step_reads_one_slice_not_the_whole_axis(module):
    """The mask [s = t] (T entries per step, T·b multiplications) is gone: FLOPs per step do not
    grow with T, and the plan says the einsum reads one slice."""
    b = 3
    per_step = {}
    for steps in (16, 64):
        plan = module.read.plan((b, steps), (b,))
        (loop,) = plan.loops
        per_step[steps] = loop.flops_per_step
        assert loop.flops_per_step < b * steps
        assert any(note.startswith("masks: ") and "one slice" in note for note in plan.notes)
    assert per_step[16] == per_step[64]


def test_take_tests_the_position_as_the_mask_does():
    x = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(meanings.take(x, 2.0, 1), x[:, 2])
    np.testing.assert_array_equal(meanings.take(x, 1.0, 0, -1.0, 3.0), x[2])  # −s + 3 = 1
    np.testing.assert_array_equal(meanings.take(x, 4.0, 1, 1.0, 1.0), x[:, 3])  # s + 1 = 4
    # t − const rounds to 3.0, but the mask's test s − 3 = 2⁻⁶⁰ holds for no s
    np.testing.assert_array_equal(meanings.take(x, 2.0 ** -60, 1, 1.0, -3.0), np.zeros(3))
    for t in (4.0, -1.0, 0.5, np.nan, np.inf, -np.inf):
        np.testing.assert_array_equal(meanings.take(x, t, 1), np.zeros(3))
    taken = meanings.take(x, 1.0, 1)
    taken[0] = 99.0
    assert x[0, 1] == 1.0  # a fresh value, never a view of an argument


def test_derivatives_through_the_read_match_finite_differences(module):
    x, h = data(rows=2, columns=4, seed=3)
    w = np.random.default_rng(4).standard_normal(2)
    by_x, by_w = module.slopes(x, w, h)
    for wrt, value, got in (("x", x, by_x), ("w", w, by_w)):
        step = 1e-6
        want = np.zeros_like(value)
        for index in np.ndindex(value.shape):
            up, down = value.copy(), value.copy()
            up[index] += step
            down[index] -= step
            args = {"x": x, "w": w, "h": h}
            plus = module.lossOf(**{**args, wrt: up})
            minus = module.lossOf(**{**args, wrt: down})
            want[index] = (plus - minus) / (2 * step)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8, err_msg=f"∂ loss / ∂ {wrt}")
    assert np.all(by_x[:, 0] == 0.0)  # column 0 is never read (the walk reads t + 1)


def test_dask_reads_the_slice_too():
    needs("dask")
    module = hilbert.compile_source(PROGRAM)
    x, h = data(columns=7)
    x[0, 0] = np.nan
    lazy = module.readLast.using("dask", chunks=2)
    np.testing.assert_allclose(lazy(4, x, h), walked(x, h, first=3), rtol=1e-13)
    np.testing.assert_allclose(module.readAfter.using("dask", chunks=2)(x, h), walked(x, h, 1), rtol=1e-13)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(module.readNaN.using("dask", chunks=2)(x, h), h)
