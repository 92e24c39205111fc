"""What a benchmark run records of the machine it ran on: CPU, cores, memory, NumPy's BLAS and
its threads, library versions, the checkout, and the measured GEMM rate."""

from __future__ import annotations

import ctypes
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
from hilbert.timing import time_repeat

LIBRARIES = ("numpy", "opt_einsum", "numba", "scipy", "lark", "torch", "jax", "jaxlib",
             "matplotlib", "einsum_benchmark", "threadpoolctl", "hilbert")


def machine_info() -> dict:
    """CPU, cores, memory, BLAS (library and threads), library versions, and the checkout."""
    info: dict[str, Any] = {
        "cpu": _cpu_model(), "cores_logical": os.cpu_count(),
        "cores_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "memory_gib": round(memory_bytes() / 2**30, 1), "platform": platform.platform(),
        "python": platform.python_version(), "blas": _blas(), "load_before": load_average(),
        "thread_env": {k: os.environ[k] for k in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY",
                                                 "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                                                 "NUMBA_NUM_THREADS", "HILBERT_THREADS")
                       if k in os.environ},
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


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


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


def _blas() -> dict:
    """NumPy's BLAS as built (show_config) and as loaded (threadpoolctl, or OpenBLAS asked
    directly for its thread count)."""
    blas: dict[str, Any] = {}
    try:
        built = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        blas.update(name=built.get("name"), version=built.get("version"),
                    config=built.get("openblas configuration"))
    except Exception:  # noqa: BLE001 - older NumPy: no dict form
        pass
    try:
        from threadpoolctl import threadpool_info

        blas["threadpools"] = [{k: p.get(k) for k in ("internal_api", "version",
                                                      "num_threads", "filepath")}
                               for p in threadpool_info()]
        return blas
    except ImportError:
        pass
    blas["threads"] = _openblas_threads()
    return blas


def _openblas_threads() -> int | None:
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return None
    paths = {line.split()[-1] for line in maps.splitlines() if "openblas" in line.lower()}
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for symbol in ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads64_",
                       "scipy_openblas_get_num_threads", "openblas_get_num_threads"):
            if hasattr(lib, symbol):
                return int(getattr(lib, symbol)())
    return None


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
