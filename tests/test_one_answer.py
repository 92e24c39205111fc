"""One answer whatever the tier (issue 48, items 5 and 6): under the default settings (the LLVM
back end, every call compiled before it runs) one training gives the same weights, bit for bit,
in every process, whenever its builds finish: a build slowed down so that it ends long after it
would have, and one loaded from the disk cache, give what a plain cold run gives. And a process
whose build is still under way when its last line has run ends without waiting for it.

Each run is a fresh process (the settings as a user has them: none set), its object code made
by `executor/llvm/compile._object_code`, which the script slows down where asked. Nothing here
reads a clock: the exit is checked by a subprocess timeout far below the build's delay."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT

#: A float32 training of a two-layer tanh network, one gradient step per call (the host tier's
#: NumPy and the compiled code's vector maths round tanh and the sums differently, so a step
#: run by each would show in the weights' last bits), and a loop of such steps in one call.
SOURCE = """
def loss(x, y, w, v) ≔ einsum("nq->", (einsum("nh,hq->nq", tanh(einsum("np,ph->nh", x, w)), v) − y)²) / 2
fn step(x, y, w, v, r) ↦ (w − r · ∂loss(x, y, w, v)/∂w, v − r · ∂loss(x, y, w, v)/∂v)
def fit(t, x, y, w, v, r) ≔ if t = 0 then (w, v) else fit(t − 1, x, y, w − r · ∂loss(x, y, w, v)/∂w, v − r · ∂loss(x, y, w, v)/∂v, r)
fn trained(t, x, y, w, v, r) ↦ fit(t, x, y, w, v, r)
"""

#: argv: the seconds each object file's compile is delayed by, and what to run ("steps": 40
#: calls of `step`; "loop": one call of `trained`, 40 steps). Prints the weights' bytes (hex)
#: and the tier each function's last call ran on.
SCRIPT = """
import json, sys, time
import numpy as np
delay, run = float(sys.argv[1]), sys.argv[2]
from hilbert.executor.llvm import compile as machine
made = machine._object_code
def slowed(*args, **kwargs):
    time.sleep(delay)
    return made(*args, **kwargs)
machine._object_code = slowed
import hilbert
mod = hilbert.compile_source(sys.stdin.read())
rng = np.random.default_rng(7)
x = rng.standard_normal((32, 6)).astype(np.float32)
y = rng.standard_normal((32, 3)).astype(np.float32)
w = (rng.standard_normal((6, 16)) / 3).astype(np.float32)
v = (rng.standard_normal((16, 3)) / 4).astype(np.float32)
r = np.float32(0.01)
if run == "steps":
    for _ in range(40):
        w, v = mod.step(x, y, w, v, r)
    tier = mod.step.tier
else:
    w, v = mod.trained(40, x, y, w, v, r)
    tier = mod.trained.tier
print(json.dumps({"weights": w.tobytes().hex() + v.tobytes().hex(), "tier": tier}), flush=True)
"""


def trained(cache, run: str, delay: float = 0.0, timeout: float = 600, **settings) -> dict:
    """The weights one process trains (`run`), its object code delayed `delay` s a file."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("HILBERT_", "NUMBA_DISABLE_JIT"))}
    env.update(HILBERT_CACHE_DIR=str(cache), **settings)
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(delay), run], input=SOURCE,
                          capture_output=True, text=True, env=env, timeout=timeout, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.timeout(900)
@pytest.mark.parametrize("run", ["steps", "loop"])
def test_one_training_gives_the_same_weights_whenever_its_builds_finish(tmp_path, run):
    cold = trained(tmp_path / "a", run)
    slowed = trained(tmp_path / "b", run, delay=0.5)  # (every build ends later)
    warm = trained(tmp_path / "a", run)  # (every build loaded from the disk cache)
    assert cold["tier"] == slowed["tier"] == warm["tier"] == "compiled"
    assert slowed["weights"] == cold["weights"]
    assert warm["weights"] == cold["weights"]


@pytest.mark.timeout(600)
def test_the_exit_waits_for_no_build_under_way(tmp_path):
    """Calls on the host tier while the build is in the background (HILBERT_COMPILE=1), each
    object file delayed 120 s: the process has given its result and must end long before."""
    outcome = trained(tmp_path / "c", "steps", delay=120.0, timeout=60, HILBERT_COMPILE="1")
    assert outcome["tier"] == "host"  # (the build was still under way at the last line)
