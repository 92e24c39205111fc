"""Calls of LLVM-built functions from Python (executor/llvm/call.py and cpython.py): a warm
call goes through the entry made as machine code, which reads the Python objects itself and
makes the values returned (counted here: no ctypes buffer, no struct packing, no Python
wrapping of memory per call; never timed), and gives what NumPy gives; arguments it does not
take go the ctypes way, which converts or refuses them as before; every kind of result (arrays
made, a parameter handed back, the same memory twice, numbers of each dtype, tuples, empty
arrays, a coded error) comes back as the ABI describes (docs/architecture.md)."""

from __future__ import annotations

import ctypes
import gc
import struct
import subprocess
import sys
import threading

import numpy as np
import pytest
from hilbert.executor import llvm
from hilbert.executor.codegen.loops import (
    Assign,
    Call,
    Fmt,
    For,
    If,
    Raise,
    Return,
    Store,
    Sub,
    Var,
    sizes,
    whole,
)
from hilbert.executor.llvm import call, cpython
from hilbert.executor.llvm.types import Array
from hilbert.executor.numba.faults import StepCountError

import hilbert


class Counted:
    """How often the ctypes path's per-call pieces ran: its buffers, its packing, its
    wrapping of returned memory, and the path itself."""

    def __init__(self, monkeypatch):
        self.counts = {"buffers": 0, "packs": 0, "adopted": 0, "ctypes path": 0}
        for name, owner, attribute in (("buffers", call.ctypes, "create_string_buffer"),
                                       ("packs", call.struct, "pack"),
                                       ("adopted", call, "_adopted"),
                                       ("ctypes path", call.Lowered, "_called")):
            monkeypatch.setattr(owner, attribute, self._counting(name, getattr(owner, attribute)))

    def _counting(self, name, function):
        def counted(*args, **kwargs):
            self.counts[name] += 1
            return function(*args, **kwargs)
        return counted


def _doubled(dtype: str = "float64") -> call.Lowered:
    """A function of a vector a0 and a number a1: (a0·2 + a1, its size, a1, a0)."""
    body = [Assign(("n1",), (Fmt("{}.shape[0]", (Var("a0"),)),)),
            Assign(("b2",), (Call("K.empty", (sizes([Var("n1")]),)),)),
            For("i0", Var("n1"), [Store(Sub(Var("b2"), (Var("i0"),)),
                                        Fmt("{} * 2.0 + {}", (Sub(Var("a0"), (Var("i0"),)),
                                                              Var("a1"))))]),
            Return(Fmt("{}, {}, {}, {}", (Var("b2"), Var("n1"), Var("a1"), Var("a0"))))]
    return llvm.lowered(body, ["a0", "a1"], [Array(dtype, 1), dtype], dtype, contiguous=True)


def test_a_warm_call_of_a_built_function_makes_no_ctypes_objects(monkeypatch):
    """A layer norm built by llvm, called 50 times warm through hilbert's own path: NumPy's
    values, and not one buffer, packing or wrapping of the ctypes path (before the entry:
    two buffers, one packing and one wrapping a call)."""
    module = hilbert.compile_source("open Prelude.Networks\nfn normed(x) ↦ layerNorm(x)\n",
                                    name="llvm_calls.hb")
    function = module.function("normed")
    x = np.linspace(-2.0, 3.0, 16).reshape(4, 4)
    assert any("built by llvm" in note for note in function.build(x).all_notes)
    function(x)
    counted = Counted(monkeypatch)
    centred = x - x.mean(axis=1, keepdims=True)
    want = centred / np.sqrt((centred ** 2).mean(axis=1, keepdims=True) + 1e-5)
    for _ in range(50):
        np.testing.assert_allclose(function(x), want, rtol=64 * np.finfo(float).eps, atol=1e-14)
    assert counted.counts == {"buffers": 0, "packs": 0, "adopted": 0, "ctypes path": 0}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_every_kind_of_result_comes_back(monkeypatch, dtype):
    """An array made, a whole number, the number given and the parameter given, from the
    entry: NumPy's values, the parameter itself, the number as a Python float (a float32
    rounded once), from a float, a NumPy float64 or a NumPy float32."""
    made = _doubled(dtype)
    counted = Counted(monkeypatch)
    x = np.linspace(-1.0, 1.0, 7).astype(dtype)
    for number in (0.1, np.float64(0.1), np.float32(0.1)):
        out, size, given, same = made(x, number)
        rounded = np.asarray(number, dtype=dtype)
        np.testing.assert_array_equal(out, x * np.asarray(2.0, dtype) + rounded)
        assert out.dtype == np.dtype(dtype) and out.flags.c_contiguous and out.flags.writeable
        assert size == 7 and type(size) is int
        assert type(given) is float and given == float(rounded)
        assert same is x
    assert counted.counts["ctypes path"] == 0


def test_arguments_the_entry_does_not_take_go_the_ctypes_way(monkeypatch):
    """A strided view (a function lowered for C-ordered arrays refuses it, as before), another
    dtype's array, a number of another type: the ctypes path takes them, with its own
    conversions and refusals, and the answer is the same."""
    made = _doubled()
    x = np.linspace(-1.0, 1.0, 7)
    counted = Counted(monkeypatch)
    with pytest.raises(AssertionError, match="C-ordered"):
        made(np.linspace(-1.0, 1.0, 14)[::2], 0.5)
    out, _, given, _ = made(x, 1)  # (a Python int: the ctypes path packs it as a float)
    np.testing.assert_array_equal(out, x * 2.0 + 1.0)
    assert given == 1.0
    assert counted.counts["ctypes path"] == 2
    with pytest.raises(ValueError):
        made(x)  # (one argument short: the entry declines, the ctypes path refuses)


def test_a_tuple_of_arrays_and_an_empty_array():
    """A function returning a tuple of two arrays it made, then an empty one: the tuple as
    one value, NumPy's values, the empty array of its shape and dtype."""
    body = [Assign(("n1",), (Fmt("{}.shape[0]", (Var("a0"),)),)),
            Assign(("b2",), (Call("K.empty", (sizes([Var("n1")]),)),)),
            Assign(("b3",), (Call("K.empty", (sizes([whole(0), Var("n1")]),)),)),
            Assign(("b4",), (Call("K.empty", (sizes([Var("n1")]),)),)),
            For("i0", Var("n1"), [Store(Sub(Var("b2"), (Var("i0"),)),
                                        Fmt("{} + 1.0", (Sub(Var("a0"), (Var("i0"),)),))),
                                  Store(Sub(Var("b4"), (Var("i0"),)),
                                        Fmt("{} * 3.0", (Sub(Var("a0"), (Var("i0"),)),)))]),
            Return(Fmt("{}, {}", (Fmt("({}, {}, )", (Var("b2"), Var("b4"))), Var("b3"))))]
    made = llvm.lowered(body, ["a0"], [Array("float64", 1)], "float64", contiguous=True)
    assert [r.kind for r in made._results] == ["tuple", "fresh", "fresh", "fresh"]
    (first, second), empty = made(np.arange(5.0))
    np.testing.assert_array_equal(first, np.arange(5.0) + 1.0)
    np.testing.assert_array_equal(second, np.arange(5.0) * 3.0)
    assert empty.shape == (0, 5) and empty.dtype == np.float64


def test_returned_memory_outlives_the_function_and_its_first_array():
    """A view of a returned array, kept after that array and the function are gone (and the
    collector has run), still reads its values: the memory is freed with the last view."""
    made = _doubled()
    out = made(np.arange(6.0), 0.0)[0]
    view = out[2:]
    del out, made
    gc.collect()
    np.testing.assert_array_equal(view, np.arange(2.0, 6.0) * 2.0)
    view[0] = 7.0  # (writeable: the function's memory is the caller's now)
    assert view[0] == 7.0


def test_a_coded_error_through_the_entry():
    """A raise through the entry: its number and arguments become the exception Numba-built
    code raises, as the ctypes path makes it."""
    body = [If(Fmt("{} < 0", (Var("a0"),)), [Raise(Call("K.StepCountError",
                                                         (whole(3), Var("a0"))))], []),
            Return(Fmt("{}, {}", (Var("a0"), whole(1))))]
    made = llvm.lowered(body, ["a0"], ["float64"], "float64")
    assert made(4.5) == (4.5, 1)
    for bad in (-2.0, np.float64(-2.0)):
        with pytest.raises(StepCountError) as caught:
            made(bad)
        assert caught.value.args == (3, -2.0)
    assert made._called(4.5) == (4.5, 1)
    with pytest.raises(StepCountError) as caught:
        made._called(-2.0)
    assert caught.value.args == (3, -2.0)


def test_calls_from_many_threads_at_once():
    """Eight threads calling one function 200 times each on their own arrays: each gets its
    own values (the entry keeps its words on its own stack)."""
    made = _doubled()
    wrong: list = []

    def work(k: int) -> None:
        x = np.full(k + 1, float(k))
        for _ in range(200):
            out = made(x, 1.0)[0]
            if out.shape != (k + 1,) or not (out == 2.0 * k + 1.0).all():
                wrong.append(k)

    workers = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert wrong == []


def test_the_layouts_it_reads_are_this_processs():
    """`available` read the objects' layouts on this process's own objects (64-bit CPython,
    NumPy's table): the entry is in use here, as it is on every machine the tests run on."""
    assert cpython.available()
    probe = np.zeros(3)
    assert struct.unpack_from("=q", ctypes.string_at(id(probe) + 16, 8))[0] == probe.ctypes.data


def test_python_mode_is_read_without_importing_numba():
    """Whether NUMBA_DISABLE_JIT runs code as Python, asked in a process that has not imported
    Numba: the environment's answer, and Numba still not imported; a setting only Numba reads
    (not a plain number) is left to Numba."""
    script = ("import sys\nfrom hilbert.executor.numba.loading import python_mode\n"
              "print(python_mode(), 'numba' in sys.modules)")
    answers = {}
    for setting in (None, "0", " 1 ", "+1"):
        env = {k: v for k, v in __import__("os").environ.items() if k != "NUMBA_DISABLE_JIT"}
        if setting is not None:
            env["NUMBA_DISABLE_JIT"] = setting
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              env=env, timeout=120)
        assert done.returncode == 0, done.stderr
        answers[setting] = done.stdout.split()
    assert answers == {None: ["False", "False"], "0": ["False", "False"],
                       " 1 ": ["True", "False"], "+1": ["True", "True"]}


#: One process: a layer norm built by llvm (one thread) and called; its values, its back end
#: and whether Numba was imported, as JSON.
WITHOUT_NUMBA = """
import json, sys
import numpy as np
import hilbert
module = hilbert.compile_source("open Prelude.Networks\\nfn normed(x) ↦ layerNorm(x)\\n")
x = np.linspace(-2.0, 3.0, 16).reshape(4, 4)
function = module.function("normed")
values = [function(x).tolist() for _ in range(3)]
notes = [n for n in function.plan(x.shape).all_notes if "built by" in n]
print(json.dumps({"values": values[-1], "notes": notes, "numba": "numba" in sys.modules}))
"""


def test_a_process_whose_code_llvm_builds_never_imports_numba(tmp_path):
    """A fresh process, cold (an empty cache) and then warm (the machine code on disk), with
    one thread: the layer norm is right, built by llvm, and Numba
    (a third of a second to import) is never imported. (With threads, Numba's threading layer
    runs the parallel nests: executor/llvm/threads.py.)"""
    import json
    import os

    env = dict(os.environ, HILBERT_CACHE_DIR=str(tmp_path / "cache"), 
               HILBERT_COMPILE="eager", HILBERT_THREADS="1")
    env.pop("NUMBA_DISABLE_JIT", None)
    x = np.linspace(-2.0, 3.0, 16).reshape(4, 4)
    centred = x - x.mean(axis=1, keepdims=True)
    want = centred / np.sqrt((centred ** 2).mean(axis=1, keepdims=True) + 1e-5)
    for _ in ("cold", "warm"):
        done = subprocess.run([sys.executable, "-c", WITHOUT_NUMBA], capture_output=True,
                              text=True, env=env, timeout=300, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout.splitlines()[-1])
        np.testing.assert_allclose(report["values"], want, rtol=64 * np.finfo(float).eps,
                                   atol=1e-14)
        assert report["notes"] == ["numba: generated function 1 built by llvm (optimisation "
                                   "level 3)"]
        assert report["numba"] is False


#: One process: a product's layer norm built by llvm and called; its values and whether Numba
#: was imported, as JSON.
PRODUCT_WITHOUT_NUMBA = """
import json, sys
import numpy as np
import hilbert
module = hilbert.compile_source("open Prelude.Networks\\nfn f(x, w) ↦ layerNorm(einsum(\\"np,pq->nq\\", x, w))\\n")
x = np.linspace(-2.0, 3.0, 32 * 24).reshape(32, 24)
w = np.linspace(1.0, -1.0, 24 * 16).reshape(24, 16) ** 3
values = [module.f(x, w).tolist() for _ in range(2)]
print(json.dumps({"values": values[-1], "numba": "numba" in sys.modules}))
"""


def test_a_product_on_two_threads_built_by_llvm_imports_no_numba(tmp_path):
    """A fresh process, cold and then warm, with two threads allowed
    (NUMBA_NUM_THREADS=2, HILBERT_THREADS unset): a product's layer norm (the product kernel
    written into its module) is right, and Numba is never imported: neither the thread count
    (executor/threads.py reads Numba's settings as Numba does) nor the product kernel
    (executor/numba/product_parts.py) loads it where no parallel nest runs."""
    import json
    import os

    env = dict(os.environ, HILBERT_CACHE_DIR=str(tmp_path / "cache"), 
               HILBERT_COMPILE="eager", NUMBA_NUM_THREADS="2")
    for name in ("HILBERT_THREADS", "NUMBA_DISABLE_JIT", "NUMBA_THREADING_LAYER"):
        env.pop(name, None)
    x = np.linspace(-2.0, 3.0, 32 * 24).reshape(32, 24)
    y = x @ np.linspace(1.0, -1.0, 24 * 16).reshape(24, 16) ** 3
    centred = y - y.mean(axis=1, keepdims=True)
    want = centred / np.sqrt((centred ** 2).mean(axis=1, keepdims=True) + 1e-5)
    for _ in ("cold", "warm"):
        done = subprocess.run([sys.executable, "-c", PRODUCT_WITHOUT_NUMBA], capture_output=True,
                              text=True, env=env, timeout=300, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout.splitlines()[-1])
        np.testing.assert_allclose(report["values"], want, rtol=1e-12, atol=1e-12)
        assert report["numba"] is False

def test_arrays_alive_at_the_interpreters_exit(tmp_path):
    """A process that ends holding arrays an llvm-built function made (module globals, gone
    after atexit's finalisers have run) exits cleanly: their memory's destructor is still
    mapped then (before the entry's code was kept for the whole process: a segmentation
    fault at exit)."""
    import os

    script = ("import numpy as np, hilbert\n"
              "m = hilbert.compile_source('open Prelude.Networks\\nfn f(x) ↦ layerNorm(x)\\n')\n"
              "kept = [m.f(np.full((4, 4), float(k)) + np.eye(4)) for k in range(3)]\n"
              "print(kept[-1].shape)\n")
    env = dict(os.environ, HILBERT_CACHE_DIR=str(tmp_path / "cache"), 
               HILBERT_COMPILE="eager", HILBERT_THREADS="1")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, timeout=300, cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.strip() == "(4, 4)", (done.returncode,
                                                                      done.stderr[-2000:])
