"""Ctrl-C inside compiled loops and builds: a process running a never-ending or huge loop on the
numba executor gets KeyboardInterrupt promptly after SIGINT, and nothing the caller holds
changes; one waiting for a HILBERT_COMPILE=eager build gets it at once, and the build goes on.

Each child sets Python's SIGINT handler itself, and tests/conftest.py sets it in the test
process: a suite started from a background job (SIGINT ignored, as `cmd &` in a
non-interactive shell leaves it, and inherited by every process it starts) passes too."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import hilbert

pytestmark = pytest.mark.skipif(os.name != "posix", reason="SIGINT from a parent is POSIX")

#: A generous bound: the interrupt takes one loop step; start-up is done before the signal.
PROMPT = 20.0
ROOT = Path(__file__).resolve().parent.parent

#: A child's first lines: Python's SIGINT handler, whatever the parent left (an ignored signal
#: is inherited through exec, and Python then installs no handler of its own).
HANDLER = textwrap.dedent("""
    import signal
    signal.signal(signal.SIGINT, signal.default_int_handler)
""")

CHILD = HANDLER + textwrap.dedent("""
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


def _ignore_sigint() -> None:
    """In a child before it runs: SIGINT ignored, as a background job starts."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def interrupted(call: str, script: str = CHILD, environment: dict | None = None,
                ignored: bool = False, bound: float = PROMPT) -> tuple[str, float]:
    """The child's output after SIGINT one second into `call` (`script` with CALL replaced;
    started with SIGINT ignored if `ignored`), and how long it took to end (within `bound`)."""
    env = {**os.environ, "NUMBA_NUM_THREADS": "2", **(environment or {})}  # (rows in blocks)
    child = subprocess.Popen([sys.executable, "-c", script.replace("CALL", call)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                             preexec_fn=_ignore_sigint if ignored else None)
    try:
        assert child.stdout.readline().strip() == "ready", child.stderr.read()
        time.sleep(1.0)
        start = time.monotonic()
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=bound)
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


def test_ctrl_c_stops_a_child_started_with_sigint_ignored():
    """A process started from a background job inherits SIGINT ignored: hilbert's watch does
    nothing under a handler not Python's, so the child installs Python's own first."""
    out, _ = interrupted("mod.counted(1e15, 0.0)", ignored=True)
    assert "interrupted" in out and "after 5.0 None [5.0, 5.0, 5.0]" in out


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


# ---------------------------------------------------------------- a build the caller waits for

#: A child that builds, under HILBERT_COMPILE=eager and with a disk cache of its own (nothing
#: kept yet), a program (two training loops and their gradients) whose build lasts seconds:
#: each object file's compile is delayed by four (as tests/test_one_answer.py delays them),
#: so the signal, one second into the call, comes while it is under way. The back end is
#: loaded and the program planned before the signal.
BUILDING = HANDLER + textwrap.dedent("""
    import time
    import numpy as np
    import hilbert
    from hilbert.executor.llvm import compile as machine
    hilbert.compile_source("fn tiny(x) ↦ x + 1").tiny(np.ones(2))
    made = machine._object_code
    def slowed(*args, **kwargs):
        time.sleep(4.0)
        return made(*args, **kwargs)
    machine._object_code = slowed
    mod = hilbert.compile_source('''
    open Prelude.Networks
    fn both(t, r, x, y, w1, w2) ↦ (mlpFit(t, r, x, y, w1, w2), autoFit(t, r, x, w1, einsum("ij->ji", w1)))
    ''')
    x = np.array([[0, 1], [1, 1], [2, 1], [3, 1]], float)
    y = np.array([[1], [3], [5], [7]], float)
    w1, w2 = np.array([[0.5, 0.3], [0.2, 0.4]]), np.array([[0.5], [0.5]])
    program = mod.both.program(((), (), x.shape, y.shape, w1.shape, w2.shape))
    print("ready", flush=True)
    try:
        CALL
    except KeyboardInterrupt:
        print("interrupted; built:", program.built, flush=True)
        print("kept:", program.wait(120) and program.built, flush=True)
        fit, _ = mod.both(5, 0.05, x, y, w1, w2)
        print("after:", mod.both.tier, fit.shape, flush=True)
    else:
        print("finished", flush=True)
""")


@pytest.mark.timeout(600)
def test_ctrl_c_during_an_eager_build_is_raised_at_once_and_the_build_goes_on(tmp_path):
    """The main thread waits while another builds (executor/numba/builder.py, build_waiting):
    KeyboardInterrupt comes while the build is still under way (built in the main thread, it
    would come only when LLVM returned), and the build, which cannot be stopped, ends and is
    swapped in for the next call."""
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    out, _ = interrupted("mod.both(5, 0.05, x, y, w1, w2)", BUILDING,
                         {"HILBERT_COMPILE": "eager", "HILBERT_CACHE_DIR": str(cache)},
                         bound=300)
    assert "interrupted; built: False" in out, out
    assert "kept: True" in out and "after: compiled (4, 1)" in out, out


# ---------------------------------------------------------------- a suite started with SIGINT ignored

#: Tests that need Python's SIGINT handler: in the test process (the first two) and in a child.
NEED_THE_HANDLER = ("tests/test_defects.py::test_host_loop_restores_the_handler_of_the_caller",
                    "tests/test_defects.py::test_ctrl_c_during_a_host_loop_never_reaches_a_"
                    "compiled_call",
                    "tests/test_interrupt.py::test_ctrl_c_stops_a_compiled_loop[mod.forever(0.0)]")


@pytest.mark.timeout(600)
def test_the_suite_passes_started_with_sigint_ignored():
    """pytest started as a background job starts (SIGINT ignored): the tests that send or
    expect Ctrl-C still pass (tests/conftest.py installs Python's handler for the run)."""
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          *NEED_THE_HANDLER], cwd=ROOT, capture_output=True, text=True,
                         preexec_fn=_ignore_sigint, timeout=500)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "3 passed" in run.stdout


def test_a_ctrl_c_inside_a_library_is_a_keyboardinterrupt_not_an_internal_error(monkeypatch):
    """Numba, loading compiled code from the disk cache at a call, turns a Ctrl-C that lands
    there into a SystemError (its dispatcher "returned a result with an exception set"): the
    call raises KeyboardInterrupt, as a Ctrl-C anywhere else does, never E900."""
    f = hilbert.compile_source("fn f(x) ↦ x + 1").f
    f(np.ones(3))
    program = f.program(((3,),))

    def interrupted(args):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as ctrl_c:
            raise SystemError("returned a result with an exception set") from ctrl_c

    monkeypatch.setattr(type(program), "__call__", lambda self, args: interrupted(args))
    with pytest.raises(KeyboardInterrupt):
        f(np.ones(3))
    monkeypatch.undo()
    with pytest.raises(hilbert.HilbertError) as err:  # (anything else stays a bug: E900)
        monkeypatch.setattr(type(program), "__call__",
                            lambda self, args: (_ for _ in ()).throw(SystemError("other")))
        f(np.ones(3))
    assert err.value.code == "E900"
