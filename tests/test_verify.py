"""The IR verifier (compiler/ir/verify.py): it passes every stage of real programs (the suite runs
it after every pass: conftest sets HILBERT_VERIFY), and it catches each kind of broken IR."""

import numpy as np
import pytest
from hilbert.compiler import ir, passes
from hilbert.compiler.ir import verify
from hilbert.compiler.passes.shapes import infer_shapes
from hilbert.grammar.source import nowhere

import hilbert

SPAN = nowhere("test")


def x(i=0):
    return ir.Param(i, f"x{i}", SPAN)


def prim(op, *args, attrs=()):
    return ir.Prim(op, args, attrs, SPAN)


def const(v):
    return ir.Const(v, SPAN)


def test_the_suite_runs_the_verifier_between_passes():
    assert verify.enabled()
    assert {gives for pipeline in (passes.SHARE, passes.MASK, passes.OPTIMISE, passes.AGAIN,
                                   passes.GENERATE) for _, _, gives in pipeline} <= set(verify.LAYERS)


def test_a_prelude_function_passes_every_layer():
    module = hilbert.open("Prelude.Networks")
    entry = module.function("dense").entry
    for layer, node in (("entry", entry.body), ("masked", entry.masked), ("optimised", entry.fused)):
        verify.verify(node, layer)
    table = infer_shapes(entry.fused, ((4, 3), (3, 2)))
    verify.verify(entry.fused, "specialised", ((4, 3), (3, 2)), table)


def test_a_loop_body_with_its_state_is_closed():
    loop = ir.Loop((x(), const(3.0)), prim("eq", ir.State(1, SPAN), const(0.0)),
                   (prim("tanh", ir.State(0, SPAN)), prim("sub", ir.State(1, SPAN), const(1.0))),
                   1, "loop", SPAN)
    verify.verify(ir.Project(loop, 0, SPAN), "entry")


@pytest.mark.parametrize("node, why", [
    (prim("nosuchop", x()), "no op of the op table"),
    (prim("exp", x(), x()), "takes 1 argument"),
    (prim("maximum", x()), "has 1 attribute"),
    (prim("maximum", x(), attrs=(-1,)), "not a whole number"),
    (prim("shift", x(), x(), attrs=(0, (1.0,), 0.0)), "admits no shift"),
    (ir.Einsum("ij,jk->ik", (x(),), SPAN), "given 1 operands"),
    (ir.State(0, SPAN), "state component 0 read where the state has None"),
    (ir.Project(ir.Loop((x(),), const(1.0), (ir.State(0, SPAN),), None, "l", SPAN), 1, SPAN),
     "component 1 of a loop answering 1"),
    (ir.Project(ir.Loop((x(),), const(1.0), (x(1),), None, "l", SPAN), 0, SPAN),
     "reads a parameter"),
    (ir.Project(ir.Loop((x(),), const(1.0), (ir.State(3, SPAN),), None, "l", SPAN), 0, SPAN),
     "state component 3 read where the state has 1"),
    (ir.Project(ir.Loop((x(),), const(1.0), (ir.State(0, SPAN),), 2, "l", SPAN), 0, SPAN),
     "counter 2 is not a state component"),
    (ir.Call("f", (x(),), SPAN), "admits no Call"),
])
def test_broken_ir_is_caught(node, why):
    with pytest.raises(verify.VerifyError, match=why):
        verify.verify(node, "entry")


def test_layers_admit_their_own_ops_only():
    g = prim("sumto", x(), x(1))
    verify.verify(g, "optimised")
    with pytest.raises(verify.VerifyError, match="specialised layer admits no sumto"):
        verify.verify(g, "specialised")


def test_a_shape_that_is_not_its_rules_is_caught():
    node = prim("tanh", x())
    table = infer_shapes(node, ((2, 3),))
    verify.verify(node, "specialised", ((2, 3),), table)
    table.scopes[()][node] = (3, 2)
    with pytest.raises(verify.VerifyError, match=r"\(2, 3\) by its rule, \(3, 2\) in the table"):
        verify.verify(node, "specialised", ((2, 3),), table)


def test_a_program_still_runs_with_the_verifier_on():
    module = hilbert.compile_source('fn f(a, w) ↦ tanh(einsum("np,pq->nq", a, w))')
    a, w = np.ones((2, 3)), np.ones((3, 4))
    np.testing.assert_allclose(module.f(a, w), np.tanh(a @ w))

