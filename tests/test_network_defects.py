"""Issue 47, items 7, 8, 9, 12 (sliced contractions) and 13: memory limits no slicing meets
are E700, never cotengra's KeyError or ZeroDivisionError; a hyper-optimised path of one
operand, and "dp" or a search on an axis of size 0, plan as any other; explicit paths that do
not fit are E600 saying what a path is (`[]` is a lone operand's one path); a path file
holding a huge position is E600; Ctrl-C stops slices on threads within a slice; and
`optimize="hyper"` searches within a time budget scaled by the network's size, with a line on
the terminal while it does. Expected values come from numpy.einsum."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import opt_einsum
import pytest
from hilbert.compiler.driver import forget_plans
from hilbert.compiler.plan import hyper, paths

import hilbert
from hilbert import einsum_compiled


def _refused(code: str, *args, **kwargs) -> str:
    """The message of the HilbertError `hilbert.einsum(*args, **kwargs)` raises, of `code`."""
    with pytest.raises(hilbert.HilbertError) as caught:
        hilbert.einsum(*args, **kwargs)
    assert caught.value.code == code, caught.value
    return caught.value.message


def _ones(*shapes):
    rng = np.random.default_rng(len(shapes))
    return [rng.uniform(0.5, 1.5, s) for s in shapes]


@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    """A cache directory of the test's own, and nothing planned or searched remembered."""
    monkeypatch.setenv("HILBERT_CACHE_DIR", str(tmp_path / "cache"))

    def forget() -> None:
        hyper.search.cache_clear()
        paths.contraction.cache_clear()
        einsum_compiled.compiled.cache_clear()
        einsum_compiled._module.cache_clear()
        forget_plans()

    forget()
    yield tmp_path / "cache"
    forget()


# ------------------------------------------------------------ item 7: limits slicing cannot meet


def test_a_limit_over_the_operands_but_under_operands_and_result_is_e700():
    """The issue's case: operands 4×5 and 5×6 take (20 + 30) · 8 = 400 bytes, the result 4 · 8
    = 32 more; slicing leaves both whole."""
    message = _refused("E700", "cd,de->c", np.ones((4, 5)), np.ones((5, 6)), memory_limit=400)
    assert "operands and its result alone take 432 bytes" in message


# Cases where cotengra's slicer raised KeyError (it slices an index it has removed once every
# index it may slice is sliced) or ZeroDivisionError (an axis of size 0), found by drawing
# random contractions: (subscripts, shapes, path, limit in bytes).
SLICEABLE = [
    ("acf,ab,ade,ac->fb", [(5, 2, 3), (5, 5), (5, 3, 5), (5, 2)], [(0, 3), (1, 2), (0, 1)], 1300),
    ("d,dba,ea,e->db", [(0,), (0, 5, 2), (3, 2), (3,)], [(2, 3), (1, 2), (0, 1)], 80),
    ("de,edc,df->ec", [(5, 5), (5, 5, 8), (5, 0)], [(0, 2), (0, 1)], 2220),
]
UNSLICEABLE = [
    ("dfb,e,fe->fe", [(5, 2, 8), (8,), (2, 8)], [(0, 1), (0, 1)], 960),
    ("cea,ca,ade->d", [(8, 3, 3), (8, 3), (3, 0, 3)], [(0, 1), (0, 1)], 768),
    ("a,a,cbd->ad", [(2,), (2,), (2, 0, 2)], [(0, 1), (0, 1)], 64),
]


@pytest.mark.parametrize(("spec", "shapes", "path", "limit"), SLICEABLE)
def test_slicing_that_cotengra_s_slicer_fails_on_is_still_found(spec, shapes, path, limit):
    arrays = _ones(*shapes)
    got = hilbert.einsum(spec, *arrays, optimize=path, memory_limit=limit)
    want = np.einsum(spec, *arrays)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-12)
    _, info = hilbert.contract_path(spec, *arrays, optimize=path, memory_limit=limit)
    assert info.peak_bytes <= limit


@pytest.mark.parametrize(("spec", "shapes", "path", "limit"), UNSLICEABLE)
def test_a_limit_no_slicing_meets_is_e700_where_cotengra_s_slicer_fails(spec, shapes, path,
                                                                        limit):
    message = _refused("E700", spec, *_ones(*shapes), optimize=path, memory_limit=limit)
    assert "cannot be brought under" in message


# --------------------------------------------------------- item 8: a search on one operand


@pytest.mark.parametrize("optimize", ["hyper", "cotengra", hilbert.Hyper(max_repeats=2)])
def test_a_hyper_path_of_one_operand_is_its_one_path(optimize, private_cache):
    x = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(hilbert.einsum("ij->ji", x, optimize=optimize), x.T)
    assert hilbert.einsum("ij->", x, optimize=optimize) == 66.0
    np.testing.assert_array_equal(hilbert.einsum("ii->i", np.eye(3) * 2, optimize=optimize),
                                  [2.0, 2.0, 2.0])
    assert hilbert.contract_path("ij->ji", x, optimize=optimize)[0] == [(0,)]


def test_a_module_loaded_with_hyper_runs_its_transposes_and_sums(private_cache):
    module = hilbert.compile_source(
        'fn t(x) ↦ einsum("ij->ji", x)\n'
        'fn total(x) ↦ einsum("ij->", x)\n'
        'fn gram(x) ↦ einsum("ij,kj->ik", x, x)\n', optimize="hyper")
    x = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(module.t(x), x.T)
    assert module.total(x) == 66.0
    np.testing.assert_allclose(module.gram(x), x @ x.T, rtol=1e-12)


def test_a_search_on_an_axis_of_size_0_is_not_run(private_cache):
    a, b, c = np.ones((3, 4)), np.ones((4, 0)), np.ones((0, 2))
    for optimize in ("hyper", hilbert.Hyper(max_repeats=2)):
        got = hilbert.einsum("ij,jk,kl->il", a, b, c, optimize=optimize)
        np.testing.assert_array_equal(got, np.zeros((3, 2)))
    _, info = hilbert.contract_path("ij,jk,kl->il", a, b, c, optimize="hyper")
    assert "an axis has size 0" in str(info)
    assert not (private_cache / hyper.FOLDER).exists()  # (nothing searched, nothing kept)


# -------------------------------------------- item 9: empty and malformed paths, dp on size 0


@pytest.mark.parametrize("empty", [[], ()])
def test_the_empty_path_of_a_lone_operand_is_its_one_path(empty):
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(hilbert.einsum("ij->ji", x, optimize=empty), x.T)
    assert hilbert.contract_path("ij->", x, optimize=empty)[0] == [(0,)]


@pytest.mark.parametrize(("path", "says"), [
    ([], "it has no steps, and 3 operands need 2"),
    ([(0, 1)], "it leaves 2 operands, not one"),
    ([(0, 1), (0, 2)], "step 2 names position 2, where 2 operand(s) are left"),
    ([(0, 10 ** 26)], "step 1 names position 1e+26"),
    ([(0, -1), (0, 1)], "step 1 (0, -1) holds something other than a whole number from 0"),
    ([(0, 0), (0, 1)], "step 1 (0, 0) names an operand twice"),
    ([(0, 1), ()], "step 2 contracts nothing"),
])
def test_a_path_that_does_not_fit_is_e600_saying_what_a_path_is(path, says):
    operands = _ones((3, 4), (4, 5), (5, 2))
    message = _refused("E600", "ij,jk,kl->il", *operands, optimize=path)
    assert says in message and "a path lists the steps in order" in message


def test_paths_of_single_operand_steps_and_of_three_operands_at_once_still_run():
    operands = _ones((3, 4), (4, 5), (5, 2))
    want = np.einsum("ij,jk,kl->il", *operands)
    for path in ([(0,), (0, 1), (0, 1)], [(0, 1, 2)], [(2, 1), (1, 0)]):
        np.testing.assert_allclose(hilbert.einsum("ij,jk,kl->il", *operands, optimize=path),
                                   want, rtol=1e-12)


# (found by drawing random contractions: opt_einsum's dp finds no path on these)
DP_ON_SIZE_0 = [("cb,a,c->", [(3, 2), (0,), (3,)]),
                ("ace,,afc->c", [(2, 2, 0), (), (2, 2, 2)])]


@pytest.mark.parametrize(("spec", "shapes"), DP_ON_SIZE_0)
@pytest.mark.parametrize("optimize", ["dp", "dynamic-programming"])
def test_dp_on_an_axis_of_size_0_plans_greedily(spec, shapes, optimize):
    arrays = _ones(*shapes)
    got = hilbert.einsum(spec, *arrays, optimize=optimize)
    want = np.einsum(spec, *arrays)
    assert np.shape(got) == want.shape
    np.testing.assert_array_equal(got, want)
    _, info = hilbert.contract_path(spec, *arrays, optimize=optimize)
    assert f"where {optimize} finds no path" in str(info)


def test_a_module_planned_by_dp_runs_an_einsum_over_an_axis_of_size_0():
    module = hilbert.compile_source('fn f(x, y, z) ↦ einsum("cb,a,c->", x, y, z)\n',
                                    optimize="dp")
    assert module.f(np.ones((3, 2)), np.ones(0), np.ones(3)) == 0.0


def test_a_path_file_holding_a_huge_position_is_e600(tmp_path):
    huge = tmp_path / "huge.json"
    huge.write_text(json.dumps({"path": [[0, 10 ** 26]]}))
    nested = tmp_path / "nested.json"
    nested.write_text('{"path": ' + "[" * 100_000 + "]" * 100_000 + "}")
    for file in (huge, nested):
        with pytest.raises(hilbert.HilbertError) as caught:
            hilbert.load_path(file)
        assert caught.value.code == "E600"
    beyond = tmp_path / "beyond.json"  # (a position no list can hold: E600 when it is used)
    beyond.write_text(json.dumps({"path": [[0, 2 ** 62]]}))
    message = _refused("E600", "ij,jk->ik", *_ones((2, 3), (3, 4)),
                       optimize=hilbert.load_path(beyond))
    assert "names position 4.61e+18" in message


# ---------------------------------------------------- item 12: Ctrl-C stops slices on threads

CHILD = textwrap.dedent("""
    import signal, sys, time
    signal.signal(signal.SIGINT, signal.default_int_handler)  # (a parent may ignore SIGINT)
    import numpy as np
    import hilbert
    from hilbert import slicing
    rng = np.random.default_rng(0)
    a, b, c = rng.normal(size=(100, 1000)), rng.normal(size=(100, 1000)), rng.normal(size=(1000, 1000))
    expression = hilbert.contract_expression("ai,bj,ij->ab", a.shape, b.shape, c.shape,
                                             optimize=[(0, 1), (0, 1)], memory_limit="12M")
    sliced = expression.sliced
    assert sliced.count == 1000 * 1000, sliced
    ran = []

    def counted(*parts):
        ran.append(1)
        return expression.function(*parts)

    expression.function(a[:, 0], b[:, 0], c[0, 0])  # (compiled before the signal)
    print("ready", flush=True)
    try:
        CALL
    except KeyboardInterrupt:
        at = len(ran)
        time.sleep(0.5)
        print("interrupted", at, len(ran), flush=True)
        sys.exit(0)
    print("finished", len(ran), flush=True)
""")


def _interrupted(call: str, threads: int) -> str:
    """The child's output after SIGINT one second into `call`."""
    child = subprocess.Popen([sys.executable, "-c", CHILD.replace("CALL", call)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env={**os.environ, "HILBERT_THREADS": str(threads)})
    try:
        assert child.stdout.readline().strip() == "ready", child.stderr.read()
        import time

        time.sleep(1.0)
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    assert child.returncode == 0, err
    return out


@pytest.mark.skipif(os.name != "posix", reason="SIGINT from a parent is POSIX")
@pytest.mark.timeout(240)
@pytest.mark.parametrize("workers", [2, 1])
def test_ctrl_c_stops_every_slice_worker_within_a_slice(workers):
    """A million slices: Ctrl-C is raised in the caller long before they have all run, and
    once it is, no worker runs another slice."""
    out = _interrupted(f"slicing.run(counted, [a, b, c], expression.spec, sliced, {workers})",
                       threads=workers)
    assert out.startswith("interrupted"), out
    at, later = map(int, out.split()[1:3])
    assert 0 < at < 1000 * 1000 and later == at


@pytest.mark.skipif(os.name != "posix", reason="SIGINT from a parent is POSIX")
@pytest.mark.timeout(240)
def test_ctrl_c_stops_a_sliced_expression_on_threads():
    out = _interrupted("expression(a, b, c)", threads=2)
    assert out.startswith("interrupted"), out


# ------------------------------------------------------ item 13: a search's budget and progress


def test_hyper_s_default_budget_is_scaled_by_the_network_s_size():
    assert hilbert.Hyper().max_time == "auto" and hilbert.Hyper().max_repeats == 64
    assert hilbert.Hyper().seconds(20) == pytest.approx(2.0)  # 1 s + 0.05 s per operand
    assert hilbert.Hyper().seconds(201) == pytest.approx(11.05)
    assert hilbert.Hyper().seconds(10_000) == 30.0  # (at most)
    assert hilbert.Hyper(max_time=None).seconds(201) is None  # (no limit only when asked)
    assert hilbert.Hyper(max_time=3).seconds(201) == 3
    assert "no time limit" in hilbert.Hyper(max_time=None).describe()


def _ring(n: int):
    """A ring of n tensors with chords (an index of size 2 per edge): (subscripts, shapes)."""
    edges = [(k, (k + 1) % n) for k in range(n)] + [(k, (k + n // 2) % n) for k in range(n // 2)]
    terms = [""] * n
    for e, (u, v) in enumerate(edges):
        terms[u] += opt_einsum.get_symbol(e)
        terms[v] += opt_einsum.get_symbol(e)
    return ",".join(terms) + "->", [(2,) * len(t) for t in terms]


def test_a_search_by_name_is_given_the_default_time_budget(private_cache, monkeypatch):
    import cotengra

    given = []
    real = cotengra.HyperOptimizer

    def recorded(**options):
        given.append(options["max_time"])
        return real(**{**options, "max_repeats": 2})

    monkeypatch.setattr(cotengra, "HyperOptimizer", recorded)
    spec, shapes = _ring(30)
    hilbert.contract_path(spec, *shapes, shapes=True, optimize="hyper")
    assert given == [pytest.approx(2.5)]  # 1 s + 0.05 s × 30 operands


def test_a_search_shows_a_line_while_it_runs_and_nothing_in_a_pipe(private_cache, monkeypatch,
                                                                   capsys):
    from hilbert.compiler import terminal

    monkeypatch.setattr(terminal, "BUILD_LINE_DELAY_S", 0.0)
    spec, shapes = _ring(24)
    monkeypatch.delenv("HILBERT_PROGRESS", raising=False)
    hilbert.contract_path(spec, *shapes, shapes=True, optimize=hilbert.Hyper(max_repeats=3))
    assert capsys.readouterr().err == ""  # (stderr is not a terminal here)
    monkeypatch.setenv("HILBERT_PROGRESS", "1")
    hilbert.contract_path(spec, *shapes, shapes=True, optimize=hilbert.Hyper(max_repeats=4))
    err = capsys.readouterr().err
    assert "searching a path for 24 tensors" in err and "/4 trees" in err


def test_a_failing_slice_stops_the_other_workers():
    """Slice 1 (the second worker's first) fails: the first worker stops after the slice it
    is running rather than running its 5,000, and the failure is raised."""
    import time

    from hilbert import slicing

    count = 10_000
    sliced = slicing.Sliced(("a",), (count,), "->", ((),), count, count, 8, 8 * count,
                            10 ** 9, 8 * count, 8)
    ran = []

    def contract(x):
        ran.append(int(x))
        if int(x) == 1:
            raise ArithmeticError("slice 1")
        time.sleep(0.001)  # (so the first worker has thousands of slices' work ahead)
        return x

    with pytest.raises(ArithmeticError, match="slice 1"):
        slicing.run(contract, [np.arange(float(count))], "a->", sliced, workers=2)
    assert 1 in ran and len(ran) < count // 2
