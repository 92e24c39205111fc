"""The benchmark runner: for each case, cross-check every contestant's output, then time them
all in this process (warm-up excluded, interleaved repeats, medians) and record the machine.

Started from the command line (`hilbert bench --suite`, `python -m benchmarks.runner`) in an
environment whose OPENBLAS_CORETYPE pins a kernel older than the CPU, the runner runs the suite
in a new process started without the pin (`launch`), before NumPy loads there: hilbert and
every NumPy-based anchor then multiply with the kernel OpenBLAS chooses, the processes that one
starts inherit the cleaned environment, and the record says what was lifted and which kernel
ran."""

from __future__ import annotations

import argparse
import json
import os
import queue
import resource
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.anchors import to_array
from benchmarks.cases import ALL, Case, Config, Setup, Skip, select
from benchmarks.cases.base import BEST, OURS, ROOT, TWIN, Target, last_words
from benchmarks.kept import keep, kept_path, merged
from benchmarks.machine import (
    executor_module,
    load_average,
    machine_info,
    memory_bytes,
    peak_gemm_gflops,
)
from benchmarks.peak import peak_rates
from benchmarks.unpinned import launch
from hilbert.progress import Progress
from hilbert.timing import describe, summarise, time_interleaved

RESULTS = ROOT / "benchmarks" / "results"


# --------------------------------------------------------------------------------------------
# Entry points


def main(cases: list[str], quick: bool = False, executor: str = "numba",
         out_dir: str | Path | None = None, optional: bool = True, listing: bool = False,
         merge: bool = False, lift: bool = False, machine: bool = False) -> int:
    """Run the chosen cases (all for none) and write results/latest.{json,md} and the plots;
    with `listing`, only print the chosen cases; with `merge`, keep the other cases of the
    latest.json already there (a run of the same mode and executor), the ones run replacing
    theirs; with `machine`, only print the machine's record (JSON). With `lift` (the command
    line's way), a pinned OpenBLAS kernel is lifted: the run happens in a process started
    without the pin (`launch`). Exit code 0; 1 when some contestant's output disagreed with
    ours; 2 for an unknown case."""
    try:
        chosen = select(cases)
    except KeyError as err:
        print(f"hilbert bench: no case matches {err.args[0]!r}; the cases are:\n"
              + case_list(ALL), file=sys.stderr)
        return 2
    if listing:
        print(case_list(chosen))
        return 0
    if lift:
        done = launch([*cases, *(["--quick"] if quick else []), "--executor", executor,
                       *(["--out", str(out_dir)] if out_dir else []),
                       *([] if optional else ["--no-optional"]), *(["--merge"] if merge else []),
                       *(["--machine"] if machine else [])])
        if done is not None:
            return done.returncode
    if machine:
        print(json.dumps(machine_info(), indent=1))
        return 0
    config = Config(quick=quick, executor=executor, optional=optional)
    results = run(chosen, config)
    from benchmarks import report

    target = Path(out_dir or os.environ.get("HILBERT_BENCH_OUT") or RESULTS)
    if merge:
        try:
            results = merged(results, kept_path(target, results))
        except ValueError as err:  # (the run is not lost for that)
            print(f"hilbert bench: {err}; this run is written unmerged", file=sys.stderr)
    written = report.write(results, target)
    kept = keep(results, target)
    written += [kept] if kept else []
    print(report.markdown_table(results))
    print(f"\nwrote {', '.join(str(p) for p in written)}", file=sys.stderr)
    if not report.plotting_available():
        print(report.plots_skipped(target), file=sys.stderr)
    return exit_code(results)


def case_list(cases) -> str:
    """The cases one a line: name, group, and what it measures (`hilbert bench --list`)."""
    return "\n".join(f"  {c.name:<20} {c.group:<14} {c.title}" for c in cases)


def exit_code(results: dict) -> int:
    """1 when any contestant's output disagreed (a correctness problem), else 0. Errors and
    skips are recorded but do not fail the run: a missing anchor or a case the compiler cannot
    run yet is a finding, not a crash."""
    return 1 if any(c["status"] == "mismatch" for c in results["cases"]) else 0


def run(cases: list[Case], config: Config, progress: Progress | None = None) -> dict:
    """Every case measured; the whole run as JSON-ready data (machine included). Ours is timed
    in its steady state: each call's code is compiled before its first call runs (no calls
    on the host tier while a background compilation competes with the timing); the
    `first-call` case measures first calls itself, in fresh processes of the default setting."""
    os.environ.setdefault("HILBERT_COMPILE", "eager")
    begun = time.perf_counter()
    machine = machine_info()  # the load average before this run's own work
    progress = progress or Progress(len(cases))
    bound = any(c.blas_bound for c in cases)
    peak = peak_gemm_gflops(config) if bound else None
    fma = peak_rates(config.pick(7, 3)) if bound else None
    records = []
    for i, case in enumerate(cases):
        progress.item(i, case.name)
        load = load_average()
        try:
            records.append(run_case(case, config, progress, peak, fma))
        except Exception as err:  # noqa: BLE001 - a bug in one case must not lose the others
            records.append(_broken_case(case, err))
        records[-1]["load_at_start"] = load
    progress.close()
    machine.update({k: v for k, v in machine_info().items() if k in ("torch_threads",
                                                                    "jax_devices")})
    return {
        "schema": 1,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "mode": "quick" if config.quick else "full",
        "executor": config.executor,
        "executor_module": executor_module(config.executor),
        "machine": machine,
        "peak_gemm_gflops": peak,
        "peak_fma": fma,
        "load_after": load_average(),
        "settings": {"min_time_s": config.min_time, "repeats": config.repeats,
                     "min_repeats": config.min_repeats, "budget_s": config.budget_s,
                     "probe_timeout_s": config.probe_timeout_s,
                     "first_call_timeout_s": config.first_call_timeout_s,
                     "naive_einsum_limit": config.naive_limit, "optional_anchors": config.optional,
                     "hilbert_compile": os.environ.get("HILBERT_COMPILE")},
        "wall_s": time.perf_counter() - begun,
        "cases": records,
    }


# --------------------------------------------------------------------------------------------
# One case


def run_case(case: Case, config: Config, progress: Progress, peak: float | None,
             fma: dict | None = None) -> dict:
    """Prepare, cross-check and time one case; every failure becomes part of the record."""
    record: dict[str, Any] = {
        "name": case.name, "group": case.group, "title": case.title, "measures": case.measures,
        "status": "ok", "error": None, "params": {}, "metrics": {}, "notes": [],
        "ours": _contestant(OURS, "ours"), "anchors": [], "targets": []}
    probe_error: str | None = None
    probe_times: dict[str, float] = {}
    if case.isolate:
        progress.step("probing hilbert in a separate process")
        probe_error, probe_times = probe(case, config)
    progress.step("preparing")
    try:
        setup = case.build(config)
    except Exception as err:  # noqa: BLE001 - a broken case is an entry, not a crash
        record.update(status="error", error=describe(err))
        record["ours"].update(status="error", reason=record["error"])
        record["targets"] = evaluate_targets(case.targets, record)
        return record
    record.update(params=setup.params, metrics=dict(setup.metrics) | probe_times,
                  notes=list(setup.notes))
    if setup.measure is not None:
        _measured(setup, config, record, progress)
    else:
        _timed(setup, config, record, progress, probe_error)
    _derived(case, setup, record, peak, fma)
    record["targets"] = evaluate_targets(case.targets, record)
    if record["ours"]["status"] == "error" and record["status"] == "ok":
        record.update(status="error", error=record["ours"]["reason"])
    return record


def _broken_case(case: Case, err: Exception) -> dict:
    reason = f"the runner failed on this case: {describe(err)}"
    ours = _contestant(OURS, "ours") | {"status": "error", "reason": reason}
    return {"name": case.name, "group": case.group, "title": case.title,
            "measures": case.measures, "status": "error", "error": reason, "params": {},
            "metrics": {}, "notes": [], "ours": ours, "anchors": [], "targets": []}


def _contestant(name: str, role: str, note: str = "") -> dict:
    return {"name": name, "role": role, "note": note, "status": "pending", "reason": None,
            "median_s": None, "min_s": None, "max_s": None, "iqr_s": None, "repeats": 0,
            "number": 0, "times_s": [], "ratio": None, "max_abs_diff": None}


def _timed(setup: Setup, config: Config, record: dict, progress: Progress,
           probe_error: str | None) -> None:
    """Prepare each anchor, run every contestant once and compare, then time them."""
    ours = record["ours"]
    calls: dict[str, Callable[[], Any]] = {}
    if probe_error or setup.ours_error or setup.ours is None:
        ours.update(status="error", reason=probe_error or setup.ours_error or "nothing to run")
    else:
        calls[OURS] = setup.ours
    for anchor in setup.anchors:
        entry = _contestant(anchor.name, "anchor", anchor.note)
        record["anchors"].append(entry)
        progress.step(f"preparing {anchor.name}")
        try:
            calls[anchor.name] = anchor.make()
        except Skip as skip:
            entry.update(status="skipped", reason=str(skip))
        except Exception as err:  # noqa: BLE001
            entry.update(status="error", reason=describe(err))
    outputs = {}
    for name, call in list(calls.items()):
        progress.step(f"checking {name}")
        try:
            outputs[name] = call()  # the first warm-up call (JIT compilation happens here)
        except Exception as err:  # noqa: BLE001
            _entry(record, name).update(status="error", reason=describe(err))
            del calls[name]
    record["dtype"] = dtype_of(outputs.get(OURS)) or setup.params.get("dtype")
    if setup.compare:
        cross_check(outputs, setup, record)
    timings, failed = time_interleaved(calls, config.schedule, progress)
    for name, reason in failed.items():
        _entry(record, name).update(status="error", reason=reason)
    for name, stats in timings.items():
        entry = _entry(record, name)
        entry.update(stats)
        if entry["status"] == "pending":
            entry["status"] = "ok"
    _ratios(record)


def _measured(setup: Setup, config: Config, record: dict, progress: Progress) -> None:
    """A case that times one-shot work itself (path search): medians over its instances."""
    progress.step("measuring")
    assert setup.measure is not None
    try:
        measured = setup.measure(config)
    except Exception as err:  # noqa: BLE001
        record.update(status="error", error=describe(err))
        record["ours"].update(status="error", reason=record["error"])
        return
    record["metrics"].update(measured.metrics)
    for name, times in measured.times.items():
        entry = record["ours"] if name == OURS else _contestant(name, "anchor")
        if name != OURS:
            record["anchors"].append(entry)
        if name in measured.errors:
            entry.update(status="error", reason=measured.errors[name])
        elif times:
            entry.update(status="ok", **summarise(times, 1))
    _ratios(record)


def _entry(record: dict, name: str) -> dict:
    if name == OURS:
        return record["ours"]
    return next(a for a in record["anchors"] if a["name"] == name)


def cross_check(outputs: dict[str, Any], setup: Setup, record: dict) -> None:
    """Compare every output with ours (or, if ours failed, with the first anchor that ran):
    same shape and numpy.allclose(rtol, atol). A disagreement marks the contestant and the
    case as 'mismatch'."""
    if not outputs:
        return
    basis_name = OURS if OURS in outputs else next(iter(outputs))
    basis = to_array(outputs[basis_name])
    record["checked_against"] = basis_name
    for name, value in outputs.items():
        if name == basis_name:
            continue
        entry = _entry(record, name)
        got = to_array(value)
        if got.shape != basis.shape:
            entry.update(status="mismatch",
                         reason=f"shape {got.shape} where {basis_name} gave {basis.shape}")
        else:
            diff = float(np.max(np.abs(got - basis))) if got.size else 0.0
            entry["max_abs_diff"] = diff
            if not np.allclose(got, basis, rtol=setup.rtol, atol=setup.atol, equal_nan=True):
                entry.update(status="mismatch",
                             reason=f"differs from {basis_name} by up to {diff:.3g} "
                                    f"(rtol {setup.rtol:g}, atol {setup.atol:g})")
        if entry["status"] == "mismatch":
            record["status"] = "mismatch"


def dtype_of(value: Any) -> str | None:
    """The dtype hilbert's output came back in ("float32", …; a Python float is "float64"),
    the parts' dtypes joined by "/" when a tuple's differ; None for anything else (a model's
    training step answers None: the case's params then name the dtype)."""
    if isinstance(value, (tuple, list)):
        names = list(dict.fromkeys(dtype_of(v) for v in value))
        return "/".join(n for n in names if n) or None
    if isinstance(value, dict):
        return dtype_of(list(value.values()))
    if isinstance(value, (float, complex)):
        return np.asarray(value).dtype.name
    return getattr(getattr(value, "dtype", None), "name", None)


# --------------------------------------------------------------------------------------------
# Ratios, derived figures and targets


def _ratios(record: dict) -> None:
    """ratio = our median / the anchor's median, for anchors whose output agreed with ours."""
    ours = record["ours"].get("median_s")
    for anchor in record["anchors"]:
        if ours and anchor["status"] == "ok" and anchor["median_s"]:
            anchor["ratio"] = ours / anchor["median_s"]


def _derived(case: Case, setup: Setup, record: dict, peak: float | None,
             fma: dict | None = None) -> None:
    """GFLOP/s per contestant when the case knows its work; on a BLAS-bound case, % of the
    BLAS-bound time and the share of the machine's peak FMA rate in the case's dtype (`fma`,
    benchmarks/peak.py: every core)."""
    record["metrics"]["ours_median_s"] = record["ours"].get("median_s")
    if not setup.flops:
        return
    record["metrics"]["flops"] = setup.flops
    top = (fma or {}).get(record.get("dtype") or "", {}).get("all_cores_gflops")
    for entry in (record["ours"], *record["anchors"]):
        if entry.get("median_s"):
            entry["gflops"] = setup.flops / entry["median_s"] / 1e9
            if case.blas_bound and peak:
                entry["blas_bound_pct"] = 100.0 * (setup.flops / (peak * 1e9)) / entry["median_s"]
            if case.blas_bound and top:
                entry["peak_share"] = entry["gflops"] / top
    if case.blas_bound and record["ours"].get("median_s"):
        for key in ("blas_bound_pct", "peak_share"):
            if key in record["ours"]:
                record["metrics"][key] = record["ours"][key]


def evaluate_targets(targets: tuple[Target, ...], record: dict) -> list[dict]:
    """Each target: met (True), missed (False) or not measurable here (None), with the value."""
    out = []
    for target in targets:
        value, met, why = _target_value(target, record)
        kind = "runs" if target.runs else "metric" if target.metric else "ratio"
        out.append({"text": target.text, "kind": kind, "metric": target.metric, "value": value,
                    "met": met, "why": why})
    return out


def _target_value(target: Target, record: dict) -> tuple[Any, bool | None, str]:
    ours = record["ours"]
    if target.runs:
        ok = ours["status"] in ("ok", "mismatch")
        return ours["status"], ok, "" if ok else (ours["reason"] or "")
    if target.metric is not None:
        value = record["metrics"].get(target.metric)
        if value is None:
            return None, None, f"{target.metric} was not measured"
        if target.expect is not None:
            return value, value == target.expect, ""
        if target.min_value is not None:
            return value, value >= target.min_value, ""
        return value, value <= target.max_value, ""
    if ours["status"] != "ok":
        return None, None, "hilbert did not run"
    if target.anchor == BEST:
        timed = [a for a in record["anchors"] if a["ratio"] is not None and a["name"] != TWIN]
        if not timed:
            return None, None, "no anchor was timed"
        best = min(timed, key=lambda a: a["median_s"])
        return best["ratio"], best["ratio"] <= target.max_ratio, f"best anchor: {best['name']}"
    anchor = next((a for a in record["anchors"] if a["name"] == target.anchor), None)
    if anchor is None or anchor["ratio"] is None:
        why = anchor["reason"] if anchor else f"{target.anchor} is not an anchor of this case"
        return None, None, why or f"{target.anchor} was not timed"
    return anchor["ratio"], anchor["ratio"] <= target.max_ratio, ""


# --------------------------------------------------------------------------------------------
# Isolation: one call of ours in a separate, memory-capped, time-limited process


def probe(case: Case, config: Config) -> tuple[str | None, dict[str, float]]:
    """Call ours twice in a separate process capped at half the machine's memory: the first
    call (which may compile) within `first_call_timeout_s`, the second within
    `probe_timeout_s`. Returns (None, times) when both finish in time, else (the reason, the
    times measured); the reason becomes the error entry and the case is not timed."""
    command = [sys.executable, "-m", "benchmarks.runner", "--probe", case.name,
               "--executor", config.executor] + (["--quick"] if config.quick else [])
    with tempfile.TemporaryFile("w+") as errors:
        child = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=errors,
                                 text=True)
        lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=_forward, args=(child.stdout, lines), daemon=True).start()
        times: dict[str, float] = {}
        try:
            for stage, limit in (("first", config.first_call_timeout_s),
                                 ("second", config.probe_timeout_s)):
                try:
                    line = lines.get(timeout=limit)
                except queue.Empty:
                    what = "the first call (compilation included)" if stage == "first" else "a call"
                    return (f"{what} did not finish within {limit:g} s (probed in a separate "
                            "process, which was stopped)"), times
                if line is None:  # the process ended without answering: it crashed
                    child.wait()
                    errors.seek(0)
                    return (f"the probe process died (exit code {child.returncode}): "
                            f"{last_words(errors.read())}"), times
                answer = json.loads(line)
                if "error" in answer:
                    return answer["error"], times
                times[f"probe_{stage}_call_s"] = answer["seconds"]
            return None, times
        finally:
            child.kill()
            child.wait()


def _forward(stream, lines: queue.Queue) -> None:
    for line in stream:
        if line.startswith("{"):
            lines.put(line)
    lines.put(None)


def _probe_main(name: str, quick: bool, executor: str) -> int:
    limit = memory_bytes() // 2
    if limit:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    try:
        setup = select([name])[0].build(Config(quick=quick, executor=executor, optional=False))
        if setup.ours_error or setup.ours is None:
            raise RuntimeError(setup.ours_error or "nothing to run")
        for stage in ("first", "second"):
            begun = time.perf_counter()
            setup.ours()
            print(json.dumps({"stage": stage, "seconds": time.perf_counter() - begun}),
                  flush=True)
    except MemoryError as err:
        print(json.dumps({"error": f"MemoryError: {err or 'out of memory'} (the probe may use "
                                   f"{limit / 2**30:.1f} GiB)"}), flush=True)
    except Exception as err:  # noqa: BLE001
        print(json.dumps({"error": describe(err)}), flush=True)
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m benchmarks.runner",
                                     description="Run the benchmark suite.")
    parser.add_argument("cases", nargs="*", help="case names, group names or globs (all if none)")
    parser.add_argument("--quick", action="store_true",
                        help="fewer repeats and smaller sizes (under 3 minutes on 2 cores)")
    parser.add_argument("--executor", default="numba", help="the executor hilbert runs on")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    parser.add_argument("--probe", metavar="CASE", help=argparse.SUPPRESS)
    parser.add_argument("--no-optional", action="store_true",
                        help="skip the PyTorch and JAX anchors")
    parser.add_argument("--merge", action="store_true",
                        help="keep results/latest.json's other cases (the ones run replace theirs)")
    parser.add_argument("--out", metavar="DIR",
                        help="write the results here (default: $HILBERT_BENCH_OUT or "
                             "benchmarks/results)")
    parser.add_argument("--machine", action="store_true",
                        help="print the machine's record (CPU, vectors, BLAS kernel, pin) and exit")
    parser.add_argument("--keep-pin", action="store_true",
                        help="run with an OPENBLAS_CORETYPE older than the CPU as it is (by "
                             "default the suite runs without it); the record names the kernel")
    options = parser.parse_args()
    if options.probe:
        sys.exit(_probe_main(options.probe, options.quick, options.executor))
    sys.exit(main(options.cases, options.quick, options.executor, out_dir=options.out,
                  optional=not options.no_optional, listing=options.list, merge=options.merge,
                  lift=not options.keep_pin, machine=options.machine))
