"""Which fused loop nests run as one loop over their rows, and which run on threads, are the
plan's decisions (compiler/plan/row_loops.py, threads.py), made from the fusion groups before
any code is written: checked here on the scheduler's record alone, with the code generator
unable to write anything, and then with the code following the record."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hilbert.compiler.plan import row_loops, scheduler
from hilbert.compiler.plan import threads as plan_threads
from hilbert.executor.codegen import emitter
from hilbert.executor.codegen.verify_loops import LoopVerifyError

import hilbert

NORMED = "open Prelude.Networks\nfn normed(a) ↦ layerNorm(a)\n"
SOFT = "open Prelude.Arithmetic\nfn soft(m) ↦ softmaxRows(m)\n"


def _decided(monkeypatch, text: str, name: str, *shapes, threads: int = 1):
    """The scheduler's record of the function generated for `name` at `shapes`, made while
    the code generator cannot write a line."""
    monkeypatch.setattr(emitter, "machine", lambda: scheduler.Machine(threads=threads))
    found = []
    decide = scheduler.decide
    monkeypatch.setattr(scheduler, "decide", lambda *a, **k: found.append(decide(*a, **k))
                        or found[-1])
    monkeypatch.setattr(emitter.Emitter, "function",
                        lambda self, region: pytest.fail("code written"))
    f = hilbert.compile_source(text).function(name)
    with pytest.raises(BaseException, match="code written"):
        f.program(shapes).region.generated  # noqa: B018 (generating is what is tested)
    (decisions,) = found
    return decisions.root


def _nests(block) -> list[int]:
    return [k for k, unit in enumerate(block.units)
            if unit.group is not None and (unit.group.stored or unit.group.tails)]


def test_a_layer_norm_is_one_row_loop_in_the_plan_alone(monkeypatch):
    """The issue's probe, on the record: a layer norm's five nests (row sums, means,
    centred squares' sums, spreads, the division) run as one loop over the rows."""
    block = _decided(monkeypatch, NORMED, "normed", (256, 64))
    assert len(_nests(block)) == 5
    assert block.rows == (tuple(_nests(block)),)
    assert block.threads == frozenset()  # (one thread: nothing on threads)


@pytest.mark.parametrize("text", [
    'fn f(a) ↦ einsum("ij,j->ij", exp(a), einsum("ij->j", exp(a)))\n',  # column sums
    'fn f(a) ↦ exp(a) / einsum("ij->", exp(a))\n',  # a total, read by every row after
    'fn f(a) ↦ einsum("ij,ji->ij", a, exp(a) · 2)\n',  # rows read as columns
], ids=["column-sums", "total", "transposed"])
def test_nests_that_read_other_rows_are_apart_in_the_plan(monkeypatch, text):
    block = _decided(monkeypatch, text, "f", (120, 120))
    assert len(_nests(block)) >= 2 and block.rows == ()


def test_a_nest_s_work_per_entry_is_counted_from_its_group(monkeypatch):
    """A 256×64 layer norm's nests, measured by the plan: the statements per entry of each
    nest's body as the generated code writes them (tests/golden/recorded's layer norm: the sum
    1; the mean's split division 4; the centred square and its sum 4; the spread's division,
    the ε and the root 6; the division's two rows read, the centred value and the split
    division 7), and no kernel calls (np.sqrt is no kernel); a softmax's maximum and exponential
    one each."""
    measured = []
    measure = plan_threads.measure
    monkeypatch.setattr(plan_threads, "measure",
                        lambda *a, **k: measured.append(measure(*a, **k)) or measured[-1])
    _decided(monkeypatch, NORMED, "normed", (256, 64))
    assert [(w.shape, w.statements, w.calls) for w in measured] == [
        ((256, 64), 1, 0), ((256,), 4, 0), ((256, 64), 4, 0), ((256,), 6, 0),
        ((256, 64), 7, 0)]
    measured.clear()
    _decided(monkeypatch, SOFT, "soft", (64, 32))
    assert [w.calls for w in measured] == [1, 1, 0]  # (K.fmax, K.exp, a division: none)


def test_a_row_loop_runs_on_threads_when_one_of_its_nests_would(monkeypatch):
    """With four threads and a rule that puts only the first nest on threads, the plan puts
    the layer norm's whole row loop on them: every nest is on threads (none of them keeps a
    scratch row or a checked division, which serial nests may), the loop is one prange, and
    the answer is NumPy's."""
    asked = []

    def first(nest, count):
        asked.append(nest)
        return len(asked) == 1

    monkeypatch.setattr(plan_threads, "parallel", first)
    block = _decided(monkeypatch, NORMED, "normed", (30, 7), threads=4)
    assert block.threads == frozenset(_nests(block))
    monkeypatch.undo()
    asked.clear()
    monkeypatch.setattr(plan_threads, "parallel", first)
    monkeypatch.setattr(emitter, "machine", lambda: scheduler.Machine(threads=4))
    f = hilbert.compile_source(NORMED).function("normed")
    generated = f.program(((30, 7),)).region.generated
    assert all(u.parallel and u.rows == 1 for u in generated.units if u.kind == "nest")
    assert len(re.findall(r"^    for i0 in prange\(", generated.source, flags=re.M)) == 1
    assert "K.quotient(" not in generated.source and "row" not in generated.source
    a = np.random.default_rng(3).normal(size=(30, 7))
    centred = a - a.mean(axis=1, keepdims=True)
    want = centred / np.sqrt((centred ** 2).mean(axis=1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(f(a), want, rtol=1e-9, atol=1e-12)


def test_a_row_loop_writing_off_its_row_fails_the_loop_verifier(monkeypatch):
    """The loop-IR verifier holds the plan to what a row loop may do: a plan that joined a
    nest of column sums (written at each row's column, every row adding into all of them)
    with the nest reading them is refused where the joined loop is checked."""
    monkeypatch.setenv("HILBERT_VERIFY", "1")
    monkeypatch.setattr(row_loops, "_runs", lambda nests, names: [
        tuple(n.position for n in nests if isinstance(n, row_loops._Nest))])
    f = hilbert.compile_source('fn f(a) ↦ einsum("ij,j->ij", exp(a), einsum("ij->j", exp(a)))\n'
                               ).function("f")
    with pytest.raises(LoopVerifyError, match="a row loop writes .*, not at its row"):
        f.program(((120, 120),)).region.generated  # noqa: B018 (generating is what is tested)
