"""How generated loop nests run (executor/codegen/): sums along the innermost axis added in
any order (a partial sum per vector lane), large nests whose outer iterations are independent run on several threads
(executor/threads.py), and matrix-vector products go to BLAS's GEMV. Each is checked against
NumPy written here, on finite data and on inf and NaN."""

from __future__ import annotations

import multiprocessing
import os
import re
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest
from hilbert.compiler.plan.schedule import RowLoop
from hilbert.executor import threads
from hilbert.executor.codegen import render, rows, tidy
from hilbert.executor.codegen.loops import (
    Assign,
    For,
    If,
    Num,
    Return,
    Store,
    Sub,
    Var,
    call,
    fmt,
    sizes,
)
from hilbert.executor.numba import kernels

import hilbert

ROWS = 'fn rowSums(a) ↦ einsum("ij->i", a)\n'
TOTAL = 'fn total(a) ↦ einsum("ij->", exp(a))\n'
NORMED = "open Prelude.Networks\nfn normed(a) ↦ layerNorm(a)\n"


def _normed_numpy(a):
    centred = a - a.mean(1, keepdims=True)
    return centred / np.sqrt((centred ** 2).mean(1, keepdims=True) + 1e-5)


def _function(text: str, name: str):
    return hilbert.compile_source(text).function(name)


def _source(f, *args) -> str:
    f(*args)
    return f.program(tuple(np.shape(a) for a in args)).region.source


# ---------------------------------------------------------------- partial sums


@pytest.mark.parametrize("columns", [*range(0, 19), 64, 1001])
def test_row_sums_in_partial_sums_agree_with_numpy(columns):
    """Every width from 0 up to past the vector loop's block (lanes × unroll) and its remainder."""
    f = _function(ROWS, "rowSums")
    a = np.random.default_rng(columns).normal(size=(300, columns)) * 10
    np.testing.assert_allclose(f(a), a.sum(1), rtol=1e-13, atol=1e-12)


def test_a_row_sum_adds_in_any_order():
    """The local sum is added with K.add_any_order, which LLVM vectorises into partial sums."""
    source = _source(_function(ROWS, "rowSums"), np.ones((300, 40)))
    assert re.search(r"(acc\d+) = K\.add_any_order\(\1, ", source), source
    assert "+=" not in source, source


def test_partial_sums_carry_inf_and_nan_as_numpy_does():
    f = _function(ROWS, "rowSums")
    a = np.ones((300, 21))
    a[1, 3] = np.inf
    a[2, 20] = -np.inf                      # in the remainder loop
    a[3, 0], a[3, 9] = np.inf, -np.inf      # two lanes: inf − inf
    a[4, 17] = np.nan
    got = f(a)
    with np.errstate(invalid="ignore"):
        want = a.sum(1)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got[~np.isnan(want)], want[~np.isnan(want)])


def test_partial_sums_round_no_worse_than_adding_in_order():
    """1 followed by many tiny numbers: in order, each tiny one is lost against 1; the partial
    sums of the other vector lanes keep them apart (as NumPy's pairwise sum does)."""
    f = _function(ROWS, "rowSums")
    a = np.full((300, 4096), 1e-17)
    a[:, 0] = 1.0
    exact = 1.0 + 4095e-17
    ordered = 1.0
    for _ in range(4095):
        ordered += 1e-17
    assert abs(f(a)[0] - exact) < abs(ordered - exact)  # (in order: no closer)


# ---------------------------------------------------------------- threads


@pytest.fixture
def two_threads(monkeypatch):
    """Code generation as on a machine with two threads for nests, whatever this one has (a
    parallel function compiles and runs correctly on one core too)."""
    if not threads.layer():
        pytest.skip("no Numba threading layer loads on this machine")
    monkeypatch.setattr(threads, "count", lambda: 2)


def test_a_large_nest_runs_its_rows_in_parallel(two_threads):
    a = np.random.default_rng(1).normal(size=(2048, 300)) * 3 + 1
    f = _function(NORMED, "normed")
    source = _source(f, a)
    assert "in prange(" in source, source
    np.testing.assert_allclose(f(a), _normed_numpy(a), rtol=1e-12, atol=1e-12)


def test_a_small_nest_stays_serial(two_threads):
    source = _source(_function(NORMED, "normed"), np.ones((20, 10)))
    assert "prange" not in source, source


def test_a_sum_over_every_axis_is_not_split_across_threads(two_threads):
    """Its one total is carried across the rows: that nest must stay serial (a race else)."""
    a = np.random.default_rng(2).normal(size=(2048, 300))
    f = _function(TOTAL, "total")
    source = _source(f, a)
    assert "prange" not in source, source
    np.testing.assert_allclose(f(a), np.exp(a).sum(), rtol=1e-12)


def test_parallel_nests_called_from_many_threads_give_the_serial_results(two_threads):
    f = _function(NORMED, "normed")
    rng = np.random.default_rng(3)
    jobs = [rng.normal(size=(1024 + 64 * k, 256)) for k in range(6)]
    assert "in prange(" in _source(f, jobs[0])
    want = [_normed_numpy(a) for a in jobs]
    got: list = [None] * (len(jobs) * 3)
    start = threading.Barrier(len(jobs))

    def work(k):
        start.wait()
        for r in range(3):
            got[3 * k + r] = f(jobs[k])

    workers = [threading.Thread(target=work, args=(k,)) for k in range(len(jobs))]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    for k in range(len(jobs)):
        for r in range(3):
            np.testing.assert_allclose(got[3 * k + r], want[k], rtol=1e-12, atol=1e-12)


def test_threads_are_on_by_default_and_one_is_serial(monkeypatch):
    from numba import config

    monkeypatch.delenv("HILBERT_THREADS", raising=False)
    threads.forget()
    try:
        every = config.NUMBA_NUM_THREADS if threads.layer() else 1
        assert threads.count() == every  # every core unless told otherwise
        for setting, want in (("auto", every), ("1", 1), ("0", 1), ("2", min(2, every))):
            monkeypatch.setenv("HILBERT_THREADS", setting)
            threads.forget()
            assert threads.count() == want, setting
    finally:
        threads.forget()


def test_hilbert_s_threads_change_no_setting_and_load_no_openmp():
    """By default the threads are Numba's workqueue: nothing torch or BLAS read changes, and
    no OpenMP runtime is loaded, so theirs keeps its own policy."""
    code = textwrap.dedent(f"""
        import os
        os.environ.pop("HILBERT_THREADS", None)
        os.environ.pop("OMP_WAIT_POLICY", None)
        os.environ.pop("NUMBA_THREADING_LAYER", None)
        before = dict(os.environ)
        import numpy as np, hilbert, numba
        from hilbert.executor import threads
        f = hilbert.compile_source({NORMED!r}).normed
        f.build((2048, 300))
        f(np.ones((2048, 300)))
        maps = open("/proc/self/maps").read()
        print(threads.count(), numba.threading_layer(), dict(os.environ) == before,
              "libgomp" in maps or "libomp" in maps, "prange" in f.program(((2048, 300),)).region.source)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "HILBERT_COMPILE": "eager"})
    assert done.returncode == 0, done.stderr
    count, layer, unchanged, openmp, parallel = done.stdout.split()
    assert layer == "workqueue" and unchanged == "True" and openmp == "False"
    assert parallel == str(int(count) > 1)


def test_a_parallel_function_on_workqueue_holds_the_launch_lock(two_threads):
    """workqueue ends the process when two threads launch at once: a second caller waits."""
    if threads.layer() != "workqueue":
        pytest.skip("Numba's layer here is thread-safe: no lock")
    f = _function(NORMED, "normed")
    a = np.random.default_rng(6).normal(size=(2048, 300))
    f.build(a.shape)
    assert "in prange(" in _source(f, a)
    got: list = []
    with threads._LAUNCH:
        caller = threading.Thread(target=lambda: got.append(f(a)))
        caller.start()
        caller.join(timeout=1.0)
        assert caller.is_alive() and not got  # (waits for the lock this test holds)
    caller.join()
    np.testing.assert_allclose(got[0], _normed_numpy(a), rtol=1e-12, atol=1e-12)


def test_a_forked_child_runs_parallel_code_and_gets_the_parent_s_result(two_threads):
    """GNU OpenMP ends a forked child that launches parallel code: there the child of a process
    that made parallel code runs it as a serial twin; TBB's is safe. Either way the child
    gets the parent's result."""
    f = _function(NORMED, "normed")
    x = np.random.default_rng(5).standard_normal((2048, 300))
    want = _normed_numpy(x)
    np.testing.assert_allclose(f(x), want, rtol=1e-12, atol=1e-12)
    assert "prange" in _source(f, x)
    _INHERITED.update(f=f, x=x)  # (the child reads the parent's objects, not pickled copies)
    with multiprocessing.get_context("fork").Pool(1) as pool:
        got, twin = pool.apply(_in_child)
    assert twin == (threads.layer() == "omp")
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


_INHERITED: dict = {}


def _in_child():
    return _INHERITED["f"](_INHERITED["x"]), not threads.usable()


def test_one_thread_writes_no_prange(monkeypatch):
    monkeypatch.setattr(threads, "count", lambda: 1)
    source = _source(_function(NORMED, "normed"), np.ones((2048, 300)))
    assert "prange" not in source, source


# ---------------------------------------------------------------- matrix times vector


@pytest.mark.parametrize("m,k,n", [(7, 5, 1), (1, 5, 7), (1, 1, 1), (6, 1, 1), (1, 1, 6),
                                   (300, 64, 1), (1, 64, 300)])
@pytest.mark.parametrize("flip_a", [False, True])
@pytest.mark.parametrize("flip_b", [False, True])
@pytest.mark.parametrize("beta", [0.0, 0.5])
def test_matrix_vector_products_in_any_layout_agree_with_numpy(m, k, n, flip_a, flip_b, beta):
    rng = np.random.default_rng(m * 100 + k * 10 + n)
    a = rng.normal(size=(k, m)).T if flip_a else rng.normal(size=(m, k))
    b = rng.normal(size=(n, k)).T if flip_b else rng.normal(size=(k, n))
    out = rng.normal(size=(m, n))
    want = a @ b + beta * out
    kernels.gemm_beta(a, b, out, beta)
    np.testing.assert_allclose(out, want, rtol=1e-13, atol=1e-13)


def test_a_matrix_vector_product_with_inf_and_nan_agrees_with_numpy():
    a = np.random.default_rng(4).normal(size=(300, 64))
    a[3, 5], a[7, 0] = np.inf, np.nan
    w = np.random.default_rng(5).normal(size=64)
    f = _function('fn times(a, w) ↦ einsum("np,p->n", a, w)\n', "times")
    got, want = f(a, w), a @ w
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got[~np.isnan(want)], want[~np.isnan(want)], rtol=1e-12)


# ---------------------------------------------------------------- nests over the same rows


def _outer_loops(source: str) -> int:
    return len(re.findall(r"^    for i0 in p?range\(", source, flags=re.M))


def test_a_layer_norm_reads_each_row_once():
    """Row sums, centred squares and the division: one loop over the rows, not three."""
    a = np.random.default_rng(6).normal(size=(300, 70)) * 3 + 1
    f = _function(NORMED, "normed")
    source = _source(f, a)
    assert _outer_loops(source) == 1, source
    np.testing.assert_allclose(f(a), _normed_numpy(a), rtol=1e-12, atol=1e-12)


def test_a_softmax_runs_row_by_row_and_agrees_with_numpy():
    f = _function("open Prelude.Arithmetic\nfn soft(m) ↦ softmaxRows(m)\n", "soft")
    m = np.random.default_rng(7).normal(size=(200, 90)) * 5
    m[3, 4], m[5, :] = np.inf, -np.inf
    source = _source(f, m)
    assert _outer_loops(source) == 1, source
    with np.errstate(invalid="ignore"):
        e = np.exp(m - m.max(1, keepdims=True))
        want = e / e.sum(1, keepdims=True)
    got = f(m)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got[~np.isnan(want)], want[~np.isnan(want)], rtol=1e-12)


@pytest.mark.parametrize("text,numpy", [
    # column sums: every row adds into the same sums, which the next nest reads
    ('fn f(a) ↦ einsum("ij,j->ij", exp(a), einsum("ij->j", exp(a)))\n',
     lambda a: np.exp(a) * np.exp(a).sum(0)),
    # a total over the whole array, read by every row after
    ('fn f(a) ↦ exp(a) / einsum("ij->", exp(a))\n', lambda a: np.exp(a) / np.exp(a).sum()),
    # the next nest reads the first one's rows as columns
    ('fn f(a) ↦ einsum("ij,ji->ij", a, exp(a) · 2)\n', lambda a: a * (np.exp(a) * 2).T),
])
def test_nests_that_read_other_rows_stay_apart_and_agree_with_numpy(text, numpy):
    a = np.random.default_rng(8).normal(size=(120, 120))
    f = _function(text, "f")
    source = _source(f, a)
    assert _outer_loops(source) >= 2, source
    np.testing.assert_allclose(f(a), numpy(a), rtol=1e-12)


def _alloc(name: str, *dims: str) -> Assign:
    return Assign((name,), (call("K.empty", sizes([Var(d) for d in dims])),))


I0, I1, A0, B1, B2 = Var("i0"), Var("i1"), Var("a0"), Var("b1"), Var("b2")


def test_merged_nests_keep_their_order_within_each_row():
    body = [
        _alloc("b1", "n1"),
        For("i0", Var("n1"), [Store(Sub(B1, (I0,)), Sub(A0, (I0, Num("0", "int64"))))], kernels=(1,)),
        _alloc("b2", "n1", "n2"),
        For("i0", Var("n1"), [For("i1", Var("n2"), [
            Store(Sub(B2, (I0, I1)), fmt("{} - {}", Sub(A0, (I0, I1)), Sub(B1, (I0,))))])],
            parallel=True, kernels=(2,)),
    ]
    got = "\n".join(render.lines(rows.join(body, (RowLoop((1, 2), True),)), depth=0))
    assert got == textwrap.dedent("""\
        b1 = K.empty((n1, ))
        b2 = K.empty((n1, n2, ))
        for i0 in prange(n1):
            b1[i0] = a0[i0, 0]
            for i1 in range(n2):
                b2[i0, i1] = a0[i0, i1] - b1[i0]""")


# ---------------------------------------------------------------- sliding dot products


def test_a_convolution_is_a_sliding_dot_product_with_no_window_stored():
    """convolve's windows (B×L×K, read through a mask) dotted with the kernel: one pass that
    sums each window as it reads it, not a stored window tensor and a matrix-vector product."""
    f = _function("open Prelude.Networks\nfn filtered(x, k) ↦ convolve(x, k)\n", "filtered")
    rng = np.random.default_rng(9)
    x, k = rng.normal(size=(3, 500)), rng.normal(size=11)
    source = _source(f, x, k)
    assert "K.gemm" not in source and "n3, ))" not in source, source
    padded = np.concatenate([x, np.zeros((3, 10))], axis=1)
    want = np.stack([[padded[i, t:t + 11] @ k for t in range(500)] for i in range(3)])
    np.testing.assert_allclose(f(x, k), want, rtol=1e-12, atol=1e-12)


def test_a_window_reads_at_integer_positions():
    """A shift by whole steps (convolve's windows) computes its position in integers, which
    LLVM sees advance by one with the loop: vector loads, not gathers (L = 100 000, K = 16:
    5.7 → 2.6 ms). The window's edge (zero past the end of x) is the same test on integers."""
    f = _function("open Prelude.Networks\nfn filtered(x, k) ↦ convolve(x, k)\n", "filtered")
    x, k = np.arange(1.0, 41.0).reshape(2, 20), np.array([1.0, 10.0, 100.0])
    source = _source(f, x, k)
    assert re.search(r"p\d+ = 0 \+ 1 \* i1 \+ 1 \* i2", source), source
    assert "int(p" not in source, source
    padded = np.concatenate([x, np.zeros((2, 2))], axis=1)
    want = np.stack([[padded[i, t:t + 3] @ k for t in range(20)] for i in range(2)])
    np.testing.assert_array_equal(f(x, k), want)


# ---------------------------------------------------------------- uncompiled code


def test_uncompiled_code_lets_go_of_each_intermediate_after_its_last_reader():
    """Four matrix products in a row (an AO→MO transform): each intermediate is deleted once
    the next product has read it, so NumPy reuses its memory (the host tier does the same)."""
    spec = "pi,qj,ijkl,rk,sl->pqrs"
    f = _function(f'fn contract(t0, t1, t2, t3, t4) ↦ einsum("{spec}", t0, t1, t2, t3, t4)\n',
                  "contract")
    rng = np.random.default_rng(10)
    args = [rng.normal(size=(20, 20)), rng.normal(size=(20, 20)), rng.normal(size=(20,) * 4),
            rng.normal(size=(20, 20)), rng.normal(size=(20, 20))]
    source = _source(f, *args)
    assert "K." not in source, source  # (plain NumPy calls: nothing compiled)
    deleted = re.findall(r"^    del (v\d+)$", source, flags=re.M)
    assert len(deleted) == 3, source
    for name in deleted:  # each after its last reader, none read after its del
        after = source[source.index(f"del {name}"):]
        assert not re.search(rf"\b{name}\b", after[len(f"del {name}"):]), source
    want = np.einsum(spec, *args, optimize=True)  # (summed in another order: 1e-10 of its scale)
    np.testing.assert_allclose(f(*args), want, rtol=1e-10, atol=1e-10 * np.abs(want).max())


def test_code_with_blocks_is_left_as_it_is():
    v1 = Var("v1")
    body = [Assign(("v1",), (call("np.dot", A0, Var("a1")),)),
            If(fmt("{} > 0", Var("a2")), [Assign(("v2",), (fmt("{} + 1", v1),))]),
            Return(fmt("{}, {}", v1, Var("steps")))]
    assert tidy.released(body) == body


def test_a_threading_layer_the_user_asked_for_is_respected(monkeypatch):
    from numba import config
    from numba.np.ufunc import parallel

    monkeypatch.setattr(parallel, "_is_initialized", False)  # (as before Numba's first launch)
    for asked, allowed in (("default", {"workqueue"}), ("workqueue", {"workqueue"}),
                           ("tbb", {"tbb", ""}), ("omp", {"omp", ""}),
                           ("threadsafe", {"tbb", "omp", ""})):
        monkeypatch.setattr(config, "THREADING_LAYER", asked)
        assert threads._choose_layer() in allowed, asked


# ---------------------------------------------------------------- 512-bit vectors for vmath


def test_nests_calling_exp_ask_for_wide_vectors_and_others_do_not():
    """vmath.wide_vectors is called first by generated functions whose nests call exp, log or
    tanh; a row sum or layer norm keeps LLVM's own choice."""
    assert "K.wide_vectors()" in _source(_function(TOTAL, "total"), np.ones((300, 40)))
    assert "K.wide_vectors()" not in _source(_function(ROWS, "rowSums"), np.ones((300, 40)))
    assert "K.wide_vectors()" not in _source(_function(NORMED, "normed"), np.ones((300, 40)))


def test_wide_vectors_widen_only_the_function_that_asks():
    """The function that calls wide_vectors asks LLVM for 512-bit vectors (the attribute
    "prefer-vector-width"="512" on it) and an identical function without the call asks for
    nothing: LLVM's own choice for the CPU stands there (256 bits on some AVX-512 CPUs, 512 on
    others: that is LLVM's, not hilbert's, so it is not asserted). On a CPU with AVX-512 the
    asking function's exp loop runs in 512-bit registers. Both give the same numbers."""
    import llvmlite.binding as llvm
    from numba import njit

    def plain(x, y):
        for i in range(x.shape[0]):
            y[i] = kernels.exp(x[i])

    def wide(x, y):
        kernels.wide_vectors()
        for i in range(x.shape[0]):
            y[i] = kernels.exp(x[i])

    x = np.linspace(-30.0, 30.0, 1001)
    results = []
    for function in (plain, wide):
        compiled = njit(function)
        y = np.empty_like(x)
        compiled(x, y)
        signature = compiled.signatures[0]
        results.append((y, compiled.inspect_llvm(signature), compiled.inspect_asm(signature)))
    (plain_y, plain_ir, _), (wide_y, wide_ir, wide_asm) = results
    np.testing.assert_array_equal(plain_y, wide_y)
    np.testing.assert_allclose(wide_y, np.exp(x), rtol=4e-16)
    asked = '"prefer-vector-width"="512"'
    assert asked in wide_ir and "prefer-vector-width" not in plain_ir
    if "+avx512f" in llvm.get_host_cpu_features().flatten():
        assert "zmm" in wide_asm


# ---------------------------------------------------------------- maxima in vector lanes

EXTREMES = "fn largest(a) ↦ maximum(a, 1)\nfn smallest(a) ↦ minimum(a, 1)\n"


@pytest.mark.parametrize("columns", [1, 7, 8, 9, 64, 1001])
def test_row_maxima_and_minima_agree_with_numpy_on_nan_and_infinities(columns):
    """K.fmax and K.fmin are LLVM's maximum and minimum (NaN if either is NaN), so LLVM
    vectorises the row loops: NaN anywhere in a row, ±inf, and every width across the lanes."""
    module = hilbert.compile_source(EXTREMES)
    a = np.random.default_rng(columns).normal(size=(40, columns)) * 1e3
    a[1, -1] = np.nan
    a[2, 0] = np.inf
    a[3, columns // 2] = -np.inf
    a[4, :] = -np.inf
    a[5, 0], a[5, -1] = np.nan, np.inf
    np.testing.assert_array_equal(module.largest(a), np.max(a, axis=1))
    np.testing.assert_array_equal(module.smallest(a), np.min(a, axis=1))
