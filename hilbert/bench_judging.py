"""Judging a benchmark's contestants: outputs checked against hilbert's first optimiser's,
ratios to the anchors, the notes on what the anchors' times mean, and the machine measured on."""

from __future__ import annotations

import os
import platform
from importlib import metadata

import numpy as np

from .bench_machine import blas_record, cpu_vectors, pin_record, widest_level
from .bench_optimisers import _Run
from .bench_report import Contestant, Work

#: Outputs of two contestants agree when within this relative tolerance (contraction orders
#: round differently), or within ABS_TOLERANCE of the largest magnitude.
REL_TOLERANCE, ABS_TOLERANCE = 1e-7, 1e-9


def _cross_check(runs: list[_Run], direct: bool) -> None:
    """Every hilbert optimiser's output against the first one's; the anchors too when they
    compute the function's own output. A disagreement is a 'mismatch', without ratios."""
    basis = next(r for r in runs if r.contestant.kind == "hilbert" and r.error is None)
    for run in runs:
        c = run.contestant
        if run is basis or c.status != "ok" or (c.kind == "anchor" and not direct):
            continue
        c.max_abs_diff, why = _difference(run.output, basis.output)
        if why:
            c.status, c.reason = "mismatch", f"{why} than {basis.contestant.name}'s output"


def _difference(got, want) -> tuple[float | None, str]:
    """The largest absolute difference, and why the two disagree ('' when they agree)."""
    gots, wants = _parts(got), _parts(want)
    if [g.shape for g in gots] != [w.shape for w in wants]:
        return None, f"shape(s) {[g.shape for g in gots]} rather"
    largest = 0.0
    for g, w in zip(gots, wants, strict=True):
        if not g.size:
            continue
        largest = max(largest, float(np.nanmax(np.abs(g - w), initial=0.0)))
        scale = float(np.nanmax(np.abs(w), initial=1.0))
        if not np.allclose(g, w, rtol=REL_TOLERANCE, atol=ABS_TOLERANCE * max(scale, 1.0),
                           equal_nan=True):
            return largest, f"values up to {largest:.3g} away (rtol {REL_TOLERANCE:g}) rather"
    return largest, ""


def _parts(value) -> list[np.ndarray]:
    if isinstance(value, tuple):
        return [np.asarray(v, dtype=np.float64) for v in value]
    return [np.asarray(value, dtype=np.float64)]


def _ratios(contestants: list[Contestant]) -> None:
    """Each hilbert optimiser's warm median over each anchor's (both ok)."""
    anchors = [a for a in contestants if a.kind == "anchor" and a.status == "ok" and a.warm_s]
    for c in contestants:
        if c.kind == "hilbert" and c.status == "ok" and c.warm_s:
            c.ratios = {a.name: c.warm_s / a.warm_s for a in anchors}  # type: ignore[operator]


def _notes(work: tuple[Work, ...], direct: bool) -> list[str]:
    """What the anchors' times mean beside hilbert's."""
    if not work:
        return ["the function has no einsum, so the anchors have nothing to run"]
    if direct:
        return ["the function is one einsum of its arguments: the anchors compute the same "
                "output from the same inputs, checked against hilbert's"]
    calls = sum(w.count for w in work)
    return [f"the anchors run the function's {len(work)} einsum(s) ({calls} call(s) per call "
            "of the function) on standard normal operands of the same shapes; hilbert's "
            "times also include the rest of its work (entrywise operations, loops)"]


def _machine() -> dict:
    """Where the numbers were measured: platform, Python, cores, the CPU's vector extensions,
    NumPy's BLAS (library, version, the kernel it runs), an OpenBLAS pin if one is set, and
    library versions."""
    versions: dict[str, str | None] = {}
    for name in ("hilbert", "numpy", "opt_einsum", "numba"):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    vectors = cpu_vectors()
    return {"platform": platform.platform(), "python": platform.python_version(),
            "cores": os.cpu_count(), "cpu_vectors": vectors, "cpu_widest": widest_level(vectors),
            "blas": blas_record(), "openblas_pin": pin_record(), "versions": versions}
