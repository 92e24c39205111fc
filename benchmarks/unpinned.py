"""Starting the suite in a new process without the OpenBLAS pin this one's environment sets
(OPENBLAS_CORETYPE naming a kernel older than the CPU; hilbert/bench_machine.py), so that NumPy
loads there with the kernel OpenBLAS itself chooses for the CPU."""

from __future__ import annotations

import os
import subprocess
import sys

from benchmarks.cases.base import ROOT
from hilbert.bench_machine import PIN_VARIABLES, unpinned_environment


def launch(argv: list[str], environ=None, vectors: list[str] | None = None,
           capture: bool = False) -> subprocess.CompletedProcess | None:
    """Run `python -m benchmarks.runner ARGV` in a new process started without the OpenBLAS pin
    `environ` (default os.environ) sets for a CPU with `vectors` (default: this one's), saying
    so on stderr; the finished process (its output kept with `capture`, else shown as it
    comes). None when there is no pin to lift: the caller runs the suite itself."""
    environ = os.environ if environ is None else environ
    env, pin = unpinned_environment(environ, vectors)
    if pin is None:
        return None
    settings = " and ".join(f"{k}={v}" for k, v in pin["variables"].items())
    print(f"hilbert bench: {settings} pin{'s' if len(pin['variables']) == 1 else ''} OpenBLAS "
          f"to its {pin['kernel_level']} kernels on a CPU with {pin['cpu_level']}; the suite "
          f"runs in a process started without {' and '.join(PIN_VARIABLES)} (its record says "
          "so, and which kernel then ran)", file=sys.stderr, flush=True)
    return subprocess.run([sys.executable, "-m", "benchmarks.runner", *argv], cwd=ROOT, env=env,
                          check=False, capture_output=capture, text=True)
