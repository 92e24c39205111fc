"""Calls run as blocks of rows (compiler/plan/rows.py proves the split, executor/numba/
row_blocks.py runs it): which calls split and which do not, and blocks that give the unsplit
call's results, in NumPy's agreement, with the loop run once per block."""

from __future__ import annotations

import numpy as np
import pytest
from hilbert.compiler.driver import plan_entry
from hilbert.compiler.plan import rows as plan_rows
from hilbert.compiler.plan.rows import row_split
from hilbert.executor import threads
from hilbert.executor.numba import row_blocks
from hilbert.executor.numba.kernels import PYTHON_MODE
from hilbert.executor.numba.tiers import generated_ir

import hilbert

SOURCE = """open Prelude.Networks

def walk(t, x, w, h) ≔ if t = 0 then h else walk(t − 1, x, w, tanh(einsum("ng,gh->nh", h, w) + x))
fn rnn(t, x, w, h) ↦ walk(t, x, w, h)

-- each step divided by the sum over every row: rows mix
def spread(t, w, h) ≔
  if t = 0 then h else spread(t − 1, w, tanh(einsum("ng,gh->nh", h, w)) / einsum("nh->", h · h))
fn summed(t, w, h) ↦ spread(t, w, h)

-- scaled by the number of rows
def counted(t, w, h) ≔ if t = 0 then h else counted(t − 1, w, tanh(einsum("ng,gh->nh", h, w)) · rows(h))
fn byCount(t, w, h) ↦ counted(t, w, h)

-- the state transposed each step (square): its rows become columns
def turned(t, w, h) ≔ if t = 0 then h else turned(t − 1, w, tanh(einsum("ng,gh->hn", h, w)))
fn transposed(t, w, h) ↦ turned(t, w, h)

-- stopping when the whole state is small: every block would have to stop together
def settle(w, h) ≔ if einsum("nh->", h · h) < 0.001 then h else settle(w, einsum("ng,gh->nh", h, w) · 0.5)
fn settled(w, h) ↦ settle(w, h)

-- a column of x per step, read at the counter (the seed's recurrent network)
fn reading(x, w, v, h) ↦ recurrent(x, w, v, h)

fn dense(a, w) ↦ tanh(einsum("np,pq->nq", a, w))
-- a network trained on x, y, then its outputs for the queries z: the training reads no row of z
fn predicted(t, r, x, y, w1, w2, z) ↦ mlpPredict(t, r, x, y, w1, w2, z)
fn centred(a) ↦ a − einsum("p,n->np", einsum("np->p", a) / rows(a), einsum("np->n", a · 0.0 + 1.0))
"""


@pytest.fixture(scope="module")
def module():
    return hilbert.compile_source(SOURCE)


def split_of(module, name: str, *shapes) -> tuple[int, ...]:
    ready = plan_entry(module.function(name).entry, shapes)
    return row_split(*generated_ir(ready), ready.plan.signature)


def test_a_recurrence_over_a_batch_splits_along_its_rows(module):
    assert split_of(module, "rnn", (), (64, 16), (16, 16), (64, 16)) == (1, 3)
    assert split_of(module, "reading", (64, 30), (16, 16), (16,), (64, 16)) == (0, 3)
    assert split_of(module, "dense", (64, 10), (10, 5)) == (0,)


def test_a_square_weight_as_long_as_the_batch_is_not_split(module):
    # w (16×16) is as long as the batch: split with it, its rows would be summed over
    assert split_of(module, "rnn", (), (16, 16), (16, 16), (16, 16)) == (1, 3)
    assert split_of(module, "dense", (16, 16), (16, 16)) == (0,)


@pytest.mark.parametrize("name, shapes", [
    ("summed", ((), (16, 16), (64, 16))),
    ("byCount", ((), (16, 16), (64, 16))),
    ("transposed", ((), (16, 16), (16, 16))),
    ("settled", ((16, 16), (64, 16))),
    ("centred", ((64, 10),)),
    # split along z's rows, each block would train the whole network again
    ("predicted", ((), (), (256, 32), (256, 4), (32, 64), (64, 4), (64, 32))),
])
def test_calls_whose_rows_mix_are_not_split(module, name, shapes):
    assert split_of(module, name, *shapes) == ()


def test_blocks_of_whole_fours():
    assert row_blocks.bounds(64, 2) == [0, 32, 64]
    assert row_blocks.bounds(18, 2) == [0, 12, 18]
    for rows in range(16, 200):
        for blocks in (2, 3, 4):
            if rows // plan_rows.ROWS < blocks:
                continue
            edges = row_blocks.bounds(rows, blocks)
            sizes = np.diff(edges)
            assert edges[0] == 0 and edges[-1] == rows and (sizes > 0).all()
            assert all(e % 4 == 0 for e in edges[1:-1])


def test_results_of_blocks_are_joined_along_rows():
    a, b = np.ones((2, 3)), np.zeros((3, 3))
    np.testing.assert_array_equal(row_blocks.joined([a, b]), np.vstack([a, b]))
    first, second = row_blocks.joined([(a, a[:, 0]), (b, b[:, 0])])
    np.testing.assert_array_equal(first, np.vstack([a, b]))
    np.testing.assert_array_equal(second, np.r_[a[:, 0], b[:, 0]])


def rnn_numpy(t, x, w, h):
    for _ in range(int(t)):
        h = np.tanh(h @ w + x)
    return h


class _Counting:
    """A compiled region that counts the rows of each call."""

    def __init__(self, region):
        self.region, self.rows = region, []
        self.generated = region.generated

    def __call__(self, args):
        self.rows.append(args[3].shape[0])
        return self.region(args)


@pytest.mark.skipif(PYTHON_MODE, reason="NUMBA_DISABLE_JIT=1: nothing is compiled to split")
@pytest.mark.parametrize("count", [2, 3])
def test_blocks_give_the_unsplit_result(count, monkeypatch, rng):
    monkeypatch.setenv("HILBERT_COMPILE", "eager")
    t, b, w = 200.0, 64, 32
    x, weights = rng.normal(size=(b, w)), rng.normal(size=(w, w)) / 4
    h = rng.normal(size=(b, w))
    serial = hilbert.compile_source(SOURCE)
    monkeypatch.setattr(threads, "count", lambda: 1)
    whole = serial.rnn(t, x, weights, h)
    assert serial.rnn.program(((), x.shape, weights.shape, h.shape)).generated().blocks is None

    monkeypatch.setattr(threads, "count", lambda: count)
    split = hilbert.compile_source(SOURCE)
    program = split.rnn.program(((), x.shape, weights.shape, h.shape))
    blocks = program.generated().blocks
    assert blocks is not None and blocks.blocks == count
    counting = blocks.region = _Counting(blocks.region)
    got = split.rnn(t, x, weights, h)
    assert sorted(counting.rows) == sorted(np.diff(row_blocks.bounds(b, count)).tolist())
    assert f"{count} blocks of rows" in "\n".join(program.plan.all_notes)
    # row by row the same code on the same rows: the same numbers to the bit
    np.testing.assert_array_equal(got, whole)
    np.testing.assert_allclose(got, rnn_numpy(t, x, weights, h), rtol=1e-12, atol=1e-14)
    assert split.rnn.program(((), x.shape, weights.shape, h.shape)).loop_steps == t


@pytest.mark.skipif(PYTHON_MODE, reason="NUMBA_DISABLE_JIT=1: nothing is compiled to split")
def test_small_calls_are_not_split(monkeypatch, rng):
    monkeypatch.setenv("HILBERT_COMPILE", "eager")
    monkeypatch.setattr(threads, "count", lambda: 2)
    mod = hilbert.compile_source(SOURCE)
    w, v = rng.normal(size=(16, 16)) / 4, rng.normal(size=16)

    def blocks(rows: int, steps: int):
        x, h = rng.normal(size=(rows, steps)), rng.normal(size=(rows, 16))
        mod.reading(x, w, v, h)
        return mod.reading.program((x.shape, w.shape, v.shape, h.shape)).generated().blocks

    assert blocks(64, 3) is None  # too little work (3 steps)
    assert blocks(12, 2000) is None  # too few rows for two blocks of ROWS
    assert blocks(16, 2000) is not None
    x = rng.normal(size=(64, 16))
    mod.dense(x, w)  # no loop: a loop-free call's nests and products have threads of their own
    assert mod.dense.program((x.shape, w.shape)).generated().blocks is None


@pytest.mark.skipif(PYTHON_MODE, reason="NUMBA_DISABLE_JIT=1: nothing is compiled to split")
def test_code_written_for_its_sizes_is_not_split(monkeypatch, rng):
    """A tiny program's code has its sizes as constants (codegen.TINY): it runs on those only."""
    monkeypatch.setenv("HILBERT_COMPILE", "eager")
    monkeypatch.setattr(threads, "count", lambda: 2)
    monkeypatch.setattr(plan_rows, "WORK", 0)
    mod = hilbert.compile_source(SOURCE)
    for rows, width, tiny in [(16, 16, True), (64, 16, False)]:
        w, h = rng.normal(size=(width, width)) / 4, rng.normal(size=(rows, width))
        got = mod.rnn(5.0, h, w, h)
        program = mod.rnn.program(((), h.shape, w.shape, h.shape)).generated()
        assert program.region.generated.sized == tiny
        assert (program.blocks is None) == tiny
        np.testing.assert_allclose(got, rnn_numpy(5, h, w, h), rtol=1e-12, atol=1e-14)


@pytest.mark.skipif(PYTHON_MODE, reason="NUMBA_DISABLE_JIT=1: nothing is compiled to split")
def test_an_error_in_the_blocks_is_the_callers_coded_error(monkeypatch, rng):
    monkeypatch.setenv("HILBERT_COMPILE", "eager")
    monkeypatch.setattr(threads, "count", lambda: 2)
    mod = hilbert.compile_source(SOURCE)
    x, w = rng.normal(size=(64, 32)), rng.normal(size=(32, 32))
    mod.rnn(100.0, x, w, x)
    assert mod.rnn.program(((), (64, 32), (32, 32), (64, 32))).generated().blocks is not None
    with pytest.raises(hilbert.HilbertError) as caught:
        mod.rnn(100.5, x, w, x)
    assert caught.value.code == "E500"  # a step count that is not a whole number
