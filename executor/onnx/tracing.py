"""A call's planned IR written as an ONNX graph: the host runtime's walk (compiler/evaluate.py
`Host`) run over graph tensors (executor/onnx/graph.py) in place of arrays, each op by its
ONNX meaning (executor/onnx/meanings.py), each einsum along the plan's path
(executor/onnx/contract.py).

What the IR computes from shapes and constants alone (sizes, slice bounds, class counts) is
computed on the host by its NumPy meaning, as the jax executor's trace does, and enters the
graph as a constant. Loops (run forwards and backwards) and `if` on a computed condition are
written by executor/onnx/control.py; counter-based draws and complex numbers are not written
in ONNX yet: a program that needs one is E600, naming it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...compiler import dtypes, ir
from ...compiler.counting import COUNTED, counting_in
from ...compiler.driver import Specialised
from ...compiler.evaluate import Host, einsum_in_one
from ...compiler.ops.einsum_spec import parse_spec, spelled_out
from ...compiler.ops.primitives import BY_OP
from ...compiler.plan import contraction
from ...grammar.errors import ArgumentError
from ..numerics import quietly
from .contract import contract
from .control import Control
from .graph import Graph, Tensor
from .meanings import MEANINGS, REFUSED

if TYPE_CHECKING:
    from onnx import ModelProto


def input_dtypes(ready: Specialised) -> tuple[np.dtype, ...]:
    """Each parameter's dtype in the graph: the call's, float64 for one read as a whole number
    (compiler/counting.py), as the other executors take it."""
    counting = counting_in(ready.body, ready.plan.dtype)
    return tuple(np.dtype(COUNTED if i in counting.params else ready.plan.dtype)
                 for i in range(len(ready.plan.signature)))


def onnx_model(ready: Specialised, name: str, params: tuple[str, ...], optimize,
               fixed: tuple = ()) -> ModelProto:
    """The ONNX model of `ready` (a planned entry called `name`, its parameters `params`): a
    graph named `name` taking one input per parameter and giving one output per result; the
    first parameters' values `fixed`, when given, are constants of the graph (initializers)
    instead of inputs."""
    plan = ready.plan
    span = ready.body.span
    if dtypes.is_complex(plan.dtype):
        raise ArgumentError("E600", f"a {plan.dtype} program cannot be written in ONNX: "
                            "onnxruntime has no complex arithmetic (its Einsum, MatMul and "
                            "entrywise ops are real); export float32 or float64", span)
    trace = Trace(ready, name, optimize)
    kinds = input_dtypes(ready)
    inputs = tuple(np.asarray(fixed[k], d) if k < len(fixed) else trace.graph.input(p, s, d)
                   for k, (p, s, d) in enumerate(zip(params, plan.signature, kinds, strict=True)))
    value = trace.answer(trace.eval(ready.body, {}, inputs))
    values = list(value) if isinstance(value, tuple) else [value]
    outputs = [trace.graph.tensor(v) for v in values]
    names = ["result"] if len(outputs) == 1 else [f"result{k}" for k in range(len(outputs))]
    return trace.graph.model(outputs, names)


class Trace(Control, Host):
    """One walk of a program writing its graph (`graph`)."""

    def __init__(self, ready: Specialised, name: str, optimize):
        super().__init__(self._einsum, ready.plan.dtype,
                         counting_in(ready.body, ready.plan.dtype))
        self.plan = ready.plan
        self.optimize = optimize
        self.graph = Graph(name)

    def refuse(self, node: ir.Node, what: str):
        """E600: `node` (a `what`) cannot be written in ONNX yet."""
        raise ArgumentError("E600", f"{what} cannot be written in ONNX yet, so this program "
                            "cannot be exported to ONNX or run on the onnx executor "
                            "(docs/onnx.md)", node.span)

    def _inputs(self, node: ir.Node, memo) -> tuple[ir.Node, ...]:
        if isinstance(node, ir.Cond) and isinstance(memo.get(node.cond), Tensor):
            return ()  # (its branches are traced into If's subgraphs: control.py)
        return super()._inputs(node, memo)

    def _value(self, node: ir.Node, memo, leaves: tuple):
        if isinstance(node, ir.Cond) and isinstance(memo[node.cond], Tensor):
            return self._branch(node, memo, leaves)
        return super()._value(node, memo, leaves)

    def prim(self, node: ir.Prim, args: list):
        """The op's value: by its NumPy meaning on the host when every argument is a host
        number or array (a constant of the graph), else by its ONNX meaning."""
        if not any(isinstance(a, Tensor) for a in args):
            return quietly(BY_OP[node.op].meaning, node, args)
        meaning = MEANINGS.get(node.op)
        if meaning is None:
            self.refuse(node, f"{node.op} ({REFUSED.get(node.op, 'no ONNX meaning')})")
        return meaning(node, args, self)

    def _einsum(self, node: ir.Einsum, operands: list):
        if not any(isinstance(o, Tensor) for o in operands):
            return quietly(einsum_in_one, node.spec, *operands)
        shapes = tuple(tuple(np.shape(o)) for o in operands)
        found = self.plan.paths.get((node.spec, shapes))
        path = found[0] if found is not None else contraction(node.spec, shapes, self.optimize)[0]
        kinds = [o.dtype for o in operands if isinstance(o, Tensor)]
        kind = np.result_type(*kinds)
        tensors = [self.graph.tensor(o, kind) for o in operands]
        spread = self._spread(node, tensors)
        return spread if spread is not None else contract(self.graph, node.spec, tensors,
                                                          path, node.span)

    def _spread(self, node: ir.Einsum, tensors: list[Tensor]) -> Tensor | None:
        """An einsum with ones (x ^ 0, Graph.ones_like) that only broadcast (their letters
        kept, or read by another operand) as the einsum of the others, expanded to the
        output's shape: the same values (1 · v is v) without reading the ones; else None."""
        g = self.graph
        spec = spelled_out(node.spec, [t.shape for t in tensors])
        parsed = parse_spec(spec)
        terms, out = list(parsed.inputs), parsed.output
        ones = [k for k, t in enumerate(tensors) if t.name in g.ones]
        rest = [k for k in range(len(tensors)) if k not in ones]
        read = set("".join(terms[k] for k in rest))
        if not ones or not rest or any(set(terms[k]) - read - set(out) for k in ones):
            return None
        sizes = {ch: n for term, t in zip(terms, tensors, strict=True)
                 for ch, n in zip(term, t.shape, strict=True)}
        inner = ",".join(terms[k] for k in rest) + "->" + "".join(c for c in out if c in read)
        operands = [tensors[k] for k in rest]
        path = contraction(inner, tuple(t.shape for t in operands), self.optimize)[0]
        value = contract(g, inner, operands, path, node.span)
        missing = [i for i, ch in enumerate(out) if ch not in read]
        shape = tuple(sizes[ch] for ch in out)
        if missing:
            value = g.emit("Unsqueeze", [value, g.tensor(missing, np.int64)],
                           tuple(1 if ch not in read else sizes[ch] for ch in out), value.dtype)
        like = next((g.ones[tensors[k].name] for k in ones if terms[k] == out), None)
        return g.expand(value, shape, like)
