"""Compiled code's arrays from a settled heap (executor/llvm/heap.py): a training step that
makes and frees arrays of hundreds of KiB does not page-fault them in again at every step. Counted by the
process's minor page faults (getrusage) over repeated calls in a fresh process (glibc's
thresholds are the process's), never by timing."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT

#: The course's circle classifier (examples/CircleClassifier.hb), 512 points through 64 hidden
#: units, trained 100 steps: each makes and frees arrays of up to 256 KiB. Prints the minor page
#: faults a step took on average, whether heap.settle set glibc's thresholds, and whether the
#: weights stayed finite.
SCRIPT = """
import json, resource
import numpy as np
import hilbert
from hilbert.executor.llvm import heap
net = hilbert.load("examples/CircleClassifier.hb").CircleClassifier(64, 0)
rng = np.random.default_rng(0)
x = rng.standard_normal((512, 2))
labels = (x[:, 0] ** 2 + x[:, 1] ** 2 < 1).astype(float)
for _ in range(3):
    net.train(x, labels, 1.0)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(100):
    net.train(x, labels, 1.0)
faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 100
finite = all(bool(np.isfinite(w).all()) for w in net.weights.values())
print(json.dumps({"faults": faults, "settled": heap.settle(), "close": finite}))
"""


def faults_per_call(**settings: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MALLOC_", "GLIBC_"))}
    env.update(HILBERT_THREADS="1", OPENBLAS_NUM_THREADS="1", **settings)
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          env=env, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.timeout(600)
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's heap: Linux only")
def test_a_steps_arrays_are_not_faulted_in_at_every_step():
    settled = faults_per_call()
    assert settled["close"] and settled["settled"]
    # (each step faulted in about 900 pages before)
    assert settled["faults"] < 16, settled


@pytest.mark.timeout(600)
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's heap: Linux only")
def test_a_users_own_malloc_settings_are_left_as_set():
    """MALLOC_MMAP_THRESHOLD_ set by the user (here to glibc's first value, 128 KiB, with trims
    at 128 KiB): hilbert changes nothing, and the step's arrays are faulted in at every step."""
    own = faults_per_call(MALLOC_MMAP_THRESHOLD_="131072", MALLOC_TRIM_THRESHOLD_="131072")
    assert own["close"] and not own["settled"]
    assert own["faults"] >= 128, own
