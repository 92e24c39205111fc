"""Dynamic axes of an exported ONNX model: the model written for the given sizes with the dims
that follow a named size (`batch`) written as that name, where the graph does not depend on
the size. The graph is written again at other sizes of the named axes (hilbert/export.py):
where the graphs differ in anything but their values' dims (a size written into the graph as
a constant: a Reshape's shape, a loop's trip count, a mean's count; a contraction path or an
`if` on shapes that changes with the size), the size is one the program depends on and the
axis cannot be dynamic (E600 naming the node that changes)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...grammar.errors import ArgumentError

if TYPE_CHECKING:
    from onnx import ModelProto


def dynamic_model(models: list[ModelProto], sizes: list[dict[str, int]], span) -> ModelProto:
    """`models[0]` with each dim that is `sizes[k][name]` in `models[k]` for every k written
    as `name`, and each other dim that differs between the models left unknown; E600 where
    the graphs differ in more than their dims (the first difference named)."""
    bare = [_bare(m) for m in models]
    for k in range(1, len(models)):
        if bare[k].SerializeToString() != bare[0].SerializeToString():
            raise ArgumentError("E600", f"{_named(sizes[0], sizes[k])} cannot be a dynamic axis "
                                f"of {models[0].graph.name}'s ONNX graph: "
                                f"{_difference(bare[0].graph, bare[k].graph)} (the program "
                                "depends on the size; export it for each size instead)", span)
    written = models[0].__class__()
    written.CopyFrom(models[0])
    each = [_infos(m.graph) for m in (written, *models[1:])]
    for infos in zip(*each, strict=True):
        dims = [info.type.tensor_type.shape.dim for info in infos]
        for position, first in enumerate(dims[0]):
            _write(first, [d[position].dim_value for d in dims], sizes)
    return written


def _write(dim, values: list[int], sizes: list[dict[str, int]]) -> None:
    """A dim whose sizes across the models are `values`: kept where they are equal, the name
    of the size they follow, or else unknown."""
    if len(set(values)) == 1:
        return
    for name in sizes[0]:
        if all(v == s[name] for v, s in zip(values, sizes, strict=True)):
            dim.dim_param = name
            return
    dim.Clear()


def _infos(graph) -> list:
    """Every value info of `graph` and its subgraphs (a Loop's body, an If's branches), in
    one order: inputs, outputs, value infos, then each node's subgraphs."""
    found = [*graph.input, *graph.output, *graph.value_info]
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.HasField("g"):
                found.extend(_infos(attribute.g))
    return found


def _bare(model: ModelProto) -> ModelProto:
    """A copy of `model` with no dims in any value info: what is left is the computation."""
    bare = model.__class__()
    bare.CopyFrom(model)
    for info in _infos(bare.graph):
        if info.type.tensor_type.HasField("shape"):
            info.type.tensor_type.ClearField("shape")
    return bare


def _named(first: dict[str, int], other: dict[str, int]) -> str:
    return ", ".join(f"{name!r} ({first[name]}, {other[name]})" for name in first)


def _difference(first, other) -> str:
    """Where two bare graphs (their dims cleared) first differ, in words."""
    a, b = _nodes(first), _nodes(other)
    if len(a) != len(b):
        return (f"the graph has {len(a)} nodes at the first size and {len(b)} at the other (a "
                "path, a loop or an `if` that changes with the size)")
    values = {i.name: i.SerializeToString() for i in _initializers(first)}
    changed = {i.name for i in _initializers(other)
               if values.get(i.name) != i.SerializeToString()}
    for x, y in zip(a, b, strict=True):
        same = _shallow(x) == _shallow(y)
        if same and not changed & set(x.input):
            continue
        if not same:
            return (f"its node {x.name} ({x.op_type}) is {y.op_type} at the other size (a "
                    "contraction path or an `if` that changes with the size)"
                    if x.op_type != y.op_type else
                    f"its node {x.name} ({x.op_type}) changes with the size")
        if x.op_type == "Loop" and x.input and x.input[0] in changed:
            return (f"its loop {x.name} runs a number of steps that changes with the size "
                    "(its trip count is written in the graph)")
        return (f"its node {x.name} ({x.op_type}) reads a constant made from the size (a "
                "count, a shape or a slice's bounds written in the graph)")
    return "a constant of the graph changes with the size"


def _shallow(node) -> bytes:
    """A node without its subgraphs (compared node by node themselves)."""
    copy = node.__class__()
    copy.CopyFrom(node)
    kept = [a for a in copy.attribute if not a.HasField("g")]
    del copy.attribute[:]
    copy.attribute.extend(kept)
    return copy.SerializeToString()


def _nodes(graph) -> list:
    found = []
    for node in graph.node:
        found.append(node)
        for attribute in node.attribute:
            if attribute.HasField("g"):
                found.extend(_nodes(attribute.g))
    return found


def _initializers(graph) -> list:
    found = list(graph.initializer)
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.HasField("g"):
                found.extend(_initializers(attribute.g))
    return found
