"""Built entries kept on disk (compiler/kept.py): an entry built once is read back in this
process's next load and in a new process (whatever its hash seed) instead of being inlined
again, and gives the same answers; another text, or a damaged entry, is built afresh. Checked
by counting builds, never by timing."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest
from conftest import ROOT
from hilbert.compiler import entry, ir, kept, pickles
from hilbert.grammar.errors import HilbertWarning

import hilbert

TEXT = ('def dense(a, w) ≔ einsum("np,pq->nq", a, w)\n'
        'def loss(a, w) ≔ einsum("nq->", tanh(dense(a, w)) ^ 2)\n'
        'fn slope(a, w) ↦ ∂ loss(a, w) / ∂ w\n')


@pytest.fixture
def builds(tmp_path, monkeypatch):
    """An empty cache directory; counts the entries built (inlined and optimised)."""
    monkeypatch.setenv("HILBERT_CACHE_DIR", str(tmp_path / "cache"))
    counted = []
    original = entry.build_entry

    def counting(d, inliner):
        counted.append(d.name)
        return original(d, inliner)

    monkeypatch.setattr("hilbert.compiler.driver.build_entry", counting)
    monkeypatch.setattr("hilbert.compiler.models.build_entry", counting)
    return counted


def _slope(a, w):
    return a.T @ (2 * np.tanh(a @ w) * (1 - np.tanh(a @ w) ** 2))


def test_an_entry_built_once_is_read_back_by_the_next_load(builds):
    a, w = np.linspace(-1, 1, 6).reshape(3, 2), np.linspace(0, 1, 8).reshape(2, 4)
    first = hilbert.compile_source(TEXT, name="kept.hb")
    np.testing.assert_allclose(first.slope(a, w), _slope(a, w), rtol=1e-12)
    assert builds == ["slope"]
    again = hilbert.compile_source(TEXT, name="kept.hb")
    np.testing.assert_allclose(again.slope(a, w), _slope(a, w), rtol=1e-12)
    assert builds == ["slope"]  # read back, not inlined again
    assert again.slope.entry == first.slope.entry and again.slope.entry is not first.slope.entry


def _built(text: str, name: str) -> entry.Entry:
    return hilbert.compile_source(text, name=name).slope.entry


def test_another_text_or_name_is_built_afresh(builds):
    for text, name in ((TEXT, "kept.hb"), (TEXT + "fn other(a) ↦ a\n", "kept.hb"),
                       (TEXT, "elsewhere.hb")):
        assert _built(text, name).name == "slope"
    assert builds == ["slope", "slope", "slope"]


def test_a_damaged_entry_is_built_again(builds, tmp_path):
    first = _built(TEXT, "kept.hb")
    damaged = [p for p in (tmp_path / "cache").rglob("*.pickle") if p.parent.name == kept.FOLDER]
    assert damaged
    for path in damaged:
        path.write_bytes(b"not a pickle")
    with pytest.warns(HilbertWarning) as caught:  # (its seal does not match: W902)
        assert _built(TEXT, "kept.hb") == first
    assert {w.message.code for w in caught} == {"W902"}
    assert builds == ["slope", "slope"]


def test_nodes_are_pickled_without_their_cached_hashes():
    node = ir.Prim("tanh", (ir.Param(0, "a", None),), (), None)  # type: ignore[arg-type]
    hash(node)
    assert node._h is not None
    back = pickle.loads(pickle.dumps(node))
    assert back._h is None and back == node and hash(back) == hash(node)


def test_the_stamp_covers_the_compilers_sources():
    assert pickles.stamp("grammar", "compiler") != pickles.stamp("grammar")


SCRIPT = """
import json, sys
import numpy as np
from hilbert.compiler import driver, entry, models
built, planned = [], []
original = entry.build_entry
counting = lambda d, inliner: built.append(d.name) or original(d, inliner)
driver.build_entry = models.build_entry = counting
plan = driver.make_plan
driver.make_plan = lambda *args, **kwargs: planned.append(args[0]) or plan(*args, **kwargs)
import hilbert
net = hilbert.load("examples/CircleClassifier.hb").CircleClassifier(8, 0)
x = np.linspace(-1, 1, 32).reshape(16, 2)
labels = (x[:, 0] > x[:, 1]).astype(float)
net.train(x, labels, 1.0)
print(json.dumps({"built": built, "planned": planned, "loss": net.loss(x, labels)}))
"""


@pytest.mark.timeout(600)
def test_a_new_process_with_another_hash_seed_reads_the_entries_and_plans_back(tmp_path):
    def run(seed):
        env = dict(os.environ, PYTHONHASHSEED=seed, HILBERT_CACHE_DIR=str(tmp_path / "cache"),
                   HILBERT_COMPILE="never")
        done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                              env=env, timeout=600, cwd=ROOT)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout.splitlines()[-1])

    first, second = run("1"), run("2")
    assert first["built"]  # the train block and the loss, inlined in the first process
    assert first["planned"]  # and planned for the batch's shapes
    assert second["built"] == [] and second["planned"] == []  # every one read back
    assert second["loss"] == first["loss"]
