"""Modules compiled side by side (executor/llvm/parts.py, shared.py, unlocked.py): a large
module's pieces in a part of their own, called by a name of their own in the process; the
shared product kernel built on a thread of its own; LLVM's two long calls made without
llvmlite's lock. Values are checked against NumPy written here, machine code against
llvmlite's own calls."""

from __future__ import annotations

import llvmlite.binding as binding
import numpy as np
import pytest
from hilbert.executor import llvm
from hilbert.executor.codegen.loops import Assign, Fmt, Var
from hilbert.executor.llvm import compile, outline, parts, shared, unlocked
from hilbert.executor.llvm.types import Array
from hilbert.executor.numba.faults import PositionError
from llvmlite import ir

from tests.test_llvm_outline import _body


def _lowered(factor: float = 2.0):
    """test_llvm_outline's function (one piece: the nests that make out and out2), with u =
    factor·a1, lowered with every piece outlined and moved to a part of its own."""
    body = _body()
    body[6] = Assign(("u",), (Fmt(f"{factor!r} * {{}}", (Var("a1"),)),))
    return llvm.lowered(body, ["a0", "a1"], [Array("float64", 1), "float64"], "float64")


@pytest.fixture
def in_parts(monkeypatch, lowered_afresh):
    """Every piece outlined and moved (functions lowered afresh: conftest.py)."""
    monkeypatch.setattr(outline, "LARGE", 0)
    monkeypatch.setattr(parts, "SMALL", 0)


def _expected(a: np.ndarray, factor: float) -> tuple:
    u = factor * 0.75
    out = a * 0.75 + a.sum()
    return out, out * u + u, a.sum()


def test_a_modules_text_is_its_functions_printed_once(in_parts):
    """parts.written gives str(module) exactly, from each function printed once."""
    from hilbert.executor.llvm import lower

    made = lower.Lowering(_body(), [("a0", Array("float64", 1)), ("a1", "float64")], "float64")
    text, functions = parts.written(made.module)
    assert text == str(made.module)
    assert set(functions) == {f.name for f in made.module.functions}


def test_pieces_moved_to_a_part_of_their_own_compute_the_same(in_parts):
    """Part 1 defines the piece under its name and the module's digest, with external linkage;
    part 0 declares it and calls it; the answers are NumPy's, and a raise inside the moved
    piece is the function's (the first failing row's), after which the next call runs."""
    made = _lowered()
    (first, none), (second, symbols) = made._parts
    assert none == () and len(symbols) == 1 and symbols[0].startswith("hb_nest")
    assert f'declare i64 @"{symbols[0]}"' in first and f'define i64 @"{symbols[0]}"' in second
    assert 'define i64 @"hb_run"' in first and "hb_run" not in second
    a = np.linspace(-3.0, 5.0, 1001)
    for got, want in zip(made(a, 0.75), _expected(a, 2.0), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-13)
    bad = np.ones(50)
    bad[[7, 30]] = [-200.0, -300.0]
    with pytest.raises(PositionError) as caught:
        made(bad, 1.0)
    assert caught.value.args == (7, -200.0, 7)
    np.testing.assert_array_equal(made(np.ones(50), 1.0)[0], np.full(50, 51.0))


def test_two_programs_pieces_never_share_a_symbol(in_parts):
    """Two functions whose pieces have the same name in their modules (hb_nest…) but other
    code: each part's symbol carries its module's digest, and each function calls its own."""
    two, three = _lowered(2.0), _lowered(3.0)
    assert two._parts[1][1] != three._parts[1][1]
    a = np.linspace(-1.0, 1.0, 257)
    for made, factor in ((two, 2.0), (three, 3.0), (two, 2.0)):
        np.testing.assert_allclose(made(a, 0.75)[1], _expected(a, factor)[1], rtol=1e-13)


def test_the_same_function_makes_the_same_parts(in_parts):
    """The parts (their texts, so their cache keys and names) follow from the IR alone."""
    from hilbert.executor.llvm import lower

    def made() -> list:
        lowering = lower.Lowering(_body(), [("a0", Array("float64", 1)), ("a1", "float64")],
                                  "float64")
        text, functions = parts.written(lowering.module)
        return parts.split(lower.NAME, [f.name for f in lowering.outlined], text, functions,
                           {f.name: f.ftype for f in lowering.module.functions})

    assert made() == made()


def test_a_small_modules_pieces_stay_with_it(monkeypatch, lowered_afresh):
    """Below parts.SMALL bytes of pieces the module is compiled whole, as one text."""
    monkeypatch.setattr(outline, "LARGE", 0)
    made = _lowered(5.0)
    assert made._parts == [(made.text, ())]


def _module_text(name: str) -> str:
    module = ir.Module(name=name)
    kind = ir.FunctionType(ir.DoubleType(), [ir.DoubleType().as_pointer(), ir.IntType(64)])
    function = ir.Function(module, kind, "f")
    entry, loop, done = (function.append_basic_block(n) for n in ("entry", "loop", "done"))
    b = ir.IRBuilder(entry)
    b.branch(loop)
    b.position_at_end(loop)
    i = b.phi(ir.IntType(64))
    total = b.phi(ir.DoubleType())
    i.add_incoming(ir.Constant(ir.IntType(64), 0), entry)
    total.add_incoming(ir.Constant(ir.DoubleType(), 0.0), entry)
    added = b.fadd(total, b.load(b.gep(function.args[0], [i])))
    after = b.add(i, ir.Constant(ir.IntType(64), 1))
    i.add_incoming(after, loop)
    total.add_incoming(added, loop)
    b.cbranch(b.icmp_signed("<", after, function.args[1]), loop, done)
    b.position_at_end(done)
    b.ret(added)
    return str(module)


def test_unlocked_calls_make_llvmlites_machine_code():
    """The optimiser and the code generator called past llvmlite's lock give what llvmlite's
    own calls give: the same optimised IR, the same object file."""
    text = _module_text("sum")

    def compiled(run, emit) -> tuple[str, bytes]:
        machine = compile._target_machine(3)
        module = binding.parse_assembly(text, context=binding.create_context())
        module.triple, module.data_layout = machine.triple, str(machine.target_data)
        builder = compile._pipeline(machine, 3)
        run(builder.getModulePassManager(), module, builder)
        return str(module), emit(machine, module)

    ours = compiled(unlocked.run_passes, unlocked.object_code)
    theirs = compiled(lambda m, module, b: m.run(module, b), lambda t, m: t.emit_object(m))
    assert ours == theirs and ours[1]


def test_a_shared_kernel_built_beside_its_caller(monkeypatch):
    """A kernel declared by a module is built on a thread of its own; the module waits for it
    only before it is loaded, then calls it by its symbol. A build that fails raises its
    error where a module that declares it waits for it, and is tried again later."""
    kind = ir.FunctionType(ir.IntType(64), [])
    name = "hb_test_kernel_seven"

    def write(own: ir.Module) -> None:
        made = ir.Function(own, kind, name)
        ir.IRBuilder(made.append_basic_block()).ret(ir.Constant(ir.IntType(64), 7))

    def caller() -> tuple[str, ir.Module]:
        module = ir.Module(name="caller")
        kernel = shared.declared("test-seven", name, kind, module, write)
        function = ir.Function(module, kind, "calls_seven")
        b = ir.IRBuilder(function.append_basic_block())
        b.ret(b.mul(b.call(kernel, []), ir.Constant(ir.IntType(64), 6)))
        return str(module), module

    real = compile.compile_module

    def failing(text, *args, **kwargs):
        if name in text and "calls_seven" not in text:
            raise RuntimeError("the kernel's build failed")
        return real(text, *args, **kwargs)

    monkeypatch.setattr(compile, "compile_module", failing)
    text, _ = caller()
    with pytest.raises(RuntimeError, match="the kernel's build failed"):
        shared.awaited(shared.called(text))
    monkeypatch.setattr(compile, "compile_module", real)
    text, _ = caller()
    made = compile.compile_module(text, ("calls_seven",), 1,
                                  before_load=lambda: shared.awaited(shared.called(text)))
    import ctypes

    assert ctypes.CFUNCTYPE(ctypes.c_int64)(made.addresses["calls_seven"])() == 42
    assert "test-seven" in shared.KERNELS


_BEGUN = """
import json, sys
import hilbert
from hilbert.compiler import driver
from hilbert.executor.llvm import shared
seen = []
front = driver.compile_module
def watched(*args, **kwargs):
    seen.append(sorted({*shared._BUILDS, *(f"made:{k}" for k in shared.KERNELS)}))
    return front(*args, **kwargs)
driver.compile_module = watched
import hilbert.module
hilbert.module.compile_module = watched
(entry, path, executor, dtype) = sys.argv[1:]
dtype = None if dtype == "-" else dtype
if entry == "load":
    hilbert.load(path, executor=executor, dtype=dtype)
else:
    hilbert.compile_source(open(path, encoding="utf-8").read(), executor=executor, dtype=dtype)
print(json.dumps(seen[0]))
"""


@pytest.mark.timeout(240)
@pytest.mark.parametrize("entry, executor, dtype, begun", [
    ("load", "numba", "-", ["hb_product.float64"]),
    ("source", "numba", "-", ["hb_product.float64"]),
    ("load", "numba", "float32", ["hb_product.float32"]),
    ("load", "reference", "-", []), ("source", "numba", "complex128", [])])
def test_a_load_begins_the_product_kernel_before_its_front_half(tmp_path, entry, executor,
                                                                dtype, begun):
    """hilbert.load (and compile_source) begins the compiled executor's product kernel for
    its dtype (float64 when the arguments decide) before the module's front half runs, in a
    fresh process with an empty cache; nothing for another executor or a complex dtype."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    source = tmp_path / "Dense.hb"
    source.write_text('def dense(a, w) ≔ einsum("np,pq->nq", a, w)\n', encoding="utf-8")
    env = dict(os.environ, HILBERT_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("NUMBA_DISABLE_JIT", None)
    done = subprocess.run([sys.executable, "-c", _BEGUN, entry, str(source), executor, dtype],
                          capture_output=True, text=True, env=env, timeout=200,
                          cwd=Path(__file__).resolve().parents[1])
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == begun


_RECORDED = """
import json
import numpy as np
import hilbert
from hilbert.executor.llvm import lower, shared
lowered = []
made = lower.Lowering.__init__
def counted(self, *args, **kwargs):
    lowered.append(1)
    made(self, *args, **kwargs)
lower.Lowering.__init__ = counted
source = ('def step(t, w, a) ≔ if t = 0 then w else step(t − 1, tanh(einsum("np,pq->nq", a, w)), a)'
          '\\nfn run(a, w) ↦ step(3, w, a)')
module = hilbert.compile_source(source, name="walk.hb")
a = np.arange(1600.0).reshape(40, 40) / 40 ** 3
w = np.eye(40)
want = w
for _ in range(3):
    want = np.tanh(a @ want)
right = bool(np.allclose(module.function("run")(a, w), want, rtol=1e-14))
print(json.dumps({"lowered": len(lowered), "kernels": sorted(shared._KEYS), "right": right}))
"""


@pytest.mark.timeout(240)
def test_a_recorded_function_calls_its_shared_kernel_in_a_new_process(tmp_path):
    """A process that finds a function's record (a loop whose 40 × 40 products call the product
    kernel) lowers nothing, and the product kernel its record names is made in it (begun by its symbol, not by a lowering) before the function
    is linked: its answers are NumPy's."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = dict(os.environ, HILBERT_CACHE_DIR=str(tmp_path / "cache"),
               HILBERT_COMPILE="eager")
    env.pop("NUMBA_DISABLE_JIT", None)

    def run() -> dict:
        done = subprocess.run([sys.executable, "-c", _RECORDED], capture_output=True, text=True,
                              env=env, timeout=200, cwd=Path(__file__).resolve().parents[1])
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout.splitlines()[-1])

    first, second = run(), run()
    assert first == {"lowered": 1, "kernels": ["hb_product.float64"], "right": True}
    assert second == {"lowered": 0, "kernels": ["hb_product.float64"], "right": True}


def test_a_record_naming_anything_but_an_object_file_is_not_read(monkeypatch):
    """A record (sealed, so written by this user's hilbert) whose part names a path is ignored:
    the function is lowered instead of reading a file outside the cache's folder."""
    import json

    from hilbert.executor.llvm import kept, records

    stored = {"results": [], "raises": [], "kernels": [],
              "parts": [["../../elsewhere", ["hb_run"]]]}
    monkeypatch.setattr(kept, "read", lambda name, suffix=".o": json.dumps(stored).encode())
    assert records.read("any description", 3) is None
    stored["parts"] = [["0123456789abcdef0123456789abcdef", ["hb_nest3.0011223344556677"]]]
    assert records.read("any description", 3)["parts"] == [
        ("0123456789abcdef0123456789abcdef", ("hb_nest3.0011223344556677",))]
