"""Each value's axes, named as generated code names its sizes: from its arguments' axes by the
op table's `axes` column, whatever an axis is (a number, an input's axis, an expression).

The code generator writes a value's sizes with it (executor/codegen/emitter.py: expressions
over the inputs' shapes) and the plan compares nests' row counts with it (row_loops.py: two
loops over rows join only over the same size, as generated code names it, not over two sizes
that happen to be equal at the shapes planned)."""

from __future__ import annotations

from collections.abc import Callable

from .. import ir
from ..ops.einsum_spec import parse_spec
from ..ops.primitives import BY_OP

#: Forms whose value has an axis of a size known from its shape alone, not from an argument's
#: axes: each gives the value's axes from its first argument's and its shape (`number` makes
#: a size an axis). x[a:b] has b − a rows; oneHot(labels, k) has k columns.
FROM_SHAPE: dict[str, Callable] = {
    "sliced": lambda x, shape, number: (number(shape[0]), *x[1:]),
    "onehot": lambda x, shape, number: (*x, number(shape[-1])),
}


def axes_rule(node: ir.Node, axes: dict, shapes: dict, number: Callable) -> tuple:
    """`node`'s axes from its arguments' (`axes`) and, where they are numbers known from
    shapes alone, its own shape, made axes by `number`.

    >>> x = ir.Param(0, "x", None)
    >>> axes_rule(ir.Einsum("ij->ji", (x,), None), {x: ("n", "m")}, {}, int)
    ('m', 'n')
    """
    match node:
        case ir.Const() | ir.Loop() | ir.Tuple():
            return ()
        case ir.Cond():
            return axes[node.then]
        case ir.Project():
            return axes[node.loop.init[node.index]]
        case ir.Prim(op=op, args=args) if BY_OP[op].form in FROM_SHAPE:
            rule = FROM_SHAPE[BY_OP[op].form or ""]
            return tuple(rule(axes[args[0]], shapes[node], number))
        case ir.Einsum(spec=spec):
            parsed = parse_spec(spec)
            known = {ch: d for term, a in zip(parsed.inputs, node.args, strict=True)
                     for ch, d in zip(term, axes[a], strict=True)}
            return tuple(known[ch] for ch in parsed.output)
        case ir.Prim(op=op, args=args, attrs=attrs):  # (the op table's axes rule)
            return BY_OP[op].axes(tuple(axes[a] for a in args), attrs)
    raise AssertionError(f"planning: no axes rule for {node!r}")


def axes_of(node: ir.Node, known: dict, shapes: dict, number: Callable) -> tuple:
    """`node`'s axes, from those `known` (each value's, filled in as they are found: the
    inputs' first), by `axes_rule`; the walk stops at values already known."""
    stack = [(node, False)]
    while stack:
        n, ready = stack.pop()
        if n in known:
            continue
        if ready:
            known[n] = axes_rule(n, known, shapes, number)
            continue
        stack.append((n, True))
        stack.extend((k, False) for k in ir.children(n) if k not in known)
    return known[node]
