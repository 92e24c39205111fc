"""The ONNX registry (executor/onnx/meanings.py) against the op table: every op that reaches an
executor has an ONNX meaning or a refusal saying why, every entrywise op and reduction that
compiled code computes has a meaning, and neither names an op the table lacks. The sets come
from the table (compiler/ops/primitives.py BY_OP), so a new row fails here until it has one.
Runs without the onnx extra (the registry imports onnx only when a graph is made), and
checks that hilbert runs without it."""

import sys

import pytest
from hilbert.compiler.ops.primitives import BY_OP
from hilbert.executor.onnx.meanings import MEANINGS, REFUSED
from hilbert.grammar.errors import HilbertError

import hilbert


def test_every_op_reaching_an_executor_has_an_onnx_meaning_or_a_refusal():
    in_ir = {op for op, row in BY_OP.items() if row.meaning is not None}
    assert len(in_ir) > 50
    assert sorted(in_ir - set(MEANINGS) - set(REFUSED)) == []
    assert sorted((set(MEANINGS) | set(REFUSED)) - set(BY_OP)) == []
    assert set(MEANINGS).isdisjoint(REFUSED)
    assert all(len(why) > 20 for why in REFUSED.values())


def test_every_compiled_entrywise_op_and_reduction_has_an_onnx_meaning():
    compiled = {op for op, row in BY_OP.items() if "compiled" in row.traits
                and ("entrywise" in row.traits or row.kind == "reduce")}
    assert {"add", "exp", "eq", "sumalong", "maximum"} <= compiled
    assert sorted(compiled - set(MEANINGS)) == []


def test_without_the_extra_hilbert_works_and_an_export_is_a_coded_error(monkeypatch):
    """onnx and onnxruntime hidden (where they are installed: not unloaded, as their native
    state would be registered twice): hilbert runs, and an ONNX export says what to install."""
    monkeypatch.delitem(sys.modules, "hilbert.executor.onnx.executor", raising=False)
    monkeypatch.setitem(sys.modules, "onnx", None)
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    f = hilbert.compile_source("fn f(x) ↦ x + 1", executor="reference").f
    assert f(1.0) == 2.0
    with pytest.raises(HilbertError) as raised:
        f.onnx(())
    assert raised.value.code == "E600"
    assert "pip install 'hilbert[onnx]'" in raised.value.message
