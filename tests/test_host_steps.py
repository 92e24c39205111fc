"""The host tier's own cost (issue 47, item 20): a loop-free call is laid out once per signature
as straight-line steps (executor/straight.py), so a call walks no IR, keeps no memo of nodes
and looks no op's meaning or einsum's kernel up: counted here, never timed. What it computes
is the walk's result to the bit, and each BLAS step is np.tensordot's, to the bit."""

from __future__ import annotations

import numpy as np
import pytest
from hilbert.compiler import evaluate
from hilbert.compiler.plan import contraction
from hilbert.executor import planned, straight

import hilbert

# (the step and the step by hand, as the benchmark times them)
from benchmarks.cases.steps import ADAM, adam_numpy


def _adam_arguments(seed: int = 0) -> tuple:
    rng = np.random.default_rng(seed)
    n, p, h, q = 64, 16, 32, 4
    x, y = rng.standard_normal((n, p)), rng.standard_normal((n, q))
    w1, w2 = rng.standard_normal((p, h)) * 0.3, rng.standard_normal((h, q)) * 0.3
    m1, m2 = rng.standard_normal((p, h)) * 1e-3, rng.standard_normal((h, q)) * 1e-3
    v1, v2 = rng.random((p, h)) * 1e-4, rng.random((h, q)) * 1e-4
    return x, y, w1, w2, m1, m2, v1, v2, 3.0


@pytest.fixture
def host(monkeypatch):
    monkeypatch.setenv("HILBERT_COMPILE", "never")


def _counted(monkeypatch, owner, name: str, counts: dict) -> None:
    original = getattr(owner, name)

    def counting(*args, **kwargs):
        counts[name] = counts.get(name, 0) + 1
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, counting)


def test_a_host_call_walks_no_ir_and_looks_no_kernel_up(host, monkeypatch):
    """After its first call, a signature's call is its straight-line steps alone: no walk of
    the IR (`evaluate`, `Host._value`), no einsum kernel made or looked up."""
    f = hilbert.compile_source(ADAM).adamStep
    args = _adam_arguments()
    f(*args)
    assert f.tier == "host"
    counts: dict = {}
    _counted(monkeypatch, planned, "evaluate", counts)
    _counted(monkeypatch, evaluate.Host, "_value", counts)
    _counted(monkeypatch, planned, "einsum_kernel", counts)
    _counted(monkeypatch, planned.PlannedProgram, "kernel", counts)
    for _ in range(3):
        got = f(*args)
    assert counts == {}
    for value, want in zip(got, adam_numpy(*args), strict=True):
        np.testing.assert_allclose(value, want, rtol=1e-10, atol=1e-14)


def test_each_op_s_meaning_is_looked_up_once_per_signature(host, monkeypatch):
    """The steps hold each op's meaning: making them reads the op table, a call does not."""
    looked: list[str] = []
    table = straight.BY_OP

    class Watched(dict):
        def __getitem__(self, op):
            looked.append(op)
            return table[op]

    monkeypatch.setattr(straight, "BY_OP", Watched(table))
    f = hilbert.compile_source(ADAM).adamStep
    args = _adam_arguments()
    f(*args)
    made = len(looked)
    assert made > 0
    f(*args)
    f(*args)
    assert len(looked) == made


def _walked(program: planned.PlannedProgram, values: tuple):
    """What the IR walk (the host tier before its steps were laid out) gives."""
    program._straight = None
    return program(values)


def test_the_steps_give_the_walk_s_result_to_the_bit(host):
    f = hilbert.compile_source(ADAM).adamStep
    args = _adam_arguments(seed=5)
    got = f(*args)
    program = f.program(tuple(np.shape(a) for a in args)).host
    assert program._straight is not None
    values = tuple(np.asarray(a, dtype=np.float64) for a in args)
    for value, walked in zip(got, _walked(program, values), strict=True):
        np.testing.assert_array_equal(value, walked)


@pytest.mark.parametrize("spec, shapes", [
    ("ab,bc->ac", ((40, 30), (30, 50))),
    ("abc,cbd->ad", ((16, 7, 8), (8, 7, 9))),
    ("ab,cb->ca", ((40, 30), (50, 30))),
    ("bac,dc->bda", ((15, 6, 7), (18, 7))),
])
def test_a_blas_step_is_np_tensordot_s_product_to_the_bit(spec, shapes):
    """The tensordot with its transposes and reshapes worked out once is np.tensordot's own
    views and np.dot, so the same numbers."""
    path, steps = contraction(spec, shapes, "auto")
    (step,) = steps
    assert step.blas and step.flops >= planned.BLAS_FLOPS
    rng = np.random.default_rng(7)
    a, b = (rng.standard_normal(s) for s in shapes)
    inputs, output = spec.split("->")
    left, right = inputs.split(",")
    removed = sorted(set(left + right) - set(output), key=left.find)
    axes = ([left.index(c) for c in removed], [right.index(c) for c in removed])
    kept = "".join(c for c in left + right if c not in removed)
    want = np.tensordot(a, b, axes=axes).transpose([kept.index(c) for c in output])
    np.testing.assert_array_equal(planned.einsum_kernel(spec, shapes, "auto")(a, b), want)


def test_a_program_with_a_branch_keeps_the_walk(host):
    """An `if` computes only the branch it takes, which the walk decides at each call."""
    mod = hilbert.compile_source("fn f(t, x) ↦ if t < 3 then x[t] · 2 else 0")
    x = np.arange(3.0)
    assert mod.f(5, x) == 0.0 and mod.f(1, x) == 2.0
    assert mod.f.program(((), (3,))).host._straight is None


def test_a_broadcast_product_step_is_one_multiplication():
    """",ij->ij" and "j,ij->ij" (a scalar or a row times a matrix): np.multiply, not an
    einsum call, to the same numbers."""
    rng = np.random.default_rng(2)
    x, row = rng.standard_normal((4, 5)), rng.standard_normal(5)
    for spec, args in ((",ij->ij", (np.float64(1.5), x)), ("j,ij->ij", (row, x)),
                       ("ij,ij->ij", (x, x))):
        kernel = planned.einsum_kernel(spec, tuple(np.shape(a) for a in args), "auto")
        assert kernel is np.multiply
        np.testing.assert_array_equal(kernel(*args), np.einsum(spec, *args))
