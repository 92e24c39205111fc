"""Work a loop repeats on values it never changes is done once (compiler/passes/hoist.py), and equal
work that mask elimination makes in two places of a loop step is shared (compiler/entry.py:
sharing runs again after masks). Expected values are NumPy loops written here."""

from __future__ import annotations

import numpy as np
import pytest

import hilbert

EXECUTORS = ["numba", "reference"]

INVARIANT = """
def walk(n, a, w1, w2) ≔
  if n = 0 then a
  else walk(n − 1, tanh(einsum("ij,jk->ik", a, einsum("jl,lk->jk", w1, w2))), w1, w2)
fn run(n, a, w1, w2) ↦ walk(n, a, w1, w2)
"""


def _walk(n, a, w1, w2):
    for _ in range(n):
        a = np.tanh(a @ (w1 @ w2))
    return a


def _inputs(seed: int = 1):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(30, 40)), rng.normal(size=(40, 50)) / 7, rng.normal(size=(50, 40)) / 7


@pytest.mark.parametrize("executor", EXECUTORS)
def test_a_product_of_unchanged_state_is_made_once_before_the_loop(executor):
    f = hilbert.compile_source(INVARIANT, executor=executor).run
    a, w1, w2 = _inputs()
    np.testing.assert_allclose(f(12.0, a, w1, w2), _walk(12, a, w1, w2), rtol=1e-12, atol=1e-12)
    if executor == "numba":
        plan = f.plan(12.0, a, w1, w2)
        scopes = {e.spec: e.scope for e in plan.einsums}
        assert scopes == {"jl,lk->jk": "call", "ij,jk->ik": "walk"}, plan
        (loop,) = plan.loops
        assert loop.flops_per_step == 2 * 30 * 40 * 40  # a · (w1 w2) only


@pytest.mark.parametrize("executor", EXECUTORS)
def test_a_loop_that_runs_no_step_still_answers_its_start(executor):
    f = hilbert.compile_source(INVARIANT, executor=executor).run
    a, w1, w2 = _inputs()
    w1[0, 0] = np.nan  # the moved product holds NaN: computed, never read
    np.testing.assert_array_equal(f(0.0, a, w1, w2), a)


def test_what_the_loop_changes_is_not_moved():
    text = """
def walk(n, a, w) ≔ if n = 0 then a else walk(n − 1, einsum("ij,jk->ik", w, a) / 3, w)
fn run(n, a, w) ↦ walk(n, a, w)
"""
    f = hilbert.compile_source(text).run
    rng = np.random.default_rng(2)
    a, w = rng.normal(size=(6, 6)), rng.normal(size=(6, 6))
    want = a
    for _ in range(5):
        want = w @ want / 3
    np.testing.assert_allclose(f(5.0, a, w), want, rtol=1e-12)
    plan = f.plan(5.0, a, w)
    assert [e.scope for e in plan.einsums] == ["walk"], plan


TWINS = """
def walk(n, a, b, x) ≔
  if n = 0 then (a, b)
  else walk(n − 1, a + einsum("ij,j->i", x, positions(x, 1) = 2) · 1,
            b + einsum("ij,j->i", x, positions(x, 1) = 2) · 2, x)
fn run(n, a, b, x) ↦ walk(n, a, b, x)
"""


@pytest.mark.parametrize("executor", EXECUTORS)
def test_equal_masked_reads_in_two_components_are_one(executor):
    f = hilbert.compile_source(TWINS, executor=executor).run
    rng = np.random.default_rng(3)
    x = rng.normal(size=(50, 4))
    a, b = f(7.0, np.zeros(50), np.ones(50), x)
    np.testing.assert_allclose(a, 7 * x[:, 2], rtol=1e-13)
    np.testing.assert_allclose(b, 1 + 14 * x[:, 2], rtol=1e-13)
    if executor == "numba":
        plan = f.plan(7.0, np.zeros(50), np.ones(50), x)
        assert len(plan.einsums) <= 1, plan  # one read of column 2 (moved out, as x is fixed)
