"""Benchmarking your own plans (`hilbert bench FILE FN`, `fn.benchmark`), the suite's front
door (`--suite`, `--list`), its progress bar and "plots skipped" message, help for every
option, and training progress by chunks. No time is asserted: only what was measured, counted
and written."""

from __future__ import annotations

import errno
import io
import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import needs

import hilbert
from hilbert import bench, cli, progress
from hilbert.cli import main

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # benchmarks/ lives in the checkout, it is not installed
    sys.path.insert(0, str(ROOT))

from benchmarks import report, runner  # noqa: E402
from benchmarks.cases import Config, select  # noqa: E402

TINY = """
fn chain(a, b, c) ↦ einsum("ij,jk,kl->il", a, b, c)
fn layer(x, w) ↦ max(einsum("np,pq->nq", x, w), 0)
fn fit(t, r, x, y, w) ↦ if t = 0 then w else fit(t − 1, r, x, y, w − r · ∂ einsum("ij->", (einsum("np,pq->nq", x, w) − y)²) / ∂ w)
"""
CHAIN = ["--shape", "a=8x4", "--shape", "b=4x16", "--shape", "c=16x2"]
# ij,jk,kl->il on 8×4, 4×16, 16×2, counted as opt_einsum counts (each output element of a
# pairwise step that sums costs 2): b·c first is 4·16·2 · 2 = 256, then a·(bc) 8·4·2 · 2 = 128,
# so 384 FLOPs, the largest intermediate being the 8×2 output (16 elements). a·b first would
# cost 8·4·16 · 2 + 8·16·2 · 2 = 1536.
CHAIN_FLOPS, CHAIN_LARGEST = 384, 16
ALL_ROWS = ("hilbert greedy", "hilbert optimal", "np.einsum(opt)", "oe.expression")


@pytest.fixture
def tiny(write_hb):
    return write_hb("Tiny.hb", TINY)


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def bench_json(capsys, *argv) -> dict:
    code, out, err = run(capsys, "bench", *argv, "--json", "-")
    assert code == 0, err
    return json.loads(out)


# -- hilbert bench FILE FN -------------------------------------------------------------------


def test_bench_prints_a_row_per_optimiser_and_anchor_with_flops_and_ratios(capsys, tiny):
    code, out, err = run(capsys, "bench", tiny, "chain", *CHAIN, "--optimize", "greedy,optimal",
                         "--repeat", "2")
    assert code == 0 and err == ""
    assert out.startswith("benchmark of chain(a: 8×4, b: 4×16, c: 16×2)")
    header = next(line for line in out.splitlines() if line.startswith("contestant"))
    for column in ("plan", "first call", "warm call", "FLOPs", "largest intermediate",
                   "× np.einsum(opt)", "× oe.expression"):
        assert column in header
    rows = {line.split("  ")[0]: line for line in out.splitlines()
            if line.startswith(ALL_ROWS)}
    assert set(rows) == set(ALL_ROWS)
    for row in rows.values():
        assert f" {CHAIN_FLOPS} " in row and f"{CHAIN_LARGEST} el" in row
    assert rows["hilbert greedy"].count("×") == 2  # a ratio against each anchor


def test_bench_json_holds_every_measurement(capsys, tiny):
    data = bench_json(capsys, tiny, "chain", *CHAIN, "--optimize", "greedy,optimal",
                      "--repeat", "2")
    assert data["function"] == "chain" and data["signature"] == [[8, 4], [4, 16], [16, 2]]
    assert data["work"] == [{"spec": "ij,jk,kl->il", "shapes": [[8, 4], [4, 16], [16, 2]],
                             "count": 1}]
    by_name = {c["name"]: c for c in data["contestants"]}
    assert list(by_name) == list(ALL_ROWS)
    for c in by_name.values():
        assert c["status"] == "ok", c
        assert (c["flops"], c["largest"]) == (CHAIN_FLOPS, CHAIN_LARGEST)
        assert c["first_call_s"] > 0 and c["warm"]["repeats"] == 2
        assert c["warm"]["median_s"] > 0 and len(c["warm"]["times_s"]) == 2
    assert by_name["np.einsum(opt)"]["plan_s"] is None  # it plans inside every call
    for name in ("hilbert greedy", "hilbert optimal", "oe.expression"):
        assert by_name[name]["plan_s"] > 0
    for name in ("hilbert greedy", "hilbert optimal"):
        ours = by_name[name]
        assert set(ours["ratios"]) == {"np.einsum(opt)", "oe.expression"}
        for anchor, ratio in ours["ratios"].items():
            assert ratio == pytest.approx(ours["warm"]["median_s"]
                                          / by_name[anchor]["warm"]["median_s"])
    # one einsum of the arguments: the anchors computed the same output and were checked
    assert by_name["oe.expression"]["max_abs_diff"] < 1e-12
    assert "the anchors compute the same output" in " ".join(data["notes"])


#: A CPU with AVX-512, on which OPENBLAS_CORETYPE=Haswell pins an older kernel whatever machine
#: runs the test (issue 53).
AVX512 = ["SSE2", "SSE3", "AVX", "FMA3", "AVX2", "AVX-512F"]


def _blas_kernel() -> str | None:
    """The kernel threadpoolctl reports for NumPy's own BLAS (not torch's, loaded beside it)."""
    from threadpoolctl import threadpool_info

    home = str(Path(np.__file__).parent)
    return next((p.get("architecture") for p in threadpool_info()
                 if p["user_api"] == "blas" and p["filepath"].startswith(home)), None)


def test_bench_names_the_kernel_and_tells_of_a_pinned_openblas(capsys, tiny, monkeypatch):
    """The record gives the BLAS, the kernel threadpoolctl reports and the CPU's vectors; an
    OPENBLAS_CORETYPE older than the CPU is told in a note (and left as it is: this process's
    NumPy is loaded already)."""
    from hilbert import bench_machine

    monkeypatch.setattr(bench_machine, "cpu_vectors", lambda: AVX512)
    monkeypatch.setenv("OPENBLAS_CORETYPE", "Haswell")
    monkeypatch.delenv("OPENBLAS_L2_SIZE", raising=False)
    data = bench_json(capsys, tiny, "chain", *CHAIN, "--optimize", "greedy", "--repeat", "1")
    machine = data["machine"]
    assert machine["blas"]["kernel"] == _blas_kernel() and machine["blas"]["name"]
    assert machine["cpu_vectors"] and machine["cpu_widest"]
    assert machine["openblas_pin"] == {"variables": {"OPENBLAS_CORETYPE": "Haswell"},
                                       "kernel_level": "AVX2", "cpu_level": "AVX-512",
                                       "lifted": False, "kernel": _blas_kernel()}
    code, out, _ = run(capsys, "bench", tiny, "chain", *CHAIN, "--optimize", "greedy",
                       "--repeat", "1")
    assert code == 0
    assert "note: OPENBLAS_CORETYPE=Haswell pins NumPy's OpenBLAS" in out
    assert f"kernel {_blas_kernel()}" in out or _blas_kernel() is None
    monkeypatch.delenv("OPENBLAS_CORETYPE")
    data = bench_json(capsys, tiny, "chain", *CHAIN, "--optimize", "greedy", "--repeat", "1")
    assert data["machine"]["openblas_pin"] is None
    assert "OPENBLAS" not in " ".join(data["notes"])


def test_the_suite_runs_without_a_pinned_openblas_and_says_so(capsys, monkeypatch, tmp_path):
    """`hilbert bench --suite` with OPENBLAS_CORETYPE=Haswell on a CPU with AVX-512 runs the
    suite in a process started without it (and OPENBLAS_L2_SIZE): its record says they were
    lifted, and which kernel then ran."""
    from hilbert import bench_machine

    monkeypatch.setattr(bench_machine, "cpu_vectors", lambda: AVX512)
    monkeypatch.setenv("OPENBLAS_CORETYPE", "Haswell")
    monkeypatch.setenv("OPENBLAS_L2_SIZE", "512")
    monkeypatch.setenv("HILBERT_BENCH_OUT", str(tmp_path))
    code, _, err = run(capsys, "bench", "--suite", "call-overhead", "--quick", "--executor",
                       "reference")
    assert code == 0, err
    assert "the suite runs in a process started without OPENBLAS_CORETYPE" in err
    machine = json.loads((tmp_path / "latest.json").read_text())["machine"]
    assert "OPENBLAS_CORETYPE" not in machine["blas_env"]
    assert "OPENBLAS_L2_SIZE" not in machine["blas_env"]
    pin = machine["openblas_pin"]
    assert pin["lifted"] is True
    assert pin["variables"] == {"OPENBLAS_CORETYPE": "Haswell", "OPENBLAS_L2_SIZE": "512"}
    assert pin["kernel"] == machine["blas"]["kernel"]  # whatever threadpoolctl reported there
    assert "lifted" in (tmp_path / "latest.md").read_text()


def test_bench_writes_json_to_a_file_beside_the_table(capsys, tiny, tmp_path):
    target = tmp_path / "out.json"
    code, out, err = run(capsys, "bench", tiny, "layer", "--shape", "x=6x3", "--shape", "w=3x5",
                         "--optimize", "dp", "--repeat", "1", "--json", target)
    assert code == 0 and out.startswith("benchmark of layer") and f"wrote {target}" in err
    data = json.loads(target.read_text())
    assert [c["name"] for c in data["contestants"]] == ["hilbert dp", "np.einsum(opt)",
                                                        "oe.expression"]
    assert data["contestants"][0]["flops"] == 6 * 3 * 5 * 2  # one GEMM: n·p·q products, summed
    # max(…, 0) around the einsum: the anchors run the einsum alone, on operands of its shapes
    assert "also include the rest of its work" in " ".join(data["notes"])


def test_bench_counts_loop_steps_when_the_step_count_is_a_value(capsys, tiny):
    data = bench_json(capsys, tiny, "fit", "--value", "t=20", "--value", "r=0.01",
                      "--shape", "x=10x3", "--shape", "y=10x1", "--shape", "w=3x1",
                      "--optimize", "greedy", "--repeat", "1")
    assert data["work"] and all(w["count"] == 20 for w in data["work"])
    ours, numpy_anchor = data["contestants"][0], data["contestants"][1]
    assert ours["flops"] == numpy_anchor["flops"]  # the same einsums, 20 times each
    assert set(ours["ratios"]) == {"np.einsum(opt)", "oe.expression"}


def test_a_random_step_count_is_the_users_error_with_a_hint(capsys, tiny):
    code, out, err = run(capsys, "bench", tiny, "fit", "--shape", "x=10x3", "--shape", "y=10x1",
                         "--shape", "w=3x1", "--optimize", "greedy", "--repeat", "1")
    assert code == 1 and out == ""
    assert "error[E500]" in err and "--value T=100" in err and "Traceback" not in err


@pytest.mark.parametrize("argv, words", [
    (["{tiny}", "chain", "--optimize", "greedy,fastest"], "--optimize 'greedy,fastest'"),
    (["{tiny}", "chain", "--optimize", ","], "name path optimisers"),
    (["{tiny}", "chain", "--repeat", "0"], "--repeat 0"),
    (["{tiny}", "chain", "--quick"], "--quick is for the suite"),
    (["{tiny}"], "needs a file and a function"),
    ([], "needs a file and a function"),
    (["{tiny}", "chain", "--shape", "z=2x2"], "no parameter(s) z"),
    (["{tiny}", "chain", "--shape", "a=2x2", "--value", "a=1"], "a is given twice"),
    (["{tiny}", "chain", "--value", "a"], "write NAME=VALUE"),
    (["{tiny}", "nothing"], "no definition 'nothing'"),
    (["--suite", "--shape", "a=2"], "--shape is for timing a function"),
    (["--suite", "--json", "x.json", "--repeat", "3"], "--json, --repeat are for timing"),
    (["--suite", "no-such-case", "--list"], "no case matches 'no-such-case'"),
])
def test_bench_usage_errors_exit_2(capsys, tiny, argv, words):
    code, out, err = run(capsys, "bench", *[a.format(tiny=tiny) for a in argv])
    assert code == 2 and out == ""
    assert words in err


def test_bench_with_a_shape_error_reports_it_as_any_call_would(capsys, tiny):
    code, out, err = run(capsys, "bench", tiny, "chain", "--shape", "a=8x4", "--shape", "b=5x16",
                         "--shape", "c=16x2")
    assert code == 1 and "error[E305]" in err and "while benchmarking chain(" in err


def test_bench_plot_draws_a_png(capsys, tiny, tmp_path):
    needs("matplotlib")
    target = tmp_path / "bars.png"
    code, _, err = run(capsys, "bench", tiny, "chain", *CHAIN, "--optimize", "greedy",
                       "--repeat", "1", "--plot", target)
    assert code == 0 and f"wrote {target}" in err
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bench_plot_without_matplotlib_says_so_and_keeps_the_old_file(capsys, tiny, tmp_path,
                                                                      monkeypatch):
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now fails
    target = tmp_path / "bars.png"
    target.write_bytes(b"an earlier chart")
    code, out, err = run(capsys, "bench", tiny, "chain", *CHAIN, "--optimize", "greedy",
                         "--repeat", "1", "--plot", target)
    assert code == 0 and out.startswith("benchmark of chain")
    assert "plot skipped" in err and "pip install matplotlib" in err
    assert "left as it was" in err
    assert target.read_bytes() == b"an earlier chart"


# -- fn.benchmark ----------------------------------------------------------------------------


@pytest.fixture
def chain(executor):
    return hilbert.compile_source(TINY, executor=executor).chain


def test_the_python_twin_returns_a_result_with_to_dict(chain):
    result = chain.benchmark((8, 4), (4, 16), (16, 2), optimize=["greedy", "dp", "greedy"],
                             repeat=2)
    assert isinstance(result, bench.BenchResult) and not result.mismatched
    data = result.to_dict()
    json.dumps(data)  # plain data all the way down
    assert [c["name"] for c in data["contestants"]] == ["hilbert greedy", "hilbert dp",
                                                        "np.einsum(opt)", "oe.expression"]
    assert data["executor"] == chain.executor and data["repeat"] == 2
    assert all(c["flops"] == CHAIN_FLOPS for c in data["contestants"])
    assert str(result).startswith("benchmark of chain(a: 8×4, b: 4×16, c: 16×2)")


def test_the_python_twin_takes_values_too(chain):
    a, b, c = np.ones((3, 2)), np.ones((2, 5)), np.ones((5, 1))
    result = chain.benchmark(a, b, (5, 1), optimize="greedy", repeat=1)
    assert result.signature == ((3, 2), (2, 5), (5, 1))
    assert result.contestants[1].max_abs_diff < 1e-12  # numpy agreed on these very values
    del c


@pytest.mark.parametrize("options, words", [
    ({"optimize": []}, "at least one path optimiser"),
    ({"optimize": ["fastest"]}, "unknown path optimiser 'fastest'"),
    ({"optimize": [3]}, "named by a string"),
    ({"repeat": 0}, "whole number ≥ 1"),
])
def test_the_python_twin_refuses_bad_options_with_e600(chain, options, words):
    with pytest.raises(hilbert.ArgumentError) as raised:
        chain.benchmark((8, 4), (4, 16), (16, 2), **options)
    assert raised.value.code == "E600" and words in str(raised.value)


def test_a_disagreeing_output_is_a_mismatch_without_ratio(chain, monkeypatch):
    import opt_einsum

    class WrongExpressions:  # opt_einsum, except that its expressions answer one more
        contract_path = staticmethod(opt_einsum.contract_path)

        @staticmethod
        def contract_expression(spec, *shapes):
            real = opt_einsum.contract_expression(spec, *shapes)
            return lambda *ops: real(*ops) + 1.0

    monkeypatch.setattr(bench, "opt_einsum", WrongExpressions)
    result = chain.benchmark((8, 4), (4, 16), (16, 2), optimize="greedy", repeat=1)
    wrong = result.contestants[-1]
    assert result.mismatched and wrong.status == "mismatch" and "away" in wrong.reason
    assert "oe.expression" not in result.contestants[0].ratios


# -- the memory guard comes before the arguments are drawn (issue item 7) ---------------------

OUTER = 'fn outer(x, y) ↦ einsum("i,j->ij", x, y)'
FLOAT64_BYTES = np.dtype(np.float64).itemsize


@pytest.fixture
def draws(monkeypatch) -> list:
    """Every standard normal draw asked of numpy.random.default_rng while the test runs; none
    is made (a draw is the allocation the memory guard must come before)."""
    asked: list = []

    class Recording:
        def __init__(self, *args, **kwargs):
            pass

        def standard_normal(self, *args, **kwargs):
            asked.append(args or kwargs)
            raise AssertionError("an argument was drawn before the memory guard refused it")

    monkeypatch.setattr(np.random, "default_rng", Recording)
    return asked


def _mib(n_bytes: int) -> str:
    return f"{n_bytes / 2**20:.1f} MiB"


def test_bench_refuses_arguments_over_the_memory_limit_before_drawing_them(capsys, tiny,
                                                                           monkeypatch, draws):
    monkeypatch.setenv("HILBERT_MEMORY_LIMIT", "1M")
    shapes = {"a": (1000, 1000), "b": (1000, 16), "c": (16, 2)}
    code, out, err = run(capsys, "bench", tiny, "chain", "--optimize", "greedy", "--repeat", "1",
                         *[f"--shape={p}={'x'.join(map(str, s))}" for p, s in shapes.items()])
    assert (code, out, draws) == (1, "", [])
    assert "error[E700]" in err and "Traceback" not in err
    needed = sum(int(np.prod(s)) for s in shapes.values()) * FLOAT64_BYTES
    assert f"{_mib(needed)} of float64" in err and f"limit of {_mib(2**20)}" in err
    assert "while benchmarking chain(a: 1000×1000, b: 1000×16, c: 16×2)" in err


def test_the_python_twin_refuses_arguments_over_the_memory_limit_before_drawing(monkeypatch,
                                                                                 draws):
    monkeypatch.setenv("HILBERT_MEMORY_LIMIT", "1M")
    chain = hilbert.compile_source(TINY, executor="reference").chain
    b = np.ones((1000, 16))  # a value counts as given, the two shapes as drawn
    with pytest.raises(hilbert.RuntimeHilbertError) as raised:
        chain.benchmark((1000, 1000), b, c=(16, 2), optimize="greedy", repeat=1)
    assert raised.value.code == "E700" and draws == []
    needed = (1000 * 1000 + 16 * 2) * FLOAT64_BYTES
    assert f"{_mib(needed)} of float64" in str(raised.value)


def test_bench_refuses_a_plan_over_the_memory_limit_before_drawing(capsys, write_hb, monkeypatch,
                                                                  draws):
    monkeypatch.setenv("HILBERT_MEMORY_LIMIT", "1M")
    path = write_hb("Outer.hb", OUTER)
    # 2 × 16 KiB of arguments fit; their 1000×1000 outer product does not, on any path
    code, out, err = run(capsys, "bench", path, "outer", "--shape", "x=1000", "--shape",
                         "y=1000", "--optimize", "greedy,dp", "--repeat", "1")
    assert (code, out, draws) == (1, "", [])
    assert "error[E700]" in err and f"{1000 * 1000:,} elements" in err
    assert "while benchmarking outer(x: 1000, y: 1000)" in err and "Traceback" not in err


# -- where --json and --plot write (issue item 8) ---------------------------------------------

FAST = ["--optimize", "greedy", "--repeat", "1", "--executor", "reference"]


@pytest.mark.parametrize("option, target, words", [
    ("--plot", "out.txt", "its extension .txt is not a format"),
    ("--plot", "noext", "it has no extension"),
    ("--plot", "{tmp}/", "it names a directory"),
    ("--plot", "{tmp}", "it names a directory"),
    ("--plot", "{tmp}/missing/bars.png", "does not exist"),
    ("--json", "{tmp}", "it names a directory"),
    ("--json", "{tmp}/missing/out.json", "does not exist"),
])
def test_bench_refuses_output_paths_it_cannot_write_before_timing(capsys, tiny, tmp_path,
                                                                   monkeypatch, option, target,
                                                                   words):
    monkeypatch.chdir(tmp_path)
    before = sorted(tmp_path.rglob("*"))
    path = target.format(tmp=tmp_path)
    code, out, err = run(capsys, "bench", tiny, "chain", *CHAIN, *FAST, option, path)
    assert (code, out) == (2, "")  # a usage error, said before anything was timed
    assert err.startswith(f"hilbert: {option} {path}: ") and words in err
    if option == "--plot" and "extension" in words:
        assert ".png, .svg, .pdf" in err  # the formats it can write
    assert sorted(tmp_path.rglob("*")) == before  # nothing written, beside or inside


@pytest.mark.parametrize("name", ["bars.svg", "bars.PDF"])
def test_bench_plot_writes_exactly_the_file_it_reports(capsys, tiny, tmp_path, name):
    needs("matplotlib")
    folder = tmp_path / "charts"
    folder.mkdir()
    target = folder / name
    code, _, err = run(capsys, "bench", tiny, "chain", *CHAIN, *FAST, "--plot", target)
    assert code == 0 and err == f"wrote {target}\n"
    assert [p.name for p in folder.iterdir()] == [name]
    assert target.read_bytes().startswith(b"%PDF" if name.endswith("PDF") else b"<?xml")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("option, name", [("--json", "out.json"), ("--plot", "bars.png")])
def test_bench_output_that_cannot_be_written_exits_1(capsys, tiny, tmp_path, option, name):
    if option == "--plot":
        needs("matplotlib")
    target = tmp_path / name
    target.symlink_to("/dev/full")  # every write there fails: no space left on the device
    code, out, err = run(capsys, "bench", tiny, "chain", *CHAIN, *FAST, option, target)
    assert code == 1 and out.startswith("benchmark of chain")
    assert err == f"hilbert: cannot write {target}: No space left on device\n"


def test_bench_json_without_permission_exits_1(capsys, tiny, tmp_path, monkeypatch):
    def refused(self, *args, **kwargs):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(self))

    monkeypatch.setattr(Path, "write_text", refused)
    target = tmp_path / "out.json"
    code, _, err = run(capsys, "bench", tiny, "chain", *CHAIN, *FAST, "--json", target)
    assert (code, err) == (1, f"hilbert: cannot write {target}: {os.strerror(errno.EACCES)}\n")


def _result() -> bench.BenchResult:
    """A result of one contestant, made by hand (no timing needed to draw it)."""
    ours = bench.Contestant("hilbert auto", "hilbert", "auto", plan_s=1e-4, first_call_s=2e-3,
                            warm={"median_s": 5e-5})
    return bench.BenchResult("f", (), (), "reference", 1, (), (ours,), (), {})


@pytest.mark.parametrize("target, words", [
    ("out.txt", "its extension .txt is not a format"),
    ("noext", "it has no extension"),
    ("{tmp}", "it names a directory"),
    ("{tmp}/", "it names a directory"),
])
def test_the_python_twin_refuses_plot_paths_with_e600(tmp_path, monkeypatch, target, words):
    monkeypatch.chdir(tmp_path)
    path = target.format(tmp=tmp_path)
    with pytest.raises(hilbert.ArgumentError) as raised:
        _result().plot(path)
    assert raised.value.code == "E600" and words in str(raised.value)
    assert list(tmp_path.iterdir()) == []


# -- the suite: --list, progress, plots skipped ------------------------------------------------


def test_suite_list_names_every_case(capsys):
    code, out, err = run(capsys, "bench", "--suite", "--list")
    assert code == 0 and err == ""
    names = [line.split()[0] for line in out.splitlines()]
    assert names == [case.name for case in select([])]
    code, out, _ = run(capsys, "bench", "--list", "multi-operand")
    assert code == 0 and {line.split()[1] for line in out.splitlines()} == {"multi-operand"}


def test_suite_progress_is_a_bar_on_a_terminal_and_lines_elsewhere(monkeypatch):
    case = select(["call-overhead"])[0]
    config = Config(quick=True, executor="reference", optional=False)
    drawn = io.StringIO()
    runner.run([case], config, runner.Progress(1, stream=drawn, enabled=True))
    assert "call-overhead" in drawn.getvalue() and "\r" in drawn.getvalue()
    plain = io.StringIO()
    runner.run([case], config, runner.Progress(1, stream=plain, enabled=False))
    assert plain.getvalue().startswith("[1/1] call-overhead\n")
    assert "\r" not in plain.getvalue()


@pytest.mark.parametrize("setting, tty, drawn", [
    ("", True, True), ("", False, False), ("0", True, False), ("1", False, True)])
def test_progress_follows_the_terminal_unless_told(monkeypatch, setting, tty, drawn):
    class Stream(io.StringIO):
        def isatty(self):
            return tty

    monkeypatch.setenv(progress.ENVIRONMENT, setting)
    assert progress.wanted(Stream()) is drawn


def test_suite_without_matplotlib_says_plots_were_skipped_and_keeps_old_ones(tmp_path, capsys,
                                                                            monkeypatch):
    monkeypatch.setattr(report, "plotting_available", lambda: False)
    old = tmp_path / "times-design.png"
    old.write_bytes(b"an earlier chart")
    code = runner.main(["call-overhead"], quick=True, executor="reference", out_dir=tmp_path,
                       optional=False)
    err = capsys.readouterr().err
    assert code == 0 and "plots skipped: matplotlib is not installed" in err
    assert "times-design.png" in err and old.read_bytes() == b"an earlier chart"
    assert "None drawn: matplotlib is not installed" in (tmp_path / "latest.md").read_text()


def test_suite_with_matplotlib_replaces_old_plots(tmp_path, capsys):
    needs("matplotlib")
    (tmp_path / "times-gone.png").write_bytes(b"a chart of a group not run now")
    runner.main(["call-overhead"], quick=True, executor="reference", out_dir=tmp_path,
                optional=False)
    assert not (tmp_path / "times-gone.png").exists()
    assert (tmp_path / "times-design.png").read_bytes()[:4] == b"\x89PNG"
    assert "plots skipped" not in capsys.readouterr().err


# -- help for every option -----------------------------------------------------------------------


def test_every_argument_of_every_command_has_a_help_line():
    parser = cli._parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    bare = [f"{name} {action.option_strings or action.dest}"
            for name, command in commands.items() for action in command._actions
            if not (action.help or "").strip()]
    assert bare == []


def test_bench_help_explains_quick(capsys):
    code, out, _ = run(capsys, "bench", "--help")
    assert code == 0
    assert "--quick" in out and "fewer repeats and smaller sizes" in out


# -- training progress, per chunk ------------------------------------------------------------


PERCEPTRON = ROOT / "examples" / "Perceptron.hb"
XOR = ([[0, 0], [0, 1], [1, 0], [1, 1]], [[0], [1], [1], [0]])


def _trained(executor, monkeypatch, setting: str):
    monkeypatch.setenv(progress.ENVIRONMENT, setting)
    net = hilbert.load(PERCEPTRON, executor=executor).Perceptron(2, 8, seed=7)
    calls = []
    execute = type(net)._execute
    monkeypatch.setattr(type(net), "_execute", lambda self, *a: calls.append(1) or execute(self, *a))
    net.train(*XOR, 0.5, steps=3000)
    return net, len(calls)


def test_training_in_chunks_gives_the_weights_of_one_loop(executor, monkeypatch, capsys):
    monkeypatch.setattr(progress, "TRAIN_BAR_DELAY_S", 0.0)
    monkeypatch.setattr(progress, "CHUNK_S", 1e-4)  # many chunks even on a fast machine
    chunked, chunks = _trained(executor, monkeypatch, "1")
    bar = capsys.readouterr().err
    whole, calls = _trained(executor, monkeypatch, "0")
    assert chunks > 2 and calls == 1
    assert "Perceptron.train" in bar and "3000/3000" in bar
    assert capsys.readouterr().err == ""
    for name in ("first", "second"):
        np.testing.assert_allclose(chunked.weights[name], whole.weights[name], rtol=0,
                                   atol=1e-12)
    steps = hilbert.load(PERCEPTRON, executor=executor).Perceptron(2, 8, seed=7)
    for _ in range(3000):  # N separate calls: what steps=N means
        steps.train(*XOR, 0.5)
    np.testing.assert_allclose(chunked.first, steps.first, rtol=0, atol=1e-12)
