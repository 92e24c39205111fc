"""The benchmark runner on tiny cases: it runs, cross-checks outputs (and notices when they
disagree), records skips and errors, and writes valid JSON and Markdown. No timing is asserted,
and neither PyTorch nor JAX is needed."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import hilbert

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # benchmarks/ lives in the checkout, it is not installed
    sys.path.insert(0, str(ROOT))

from benchmarks import readme, report, runner  # noqa: E402
from benchmarks.cases import Case, Config, Setup, Skip, Target  # noqa: E402
from benchmarks.cases.base import ROOT, Anchor, last_words  # noqa: E402

QUICK = Config(quick=True, executor="reference", optional=False)
A = np.array([[1.0, 2.0], [3.0, 4.0]])
W = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]])


def _dense():
    module = hilbert.compile_source('fn dense(a, w) ↦ einsum("np,pq->nq", a, w)',
                                    executor="reference")
    return lambda: module.dense(A, W)


def _missing():
    raise Skip("not installed here")


def _broken():
    raise RuntimeError("cannot prepare")


def _case(name: str, anchors: list[Anchor], targets=()) -> Case:
    return Case(name, "test", name, "a tiny dense layer",
                lambda config: Setup(ours=_dense(), anchors=anchors, params={"a": "2×2"},
                                     flops=2.0 * 2 * 2 * 3),
                tuple(targets))


def _run(*cases: Case) -> dict:
    quiet = runner.Progress(len(cases), stream=io.StringIO(), enabled=False)
    return runner.run(list(cases), QUICK, quiet)


@pytest.fixture(scope="module")
def results():
    agreeing = _case("agree", [
        Anchor("numpy", lambda: (lambda: A @ W)),
        Anchor("torch", _missing),
        Anchor("broken", _broken),
    ], [Target("≤ 100× numpy", "numpy", 100.0), Target("ahead of torch", "torch", 1.0)])
    wrong = _case("disagree", [Anchor("numpy", lambda: (lambda: A @ W + 1e-3))])
    return _run(agreeing, wrong)


def test_outputs_that_agree_are_timed_with_ratios(results):
    case = results["cases"][0]
    assert case["status"] == "ok"
    assert case["ours"]["status"] == "ok" and case["ours"]["repeats"] >= QUICK.min_repeats
    numpy_anchor = case["anchors"][0]
    assert numpy_anchor["status"] == "ok" and numpy_anchor["max_abs_diff"] == 0.0
    assert numpy_anchor["ratio"] == pytest.approx(case["ours"]["median_s"]
                                                  / numpy_anchor["median_s"])
    assert case["ours"]["gflops"] > 0


def test_the_record_names_the_dtype_hilbert_answered_in(results):
    assert results["cases"][0]["dtype"] == "float64"
    assert "| `agree` | float64 |" in report.markdown_table(results)


@pytest.mark.parametrize("value, name", [
    (np.zeros(2, np.float32), "float32"), (1.5, "float64"), (1j, "complex128"),
    ((np.zeros(1, np.complex64), np.zeros(1, np.complex64)), "complex64"),
    ((np.zeros(1, np.float32), 2.0), "float32/float64"), ({"w": np.zeros(1)}, "float64"),
    ("text", None)])
def test_dtype_of_reads_arrays_numbers_and_their_tuples(value, name):
    assert runner.dtype_of(value) == name


def test_the_complex_ao_mo_case_computes_in_complex128():
    """The einsum cases keep complex operands complex (they were once cast to float64, the
    imaginary parts dropped), and the record says so."""
    from benchmarks.cases.multi import ao_to_mo

    setup = ao_to_mo(10, "complex128")(QUICK)
    got = setup.ours()
    assert got.dtype == np.complex128 and np.abs(got.imag).max() > 0
    record = _run(Case("c128", "test", "c128", "complex", ao_to_mo(10, "complex128")))
    assert record["cases"][0]["dtype"] == "complex128"


def test_missing_and_broken_anchors_are_recorded_not_raised(results):
    torch_anchor, broken = results["cases"][0]["anchors"][1:]
    assert torch_anchor["status"] == "skipped" and "not installed" in torch_anchor["reason"]
    assert broken["status"] == "error" and "cannot prepare" in broken["reason"]


def test_targets_are_judged_only_when_measurable(results):
    first, second = results["cases"][0]["targets"]
    assert first["kind"] == "ratio" and first["met"] in (True, False)
    assert second["met"] is None  # torch was skipped: nothing to judge


def test_a_disagreement_is_detected_and_fails_the_run(results):
    case = results["cases"][1]
    assert case["status"] == "mismatch"
    assert case["anchors"][0]["status"] == "mismatch"
    assert case["anchors"][0]["ratio"] is None  # no ratio against a wrong answer
    assert runner.exit_code(results) == 1


def test_a_shape_disagreement_is_detected():
    case = _case("shape", [Anchor("numpy", lambda: (lambda: (A @ W).T))])
    record = _run(case)["cases"][0]
    assert record["status"] == "mismatch" and "shape" in record["anchors"][0]["reason"]


def test_a_contestant_that_fails_after_the_check_is_an_error_entry():
    calls = []

    def flaky():
        calls.append(1)
        if len(calls) > 1:
            raise RuntimeError("worked once only")
        return A @ W

    record = _run(_case("flaky", [Anchor("numpy", lambda: flaky)]))["cases"][0]
    assert record["anchors"][0]["status"] == "error"
    assert "worked once only" in record["anchors"][0]["reason"]
    assert record["ours"]["status"] == "ok"


def test_a_case_that_cannot_be_built_is_an_error_entry():
    def explode(config):
        raise ValueError("no such size")

    record = _run(Case("explodes", "test", "t", "m", explode, (Target("runs", runs=True),)))
    entry = record["cases"][0]
    assert entry["status"] == "error" and "no such size" in entry["error"]
    assert entry["targets"][0]["met"] is False
    assert runner.exit_code(record) == 0


def test_results_are_written_as_valid_json_and_markdown(results, tmp_path):
    written = report.write(results, tmp_path)
    data = json.loads((tmp_path / "latest.json").read_text())
    assert [c["name"] for c in data["cases"]] == ["agree", "disagree"]
    assert data["machine"]["cores_logical"] >= 1 and "numpy" in data["machine"]["versions"]
    assert data["mode"] == "quick" and data["executor"] == "reference"
    text = (tmp_path / "latest.md").read_text()
    assert "| `agree` |" in text and "mismatch" in text
    assert all(p.exists() for p in written)


def test_error_output_is_shortened_to_its_informative_lines():
    text = "Traceback\n  File x\n    f()\n    ^^^^\nValueError: bad size\n"
    assert last_words(text) == "f() | ValueError: bad size"


def test_main_rejects_an_unknown_case(tmp_path, capsys):
    assert runner.main(["no-such-case"], quick=True, out_dir=tmp_path) == 2
    assert "call-overhead" in capsys.readouterr().err


def test_main_runs_a_registered_case_end_to_end(tmp_path):
    code = runner.main(["call-overhead"], quick=True, executor="reference", out_dir=tmp_path,
                       optional=False)
    data = json.loads((tmp_path / "latest.json").read_text())
    assert code == 0 and data["cases"][0]["name"] == "call-overhead"
    assert data["cases"][0]["ours"]["status"] == "ok"
    assert {a["name"] for a in data["cases"][0]["anchors"]} >= {"numpy", "np.einsum", "torch"}


def test_the_readme_table_is_the_committed_run():
    """README.md's performance table is what benchmarks/readme.py makes from the committed
    results: no figure in it was typed by hand, and it names the run's date, machine and commit."""
    results = json.loads(readme.RESULTS.read_text(encoding="utf-8"))
    text = readme.README.read_text(encoding="utf-8")
    assert readme.section(results) in text
    assert results["machine"]["git"]["commit"] in readme.section(results)
    every_anchor = {a["name"] for case in results["cases"] for a in case["anchors"]}
    assert {"numpy", "torch", "jax.jit", "oe.expression"} <= every_anchor


def test_the_readme_table_lists_every_anchor_and_ratio():
    fake = {"mode": "full", "created": "2026-12-01T09:00:00+00:00", "executor": "numba",
            "wall_s": 600.0, "load_after": 0.5,
            "machine": {"cpu": "CPU", "cores_usable": 2, "memory_gib": 8, "python": "3.11",
                        "versions": {"numpy": "2"}, "git": {"commit": "abc1234", "dirty": False},
                        "blas": {"name": "openblas"}, "load_before": 0.1},
            "cases": [{"name": "c", "title": "a case", "targets": [], "dtype": "float32",
                       "ours": {"status": "ok", "median_s": 2e-3},
                       "anchors": [{"name": "numpy", "note": "", "status": "ok",
                                    "median_s": 1e-3, "ratio": 2.0},
                                   {"name": "torch", "note": "", "status": "skipped",
                                    "median_s": None, "ratio": None}]}]}
    block = readme.section(fake)
    assert "commit abc1234" in block and "2026-12-01" in block
    assert ("| `c` | a case | float32 | 2 ms | numpy 1 ms **×2.00** · torch: skipped | – |"
            in block)
    assert readme.rewrite(f"x\n{readme.BEGIN}\nold\n{readme.END}\ny", fake).startswith("x\n" + block)
    with pytest.raises(ValueError):
        readme.rewrite("no markers", fake)


@pytest.mark.parametrize("program", ["mlp", "lstm"])
def test_a_startup_child_times_a_fresh_process_and_answers_right(program, tmp_path):
    """benchmarks/first_results.py: nothing of the contestants is imported before the clock
    starts, the host tier (HILBERT_COMPILE=background) answers a loop-free call without
    loading Numba (a call with loops starts its build, and so loads Numba, in the background),
    and the answer is the program's (checked against NumPy written here)."""
    from benchmarks import first_results

    env = dict(os.environ, HILBERT_CACHE_DIR=str(tmp_path / "cache"),
               HILBERT_COMPILE="background")
    env.pop("NUMBA_DISABLE_JIT", None)
    done = subprocess.run([sys.executable, "-c", "from benchmarks.first_results import child; "
                           f"child({program!r}, 'hilbert')"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["imported_before"] == []
    if program == "mlp":
        assert report["numba_loaded"] is False
    assert 0 < report["import_s"] <= report["total_s"]
    inputs = first_results.PROGRAMS[program][0]()
    if program == "mlp":
        x, y, w1, w2 = (inputs[k] for k in ("x", "y", "w1", "w2"))
        hidden = x @ w1
        error = (np.maximum(hidden, 0) @ w2 - y) / x.shape[0]
        want = w1 - 0.01 * x.T @ ((error @ w2.T) * (hidden > 0))
    else:
        h, c = inputs["h"], inputs["c"]
        for t in range(inputs["x"].shape[0]):
            z = (np.einsum("be,edg->bdg", inputs["x"][t], inputs["wx"])
                 + np.einsum("bh,hdg->bdg", h, inputs["wh"]) + inputs["b"])
            gate = 1 / (1 + np.exp(-z))
            c = gate[..., 1] * c + gate[..., 0] * np.tanh(z[..., 2])
            h = gate[..., 3] * np.tanh(c)
        want = h
    assert report["checksum"] == pytest.approx(float(np.sum(want)), rel=1e-10)


def test_a_merged_run_keeps_the_cases_it_did_not_run_in_suite_order(tmp_path):
    names = [case.name for case in runner.ALL]
    first, second, third = names[0], names[1], names[2]

    def run_of(cases, created, mode="full"):
        return {"created": created, "mode": mode, "executor": "numba", "wall_s": 1.0,
                "cases": [{"name": n, "from": created} for n in cases]}

    earlier = tmp_path / "latest.json"
    earlier.write_text(json.dumps(run_of([first, second], "before")), encoding="utf-8")
    got = runner.merged(run_of([third, second], "now"), earlier)
    assert [c["name"] for c in got["cases"]] == [first, second, third]
    assert [c["from"] for c in got["cases"]] == ["before", "now", "now"]
    assert got["created"] == "now" and got["merged_from"]["cases"] == [first]
    assert got["merged_from"]["created"] == "before" and got["merged_from"]["partial"] == []
    with pytest.raises(ValueError, match="not merged with a quick run"):
        runner.merged(run_of([third], "now", mode="quick"), earlier)
    # merged again: the kept cases still name the full run they came from, and the partial
    # run in between
    earlier.write_text(json.dumps(got), encoding="utf-8")
    again = runner.merged(run_of([first], "later"), earlier)
    assert again["merged_from"]["created"] == "before"
    assert again["merged_from"]["partial"] == ["now"]
    assert [c["from"] for c in again["cases"]] == ["later", "now", "now"]


def test_a_merged_run_that_measured_no_peak_keeps_the_earlier_runs(tmp_path):
    """A run of a few cases measures no peak rate (benchmarks/peak.py runs with the GEMM
    cases): merged, the machine's peak of the earlier run of the same CPU stands, so the
    README still reads the kept cases' % of peak against it; a run that measured one keeps its
    own."""
    names = [case.name for case in runner.ALL]
    peak = {"float64": 250.0, "float32": 500.0}
    earlier = tmp_path / "latest.json"
    earlier.write_text(json.dumps({
        "created": "before", "mode": "full", "executor": "numba", "peak_fma": peak,
        "peak_gemm_gflops": 200.0, "cases": [{"name": names[0]}]}), encoding="utf-8")
    partial = {"created": "now", "mode": "full", "executor": "numba", "peak_fma": {},
               "peak_gemm_gflops": None, "cases": [{"name": names[1]}]}
    got = runner.merged(partial, earlier)
    assert got["peak_fma"] == peak and got["peak_gemm_gflops"] == 200.0
    measured = {**partial, "peak_fma": {"float64": 240.0}, "peak_gemm_gflops": 190.0}
    got = runner.merged(measured, earlier)
    assert got["peak_fma"] == {"float64": 240.0} and got["peak_gemm_gflops"] == 190.0


# -- the machine's arithmetic: vectors, the BLAS's kernel, a pinned OpenBLAS lifted (issue 53) --

#: A CPU with AVX-512, on which OPENBLAS_CORETYPE=Haswell pins an older kernel whatever machine
#: runs the test.
AVX512 = ["SSE2", "SSE3", "AVX", "FMA3", "AVX2", "AVX-512F"]
PINNED = {"OPENBLAS_CORETYPE": "Haswell", "OPENBLAS_L2_SIZE": "512"}


def _threadpoolctl_kernel(env: dict) -> str | None:
    """The architecture threadpoolctl reports for NumPy's BLAS in a fresh process with `env`."""
    code = ("import json, numpy, threadpoolctl; print(json.dumps(next((p.get('architecture') "
            "for p in threadpoolctl.threadpool_info() if p.get('user_api') == 'blas'), None)))")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          check=True, timeout=120)
    return json.loads(done.stdout)


def test_the_record_names_the_blas_kernel_and_the_cpu_vectors(results):
    from numpy._core._multiarray_umath import __cpu_features__ as features
    from threadpoolctl import threadpool_info

    machine = results["machine"]
    numpy_home = str(Path(np.__file__).parent)  # NumPy's own BLAS, not torch's beside it
    numpy_blas = [p for p in threadpool_info()
                  if p["user_api"] == "blas" and p["filepath"].startswith(numpy_home)]
    assert machine["blas"]["kernel"] == numpy_blas[0].get("architecture")
    assert machine["blas"]["name"] and machine["blas"]["version"]
    for numpy_name, shown in (("AVX", "AVX"), ("AVX2", "AVX2"), ("AVX512F", "AVX-512F"),
                              ("ASIMD", "ASIMD")):
        assert (shown in machine["cpu_vectors"]) == bool(features.get(numpy_name)), shown
    widest = {"AVX512F": "AVX-512", "AVX2": "AVX2", "AVX": "AVX"}
    assert machine["cpu_widest"] == next(
        (level for name, level in widest.items() if features.get(name)),
        machine["cpu_widest"] if not features.get("SSE3") else "SSE3")
    words = report.machine_words(results)
    assert machine["blas"]["kernel"] is None or f"BLAS kernel {machine['blas']['kernel']}" in words
    assert ", ".join(machine["cpu_vectors"]) in words


@pytest.mark.parametrize("env, vectors, pinned", [
    (PINNED, AVX512, True),
    ({"OPENBLAS_CORETYPE": "haswell"}, AVX512, True),        # OpenBLAS ignores the case
    ({"OPENBLAS_CORETYPE": "Prescott"}, AVX512[:-1], True),  # SSE3 kernels on an AVX2 CPU
    (PINNED, AVX512[:-1], False),                            # Haswell is this CPU's own kernel
    ({"OPENBLAS_CORETYPE": "SkylakeX"}, AVX512, False),
    ({"OPENBLAS_CORETYPE": "NEOVERSEN1"}, ["ASIMD"], False),  # another architecture's names
    ({"OPENBLAS_L2_SIZE": "512"}, AVX512, False),            # no kernel named
    ({}, AVX512, False),
])
def test_a_pin_is_a_core_type_older_than_the_cpu(env, vectors, pinned):
    from hilbert.bench_machine import openblas_pin

    pin = openblas_pin(env, vectors)
    assert (pin is not None) == pinned
    if pinned:
        assert pin["variables"] == env and pin["cpu_level"] in ("AVX-512", "AVX2")


def test_a_pinned_openblas_kernel_is_lifted_in_the_process_the_suite_starts(capsys):
    """The suite's launch helper, given OPENBLAS_CORETYPE=Haswell on a CPU with AVX-512, starts
    its process without the pin: inside it the variables are unset, the record says they were
    lifted, and the kernel it names is the one threadpoolctl reports there."""
    from benchmarks import unpinned

    env = {**os.environ, **PINNED}
    done = unpinned.launch(["--machine"], environ=env, vectors=AVX512, capture=True)
    assert done.returncode == 0, done.stderr
    said = capsys.readouterr().err
    assert "OPENBLAS_CORETYPE=Haswell and OPENBLAS_L2_SIZE=512 pin OpenBLAS" in said
    machine = json.loads(done.stdout)
    assert not set(PINNED) & set(machine["blas_env"])
    pin = machine["openblas_pin"]
    assert pin["lifted"] is True and pin["variables"] == PINNED
    unset = {k: v for k, v in env.items() if k not in PINNED}
    assert pin["kernel"] == machine["blas"]["kernel"] == _threadpoolctl_kernel(unset)


def test_no_pin_no_new_process():
    from benchmarks import unpinned

    assert unpinned.launch(["--machine"], environ=PINNED, vectors=AVX512[:-1]) is None
    assert unpinned.launch(["--machine"], environ={}, vectors=AVX512) is None


def test_a_run_on_another_cpu_or_kernel_is_not_merged(tmp_path):
    from benchmarks import kept

    def run_of(family, kernel):
        return {"created": "now", "mode": "full", "executor": "numba", "wall_s": 1.0,
                "machine": {"cpu": "AMD EPYC", "cpu_family": family, "cpu_vectors": ["AVX2"],
                            "cpu_widest": "AVX2", "blas": {"kernel": kernel}},
                "cases": [{"name": runner.ALL[0].name}]}

    earlier = tmp_path / "earlier.json"
    earlier.write_text(json.dumps(run_of("AuthenticAMD family 23 model 49", "Haswell")))
    with pytest.raises(ValueError, match="CPU amd-epyc-authenticamd-family-23-model-49-avx2"):
        runner.merged(run_of("AuthenticAMD family 26 model 2", "Haswell"), earlier)
    with pytest.raises(ValueError, match="BLAS kernel Haswell"):
        runner.merged(run_of("AuthenticAMD family 23 model 49", "Zen"), earlier)
    here = run_of("AuthenticAMD family 23 model 49", "Haswell")
    assert kept.keep(here, tmp_path) is None  # (one case: not the CPU's full run)
    here["cases"] = [{"name": case.name} for case in runner.ALL]
    assert kept.keep({**here, "mode": "quick"}, tmp_path) is None
    path = kept.keep(here, tmp_path)
    assert path == tmp_path / "cpus" / "amd-epyc-authenticamd-family-23-model-49-avx2.json"
    assert kept.kept_path(tmp_path, here) == path
    assert json.loads(path.read_text())["machine"] == here["machine"]
