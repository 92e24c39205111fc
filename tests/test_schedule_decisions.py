"""The schedule's thread and row-join decisions are records the code generator consumes
(compiler/plan/schedule.py, compiler/plan/threads.py): a nest's threads come from the plan's
rule before its loops are written, which nests run as one loop over rows is a list of RowLoops
that the rewrite performs as it is, and a shared product's blocks are the scheduler's
Step.shared. Each is checked by changing the record and seeing the code follow it, or against
figures worked out here."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hilbert.compiler.plan import layout, row_loops, scheduler
from hilbert.compiler.plan import threads as plan_threads
from hilbert.compiler.plan.schedule import RowLoop, Unit, in_row_loops
from hilbert.executor import threads
from hilbert.executor.codegen import emitter, rows
from hilbert.executor.codegen.loops import Assign, For, Store, Sub, Var, call, sizes

import hilbert

NORMED = "open Prelude.Networks\nfn normed(a) ↦ layerNorm(a)\n"


def _generated(f, *shapes):
    return f.program(shapes).region.generated


def test_the_thread_rule_is_planning_data_over_a_nest_s_work():
    """The plan's rule, called with a nest's facts and no code generator: a 256×64 layer
    norm's nests are too little work for threads, 2²⁰ tanh entries (a kernel call each) are
    enough; a carried total, a flat nest or one thread keep any nest serial."""
    small = plan_threads.NestWork((256, 64), carries=False, flat=False, statements=4, calls=1)
    assert small.work == 256 * 64 * (4 + 8) < plan_threads.PARALLEL_WORK
    assert not plan_threads.parallel(small, threads=4)
    large = plan_threads.NestWork((1024, 1024), carries=False, flat=False, statements=1, calls=1)
    assert large.work == (1 << 20) * 9 and plan_threads.parallel(large, threads=4)
    assert not plan_threads.parallel(large, threads=1)
    for changed in ({"carries": True}, {"flat": True}, {"shape": (1, 1 << 22)}):
        fields = {"shape": (1024, 1024), "carries": False, "flat": False, "statements": 1,
                  "calls": 1} | changed
        assert not plan_threads.parallel(plan_threads.NestWork(**fields), threads=4)


def test_row_loops_number_their_units():
    nest = Unit("nest", "call", (4, 3), "exp")
    units = in_row_loops((nest,) * 5, (RowLoop((1, 2), True), RowLoop((4, 5), False)))
    assert [(u.rows, u.parallel) for u in units] == [(1, True), (1, True), (0, False),
                                                     (2, False), (2, False)]


def test_nests_are_written_on_threads_as_the_plan_s_rule_says(monkeypatch):
    """The code generator asks the plan's rule, with the scheduler's thread count, and writes
    what it answers: a rule that gives every nest threads makes a 30×7 layer norm's one row
    loop a prange, and the schedule says so; while the code is written, nothing asks how many
    threads there are."""
    monkeypatch.setattr(emitter, "machine", lambda: scheduler.Machine(threads=4))
    asked = []

    def always(nest, count):
        asked.append((nest.shape, count))
        return True

    monkeypatch.setattr(plan_threads, "parallel", always)
    write = emitter.Emitter.function

    def writing(self, region):
        with monkeypatch.context() as inside:
            inside.setattr(threads, "count", lambda: pytest.fail("threads counted in writing"))
            return write(self, region)

    monkeypatch.setattr(emitter.Emitter, "function", writing)
    f = hilbert.compile_source(NORMED).function("normed")
    generated = _generated(f, (30, 7))
    nests = [u for u in generated.units if u.kind == "nest"]
    assert len(asked) == len(nests) == 5 and {count for _, count in asked} == {4}
    assert all(u.parallel and u.rows == 1 for u in nests)
    assert len(re.findall(r"^    for i0 in prange\(", generated.source, flags=re.M)) == 1


def test_nests_join_as_the_row_loop_record_says(monkeypatch):
    """The rewrite performs the plan's record, not its own view: a layer norm whose plan
    joins only its first two nests runs those two as one loop and the other three apart,
    and its schedule numbers only those two."""
    f = hilbert.compile_source(NORMED).function("normed")
    decided = row_loops._runs
    records = []

    def first_two(nests, names):
        records.append(decided(nests, names))
        return [records[-1][0][:2]]

    monkeypatch.setattr(row_loops, "_runs", first_two)
    generated = _generated(f, (30, 7))
    # (what the plan decides alone: five nests in a row, by their positions among the block's
    # units, the row length's measure among them)
    assert records == [[(0, 2, 3, 5, 6)]]
    assert [u.rows for u in generated.units] == [1, 1, 0, 0, 0]
    assert len(re.findall(r"^    for i0 in range\(", generated.source, flags=re.M)) == 4
    a = np.random.default_rng(5).normal(size=(30, 7))
    centred = a - a.mean(axis=1, keepdims=True)
    want = centred / np.sqrt((centred ** 2).mean(axis=1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(f(a), want, rtol=1e-9, atol=1e-12)


def test_join_moves_the_buffers_between_joined_nests_before_them():
    n, i0 = Var("n1"), Var("i0")
    alloc = Assign(("b2",), (call("K.empty", sizes([n])),))
    body = [For("i0", n, [Store(Sub(Var("b1"), (i0,)), Sub(Var("a0"), (i0,)))], kernels=(1,)),
            alloc,
            For("i0", n, [Store(Sub(Var("b2"), (i0,)), Sub(Var("b1"), (i0,)))], kernels=(2,))]
    assert rows.join(body, ()) == body
    (joined_alloc, joined) = rows.join(body, (RowLoop((1, 2), True),))
    assert joined_alloc == alloc
    assert isinstance(joined, For) and joined.parallel and joined.kernels == (1, 2)
    assert joined.body == body[0].body + body[2].body


@pytest.mark.parametrize("m, k, n", [(2048, 128, 512), (256, 512, 2048), (64, 64, 64)])
def test_a_shared_product_s_blocks_are_the_scheduler_s(monkeypatch, m, k, n):
    """A product of a function that shares its products out among hilbert's threads: the
    scheduler records how (Step.shared: by rows when it has at least as many rows as columns,
    from 2²⁶ multiply-adds), and the code shares it so."""
    monkeypatch.setattr(emitter, "machine", lambda: scheduler.Machine(threads=4, splits=True))
    decided = []
    decide = scheduler.decide
    monkeypatch.setattr(scheduler, "decide", lambda *a, **k: decided.append(decide(*a, **k))
                        or decided[-1])
    f = hilbert.compile_source('fn f(a, b) ↦ einsum("ij,jk->ik", a, b)\n').function("f")
    generated = _generated(f, (m, k), (k, n))
    (contraction,) = decided[0].root.contractions.values()
    (step,) = contraction.runs
    want = (m >= n) if m * k * n >= layout.SPLIT_PRODUCT else None
    assert step.shared is want
    shared = re.findall(r"K\.shared_product\([^)]*, (True|False)\)", generated.source)
    assert shared == ([] if want is None else [str(want)])
