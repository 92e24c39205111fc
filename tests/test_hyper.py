"""Hyper-optimised paths (issue 24, item 3; compiler/plan/hyper.py): optimize="hyper" and
hilbert.Hyper budgets run cotengra's search, the plan says what it found and what it cost,
a search is kept (in the process and in the cache directory) so every later process plans the
same path without searching, "auto" searches only large costly networks, and misuse is E600.
cotengra's slicer, slices on threads and slices as dask tasks (item 4) are checked here too:
every result against opt_einsum's own contraction."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import opt_einsum
import pytest
from hilbert.compiler.driver import forget_plans
from hilbert.compiler.plan import hyper, paths

import hilbert
from hilbert import einsum_compiled, slicing


def regular(n: int, degree: int = 3, bond: int = 2, seed: int = 0):
    """A random `degree`-regular graph of n tensors (the configuration model, redrawn until it
    has no loops or repeated edges), an index of size `bond` per edge: (subscripts in
    opt_einsum's symbols, shapes)."""
    rng = np.random.default_rng(seed)
    while True:
        stubs = rng.permutation(np.repeat(np.arange(n), degree))
        edges = {tuple(sorted(p)) for p in stubs.reshape(-1, 2).tolist()}
        if len(edges) == n * degree // 2 and all(a != b for a, b in edges):
            break
    terms = [""] * n
    for k, (a, b) in enumerate(sorted(edges)):
        terms[a] += opt_einsum.get_symbol(k)
        terms[b] += opt_einsum.get_symbol(k)
    return ",".join(terms) + "->", [(bond,) * len(t) for t in terms]


def _arrays(shapes, seed=0, dtype="float64"):
    rng = np.random.default_rng(seed)
    out = []
    for s in shapes:
        a = rng.standard_normal(s)
        if np.dtype(dtype).kind == "c":
            a = a + 1j * rng.standard_normal(s)
        out.append((a / np.linalg.norm(a) * 2).astype(dtype))
    return out


def forget() -> None:
    """Nothing planned or searched remembered in this process."""
    hyper.search.cache_clear()
    paths.contraction.cache_clear()
    einsum_compiled.compiled.cache_clear()
    einsum_compiled._module.cache_clear()
    forget_plans()


@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    """A cache directory of the test's own, and no search remembered from earlier tests."""
    monkeypatch.setenv("HILBERT_CACHE_DIR", str(tmp_path / "cache"))
    forget()
    yield tmp_path / "cache"
    forget()


def test_a_hyper_search_finds_a_cheaper_path_and_the_plan_says_what_it_cost(private_cache,
                                                                            monkeypatch):
    monkeypatch.setenv("HILBERT_COMPILE", "never")  # (paths are checked here, not code)
    spec, shapes = regular(40, seed=1)
    _, greedy = hilbert.contract_path(spec, *shapes, shapes=True, optimize="greedy")
    path, info = hilbert.contract_path(spec, *shapes, shapes=True,
                                       optimize=hilbert.Hyper(max_repeats=8))
    assert len(path) == len(shapes) - 1
    assert info.flops <= greedy.flops
    # (the path's cost, counted by opt_einsum on its own)
    assert info.flops == opt_einsum.contract_path(spec, *shapes, shapes=True,
                                                  optimize=path)[1].opt_cost
    text = str(info)
    assert "path optimiser hyper (8 trees, by flops)" in text
    assert "path hyper-optimised by cotengra: " in text and "width" in text
    trees = int(text.split("hyper-optimised by cotengra: ")[1].split(" trees")[0])
    assert 1 <= trees <= 8
    arrays = _arrays(shapes, seed=2)
    np.testing.assert_allclose(hilbert.einsum(spec, *arrays,
                                              optimize=hilbert.Hyper(max_repeats=8)),
                               opt_einsum.contract(spec, *arrays), rtol=1e-10)


def test_hyper_by_name_is_the_default_budget(private_cache, monkeypatch):
    budgets = []
    search = hyper._search

    def searched(spec, shapes, budget):  # (the budget noted; the search itself kept short)
        budgets.append(budget)
        return search(spec, shapes, hilbert.Hyper(max_repeats=2))

    monkeypatch.setattr(hyper, "_search", searched)
    spec, shapes = regular(12, seed=1)
    _, info = hilbert.contract_path(spec, *shapes, shapes=True, optimize="hyper")
    assert budgets == [hilbert.Hyper()] and hilbert.Hyper().max_repeats == 64
    assert "path optimiser hyper" in str(info) and "hyper-optimised by cotengra" in str(info)


def test_a_time_budget_ends_the_search(private_cache):
    spec, shapes = regular(30, seed=3)
    budget = hilbert.Hyper(max_time=0.5, max_repeats=10 ** 6)
    found = hyper.search(opt_einsum_spec(spec), tuple(map(tuple, shapes)), budget)
    assert 1 <= found.trees < 10 ** 6


def opt_einsum_spec(spec: str) -> str:
    """`spec` in hilbert's letters (what the planner hands the search)."""
    from hilbert.compiler.ops.einsum_spec import lettered

    return lettered(spec)


def test_a_search_is_kept_and_later_processes_plan_the_same_path(private_cache, monkeypatch):
    spec, shapes = regular(30, seed=4)
    budget = hilbert.Hyper(max_repeats=4)
    path, info = hilbert.contract_path(spec, *shapes, shapes=True, optimize=budget)
    assert list((private_cache / hyper.FOLDER).glob("*.json"))
    # The same search again, in this process with nothing remembered: read, not searched.
    forget()

    def searched(*_):
        raise AssertionError("searched again")

    monkeypatch.setattr(hyper, "_search", searched)
    again, second = hilbert.contract_path(spec, *shapes, shapes=True, optimize=budget)
    assert again == path and str(second) == str(info)
    # And in a fresh process: the same plan, byte for byte.
    code = textwrap.dedent(f"""
        import hilbert
        from hilbert.compiler.plan import hyper
        hyper._search = None   # (a search would fail)
        spec, shapes = {spec!r}, {[tuple(s) for s in shapes]!r}
        print(hilbert.contract_path(spec, *shapes, shapes=True,
                                    optimize=hilbert.Hyper(max_repeats=4))[1])
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "HILBERT_CACHE_DIR": str(private_cache)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip("\n") == str(info)


def test_a_kept_file_that_does_not_fit_is_searched_again(private_cache):
    spec, shapes = regular(20, seed=5)
    budget = hilbert.Hyper(max_repeats=2)
    hilbert.contract_path(spec, *shapes, shapes=True, optimize=budget)
    (kept,) = (private_cache / hyper.FOLDER).glob("*.json")
    kept.write_text('{"path": [[0, 99]], "trees": 1, "seconds": 0, "flops": 1, "width": 1}')
    forget()
    path, _ = hilbert.contract_path(spec, *shapes, shapes=True, optimize=budget)
    assert len(path) == len(shapes) - 1 and all(max(step) < len(shapes) for step in path)


def test_auto_searches_only_a_large_costly_network(private_cache, monkeypatch):
    spec, shapes = regular(24, seed=6)
    _, plain = hilbert.contract_path(spec, *shapes, shapes=True)
    assert "hyper-optimised" not in str(plain)  # (greedy's path is cheap: no search)
    monkeypatch.setattr(hyper, "AUTO_FLOPS", 1000)
    monkeypatch.setattr(hyper, "AUTO_BUDGET", hilbert.Hyper(max_repeats=2))
    monkeypatch.setenv("HILBERT_CACHE_DIR", str(private_cache) + "-searching")
    forget()  # (plans kept in memory and on disk were made with auto's thresholds as they were)
    _, searched = hilbert.contract_path(spec, *shapes, shapes=True)
    assert "auto: greedy's path would cost" in str(searched)
    assert "hyper-optimised by cotengra" in str(searched)
    few, small = regular(12, seed=6)  # (opt_einsum's exhaustive choices cover these)
    _, exhaustive = hilbert.contract_path(few, *small, shapes=True)
    assert "hyper-optimised" not in str(exhaustive)


def test_a_hb_module_plans_with_a_hyper_budget(private_cache, monkeypatch):
    monkeypatch.setenv("HILBERT_COMPILE", "never")
    spec, shapes = regular(16, seed=7)
    named = opt_einsum_spec(spec)
    names = ", ".join(f"x{k}" for k in range(len(shapes)))
    module = hilbert.compile_source(f'fn net({names}) ↦ einsum("{named}", {names})\n',
                                    optimize=hilbert.Hyper(max_repeats=2))
    arrays = _arrays(shapes, seed=8)
    assert "hyper-optimised by cotengra" in str(module.net.plan(*arrays))
    np.testing.assert_allclose(module.net(*arrays), opt_einsum.contract(spec, *arrays),
                               rtol=1e-10)


@pytest.mark.parametrize("budget", [dict(max_time=0), dict(max_time=-1.0), dict(max_time="5"),
                                    dict(max_repeats=0), dict(max_repeats=2.5),
                                    dict(max_repeats=True), dict(minimize="speed")])
def test_a_bad_budget_is_e600(budget):
    with pytest.raises(hilbert.HilbertError) as caught:
        hilbert.Hyper(**budget)
    assert caught.value.code == "E600" and "Hyper(" in str(caught.value)


def test_without_cotengra_hyper_is_e600_saying_what_to_install(monkeypatch):
    monkeypatch.setattr(hyper, "installed", lambda: False)
    for optimize in ("hyper", hilbert.Hyper()):
        with pytest.raises(hilbert.HilbertError) as caught:
            hilbert.einsum("ij,jk", np.ones((2, 2)), np.ones((2, 2)), optimize=optimize)
        assert caught.value.code == "E600" and "hilbert[networks]" in str(caught.value)


# ------------------------------------------------------------- slicing (item 4): cotengra,
# threads, dask


def _sliced_case():
    spec, shapes = regular(60, seed=9)
    path, whole = hilbert.contract_path(spec, *shapes, shapes=True, optimize="greedy",
                                        memory_limit="1T")
    return spec, shapes, path, whole


def test_the_cheaper_of_the_two_slicers_is_taken(monkeypatch):
    spec, shapes, path, whole = _sliced_case()
    limit = whole.peak_bytes // 16
    _, both = hilbert.contract_path(spec, *shapes, shapes=True, optimize=path,
                                    memory_limit=limit)
    import builtins

    real = builtins.__import__

    def no_cotengra(name, *args, **kwargs):
        if name.startswith("cotengra"):
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_cotengra)
    _, own = hilbert.contract_path(spec, *shapes, shapes=True, optimize=path,
                                   memory_limit=limit)
    assert both.peak_bytes <= limit and own.peak_bytes <= limit
    assert both.flops <= own.flops and both.slices >= 2


def test_slices_on_threads_equal_slices_in_turn():
    spec, shapes, path, whole = _sliced_case()
    expression = hilbert.contract_expression(spec, *shapes, optimize=path,
                                             memory_limit=whole.peak_bytes // 8)
    sliced = expression.sliced
    assert sliced is not None and sliced.count >= 4
    arrays = _arrays(shapes, seed=10)
    seen: set[int] = set()
    barrier = threading.Barrier(2, timeout=60)

    def contract(*parts):
        if threading.get_ident() not in seen:
            seen.add(threading.get_ident())
            barrier.wait()  # (both workers run at once)
        return expression.function(*parts)

    on_two = slicing.run(contract, arrays, expression.spec, sliced, workers=2)
    in_turn = slicing.run(expression.function, arrays, expression.spec, sliced, workers=1)
    assert len(seen) == 2
    np.testing.assert_allclose(on_two, in_turn, rtol=1e-12)
    np.testing.assert_allclose(on_two, opt_einsum.contract(spec, *arrays), rtol=1e-10)


def test_threads_for_slices_fit_the_memory_limit_and_the_setting(monkeypatch):
    spec, shapes, path, whole = _sliced_case()
    tight = hilbert.contract_expression(spec, *shapes, optimize=path,
                                        memory_limit=whole.peak_bytes // 8).sliced
    assert tight is not None and slicing.workers_for(tight) == 1  # (one slice's room only)
    roomy = dataclasses.replace(tight, limit=tight.limit * 1000)
    monkeypatch.setenv("HILBERT_THREADS", "1")
    assert slicing.workers_for(roomy) == 1
    monkeypatch.setenv("HILBERT_THREADS", "2")
    assert slicing.workers_for(roomy) == min(2, roomy.count)


def test_slices_as_dask_tasks_equal_the_single_process_result():
    spec, shapes, path, whole = _sliced_case()
    arrays = _arrays(shapes, seed=11)
    limit = whole.peak_bytes // 8
    local = hilbert.einsum(spec, *arrays, optimize=path, memory_limit=limit)
    tasks = hilbert.einsum(spec, *arrays, optimize=path, memory_limit=limit, executor="dask")
    np.testing.assert_allclose(tasks, local, rtol=1e-12)
    np.testing.assert_allclose(local, opt_einsum.contract(spec, *arrays), rtol=1e-10)


@pytest.mark.timeout(900)
def test_slices_on_a_local_cluster_of_two_workers_equal_the_single_process_result(tmp_path):
    spec, shapes = regular(60, seed=9)
    code = textwrap.dedent(f"""
        import numpy as np, opt_einsum, hilbert
        from dask.distributed import Client, LocalCluster
        spec, shapes = {spec!r}, {[tuple(s) for s in shapes]!r}
        rng = np.random.default_rng(12)
        arrays = [rng.standard_normal(s) / 2 for s in shapes]
        path, whole = hilbert.contract_path(spec, *shapes, shapes=True, optimize="greedy",
                                            memory_limit="1T")
        limit = whole.peak_bytes // 8
        if __name__ == "__main__":
            local = hilbert.einsum(spec, *arrays, optimize=path, memory_limit=limit)
            with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                              dashboard_address=None) as cluster, Client(cluster) as client:
                got = hilbert.einsum(spec, *arrays, optimize=path, memory_limit=limit,
                                     executor="dask")
                workers = len(client.scheduler_info()["workers"])
            assert workers == 2, workers
            assert np.allclose(got, local, rtol=1e-12, atol=0), (got, local)
            assert np.allclose(got, opt_einsum.contract(spec, *arrays), rtol=1e-10)
            print("same")
    """)
    script = tmp_path / "cluster.py"
    script.write_text(code)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=800, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split()[-1] == "same"
