"""The planner: fusion structure, shared loops, paths and FLOPs, caching, the memory guard."""

from __future__ import annotations

import numpy as np
import opt_einsum
import opt_einsum.testing
import pytest
from hilbert.compiler import ir
from hilbert.compiler.fuse import count_einsums, count_loops
from hypothesis import given, settings
from hypothesis import strategies as st

import hilbert

NETWORKS = "open Prelude.Networks\n"


def einsums(node: ir.Node) -> list[ir.Einsum]:
    return [n for n in ir.topological(node) if isinstance(n, ir.Einsum)]


def test_dense_of_dense_fuses_into_one_three_operand_einsum():
    mod = hilbert.compile_source(NETWORKS + "fn two(a, w1, w2) ↦ dense(dense(a, w1), w2)")
    fused = mod.two.entry.fused
    assert count_einsums(fused) == 1
    (only,) = einsums(fused)
    assert len(only.args) == 3
    assert [a.name for a in only.args] == ["a", "w1", "w2"]
    rng = np.random.default_rng(1)
    a, w1, w2 = rng.normal(size=(5, 4)), rng.normal(size=(4, 3)), rng.normal(size=(3, 2))
    np.testing.assert_allclose(mod.two(a, w1, w2), a @ w1 @ w2, rtol=1e-12)


def test_self_attention_scores_are_one_einsum_over_a_wq_wk_a():
    mod = hilbert.compile_source(NETWORKS + "fn sa(a, wq, wk, wv, d) ↦ selfAttention(a, wq, wk, wv, d)")
    scores = [e for e in einsums(mod.sa.entry.fused) if len(e.args) == 4]
    assert len(scores) == 1
    assert [a.name for a in scores[0].args] == ["a", "wq", "a", "wk"]
    rng = np.random.default_rng(2)
    a, wq, wk, wv = (rng.normal(size=s) for s in [(6, 4), (4, 3), (4, 3), (4, 2)])
    s = (a @ wq) @ (a @ wk).T / np.sqrt(3.0)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    expected = (e / e.sum(axis=1, keepdims=True)) @ (a @ wv)
    np.testing.assert_allclose(mod.sa(a, wq, wk, wv, 3.0), expected, rtol=1e-12)


@pytest.mark.parametrize("name", ["mlpPredict", "autoFit", "ganSamples"])
def test_twin_fits_become_one_loop(name):
    nets = hilbert.open("Prelude.Networks")
    assert count_loops(nets.function(name).entry.fused) == 1
    assert count_loops(nets.function(name).entry.body) == 1


def fit_data():
    x = np.array([[0, 1], [1, 1], [2, 1], [3, 1.0]])
    y = np.array([[1], [3], [5], [7.0]])
    return x, y, np.array([[0.5, 0.3], [0.2, 0.4]]), np.array([[0.5], [0.5]])


@pytest.mark.parametrize("executor", ["reference", "numba"])
def test_mlp_predict_runs_its_loop_body_t_times_not_2t(executor):
    nets = hilbert.open("Prelude.Networks", executor=executor)
    x, y, w1, w2 = fit_data()
    f = nets.mlpPredict
    f(37, 0.05, x, y, w1, w2, x)
    program = f.program(tuple(np.shape(v) for v in (37.0, 0.05, x, y, w1, w2, x)))
    assert program.loop_steps == 37


def test_a_second_call_with_the_same_signature_plans_nothing():
    mod = hilbert.compile_source(NETWORKS + "fn layer(a, w) ↦ dense(a, w)")
    a, w = np.ones((2, 2)), np.ones((2, 3))
    mod.layer(a, w)
    assert mod.layer.plans_made == 1
    mod.layer(a + 1, w)
    assert mod.layer.plans_made == 1
    mod.layer(np.ones((3, 2)), w)
    assert mod.layer.plans_made == 2


SPECS = [
    ("pi,qj,ijkl,rk,sl->pqrs", [(10, 10)] * 2 + [(10, 10, 10, 10)] + [(10, 10)] * 2),
    ("ab,bc,cd,de,ef->af", [(8, 30), (30, 5), (5, 40), (40, 6), (6, 9)]),
    ("bij,bjk->bik", [(4, 5, 6), (4, 6, 7)]),
    ("ij,jk,kl->il", [(50, 2), (2, 60), (60, 3)]),
]


def _plan_flops(spec: str, shapes, optimize: str = "auto") -> int:
    names = [f"t{i}" for i in range(len(shapes))]
    mod = hilbert.compile_source(f'fn f({", ".join(names)}) ↦ einsum("{spec}", {", ".join(names)})')
    return mod.f.using(optimize=optimize).plan(*shapes).flops


@pytest.mark.parametrize("spec, shapes", SPECS)
@pytest.mark.parametrize("optimize", ["auto", "greedy", "optimal", "dp"])
def test_plan_flops_equal_opt_einsum(spec, shapes, optimize):
    _, info = opt_einsum.contract_path(spec, *shapes, shapes=True, optimize=optimize)
    assert _plan_flops(spec, shapes, optimize) == info.opt_cost


@pytest.mark.parametrize("seed", range(8))
def test_plan_flops_equal_opt_einsum_on_random_equations(seed):
    eq, shapes = opt_einsum.testing.rand_equation(5, 3, seed=seed, d_max=4)
    assert "->" in eq
    _, info = opt_einsum.contract_path(eq, *shapes, shapes=True, optimize="auto")
    assert _plan_flops(eq, shapes) == info.opt_cost


def test_plan_prints_paths_loops_and_memory():
    nets = hilbert.open("Prelude.Networks")
    x, y, w1, w2 = fit_data()
    plan = nets.mlpPredict.plan(500.0, 0.05, x, y, w1, w2, x)
    text = str(plan)
    assert "np,pq->nq" in text and "GEMM" in text
    assert plan.loops and plan.loops[0].trips == 500
    data = plan.to_dict()
    assert data["loops"][0]["trips"] == 500
    assert data["flops"] == sum(e["flops"] for e in data["einsums"] if e["scope"] == "call") + \
        500 * data["loops"][0]["flops_per_step"]


def test_memory_guard_refuses_before_allocating_and_small_calls_still_run(monkeypatch):
    monkeypatch.setenv("HILBERT_MEMORY_LIMIT", "64M")
    mod = hilbert.compile_source('-- every product of an entry of u and an entry of v\n'
                                 'def table(u, v) ≔ einsum("i,j->ij", u, v)\n'
                                 'fn outer(u, v) ↦ table(u, v) · 2')
    with pytest.raises(hilbert.HilbertError) as caught:
        mod.outer(np.zeros(100_000), np.zeros(100_000))  # 80 GB if it were allocated
    err = caught.value
    assert err.code == "E700"
    assert '"i,j->ij"' in err.message and "10,000,000,000 elements" in err.message
    assert "limit of 64.0 MiB" in err.message
    assert "in table" in str(err)  # the definition it is inside
    np.testing.assert_allclose(mod.outer([1, 2], [3, 4]), 2 * np.outer([1, 2], [3, 4]))


def test_convolve_of_a_long_signal_never_builds_its_window_tensor(monkeypatch):
    monkeypatch.setenv("HILBERT_MEMORY_LIMIT", "256M")  # L²K would be 1.28 TB
    layers = hilbert.load("examples/Layers.hb")
    rng = np.random.default_rng(5)
    x, k = rng.normal(size=(2, 100_000)), rng.normal(size=16)
    padded = np.concatenate([x, np.zeros((2, 16))], axis=1)
    expected = np.stack([np.correlate(row, k, "valid")[:100_000] for row in padded])
    np.testing.assert_allclose(layers.filtered(x, k), expected, rtol=1e-10, atol=1e-12)
    pooled = layers.pooledMax(x, k)
    windows = np.lib.stride_tricks.sliding_window_view(padded, 16, axis=1)[:, :100_000]
    np.testing.assert_array_equal(pooled, windows.max(axis=2))


# Property tests: random programs agree before and after planning.

_LETTERS = "abcdef"


@st.composite
def einsum_programs(draw):
    sizes = {ch: draw(st.integers(1, 4)) for ch in _LETTERS}
    count = draw(st.integers(1, 3))
    terms = [draw(st.text(_LETTERS, min_size=0, max_size=3)) for _ in range(count)]
    letters = sorted(set("".join(terms)))
    output = "".join(draw(st.permutations(letters))[: draw(st.integers(0, len(letters)))])
    shapes = [tuple(sizes[ch] for ch in t) for t in terms]
    return ",".join(terms) + "->" + output, shapes


@settings(max_examples=60, deadline=None)
@given(einsum_programs(), st.integers(0, 2**31 - 1))
def test_random_einsums_agree_with_numpy_and_reference(program, seed):
    spec, shapes = program
    rng = np.random.default_rng(seed)
    operands = [rng.normal(size=s) for s in shapes]
    names = [f"t{i}" for i in range(len(shapes))]
    source = f'fn f({", ".join(names)}) ↦ einsum("{spec}", {", ".join(names)})'
    planned = hilbert.compile_source(source).f(*operands)
    reference = hilbert.compile_source(source, executor="reference").f(*operands)
    expected = np.einsum(spec, *operands)
    np.testing.assert_allclose(planned, expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(reference, expected, rtol=1e-10, atol=1e-12)


@st.composite
def chains(draw):
    """A chain of matrix products and transposes written as nested einsums (all fusible)."""
    n = draw(st.integers(2, 5))
    dims = [draw(st.integers(1, 5)) for _ in range(n + 1)]
    expr = "m0"
    for i in range(1, n):
        form = draw(st.sampled_from(["ij,jk->ik", "ji,jk->ik"]))
        if form == "ji,jk->ik":
            expr = f'einsum("ji,jk->ik", einsum("ij->ji", {expr}), m{i})'
        else:
            expr = f'einsum("ij,jk->ik", {expr}, m{i})'
    return expr, [(dims[i], dims[i + 1]) for i in range(n)]


@settings(max_examples=40, deadline=None)
@given(chains(), st.integers(0, 2**31 - 1))
def test_fusible_chains_agree_before_and_after_planning(chain, seed):
    expr, shapes = chain
    params = ", ".join(f"m{i}" for i in range(len(shapes)))
    source = f"fn f({params}) ↦ 2 · {expr} − 1"
    rng = np.random.default_rng(seed)
    mats = [rng.normal(size=s) for s in shapes]
    mod = hilbert.compile_source(source)
    assert count_einsums(mod.f.entry.fused) == 1
    expected = mats[0]
    for m in mats[1:]:
        expected = expected @ m
    np.testing.assert_allclose(mod.f(*mats), 2 * expected - 1, rtol=1e-10, atol=1e-12)
    reference = mod.f.using(executor="reference")(*mats)
    np.testing.assert_allclose(mod.f(*mats), reference, rtol=1e-10, atol=1e-12)
