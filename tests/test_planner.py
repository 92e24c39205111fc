"""The planner: fusion structure, shared loops, paths and FLOPs, caching, the memory guard."""

from __future__ import annotations

import functools
import itertools
import math
import tracemalloc

import numpy as np
import opt_einsum
import opt_einsum.testing
import pytest
from hilbert.compiler import ir
from hilbert.compiler.passes.fuse import count_einsums, count_loops
from hilbert.compiler.plan import contraction
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
] + [opt_einsum.testing.rand_equation(5, 3, seed=seed, d_max=4) for seed in range(8)]


def _plan(spec: str, shapes, optimize: str = "auto"):
    names = [f"t{i}" for i in range(len(shapes))]
    mod = hilbert.compile_source(f'fn f({", ".join(names)}) ↦ einsum("{spec}", {", ".join(names)})')
    return mod.f.using(optimize=optimize).plan(*shapes)


# Costs computed here, independently of the planner, in opt_einsum's documented convention: a
# step over letters L costs Π|L| · (terms − 1, at least 1, plus 1 if it sums a letter away).


def _sizes(spec: str, shapes) -> dict[str, int]:
    inputs = spec.split("->")[0].split(",")
    return {ch: n for term, shape in zip(inputs, shapes, strict=True)
            for ch, n in zip(term, shape, strict=True)}


def _step(terms: list[str], others: list[str], output: str, sizes: dict) -> tuple[int, str]:
    """The cost of one step and the term of its result (the letters still needed)."""
    letters = set("".join(terms))
    needed = set("".join(others)) | set(output)
    factor = max(1, len(terms) - 1) + (1 if letters - needed else 0)
    return math.prod(sizes[ch] for ch in letters) * factor, "".join(sorted(letters & needed))


def path_cost(spec: str, shapes, path) -> int:
    """What following `path` (opt_einsum's form: positions, result appended) costs."""
    inputs, output = spec.split("->")
    terms, sizes, total = inputs.split(","), _sizes(spec, shapes), 0
    for step in path:
        rest = [t for i, t in enumerate(terms) if i not in step]
        cost, result = _step([terms[i] for i in step], rest, output, sizes)
        total += cost
        terms = rest + [result]
    return total


def optimum(spec: str, shapes) -> int:
    """The cheapest order of pairwise steps, by trying them all (small specs only)."""
    inputs, output = spec.split("->")
    sizes = _sizes(spec, shapes)

    @functools.cache
    def best(terms: tuple[str, ...]) -> int:
        if len(terms) == 1:
            return 0
        costs = []
        for i, j in itertools.combinations(range(len(terms)), 2):
            rest = [t for k, t in enumerate(terms) if k not in (i, j)]
            cost, result = _step([terms[i], terms[j]], rest, output, sizes)
            costs.append(cost + best(tuple(sorted(rest + [result]))))
        return min(costs)

    return best(tuple(sorted(inputs.split(","))))


def naive(spec: str, shapes) -> int:
    """The cost of one step over every operand at once (numpy.einsum without a path)."""
    inputs, output = spec.split("->")
    return _step(inputs.split(","), [], output, _sizes(spec, shapes))[0]


@pytest.mark.parametrize("spec, shapes", SPECS)
@pytest.mark.parametrize("optimize", ["auto", "auto-hq", "greedy", "optimal", "dp", "branch-all",
                                      "branch-2"])
def test_plans_cost_what_they_say_and_come_near_the_optimum(spec, shapes, optimize):
    plan = _plan(spec, shapes, optimize)
    (einsum,) = plan.einsums
    assert plan.flops == einsum.flops == path_cost(spec, shapes, einsum.path)
    best = optimum(spec, shapes)
    assert best <= plan.flops <= naive(spec, shapes)
    if optimize in ("optimal", "auto-hq"):  # exhaustive on five operands: the optimum itself
        assert plan.flops == best
    elif optimize != "greedy":  # searches that prune: within 10% of it on these specs
        assert plan.flops <= 1.1 * best


def matrix_chain_optimum(dims: list[int]) -> int:
    """The cheapest order of multiplying matrices dims[0]×dims[1], dims[1]×dims[2], … (the
    textbook dynamic programme; each product p×q by q×r costs 2pqr in the convention above)."""
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    for span in range(1, n):
        for i in range(n - span):
            j = i + span
            cost[i][j] = min(cost[i][k] + cost[k + 1][j] + 2 * dims[i] * dims[k + 1] * dims[j + 1]
                             for k in range(i, j))
    return cost[0][n - 1]


DENSE_CHAIN = NETWORKS + "fn deep(a, w1, w2, w3, w4, w5, w6, w7, w8, w9, w10) ↦ " + \
    "dense(" * 10 + "a, w1), w2), w3), w4), w5), w6), w7), w8), w9), w10)"


@pytest.mark.parametrize("optimize", ["optimal", "branch-all", "branch-2", "auto", "greedy"])
def test_ten_chained_layers_are_planned_at_the_chain_optimum(optimize, monkeypatch, tmp_path):
    # Fusion makes the ten layers one 11-operand einsum; exhaustive searches would not finish
    # on it, so they give way to dp, and the plan says so. (An empty disk cache: a plan kept
    # by an earlier run would be read back, not searched for.)
    monkeypatch.setenv("HILBERT_CACHE_DIR", str(tmp_path))
    asked: list[str] = []
    contract_path = opt_einsum.contract_path

    def recording(*args, optimize="auto", **kwargs):
        asked.append(optimize)
        return contract_path(*args, optimize=optimize, **kwargs)

    monkeypatch.setattr("hilbert.compiler.plan.paths.opt_einsum.contract_path", recording)
    contraction.cache_clear()  # paths are cached per optimiser: see this test's requests
    dims = [64, 17, 33, 9, 48, 12, 30, 7, 40, 21, 5, 26]
    mod = hilbert.compile_source(DENSE_CHAIN).deep.using(optimize=optimize)
    shapes = [(dims[i], dims[i + 1]) for i in range(11)]
    plan = mod.plan(*shapes)
    (einsum,) = plan.einsums
    assert len(einsum.shapes) == 11
    assert asked and "optimal" not in asked and "branch-all" not in asked
    assert plan.flops <= naive(einsum.spec, einsum.shapes)
    if optimize in ("optimal", "branch-all"):
        assert set(asked) == {"dp"}
        assert plan.flops == matrix_chain_optimum(dims)
        assert f"{optimize} searches every order" in einsum.note and "dp" in einsum.note
        assert plan.to_dict()["einsums"][0]["note"] == einsum.note
        assert f"note: {einsum.note}" in str(plan)
    else:
        assert einsum.note == "" and "note:" not in str(plan)
    rng = np.random.default_rng(3)
    values = [rng.standard_normal(s) for s in shapes]
    expected = functools.reduce(np.matmul, values)
    np.testing.assert_allclose(mod(*values), expected, rtol=1e-10)


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


def traced_peak(call) -> tuple[object, int]:
    """`call()`'s outcome (its result or the exception it raised) and the peak memory Python
    and NumPy allocated meanwhile."""
    tracemalloc.start()
    try:
        try:
            outcome = call()
        except Exception as err:  # noqa: BLE001 - returned for the test to inspect
            outcome = err
        return outcome, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_each_executor_is_planned_on_what_it_runs(monkeypatch):
    # Both executors run the masked IR (convolve reads shifted windows instead of building its
    # L×K×L window, 47.7 GiB at L = 20,000: docs/semantics.md, "Index masks"). The reference
    # keeps every value of a call and is planned so: its plan bounds what its run allocates;
    # the numba executor frees each value after its last reader.
    monkeypatch.setenv("HILBERT_MEMORY_LIMIT", "256M")
    x, k = np.random.default_rng(4).standard_normal((1, 20_000)), np.arange(1.0, 17.0)
    padded = np.concatenate([x[0], np.zeros(16)])
    expected = np.correlate(padded, k, "valid")[:20_000]
    reference = hilbert.load("examples/Layers.hb", executor="reference").filtered
    plan = reference.plan((1, 20_000), (16,))
    value, peak = traced_peak(lambda: reference(x, k))
    np.testing.assert_allclose(value[0], expected, rtol=1e-10, atol=1e-10)
    assert peak <= plan.peak_bytes < 256 * 2**20
    compiled = hilbert.load("examples/Layers.hb").filtered
    assert compiled.plan((1, 20_000), (16,)).peak_bytes < 4_000_000  # x, k, windows and result
    np.testing.assert_allclose(compiled(x, k)[0], expected, rtol=1e-10, atol=1e-10)


TANH_CHAIN = "fn f(x) ↦ " + "tanh(" * 10 + "x" + ")" * 10


def test_a_chain_holds_only_the_values_still_to_be_read(monkeypatch):
    # Ten tanh steps on an 8 MB vector: compiled code holds the argument and the result (the
    # steps run fused, and a value is freed after its last reader), far below 64 MiB.
    monkeypatch.setenv("HILBERT_MEMORY_LIMIT", "64M")
    x = np.linspace(-3.0, 3.0, 1_000_000)
    f = hilbert.compile_source(TANH_CHAIN).f
    expected = x
    for _ in range(10):
        expected = np.tanh(expected)
    np.testing.assert_allclose(f(x), expected, rtol=1e-14)
    plan = f.plan(x.shape)
    assert plan.peak_bytes <= 3 * x.nbytes  # argument, result, one value in between at most
    assert plan.peak_bytes >= 2 * x.nbytes  # an upper bound: never less than what is held
    # The reference executor keeps every value of a call (its memo): eleven vectors, 88 MB.
    with pytest.raises(hilbert.RuntimeHilbertError) as refused:
        f.using(executor="reference")(x)
    assert refused.value.code == "E700"
    monkeypatch.setenv("HILBERT_MEMORY_LIMIT", "128M")
    reference = hilbert.compile_source(TANH_CHAIN, executor="reference").f
    assert reference.plan(x.shape).peak_bytes >= 11 * x.nbytes
    np.testing.assert_allclose(reference(x), expected, rtol=1e-14)


@pytest.mark.parametrize("executor", ["reference", "numba"])
def test_convolve_is_planned_on_its_windows_by_both_executors(executor):
    # docs/semantics.md: a 1×20 000 signal and 80 taps read 20 000 × 80 windows (12.2 MiB) on
    # both executors; the L×K×L index mask (238 GiB) is never built, on the reference either.
    convolve = hilbert.open("Prelude.Networks", executor=executor).function("convolve")
    plan = convolve.plan((1, 20_000), (80,))
    windows = 20_000 * 80 * 8
    assert windows <= plan.peak_bytes <= windows + 2 * 2**20


@pytest.mark.parametrize("executor", ["reference", "numba"])
def test_a_plan_over_the_limit_is_still_refused_before_allocating(executor, monkeypatch):
    monkeypatch.setenv("HILBERT_MEMORY_LIMIT", "16M")  # the argument and result alone are 16 MB
    x = np.linspace(-3.0, 3.0, 1_000_000)
    f = hilbert.compile_source(TANH_CHAIN, executor=executor).f
    outcome, peak = traced_peak(lambda: f(x))
    assert isinstance(outcome, hilbert.RuntimeHilbertError) and outcome.code == "E700"
    assert peak < 2_000_000


@pytest.mark.parametrize("executor", ["reference", "numba"])
def test_argument_conversion_is_guarded(executor, monkeypatch):
    # A broadcast view takes no memory; the float64 C-ordered copy an executor reads would
    # take 7.3 TiB (a float32 one 3.6 TiB), and is refused before it is made.
    monkeypatch.setenv("HILBERT_MEMORY_LIMIT", "1G")
    f = hilbert.compile_source("fn f(a) ↦ a · 2", executor=executor).f
    huge = np.broadcast_to(np.float16(1.0), (10**6, 10**6))
    outcome, peak = traced_peak(lambda: f(huge))
    assert isinstance(outcome, hilbert.RuntimeHilbertError) and outcome.code == "E700"
    assert "argument a of f" in outcome.message and "3.6 TiB" in outcome.message
    assert "float32" in outcome.message
    outcome, _ = traced_peak(lambda: f.using(dtype="float64")(huge))
    assert outcome.code == "E700" and "7.3 TiB" in outcome.message
    assert peak < 1_000_000
    small = np.broadcast_to(np.arange(3.0), (2, 3))  # within the limit: copied and computed
    np.testing.assert_array_equal(f(small), np.tile(np.arange(3.0) * 2, (2, 1)))


@pytest.mark.parametrize("executor", ["reference", "numba"])
def test_sizes_are_exact_however_large(executor, monkeypatch):
    mod = hilbert.compile_source('fn f(a) ↦ a · 2\nfn g(a, b) ↦ einsum("ij,jk->ik", a, b)',
                                 executor=executor)
    with pytest.raises(hilbert.RuntimeHilbertError) as refused:
        mod.f.plan((2**62, 2**62))  # NumPy's int64 product of these is 0
    assert refused.value.code == "E700"
    assert f"{2**124:,} elements" in refused.value.message
    with pytest.raises(hilbert.RuntimeHilbertError) as refused:
        mod.f.plan((2**70, 3))  # beyond int64 altogether
    assert f"{3 * 2**70:,} elements" in refused.value.message
    monkeypatch.setenv("HILBERT_MEMORY_LIMIT", "1e60")  # plan what cannot run, to read it
    plan = mod.g.plan((2**70, 3), (3, 2**70))
    assert plan.largest_bytes == 8 * 2**140
    assert plan.peak_bytes == 8 * (2 * 3 * 2**70 + 2**140)  # the arguments and the result
    assert plan.flops == 2 * 3 * 2**140  # opt_einsum's convention: 2 per multiply-add
    assert "e+" in str(plan)


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
