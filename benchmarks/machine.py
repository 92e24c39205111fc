"""What a benchmark run records of the machine it ran on: CPU (model, family, vector
extensions), cores, memory, NumPy's BLAS (library, version, the kernel it runs, its threads)
and any OpenBLAS pin, library versions, the checkout, and the measured GEMM and peak rates."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.cases import Config
from benchmarks.cases.base import ROOT
from hilbert.bench_machine import blas_record, cpu_vectors, pin_record, widest_level
from hilbert.timing import time_repeat

LIBRARIES = ("numpy", "opt_einsum", "numba", "scipy", "lark", "torch", "jax", "jaxlib",
             "matplotlib", "einsum_benchmark", "threadpoolctl", "onnx", "onnxruntime", "hilbert")


def machine_info() -> dict:
    """CPU, cores, memory, BLAS (library, kernel and threads) and any OpenBLAS pin (lifted in
    this process or not), library versions, and the checkout."""
    vectors = cpu_vectors()
    info: dict[str, Any] = {
        "cpu": _cpu_model(), "cpu_family": cpu_family(), "cpu_vectors": vectors,
        "cpu_widest": widest_level(vectors), "cores_logical": os.cpu_count(),
        "cores_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "memory_gib": round(memory_bytes() / 2**30, 1), "platform": platform.platform(),
        "python": platform.python_version(), "blas": blas_record(), "openblas_pin": pin_record(),
        "load_before": load_average(),
        "thread_env": {k: os.environ[k] for k in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY",
                                                 "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                                                 "NUMBA_NUM_THREADS", "HILBERT_THREADS")
                       if k in os.environ},
        # (OpenBLAS's own settings as this process has them: a pin lifted is absent here)
        "blas_env": {k: v for k, v in sorted(os.environ.items()) if k.startswith("OPENBLAS_")},
        "versions": _versions(), "git": _git()}
    if "torch" in sys.modules:
        info["torch_threads"] = sys.modules["torch"].get_num_threads()
    if "jax" in sys.modules:
        info["jax_devices"] = [str(d) for d in sys.modules["jax"].devices()]
    return info


def load_average() -> float | None:
    """The 1-minute load average: other work competing for the cores makes times noisy."""
    try:
        return os.getloadavg()[0]
    except (OSError, AttributeError):
        return None


def _cpuinfo(field: str) -> str | None:
    """The first value of `field` in /proc/cpuinfo (None elsewhere)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.split(":", 1)[0].strip() == field:
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def _cpu_model() -> str:
    return _cpuinfo("model name") or platform.processor() or platform.machine()


def cpu_family() -> str:
    """The CPU's vendor, family and model numbers ("AuthenticAMD family 26 model 2"): machines
    whose model name is the same ("AMD EPYC" under a hypervisor) can differ here."""
    parts = [_cpuinfo(f) for f in ("vendor_id", "cpu family", "model")]
    if not any(parts):
        return platform.machine()
    return f"{parts[0]} family {parts[1]} model {parts[2]}"


def memory_bytes() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


def _versions() -> dict:
    found: dict[str, str | None] = {}
    for name in LIBRARIES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


def _git() -> dict:
    def git(*args):
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,
                              check=False)
        return done.stdout.strip() if done.returncode == 0 else None
    try:
        return {"commit": git("rev-parse", "--short", "HEAD"),
                "dirty": bool(git("status", "--porcelain", "--untracked-files=no"))}
    except OSError:
        return {}


def executor_module(name: str) -> str | None:
    try:
        from hilbert.executor import get_executor

        return get_executor(name).__name__
    except Exception:  # noqa: BLE001
        return None


def peak_gemm_gflops(config: Config) -> float:
    """The machine's measured float64 GEMM rate through NumPy (best of several 1024³ products),
    the yardstick for '% of BLAS-bound time'."""
    n = 1024
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((n, n)), rng.standard_normal((n, n))
    a @ b
    best = min(time_repeat(lambda: a @ b, 1) for _ in range(config.pick(10, 4)))
    return 2.0 * n**3 / best / 1e9
