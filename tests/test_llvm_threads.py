"""Parallel nests built by the LLVM back end (executor/llvm/threads.py): their rows run in
chunks on Numba's threading layer and give NumPy's results (computed here) at one and two
threads, a raise in a chunk is the coded error serial code raises, Ctrl-C stops a loop of
threaded nests, a forked child where threads may not run gets the serial twin, and row
blocks run functions built by llvm.

Tolerances as tests/test_llvm_backend.py's: 64 ε of the dtype bounds a layer norm's or a
softmax's ten-odd roundings and its sums over a few hundred entries in any order."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hilbert.executor import llvm
from hilbert.executor import threads as nest_threads
from hilbert.executor.codegen.loops import (
    Assign,
    Call,
    Do,
    Fmt,
    For,
    If,
    Raise,
    Return,
    Store,
    Sub,
    Update,
    Var,
    number,
    sizes,
    whole,
)
from hilbert.executor.llvm import threads as llvm_threads
from hilbert.executor.llvm.types import Array
from hilbert.executor.numba.faults import PositionError

import hilbert

SOURCE = """
open Prelude.Arithmetic
open Prelude.Networks
fn expOf(x) ↦ exp(x)
fn normed(x) ↦ layerNorm(x)
fn softmax(x) ↦ softmaxRows(x)
fn kept(x, u, p) ↦ dropped(x, u, p)
"""


def _normed(x):
    centred = x - x.mean(axis=1, keepdims=True)
    return centred / np.sqrt((centred ** 2).mean(axis=1, keepdims=True) + 1e-5)


def _softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


#: Each function, its arguments from a row count and a generator, and its NumPy meaning.
CASES = {
    "expOf": (lambda n, rng: (rng.normal(size=(n, 300)),), np.exp),
    "normed": (lambda n, rng: (rng.normal(size=(n, 300)) * 3 + 1,), _normed),
    "softmax": (lambda n, rng: (rng.normal(size=(n, 300)) * 2,), _softmax),
    "kept": (lambda n, rng: (rng.normal(size=(n, 300)), rng.uniform(size=(n, 300)), 0.25),
             lambda x, u, p: x * (u >= p) / max(1 - p, 1e-12)),
}


@pytest.fixture
def threads_at(monkeypatch):
    """HILBERT_THREADS at a setting, threads counted as on a machine with that many cores
    (whatever this one has: a threaded function runs correctly on one core too)."""
    if not nest_threads.layer():
        pytest.skip("no Numba threading layer loads on this machine")

    def at(count: int) -> None:
        monkeypatch.setenv("HILBERT_THREADS", str(count))
        monkeypatch.setattr(nest_threads, "count", lambda: count)

    return at


@pytest.mark.parametrize("count", [2, 1])
@pytest.mark.parametrize("name", sorted(CASES))
def test_parallel_nests_give_numpys_results(threads_at, name, count):
    """Row counts that two threads share evenly, unevenly, and 1000-odd: each nest built by
    llvm, a prange on threads at 2, a plain loop at 1."""
    threads_at(count)
    function = hilbert.compile_source(SOURCE, name="llvm_threads.hb").function(name)
    make, meaning = CASES[name]
    rng = np.random.default_rng(4)
    for rows in (3072, 3073, 1001):
        args = make(rows, rng)
        got = function(*args)
        tolerance = 64 * np.finfo(float).eps
        want = meaning(*args)
        np.testing.assert_allclose(got, want, rtol=tolerance,
                                   atol=tolerance * np.abs(want).max())
        shapes = tuple(np.shape(a) for a in args)
        region = function.program(shapes).region
        assert region.backend == "llvm (optimisation level 3)", region.backend
        assert ("in prange(" in region.source) == (count == 2), region.source
        threaded = isinstance(region.function, llvm_threads.Threaded)
        assert threaded == (count == 2)
        assert ("numba_parallel_for" in region.function.text) == threaded


#: A child: six Python threads each calling a threaded nest 200 times at once (a crash there,
#: workqueue's abort, would end this process).
MANY_CALLERS = textwrap.dedent("""
    import threading
    import numpy as np
    from hilbert.executor import llvm, threads
    from hilbert.executor.llvm.types import Array
    from test_llvm_threads import _doubled
    threads.count = lambda: 2
    made = llvm.lowered(_doubled(), ["a0", "a1"], [Array("float64", 1), "float64"], "float64")
    a = np.arange(200_000.0)
    start, wrong = threading.Barrier(6), []

    def work():
        start.wait()
        for _ in range(200):
            out, _ = made(a, 1.0)
            wrong.append(not np.array_equal(out, 2.0 * a + 1.0))

    workers = [threading.Thread(target=work) for _ in range(6)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    print(threads.layer(), len(wrong), any(wrong))
""")


@pytest.mark.timeout(300)
def test_threaded_nests_called_from_many_threads_at_once():
    """On workqueue, which ends the process when two threads launch together, each call waits
    for the launch lock (threads.launched); the other layers run them side by side."""
    done = subprocess.run([sys.executable, "-c", MANY_CALLERS], capture_output=True, text=True,
                          timeout=280, cwd=Path(__file__).parent,
                          env={**os.environ, "NUMBA_NUM_THREADS": "2"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[1:] == ["1200", "False"], done.stdout


#: A child: which thread imports Numba while a threaded function's machine code is made, and
#: which layer a user's Numba parallel code runs on afterwards.
BESIDE = textwrap.dedent("""
    import sys, threading, traceback
    import numpy as np
    importers = []

    class Watch:
        def find_spec(self, name, path=None, target=None):
            looked_up = any("importlib.util" in f.filename or f.filename.endswith(
                "importlib/util.py") for f in traceback.extract_stack())  # (not imported)
            if name == "numba" and "numba" not in sys.modules and not looked_up:
                importers.append(threading.current_thread().name)
            return None

    sys.meta_path.insert(0, Watch())
    from hilbert.executor import llvm, threads
    from hilbert.executor.llvm.types import Array
    from test_llvm_threads import _doubled
    threads.count = lambda: 2
    made = llvm.lowered(_doubled(), ["a0", "a1"], [Array("float64", 1), "float64"], "float64")
    a = np.arange(5000.0)
    out, _ = made(a, 1.0)
    print(threads.layer(), np.array_equal(out, 2.0 * a + 1.0), sorted(set(importers)))
    import numba

    @numba.njit(parallel=True)
    def twice(x):
        y = np.empty_like(x)
        for i in numba.prange(x.shape[0]):
            y[i] = 2.0 * x[i]
        return y

    print(np.array_equal(twice(a), 2.0 * a), numba.threading_layer())
    out, _ = made(a, 3.0)
    print(np.array_equal(out, 2.0 * a + 3.0))
""")


@pytest.mark.timeout(300)
def test_the_threading_layer_starts_without_importing_numba(tmp_path):
    """A threaded function's layer, where it is workqueue, starts without importing Numba
    (executor/workqueue.py: Numba's import is a fifth of a second): no thread imports it, and
    the function's threads run it. A user's Numba parallel code afterwards runs on the same
    layer (Numba's choice made workqueue, its library the one loaded), and the function still
    runs after it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_THREADING")}
    done = subprocess.run([sys.executable, "-c", BESIDE], capture_output=True, text=True,
                          timeout=280, cwd=Path(__file__).parent,
                          env={**env, "NUMBA_NUM_THREADS": "2", "HILBERT_CACHE_DIR":
                               str(tmp_path)})
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    if lines[0].split()[0] != "workqueue":
        pytest.skip("the threading layer here is not workqueue")  # (Numba asked instead)
    assert lines == ["workqueue True []", "True workqueue", "True"], done.stdout


# ---------------------------------------------------------------- loop IR of our own


def _doubled(raising: bool = False) -> list:
    """out[i] = 2·a[i] + c for each row i of a, a prange; with `raising`, a row whose entry is
    negative raises PositionError(7, the entry, the row) (as a position read does)."""
    row = [Store(Sub(Var("out"), (Var("i"),)),
                 Fmt("2.0 * {} + {}", (Sub(Var("a0"), (Var("i"),)), Var("a1"))))]
    if raising:
        row.insert(0, If(Fmt("{} < 0.0", (Sub(Var("a0"), (Var("i"),)),)),
                         [Raise(Call("K.PositionError", (whole(7), Sub(Var("a0"), (Var("i"),)),
                                                         Var("i"))))], []))
    return [Assign(("n",), (Fmt("{}.shape[0]", (Var("a0"),)),)),
            Assign(("out",), (Call("K.empty", (sizes([Var("n")]),)),)),
            For("i", Var("n"), row, parallel=True),
            Return(Fmt("{}, {}", (Var("out"), Var("n"))))]


@pytest.mark.parametrize("raising", [False, True])
@pytest.mark.parametrize("count", [2, 4])
def test_every_row_runs_once_however_the_rows_split(threads_at, count, raising):
    """Fewer rows than threads, none, and uneven chunks: each row written once. A cap of 4 on
    a layer of fewer threads uses those it has."""
    threads_at(count)
    made = llvm.lowered(_doubled(raising), ["a0", "a1"], [Array("float64", 1), "float64"],
                        "float64")
    assert isinstance(made, llvm_threads.Threaded) and "numba_parallel_for" in made.text
    for rows in (0, 1, 2, 3, 5, 1000, 4099):
        a = np.arange(rows, dtype=float) * 0.5
        out, n = made(a, 1.5)
        assert n == rows
        np.testing.assert_array_equal(out, 2.0 * a + 1.5)


def test_a_raise_in_a_chunk_is_the_first_failing_rows(threads_at):
    """Rows failing in several chunks: the error is the first failing row's, the one a serial
    loop raises, whichever chunk ends first."""
    threads_at(2)
    made = llvm.lowered(_doubled(True), ["a0", "a1"], [Array("float64", 1), "float64"],
                        "float64")
    for bad in ([5, 900], [999], [0, 1, 2, 998], [600, 601]):
        a = np.ones(1000)
        a[bad] = -np.arange(1.0, len(bad) + 1)
        with pytest.raises(PositionError) as caught:
            made(a, 0.0)
        assert caught.value.args == (7, a[bad[0]], bad[0])
    out, _ = made(np.ones(1000), 0.0)  # (and the next call runs)
    np.testing.assert_array_equal(out, np.full(1000, 2.0))


def test_captured_arrays_are_read_through_their_strides(threads_at):
    """A strided argument's strides (not C-ordered) travel to the rows; C-ordered arrays'
    are worked out from their shapes there."""
    threads_at(2)
    made = llvm.lowered(_doubled(), ["a0", "a1"], [Array("float64", 1), "float64"], "float64")
    x = np.linspace(-2.0, 2.0, 3001)
    for view in (x[::3], x[::-2]):
        out, _ = made(view, 0.25)
        np.testing.assert_array_equal(out, 2.0 * view + 0.25)


def test_values_a_nest_keeps_to_itself(threads_at):
    """A value assigned in the rows and read after the nest (assigned before it or not), or
    carried from row to row, is no parallel nest's: not lowered (said before anything
    compiles)."""
    threads_at(2)
    row = [Assign(("t",), (Sub(Var("a0"), (Var("i"),)),))]
    after = [Assign(("n",), (Fmt("{}.shape[0]", (Var("a0"),)),)),
             For("i", Var("n"), row, parallel=True),
             Return(Fmt("{}, {}", (Var("t"), Var("n"))))]
    with pytest.raises(llvm.Unsupported, match="read outside it"):
        llvm.lowered(after, ["a0"], [Array("float64", 1)], "float64")
    with pytest.raises(llvm.Unsupported, match="read outside it"):
        llvm.lowered([Assign(("t",), (number(0.0, "float64"),)), *after], ["a0"],
                     [Array("float64", 1)], "float64")
    carried = [Assign(("n",), (Fmt("{}.shape[0]", (Var("a0"),)),)),
               Assign(("s",), (number(0.0, "float64"),)),
               For("i", Var("n"), [Update("s", "+=", Sub(Var("a0"), (Var("i"),))),
                                   Assign(("s",), (Var("s"),))], parallel=True),
               Return(Fmt("{}, {}", (Var("n"), Var("n"))))]
    with pytest.raises(llvm.Unsupported, match="row to row"):
        llvm.lowered(carried, ["a0"], [Array("float64", 1)], "float64")


def _rows_into_a_turns_row(made_in_rows: bool = False) -> list:
    """out = Σ over two turns of row, where row[i] = 2·a0[i] is made at each turn (a scratch
    row: held.py) and written by a prange whose rows raise PositionError(7, the entry, the
    row) for a negative entry; `made_in_rows`: the row made in each of the prange's rows."""
    i, n, entry = Var("i"), Var("n"), Sub(Var("a0"), (Var("i"),))
    make = Assign(("row",), (Call("K.empty", (sizes([n]),)),))
    rows = [If(Fmt("{} < 0.0", (entry,)), [Raise(Call("K.PositionError", (
        whole(7), entry, i)))], []), Store(Sub(Var("row"), (i,)), Fmt("2.0 * {}", (entry,)))]
    added = [Store(Sub(Var("out"), (i,)), Sub(Var("row"), (i,)), add=True)]
    turn = ([For("i", n, [make, *rows, *added], parallel=True)] if made_in_rows else
            [make, For("i", n, rows, parallel=True), For("i", n, added)])
    return [Assign(("n",), (Fmt("{}.shape[0]", (Var("a0"),)),)),
            Assign(("out",), (Call("K.empty", (sizes([n]),)),)),
            Do(Fmt("{}.fill({})", (Var("out"), number(0.0, "float64")))),
            For("k", whole(2), turn),
            Return(Fmt("{}, {}", (Var("out"), n)))]


def test_a_raise_in_rows_leaves_the_function_arounds_arrays_to_it(threads_at):
    """The rows' function frees none of the arrays the function around it made in its loops
    (those are in that function's slots: their raise is answered there, which frees them):
    lowered, NumPy's values, and the first failing row's error. An array made in the rows
    themselves is not lowered (no slot of the rows' own holds it)."""
    threads_at(2)
    made = llvm.lowered(_rows_into_a_turns_row(), ["a0"], [Array("float64", 1)], "float64")
    assert isinstance(made, llvm_threads.Threaded)
    a = np.arange(1000.0)
    np.testing.assert_array_equal(made(a)[0], 4.0 * a)
    a[[5, 600]] = -1.0
    with pytest.raises(PositionError) as caught:
        made(a)
    assert caught.value.args == (7, -1.0, 5)
    with pytest.raises(llvm.Unsupported, match="made inside a block"):
        llvm.lowered(_rows_into_a_turns_row(True), ["a0"], [Array("float64", 1)], "float64")


def test_a_nest_inside_a_nests_rows_runs_serially_in_its_thread(threads_at):
    """Numba's layers do not nest (workqueue ends the process): the inner prange is a loop."""
    threads_at(2)
    inner = For("j", Var("m"), [Store(Sub(Var("out"), (Var("i"), Var("j"))),
                                      Fmt("{} * {}", (Sub(Var("a0"), (Var("i"), Var("j"))),
                                                      Var("a1"))))], parallel=True)
    body = [Assign(("n", "m"), (Fmt("{}.shape[0]", (Var("a0"),)),
                                Fmt("{}.shape[1]", (Var("a0"),)))),
            Assign(("out",), (Call("K.empty", (sizes([Var("n"), Var("m")]),)),)),
            For("i", Var("n"), [inner], parallel=True),
            Return(Fmt("{}, {}", (Var("out"), Var("n"))))]
    made = llvm.lowered(body, ["a0", "a1"], [Array("float64", 2), "float64"], "float64",
                        contiguous=True)
    assert made.text.count('call void @"numba_parallel_for"') == 1
    a = np.random.default_rng(2).normal(size=(301, 7))
    np.testing.assert_array_equal(made(a, 3.0)[0], a * 3.0)


# ---------------------------------------------------------------- Ctrl-C

#: A child (tests/test_interrupt.py's way): a loop whose every step is a parallel nest over
#: a million rows, lowered by llvm on two threads and called as compiled loops are
#: (interrupt.call: the stop flag, read at each step), then CALL, interrupted.
CTRL_C = textwrap.dedent("""
    import sys
    import numpy as np
    from hilbert.executor import llvm
    from hilbert.executor import threads
    from hilbert.executor.codegen.loops import (Assign, Break, Call, Fmt, For, If, Return,
                                                Store, Sub, Update, Var, While, whole)
    from hilbert.executor.llvm.types import Array
    from hilbert.executor.numba import interrupt
    import hilbert
    assert threads.count() == 2
    row = [Store(Sub(Var("a0"), (Var("i"),)), Fmt("{} * 0.5 + 1.0", (Sub(Var("a0"), (Var("i"),)),)))]
    body = [Assign(("n",), (Fmt("{}.shape[0]", (Var("a0"),)),)),
            Assign(("steps",), (whole(0),)),
            While([If(Call("K.stop_requested", (Var("stop"),)), [Break()], []),
                   If(Fmt("{} >= {}", (Var("steps"), Var("a1"))), [Break()], []),
                   For("i", Var("n"), row, parallel=True),
                   Update("steps", "+=", whole(1))]),
            Return(Fmt("{}, {}", (Var("a0"), Var("steps"))))]
    made = llvm.lowered(body, ["a0", "a1", "stop"], [Array("float64", 1), "int64"], "float64")
    assert "numba_parallel_for" in made.text
    run = lambda args: made(*args)
    x = np.zeros(1_000_000)
    print("ready", flush=True)
    try:
        CALL
    except KeyboardInterrupt:
        y = np.zeros(1_000_000)
        _, steps = interrupt.call(run, [y, 3])
        print("interrupted", steps, float(y[0]), flush=True)
        sys.exit(0)
    print("finished", flush=True)
""")

SIGNALLED = textwrap.dedent("""
    import numpy as np
    import hilbert
    f = hilbert.compile_source("fn f(x) ↦ tanh(exp(x) · 0.5)").f
    x = np.linspace(-1.0, 1.0, 4_000_000).reshape(4000, 1000)
    f(x)
    region = f.program((x.shape,)).region
    assert "prange" in region.source and region.backend.startswith("llvm"), region.backend
    want = np.tanh(np.exp(x) * 0.5)
    print("ready", flush=True)
    try:
        CALL
    except KeyboardInterrupt:
        print("interrupted", np.abs(f(x) - want).max() <= 16 * 2.2e-16, flush=True)
        sys.exit(0)
    print("finished", flush=True)
""")


@pytest.mark.timeout(180)
@pytest.mark.parametrize("script, call", [
    (CTRL_C, "interrupt.call(run, [x, 10**15])"),
    # a function without loops takes no stop flag (as Numba-built ones): the Ctrl-C is raised
    # when the nest it came during ends, and the threads run the next call as before
    ("import sys\n" + SIGNALLED, "while True: f(x)")])
def test_ctrl_c_stops_parallel_nests(script, call):
    from test_interrupt import HANDLER, interrupted

    out, _ = interrupted(call, script=HANDLER + script, environment={
        "HILBERT_COMPILE": "eager", "HILBERT_THREADS": "2",
        "NUMBA_NUM_THREADS": "2"})
    assert "finished" not in out
    assert "interrupted 3 1.75" in out or "interrupted True" in out, out


# ---------------------------------------------------------------- forked children

_INHERITED: dict = {}


def _in_child() -> tuple:
    f, x = _INHERITED["f"], _INHERITED["x"]
    region = f.program((x.shape,)).region
    got = f(x)
    again = f(x)
    function = region.function
    return (np.asarray(got), np.array_equal(got, again), type(function).__name__,
            "numba_parallel_for" in function.text, function is region.function)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("openmp", [True, False])
def test_a_forked_child_runs_a_parallel_nest(threads_at, monkeypatch, openmp):
    """Where the parent ran parallel code on GNU OpenMP (its threads would end a forked child,
    threads.usable) the child lowers the nest as its serial twin, once; on a fork-safe layer
    it runs the threaded function it inherited. Either way it gets the parent's result."""
    threads_at(2)
    f = hilbert.compile_source("fn f(x) ↦ exp(x) · 2").f
    x = np.random.default_rng(8).normal(size=(2000, 600))
    want = np.exp(x) * 2
    np.testing.assert_allclose(f(x), want, rtol=4 * np.finfo(float).eps)
    assert isinstance(f.program((x.shape,)).region.function, llvm_threads.Threaded)
    if openmp:
        monkeypatch.setattr(nest_threads, "_OWNER", os.getpid())  # (as GNU OpenMP's owner)
        monkeypatch.setattr(nest_threads, "count", lambda: nest_threads._count(  # (the real
            "2", os.getpid()))  # rule again: 1 in a child that may not run threads)
    _INHERITED.update(f=f, x=x)
    with multiprocessing.get_context("fork").Pool(1) as pool:
        got, same, kind, threaded, kept = pool.apply(_in_child)
    np.testing.assert_allclose(got, want, rtol=4 * np.finfo(float).eps)
    assert same and kept
    assert (kind, threaded) == (("Lowered", False) if openmp else ("Threaded", True))


# ---------------------------------------------------------------- row blocks

ROW_BLOCKS = """
def relax(t, h) ≔ if t = 0 then h else relax(t − 1, tanh(einsum("ng,n->ng", h, einsum("ng->n", h)) · 0.01))
fn relaxed(t, h) ↦ relax(t, h)
"""


def test_row_blocks_run_functions_built_by_llvm(threads_at):
    """A loop whose rows are independent (each row scaled by its own sum) runs as blocks of
    rows on hilbert's block threads, each block the function llvm built. Each step's sum of
    256 terms rounds within 256 ε of their magnitudes; tanh contracts, so 3 steps stay
    inside 1e-13 relative."""
    threads_at(2)
    function = hilbert.compile_source(ROW_BLOCKS, name="llvm_rows.hb").function("relaxed")
    h = np.random.default_rng(9).normal(size=(512, 256))
    got = function(3.0, h)
    want = h.copy()
    for _ in range(3):
        want = np.tanh(want * want.sum(axis=1, keepdims=True) * 0.01)
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13 * np.abs(want).max())
    program = function.program(((), h.shape))
    assert program.generated().blocks is not None and program.generated().blocks.blocks == 2
    assert program.region.backend.startswith("llvm"), program.region.backend
