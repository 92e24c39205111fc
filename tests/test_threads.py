"""Compiled functions called from many threads at once give the results of serial calls."""

from __future__ import annotations

import sys
import threading
import time

import numpy as np
import pytest
from hilbert.executor import threads as nest_threads

import hilbert

THREADS = 8


def _inputs(name: str, size: int, rng: np.random.Generator) -> tuple:
    """Arguments of `name` at a size that differs per thread (so each has its own program),
    above codegen.TINY entries (so that they share compiled code)."""
    n, p = 130 + size, 2 + size % 3
    if name == "mlpFit":
        return (25.0, 0.05, rng.normal(size=(n, p)), rng.normal(size=(n, 2)),
                rng.normal(size=(p, 4)) * 0.3, rng.normal(size=(4, 2)) * 0.3)
    if name == "attentionOf":
        return (rng.normal(size=(n, p)), rng.normal(size=(n + 1, p)), rng.normal(size=(n + 1, 3)),
                float(p))
    return (rng.normal(size=(n, p + 2)),)


@pytest.mark.parametrize("name", ["mlpFit", "attentionOf", "layerNorm"])
def test_eight_threads_get_the_serial_results(name, monkeypatch):
    # serial nests: whether a nest is worth threads depends on its size, so sizes on either
    # side of codegen.PARALLEL_WORK would get two functions (tests/test_nests.py calls
    # parallel nests from many threads)
    monkeypatch.setattr(nest_threads, "count", lambda: 1)
    nets = hilbert.open("Prelude.Networks")
    f = nets.function(name)
    rng = np.random.default_rng(11)
    jobs = [_inputs(name, size, rng) for size in range(THREADS)]
    serial = [f(*args) for args in jobs]
    regions = {f.program(tuple(np.shape(a) for a in args)).region.function for args in jobs}
    assert len(regions) == 1  # every thread runs the same compiled function
    results: list = [None] * (THREADS * 4)
    start = threading.Barrier(THREADS)

    def work(thread: int) -> None:
        start.wait()
        for turn in range(4):  # each thread cycles through several shapes, all at once
            job = (thread + turn) % THREADS
            try:
                results[thread * 4 + turn] = (job, f(*jobs[job]))
            except Exception as err:  # noqa: BLE001 (reported below, in the test's thread)
                results[thread * 4 + turn] = (job, err)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for job, value in results:
        assert not isinstance(value, Exception), value
        np.testing.assert_array_equal(value, serial[job])


def test_threads_compiling_the_same_program_for_the_first_time():
    """Eight threads make the first call of one new function together: one compilation, and
    every thread gets the right answer."""
    source = ("open Prelude.Arithmetic\n"
              "fn f(a) ↦ softmaxRows(a) · 1.0173 + einsum(\"ij,kj,kl->il\", a, a, a)\n")
    mod = hilbert.compile_source(source)
    ref = hilbert.compile_source(source, executor="reference")
    rng = np.random.default_rng(5)
    jobs = [rng.normal(size=(2 + t, 3 + t % 2)) for t in range(THREADS)]
    results: list = [None] * THREADS
    start = threading.Barrier(THREADS)

    def work(thread: int) -> None:
        start.wait()
        try:
            results[thread] = mod.f(jobs[thread])
        except Exception as err:  # noqa: BLE001 (reported below, in the test's thread)
            results[thread] = err

    threads = [threading.Thread(target=work, args=(t,)) for t in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for job, value in zip(jobs, results, strict=True):
        assert not isinstance(value, Exception), value
        np.testing.assert_allclose(value, ref.f(job), rtol=1e-12, atol=1e-12)


# -- one model trained and read from several threads (issue 11, item 5) -------------------------

PAIR = """\
model Pair : Learner {
  weight a : Tensor[] from 0
  weight b : Tensor[] from 0
  def step {
    a ≔ a + 1
    b ≔ b + 1
  }
  def gap ≔ a − b
}
"""


def _yield(frame, event, arg) -> None:
    """A profile hook that lets another thread run before every call into C, so two threads
    interleave at every step a race could fall between (NumPy calls, dict writes, …)."""
    if event == "c_call":
        time.sleep(0)


def _in_threads(*jobs) -> list:
    """Run each job in its own thread, started together and interleaved as finely as Python
    allows; the exceptions they raised."""
    start = threading.Barrier(len(jobs))
    raised: list = []

    def work(job) -> None:
        start.wait()
        sys.setprofile(_yield)
        try:
            job()
        except Exception as err:  # noqa: BLE001 (reported below, in the test's thread)
            raised.append(err)
        finally:
            sys.setprofile(None)

    threads = [threading.Thread(target=work, args=(job,)) for job in jobs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return raised


def test_training_one_model_from_two_threads_counts_every_step(executor):
    net = hilbert.compile_source(PAIR, executor=executor).Pair()
    net.step()  # compiled before the threads start

    def train() -> None:
        for _ in range(300):
            net.step()

    assert _in_threads(train, train) == []
    assert (net.a, net.b) == (601.0, 601.0)


def test_a_method_sees_the_weights_of_one_train_call(executor):
    net = hilbert.compile_source(PAIR, executor=executor).Pair()
    net.step()
    gaps: list[float] = []

    def train() -> None:
        for _ in range(300):
            net.step()

    def read() -> None:
        for _ in range(300):
            gaps.append(net.gap())

    assert _in_threads(train, read) == []
    assert net.a == 301.0 and gaps == [0.0] * 300


#: One process: the thread count before Numba is imported, and whether that imported it; then
#: the count worked out again with Numba imported (its own settings read), as JSON.
COUNTED = """
import json, sys
from hilbert.executor import threads
before = [threads.count(), "numba" in sys.modules]
threads.forget()
import numba
print(json.dumps({"before": before, "numba's": threads.count()}))
"""


@pytest.mark.parametrize(("setting", "imports"), [(None, False), ("3", False), (" 2 ", False),
                                                  ("+2", True)])
def test_the_thread_count_is_numbas_without_importing_numba(setting, imports, tmp_path):
    """The count of threads worked out in a fresh process before Numba is
    imported equals the one worked out from Numba's own settings, and imports Numba only for a
    NUMBA_NUM_THREADS that only Numba reads (not a plain number): code generated without
    parallel nests never loads Numba (a third of a second), and the count planned is the one
    the nests run with."""
    import json
    import os
    import subprocess

    env = {k: v for k, v in os.environ.items()
           if k not in ("NUMBA_NUM_THREADS", "NUMBA_THREADING_LAYER", "HILBERT_THREADS")}
    if setting is not None:
        env["NUMBA_NUM_THREADS"] = setting
    done = subprocess.run([sys.executable, "-c", COUNTED], capture_output=True, text=True,
                          env=env, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    count, imported = report["before"]
    assert count == report["numba's"]
    assert imported is imports
    cores = int(setting) if setting is not None and imports is False else None
    if cores is not None:
        assert count == cores
