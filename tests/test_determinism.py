"""Compilation is deterministic: the same program gives byte-identical generated code, plans
and cache keys in every process, whatever PYTHONHASHSEED, so a second process with the disk
cache kept compiles nothing (the LLVM back end's compilations counted, executor/llvm/compile.py's
COUNTS, never timed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT

#: One process: the course's circle classifier (a training step with ∂, clipping and AdamW,
#: which once chose buffers to reuse in set order) generated, planned and trained one step;
#: reports a digest of every generated source and plan, and how many object files the LLVM back
#: end compiled.
SCRIPT = """
import hashlib, json
import numpy as np
import hilbert
from hilbert.executor import codegen
from hilbert.executor.llvm import compile as machine
sources = []
generate = codegen.generate
codegen.generate = lambda *a, **k: sources.append(generate(*a, **k)) or sources[-1]
net = hilbert.load("examples/CircleClassifier.hb").CircleClassifier(8, 0)
x = np.linspace(-1, 1, 32).reshape(16, 2)
labels = (x[:, 0] > x[:, 1]).astype(float)
net.train(x, labels, 1.0)
nets = hilbert.open("Prelude.Networks")
plan = "".join(str(nets.function(name).plan((16, 8), (8, 8))) for name in ("dense", "affine")
               if name in nets.definitions and len(nets.function(name).entry.params) == 2)
loss = net.loss(x, labels)
text = "\\n#####\\n".join(g.source for g in sources) + plan
print(json.dumps({"digest": hashlib.sha256(text.encode()).hexdigest(), "sources": len(sources),
                  "loss": loss, "compiles": machine.COUNTS["compiled"],
                  "loaded": machine.COUNTS["loaded"]}))
"""


def run(seed: str, cache) -> dict:
    env = dict(os.environ, PYTHONHASHSEED=seed, HILBERT_CACHE_DIR=str(cache),
               HILBERT_COMPILE="eager")
    env.pop("NUMBA_DISABLE_JIT", None)
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          env=env, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.timeout(1200)
def test_a_second_process_with_another_hash_seed_compiles_nothing(tmp_path):
    first = run("1", tmp_path / "cache")
    second = run("2", tmp_path / "cache")
    assert first["sources"] > 0 and first["compiles"] > 0
    assert second["digest"] == first["digest"]  # the same code, byte for byte
    assert second["compiles"] == 0 and second["loaded"] > 0  # all of it found on disk
    assert second["loss"] == first["loss"]
