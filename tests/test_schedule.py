"""The plan says what runs (compiler/plan/schedule.py): a function's plan lists the units its
generated code runs (fused nests, contraction steps, loops; the same before a build as after:
test_plan_before_build.py), which nests run as one loop over rows and which on threads, and
the code follows the plan's contraction paths. The
schedule is decided (compiler/plan/scheduler.py) before code is written, and written once.
Each is checked against the generated source itself, or against a figure written here."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hilbert.compiler.plan import fusion, layout, scheduler
from hilbert.executor.codegen import emitter

import hilbert

NORMED = "open Prelude.Networks\nfn normed(a) ↦ layerNorm(a)\n"
STEP = ('open Prelude.Arithmetic\n'
        'fn step(x, y, w1, w2) ↦ einsum("nh,hq->nq", relu(einsum("np,ph->nh", x, w1)), w2) − y\n')


def _source(f, *args) -> str:
    return f.program(tuple(np.shape(a) for a in args)).region.source


def test_layer_norm_plan_says_five_nests_run_as_one_loop_over_rows():
    """The issue's own figure: a layer norm's code runs 5 nests merged into 1 loop; its plan,
    once built, says so (before, it reported 2 fused groups)."""
    f = hilbert.compile_source(NORMED).function("normed")
    a = np.random.default_rng(1).normal(size=(64, 48))
    plan = f.build(a)
    (region,) = plan.schedule.regions
    assert region.what == "the whole call" and region.compiled
    assert [u.kind for u in region.units] == ["nest"] * 5
    assert {u.rows for u in region.units} == {1}
    source = _source(f, a)
    assert len(re.findall(r"^    for i0 in", source, flags=re.M)) == 1, source
    assert region.lines == source.count("\n") + 1
    assert f"generated code for the whole call (compiled, {region.lines} lines): 5 unit(s)" \
        in str(plan)
    assert plan.to_dict()["schedule"][0]["units"][0]["kind"] == "nest"


@pytest.mark.parametrize("text, name, shapes", [
    (NORMED, "normed", [(30, 7)]),
    (STEP, "step", [(40, 6), (40, 3), (6, 8), (8, 3)]),
    ("open Prelude.Arithmetic\nfn f(s) ↦ softmaxRows(s)\n", "f", [(9, 300)]),
])
def test_the_schedule_counts_the_loops_the_code_opens(text, name, shapes):
    """Every nest of the schedule is a fused nest of the code: the code opens one outer loop
    per row loop of the schedule and one per nest that runs alone."""
    f = hilbert.compile_source(text).function(name)
    args = [np.random.default_rng(2).normal(size=s) for s in shapes]
    (region,) = f.build(*args).schedule.regions
    nests = [u for u in region.units if u.kind == "nest"]
    outer = len({u.rows for u in nests if u.rows}) + sum(1 for u in nests if not u.rows)
    source = _source(f, *args)
    assert len(re.findall(r"^ +for i0 in", source, flags=re.M)) == outer, source
    assert any(u.parallel for u in nests) == ("prange(" in source)


def test_contractions_follow_the_plans_paths(monkeypatch):
    """The code generator reads each einsum's path and steps from the plan (Plan.paths): with
    the path search it would otherwise call made to fail, code is still generated, and it
    computes what NumPy computes."""
    def refuse(*args, **kwargs):
        raise AssertionError("the code generator planned a contraction again")

    monkeypatch.setattr(scheduler, "contraction", refuse)
    spec = "pi,qj,ijkl,rk,sl->pqrs"
    f = hilbert.compile_source(f'fn g(a, b, c, d, e) ↦ einsum("{spec}", a, b, c, d, e)\n').g
    rng = np.random.default_rng(3)
    args = [rng.normal(size=(5, 5)), rng.normal(size=(5, 5)), rng.normal(size=(5,) * 4),
            rng.normal(size=(5, 5)), rng.normal(size=(5, 5))]
    plan = f.build(*args)
    np.testing.assert_allclose(f(*args), np.einsum(spec, *args, optimize=True), rtol=1e-12,
                               atol=1e-12)
    (region,) = plan.schedule.regions
    assert [u.kind for u in region.units] == ["product"] * 4


LOOP = ('def walk(n, a, w) ≔ if n = 0 then a else walk(n − 1, einsum("ij,jk->ik", w, a) / 3, w)\n'
        'fn run(n, a, w) ↦ walk(n, a, w)\n')


@pytest.mark.parametrize("text, name, args, compiled", [
    ('fn f(a, b) ↦ einsum("ij,jk->ik", a, b)\n', "f", [(30, 40), (40, 50)], False),
    (NORMED, "normed", [(30, 7)], True),
    (LOOP, "run", [(), (4, 3), (4, 4)], True),
])
def test_code_is_written_once_from_a_schedule_decided_first(monkeypatch, text, name, args,
                                                             compiled):
    """Every function's code is generated as scheduler.decide decided it: decided once, then
    written once (not written a second time to learn whether it compiles), and nothing is
    scheduled or laid out while it is written."""
    calls = []
    decide, write = scheduler.decide, emitter.Emitter.function

    def deciding(*a, **k):
        calls.append("decide")
        return decide(*a, **k)

    def refuse(*a, **k):
        raise AssertionError("a decision made while code was written")

    def writing(self, region):
        calls.append("write")
        with monkeypatch.context() as inside:
            inside.setattr(fusion, "schedule", refuse)
            inside.setattr(layout, "layout", refuse)
            inside.setattr(scheduler, "layout", refuse)
            return write(self, region)

    monkeypatch.setattr(scheduler, "decide", deciding)
    monkeypatch.setattr(emitter.Emitter, "function", writing)
    f = hilbert.compile_source(text).function(name)
    values = [np.float64(3.0) if s == () else np.random.default_rng(3).normal(size=s) / 4
              for s in args]
    generated = f.program(tuple(np.shape(v) for v in values)).region.generated
    assert calls == ["decide", "write"]
    assert generated.compiled == compiled
    if name == "f":
        np.testing.assert_allclose(f(*values), values[0] @ values[1], rtol=1e-12)
