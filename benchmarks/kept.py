"""The runs kept in benchmarks/results/: the newest full run of each CPU family in
`cpus/<key>.json` beside latest.json, and a partial run merged into the full run of its CPU.

A CPU's key is its model name, family numbers and widest vectors (`amd-epyc-family-26-model-2-
avx-512`): machines with one model name under a hypervisor ("AMD EPYC") can be different
processors, and a run on one says nothing of the other.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from benchmarks.cases import ALL

#: The folder, under the results folder, holding the newest full run of each CPU.
CPUS = "cpus"


def cpu_key(results: dict) -> str:
    """The CPU a run was made on, as a file name: model, family numbers and widest vectors
    ("unrecorded" for what a run made before they were kept lacks)."""
    m = results.get("machine", {})
    parts = [m.get("cpu") or "cpu", m.get("cpu_family") or "family unrecorded",
             m.get("cpu_widest") or ("vectors unrecorded" if "cpu_vectors" not in m else "")]
    return re.sub(r"[^a-z0-9]+", "-", " ".join(parts).lower()).strip("-")


def kept_path(out_dir: Path, results: dict) -> Path:
    """The kept full run of `results`' CPU when there is one, else latest.json."""
    kept = out_dir / CPUS / f"{cpu_key(results)}.json"
    return kept if kept.is_file() else out_dir / "latest.json"


def _kernel(results: dict) -> str:
    return str(results.get("machine", {}).get("blas", {}).get("kernel"))


def keep(results: dict, out_dir: Path) -> Path | None:
    """A full run (merged or not) written as the kept run of its CPU; the path, or None for a
    quick run and for a run of some cases only, not merged into a full one (it would replace
    the CPU's full run with a few cases)."""
    if results["mode"] != "full" or {c["name"] for c in results["cases"]} < {c.name for c in ALL}:
        return None
    path = out_dir / CPUS / f"{cpu_key(results)}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=1, default=str) + "\n", encoding="utf-8")
    return path


#: What a run measures of the machine itself (benchmarks/peak.py), not of its cases.
MACHINE_RATES = ("peak_gemm_gflops", "peak_fma")


def merged(results: dict, earlier_path: Path) -> dict:
    """`results` with the cases of the earlier run at `earlier_path` it did not run, in the
    suite's order; the run's own date and machine stand, and `merged_from` names the earlier
    run. An earlier run of another mode or executor, or on another CPU or BLAS kernel, is not
    merged (ValueError)."""
    earlier = json.loads(earlier_path.read_text(encoding="utf-8"))
    if (earlier["mode"], earlier["executor"]) != (results["mode"], results["executor"]):
        raise ValueError(f"{earlier_path} is a {earlier['mode']} run on {earlier['executor']}: "
                         f"not merged with a {results['mode']} run on {results['executor']}")
    for what, key in (("CPU", cpu_key), ("BLAS kernel", _kernel)):
        if key(earlier) != key(results):
            raise ValueError(f"{earlier_path} was run with {what} {key(earlier)}: not merged "
                             f"with a run with {key(results)}")
    by_name = {c["name"]: c for c in earlier["cases"]}
    by_name.update((c["name"], c) for c in results["cases"])
    order = [c.name for c in ALL]
    cases = sorted(by_name.values(),
                   key=lambda c: order.index(c["name"]) if c["name"] in order else len(order))
    # (an earlier run that was itself merged names the full run its kept cases came from, and
    # the partial runs since)
    full = earlier.get("merged_from") or earlier
    partial = [*earlier.get("merged_from", {}).get("partial", []),
               *([earlier["created"]] if "merged_from" in earlier else [])]
    # (the machine's peak rates are its own: a run that measured none keeps the earlier run's,
    # of the same CPU and kernel, so its cases' % of peak still have a peak to be read against)
    peaks = {key: earlier[key] for key in MACHINE_RATES if not results.get(key) and earlier.get(key)}
    return {**results, **peaks, "cases": cases,
            "merged_from": {"created": full["created"], "wall_s": full.get("wall_s"),
                            "partial": partial,
                            "cases": [c["name"] for c in earlier["cases"]
                                      if c["name"] not in {r["name"] for r in results["cases"]}]}}
