"""The schedule is planning data (compiler/plan/schedule.py): a plan says what its generated code
runs before anything is built, and says the same once it is built, because the build runs
exactly the code whose schedule the plan holds. Each program is planned, called (the build
runs first: HILBERT_COMPILE=eager, as conftest.py sets) and planned again; the schedule is
checked against the generated source itself where it names a count."""

from __future__ import annotations

import copy
import json
import pickle
import re

import numpy as np
import pytest
from conftest import ROOT, golden_recorder
from hilbert.executor import threads
from hilbert.executor.numba.kernels import PYTHON_MODE
from hilbert.executor.numba.scope import regions_of

import hilbert

NORMED = "open Prelude.Networks\nfn normed(a) ↦ layerNorm(a)\n"
STEP = ('open Prelude.Arithmetic\n'
        'fn step(x, y, w1, w2) ↦ einsum("nh,hq->nq", relu(einsum("np,ph->nh", x, w1)), w2) − y\n')
ATTENTION = "open Prelude.Networks\nfn attend(q, k, v) ↦ attentionOf(q, k, v, 0.5)\n"
SOFT = "open Prelude.Arithmetic\nfn soft(m) ↦ softmaxRows(m)\n"
LOOP = ('def walk(n, a, w) ≔ if n = 0 then a else walk(n − 1, einsum("ij,jk->ik", w, a) / 3, w)\n'
        'fn run(n, a, w) ↦ walk(n, a, w)\n')
RNN = ('def walk(t, x, w, h) ≔ if t = 0 then h else walk(t − 1, x, w, '
       'tanh(einsum("ng,gh->nh", h, w) + x))\n'
       'fn rnn(t, x, w, h) ↦ walk(t, x, w, h)\n')


def _arguments(shapes, dtype="float64"):
    rng = np.random.default_rng(7)
    return [np.asarray(3.0, dtype) if s == () else (rng.normal(size=s) / 4).astype(dtype)
            for s in shapes]


def _planned_then_built(f, shapes, dtype="float64"):
    """The plan's text before the first call, the program, and the text once it is built."""
    before = str(f.plan(*shapes))
    f(*_arguments(shapes, dtype))
    program = f.program(tuple(shapes), dtype)
    assert program.built, "the first call should have built the code (HILBERT_COMPILE=eager)"
    return before, program, str(f.plan(*shapes))


@pytest.mark.timeout(600)  # (the MLP step's ∂ compiles for a while on a loaded core)
@pytest.mark.skipif(PYTHON_MODE, reason="NUMBA_DISABLE_JIT=1: nothing is built")
@pytest.mark.parametrize("text, name, shapes, dtype", [
    (NORMED, "normed", [(256, 64)], "float64"),
    (STEP, "step", [(40, 6), (40, 3), (6, 8), (8, 3)], "float64"),
    (None, "autoStep", [(), (64, 8), (64, 3), (8, 16), (16, 3)], "float64"),
    (NORMED, "normed", [(96, 24)], "float32"),
    (ATTENTION, "attend", [(5, 4), (7, 4), (7, 3)], "float64"),
    (LOOP, "run", [(), (4, 3), (4, 4)], "float64"),
    (SOFT, "soft", [(200, 90)], "float64"),
], ids=["layer-norm", "mlp-forward", "mlp-step", "float32", "prelude-networks", "loop",
        "softmax-rows"])
def test_the_plan_is_the_same_before_and_after_the_build(text, name, shapes, dtype):
    module = hilbert.load(ROOT / "examples" / "Gradients.hb") if text is None else \
        hilbert.compile_source(text)
    f = module.function(name)
    if dtype != "float64":
        f = f.using(dtype=dtype)
    before, program, after = _planned_then_built(f, shapes, dtype)
    assert before == after
    assert "generated code for the whole call (compiled" in before
    # the plan lists the code that runs: its regions are the built code's own units
    regions = f.plan(*shapes).schedule.regions
    assert [r.units for r in regions] == [r.generated.units for r in regions_of(program.runner)]


@pytest.mark.skipif(PYTHON_MODE, reason="NUMBA_DISABLE_JIT=1: nothing is built")
def test_a_layer_norm_plan_lists_the_nests_its_build_runs_before_it_is_built():
    """The issue's probe: a layerNorm over 256×64, planned before any call, lists the nests the
    build then runs, one loop over the rows (not the compiler's old estimate of 2 groups)."""
    f = hilbert.compile_source(NORMED).function("normed")
    plan = f.plan((256, 64))
    assert not f.program(((256, 64),)).built
    (region,) = plan.schedule.regions
    nests = [u for u in region.units if u.kind == "nest"]
    assert len(nests) >= 4 and {u.rows for u in nests} == {1}
    assert "fused entrywise groups" not in str(plan)
    f(_arguments([(256, 64)])[0])
    source = f.program(((256, 64),)).region.source
    assert len(re.findall(r"^    for i0 in", source, flags=re.M)) == 1, source  # one row loop
    assert region.lines == source.count("\n") + 1


@pytest.mark.skipif(PYTHON_MODE, reason="NUMBA_DISABLE_JIT=1: nothing is compiled to split")
def test_a_call_run_as_blocks_of_rows_says_so_before_it_is_built(monkeypatch):
    """A recurrence over a batch, where hilbert has threads, runs as blocks of rows on them:
    its plan says so before the build, and the same after."""
    monkeypatch.setattr(threads, "count", lambda: 2)
    f = hilbert.compile_source(RNN).function("rnn")
    shapes = [(), (256, 64), (64, 64), (256, 64)]
    before, program, after = _planned_then_built(f, shapes)
    assert program.generated().blocks is not None
    assert "2 blocks of rows" in before and before == after


@pytest.mark.skipif(PYTHON_MODE, reason="NUMBA_DISABLE_JIT=1: nothing is built")
def test_the_plan_says_which_back_end_builds_its_code_before_the_build(monkeypatch):
    """The plan says what builds each generated function (the llvm back end; where it does
    not lower one, why the calls stay on the host) before the build, and the same after."""
    f = hilbert.compile_source(NORMED).function("normed")
    before, program, after = _planned_then_built(f, [(256, 64)])
    assert "generated function 1 built by llvm" in before and before == after


def test_a_plan_read_but_not_printed_decides_nothing():
    """Reading a plan's paths (as hilbert.einsum does) generates no code: the schedule is
    decided when it is first read."""
    f = hilbert.compile_source(NORMED).function("normed")
    plan = f.plan((8, 3))
    assert plan.einsums and repr(plan.schedule) == "Schedule(undecided)"
    assert f.program(((8, 3),))._tiers._runner is None
    assert plan.schedule.regions and f.program(((8, 3),))._tiers._runner is not None


def test_a_plan_keeps_its_schedule_as_data():
    """Pickled, copied or written as JSON, a plan holds its schedule decided: the same text,
    and the regions and notes as plain data."""
    f = hilbert.compile_source(NORMED).function("normed")
    plan = f.plan((8, 3))
    again = pickle.loads(pickle.dumps(plan))
    assert str(again) == str(plan) and copy.deepcopy(plan).schedule.regions == \
        plan.schedule.regions
    data = json.loads(json.dumps(plan.to_dict()))
    assert [u["kind"] for u in data["schedule"][0]["units"]] == \
        [u.kind for u in plan.schedule.regions[0].units]
    assert data["notes"] == list(plan.notes + plan.schedule.notes)


def _plan_after_generating(record, program) -> str | None:
    """A golden program's plan text read only after its generated code was written (its
    second tier's regions made first, the plan's schedule not yet read), or None when the
    program cannot be prepared or generated (its record says so)."""
    with record.pinned_environment(program.get("threads", 1)):
        try:
            prepared = record.function_of(program)._prepare(record.shapes_of(program),
                                                            program.get("dtype", "float64"))
            regions_of(prepared.runner)
        except Exception:  # noqa: BLE001 (recorded as an error: nothing to compare)
            return None
        return str(prepared.plan)


def test_every_golden_plan_is_the_same_whether_code_was_written_first():
    """Over every program of the golden guard (tests/golden/programs.json): the plan read
    after the code generator has written every function of the program is the plan read
    before (the golden record's, which is read first): writing the code changes nothing in
    the plan, so nothing is decided or patched into it after the fact."""
    record = golden_recorder()
    compared = 0
    for program in record.read_programs():
        recorded = record.read_record(program["name"])
        if "\n== plan\n" not in recorded:
            continue
        after = _plan_after_generating(record, program)
        before = recorded.split("\n== plan\n", 1)[1].split("\n== second tier", 1)[0]
        assert after is not None, program["name"]
        assert after + "\n" == before, program["name"]
        compared += 1
    assert compared > 400
