"""Ctrl-C inside compiled loops: a process running a never-ending or huge loop on the numba
executor gets KeyboardInterrupt promptly after SIGINT, and nothing the caller holds changes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import hilbert

pytestmark = pytest.mark.skipif(os.name != "posix", reason="SIGINT from a parent is POSIX")

#: A generous bound: the interrupt takes one loop step; start-up is done before the signal.
PROMPT = 20.0

CHILD = textwrap.dedent("""
    import sys
    import numpy as np
    import hilbert
    mod = hilbert.compile_source('''
    def spin(x) ≔ if x < 0 then x else spin(x + 1)
    fn forever(x) ↦ spin(x)
    def count(t, c) ≔ if t = 0 then c else count(t − 1, c + 1)
    fn counted(t, c) ↦ count(t, c)
    def grow(t, a, x) ≔ if t = 0 then x else grow(t − 1, a, tanh(einsum("ij,j->i", a, x)))
    fn grown(t, a, x) ↦ grow(t, a, x)
    def rowsGrow(t, w, h) ≔ if t = 0 then h else rowsGrow(t − 1, w, tanh(einsum("ng,gh->nh", h, w)))
    fn rowsGrown(t, w, h) ↦ rowsGrow(t, w, h)
    model Counter(n) : Learner {
      weight w : Tensor[n] from 0
      def train(rate) { w ≔ w + rate }
      def eval(x) ≔ einsum("i,i->", w, x)
    }
    ''')
    a, x = np.eye(3) * 0.5, np.ones(3)
    net = mod.Counter(3)
    net.train(1.0, steps=2)                     # compiled before the signal, as are these:
    w, h = np.eye(32) * 0.5, np.ones((64, 32))
    mod.forever(-1.0), mod.counted(2.0, 0.0), mod.grown(2.0, a, x), mod.rowsGrown(2.0, w, h)
    BLOCKS = mod.rowsGrown.program(((), w.shape, h.shape)).generated().blocks
    print("ready", flush=True)
    try:
        CALL
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        print("weights", net.w.tolist(), flush=True)
        print("after", mod.counted(5.0, 0.0), net.train(1.0, steps=3), net.w.tolist(), flush=True)
        sys.exit(0)
    print("finished", flush=True)
""")


def interrupted(call: str) -> tuple[str, float]:
    """The child's output after SIGINT one second into `call`, and how long it took to end."""
    child = subprocess.Popen([sys.executable, "-c", CHILD.replace("CALL", call)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env={**os.environ, "NUMBA_NUM_THREADS": "2"})  # (rows in blocks)
    try:
        assert child.stdout.readline().strip() == "ready", child.stderr.read()
        time.sleep(1.0)
        start = time.monotonic()
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=PROMPT)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    assert child.returncode == 0, err
    return out, time.monotonic() - start


@pytest.mark.parametrize("call", ["mod.forever(0.0)", "mod.counted(1e15, 0.0)",
                                  "mod.grown(1e15, a, x)",
                                  # every block of rows stops (executor/numba/row_blocks.py)
                                  "assert BLOCKS.blocks == 2; mod.rowsGrown(1e15, w, h)"])
def test_ctrl_c_stops_a_compiled_loop(call):
    out, _ = interrupted(call)
    assert "interrupted" in out and "finished" not in out
    assert "after 5.0 None [5.0, 5.0, 5.0]" in out  # later calls run as before


def test_ctrl_c_leaves_the_weights_of_a_model_unchanged():
    out, _ = interrupted("net.train(1.0, steps=10**15)")
    assert "interrupted" in out
    assert "weights [2.0, 2.0, 2.0]" in out  # as the two steps before left them
    assert "[5.0, 5.0, 5.0]" in out


def test_loops_in_other_threads_and_short_calls_are_not_stopped():
    """The stop flag belongs to the main thread's compiled call; a call that finishes
    before any Ctrl-C returns its result (the regular path)."""
    import threading

    mod = hilbert.compile_source("def count(t, c) ≔ if t = 0 then c else count(t − 1, c + 1)\n"
                                 "fn counted(t, c) ↦ count(t, c)")
    results = []
    worker = threading.Thread(target=lambda: results.append(mod.counted(1e5, 0.0)))
    worker.start()
    worker.join()
    assert results == [1e5] and mod.counted(1e5, 1.0) == 1e5 + 1
    np.testing.assert_array_equal(mod.counted(3.0, np.zeros(2)), [3.0, 3.0])
