"""An ONNX graph being written: its tensors (`Tensor`, a name with a static shape and dtype),
its nodes, its initializers (every constant, one per distinct value) and the finished model.
Names are given in the order things are made, so the same program gives the same bytes.
onnx itself is imported when a graph is made, so the op registry (executor/onnx/meanings.py)
is read, and checked, where onnx is not installed."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from onnx import ModelProto

#: The opset the models are written for (ReduceMax and ReduceMin take their axes as an input
#: from 18 on) and the IR version that goes with it: onnxruntime 1.14 and later read both.
OPSET = 18
IR_VERSION = 8
#: The element types a tensor of the graph may have, by onnx.TensorProto's numbers.
ELEMENTS = {np.dtype(np.float32): 1, np.dtype(np.float64): 11, np.dtype(np.int64): 7,
            np.dtype(np.bool_): 9}


@dataclass(frozen=True, eq=False)
class Tensor:
    """A value of the graph: what NumPy asks of an array (`shape`, `ndim`, `dtype`,
    `astype`) answered from the graph, so the host runtime's walk can carry it."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype
    graph: Graph = field(repr=False)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def astype(self, kind) -> Tensor:
        return self.graph.cast(self, np.dtype(kind))


class Graph:
    """The nodes and initializers written so far; `emit` adds a node, `tensor` makes a host
    value a constant of the graph, `model` finishes it."""

    def __init__(self, name: str):
        from onnx import helper, numpy_helper  # (the onnx extra: the module's docstring)

        self.helper, self.numpy_helper = helper, numpy_helper
        self.name = name
        self.nodes: list = []
        self.initializers: list = []
        self.inputs: list = []
        self._constants: dict[tuple, Tensor] = {}
        self.ones: dict[str, Tensor] = {}
        self._used: dict[str, int] = {}

    def _fresh(self, stem: str) -> str:
        count = self._used.get(stem, 0)
        self._used[stem] = count + 1
        return f"{stem}_{count}"

    def input(self, name: str, shape: tuple[int, ...], dtype: np.dtype) -> Tensor:
        self.inputs.append(self.helper.make_tensor_value_info(
            name, ELEMENTS[np.dtype(dtype)], list(shape)))
        return Tensor(name, tuple(shape), np.dtype(dtype), self)

    def input_like(self, stem: str, shape, dtype) -> Tensor:
        """A fresh value a subgraph takes as an input (a loop body's counter and state)."""
        return Tensor(self._fresh(stem), tuple(shape), np.dtype(dtype), self)

    def emit(self, op: str, inputs: list, shape, dtype, **attributes) -> Tensor:
        """A node `op` of `inputs` (tensors, host values made constants, or None for an
        optional input left out) giving one tensor of `shape` and `dtype`."""
        return self.emit_many(op, inputs, [(shape, dtype)], **attributes)[0]

    def emit_many(self, op: str, inputs: list, outs: list[tuple], **attributes) -> list[Tensor]:
        """A node `op` giving one tensor per (shape, dtype) of `outs`."""
        names = ["" if x is None else self.tensor(x).name for x in inputs]
        made = [self._fresh(op.lower()) for _ in outs]
        self.nodes.append(self.helper.make_node(op, names, made, name=made[0], **attributes))
        # (a size None is one known only when the graph runs: a loop's tape of its states)
        return [Tensor(n, tuple(None if s is None else int(s) for s in shape), np.dtype(dtype),
                       self) for n, (shape, dtype) in zip(made, outs, strict=True)]

    @contextmanager
    def scope(self, nodes: list):
        """Nodes emitted within go to `nodes` (a subgraph's: a branch, a loop's body), which
        read the graph's values by name; constants stay the graph's initializers."""
        saved, self.nodes = self.nodes, nodes
        try:
            yield nodes
        finally:
            self.nodes = saved

    def value_info(self, value: Tensor):
        return self.helper.make_tensor_value_info(value.name, ELEMENTS[value.dtype],
                                                  list(value.shape))

    def subgraph(self, nodes: list, inputs: list[Tensor], outputs: list[Tensor], stem: str):
        """A subgraph of `nodes` taking `inputs` and giving `outputs` (each made by a node of
        the subgraph: an Identity where the value is the graph's)."""
        own = {out for node in nodes for out in node.output}
        results = []
        with self.scope(nodes):
            for value in outputs:
                if value.name not in own:
                    value = self.emit("Identity", [value], value.shape, value.dtype)
                results.append(value)
        nodes[:] = _pruned(nodes, {v.name for v in results})
        return self.helper.make_graph(nodes, self._fresh(stem),
                                      [self.value_info(v) for v in inputs],
                                      [self.value_info(v) for v in results])

    def tensor(self, value, dtype=None) -> Tensor:
        """`value` as a tensor of the graph: a Tensor as it is, a host value an initializer
        (of `dtype` when given), one per distinct value."""
        if isinstance(value, Tensor):
            return value if dtype is None or value.dtype == dtype else self.cast(value, dtype)
        array = np.asarray(value) if dtype is None else np.asarray(value, dtype)
        if array.dtype not in ELEMENTS:
            array = array.astype(np.float64)
        key = (array.dtype.str, array.shape, array.tobytes())
        found = self._constants.get(key)
        if found is None:
            name = self._fresh("const")
            self.initializers.append(self.numpy_helper.from_array(array, name))
            found = self._constants[key] = Tensor(name, array.shape, array.dtype, self)
        return found

    def ones_like(self, value: Tensor, kind) -> Tensor:
        """Ones of `value`'s shape (x ^ 0: how the IR broadcasts), read from the value's shape
        as the graph runs; `ones` remembers whose shape, so an einsum that only broadcasts
        with it need not read it (executor/onnx/tracing.py)."""
        shape = self.emit("Shape", [value], (value.ndim,), np.int64)
        ones = self.emit("Expand", [self.tensor(np.ones((), kind)), shape], value.shape, kind)
        self.ones[ones.name] = shape
        return ones

    def expand(self, value: Tensor, shape, like: Tensor | None = None) -> Tensor:
        """`value` broadcast to `shape` (an Expand): to the shape `like` (a Shape node's
        value) where given, else 1 in its shape where the value already has the size, so a
        size the value carries is not written into the graph (a dynamic axis stays one:
        executor/onnx/dynamic.py)."""
        shape = tuple(shape)
        if value.shape == shape:
            return value
        if like is not None:
            return self.emit("Expand", [value, like], shape, value.dtype)
        lead = len(shape) - value.ndim
        written = [1 if k >= lead and value.shape[k - lead] == n else n
                   for k, n in enumerate(shape)]
        return self.emit("Expand", [value, self.tensor(written, np.int64)], shape, value.dtype)

    def reshape(self, value: Tensor, shape) -> Tensor:
        """`value` reshaped to `shape`: 0 (copy the input's size) for the leading sizes it
        keeps and -1 (what is left) for the first other, so that what the input carries is
        not written into the graph; a shape with an empty axis is written as it is."""
        shape = tuple(int(n) for n in shape)
        if shape == value.shape:
            return value
        if 0 in shape:
            return self.emit("Reshape", [value, self.tensor(shape, np.int64)], shape,
                             value.dtype, allowzero=1)
        kept = 0
        while kept < min(len(shape), value.ndim) and shape[kept] == value.shape[kept]:
            kept += 1
        written = [0] * kept + list(shape[kept:])
        if kept < len(shape):
            written[kept] = -1
        return self.emit("Reshape", [value, self.tensor(written, np.int64)], shape, value.dtype)

    def cast(self, value: Tensor, kind: np.dtype) -> Tensor:
        return value if value.dtype == kind else self.emit(
            "Cast", [value], value.shape, kind, to=ELEMENTS[np.dtype(kind)])

    def model(self, outputs: list[Tensor], names: list[str]) -> ModelProto:
        """The finished model, its outputs `outputs` under `names`: the node that makes one
        writes it under its name, and where an input, a constant or an output already named
        is the value, a node of its own (Identity) does, as ONNX wants."""
        made = {out for node in self.nodes for out in node.output}
        infos, written = [], {}
        for value, name in zip(outputs, names, strict=True):
            if value.name in made and value.name not in names and value.name not in written:
                self._rename(value.name, name)
                written[value.name] = name
            else:
                source = written.get(value.name, value.name)
                self.nodes.append(self.helper.make_node("Identity", [source], [name], name=name))
            infos.append(self.helper.make_tensor_value_info(name, ELEMENTS[value.dtype],
                                                       list(value.shape)))
        self.nodes = _pruned(self.nodes, set(names))
        read = set().union(*map(_read, self.nodes)) if self.nodes else set()
        graph = self.helper.make_graph(self.nodes, self.name, self.inputs, infos,
                                  initializer=[i for i in self.initializers if i.name in read])
        return self.helper.make_model(graph, producer_name="hilbert", ir_version=IR_VERSION,
                                      opset_imports=[self.helper.make_opsetid("", OPSET)])

    def _rename(self, old: str, new: str, nodes=None) -> None:
        """Every port named `old` named `new`, in subgraphs too (they read values by name)."""
        for node in self.nodes if nodes is None else nodes:
            for ports in (node.input, node.output):
                for k, port in enumerate(ports):
                    if port == old:
                        ports[k] = new
            for attribute in node.attribute:
                if attribute.HasField("g"):
                    self._rename(old, new, attribute.g.node)


def _pruned(nodes: list, needed: set[str]) -> list:
    """`nodes` (in the order made, each after what it reads) without those whose values
    nothing reads: a value the trace made and then did not use (the ones of x ^ 0 where an
    einsum only broadcasts with them)."""
    kept = []
    for node in reversed(nodes):
        if not any(out in needed for out in node.output):
            continue
        kept.append(node)
        needed.update(_read(node))
    return kept[::-1]


def _read(node) -> set[str]:
    """The names a node reads, its subgraphs' reads of outer values included."""
    names = set(node.input)
    for attribute in node.attribute:
        if attribute.HasField("g"):
            for inner in attribute.g.node:
                names |= _read(inner)
    return names
