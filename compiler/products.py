"""Vector-Jacobian and Jacobian-vector products of a definition, as bodies of entries of
their own (compiler/entry.py `build_product`), compiled and planned like any `∂`.

For f(x1, …, xn) with results y1, …, ym (one, or a tuple):
- `vjp`: a body over (x1, …, xn, ȳ1, …, ȳm) answering the tuple (x̄1, …, x̄n) of the
  gradients of Σ_k ⟨ȳk, yk⟩: one reverse sweep (compiler/passes/derivative.py) seeded with
  the cotangents.
- `jvp`: a body over (x1, …, xn, ẋ1, …, ẋn) answering (y1, …, ym, ẏ1, …, ẏm): one forward
  sweep (compiler/passes/forward.py).
"""

from __future__ import annotations

from ..grammar.errors import CheckError
from ..grammar.source import Span
from . import ir
from .ops.derivative_rules import zeros_like
from .passes.derivative import Sweep
from .passes.forward import Forward
from .passes.share import share

#: The products an entry can be made for.
KINDS = ("vjp", "jvp")


def results(body: ir.Node, span: Span) -> tuple[ir.Node, ...]:
    """The results of a definition's inlined body: its tuple's items, or the body alone."""
    if not isinstance(body, ir.Tuple):
        return (body,)
    for item in body.items:
        if isinstance(item, ir.Tuple):
            raise CheckError("E326", "vjp and jvp take functions whose result is a tensor or "
                             "a tuple of tensors, but this one answers a tuple inside a tuple",
                             span)
    return body.items


def cotangent_names(count: int) -> tuple[str, ...]:
    """The names of the cotangent parameters of a vjp: one per result of the function."""
    return ("cotangent",) if count == 1 else tuple(f"cotangent{k + 1}" for k in range(count))


def vjp(body: ir.Node, params: tuple[str, ...], span: Span) -> tuple[ir.Node, tuple[str, ...]]:
    """(the vjp's body over Local leaves, the names of the cotangent parameters)."""
    ys = results(share(body), span)
    n = len(params)
    names = cotangent_names(len(ys))
    seeds = [(y, ir.Local(n + k, name, span)) for k, (y, name) in enumerate(zip(ys, names,
                                                                                 strict=True))]
    variables = [ir.Local(i, p, span) for i, p in enumerate(params)]
    grads = Sweep(span).run(seeds, variables)
    return ir.Tuple(tuple(share(g) for g in grads), span), names


def jvp(body: ir.Node, params: tuple[str, ...], span: Span) -> tuple[ir.Node, tuple[str, ...]]:
    """(the jvp's body over Local leaves, the names of the tangent parameters)."""
    ys = results(share(body), span)
    n = len(params)
    names = tuple(f"tangent_{p}" for p in params)
    sweep = Forward({ir.Local(i, p, span): ir.Local(n + i, names[i], span)
                     for i, p in enumerate(params)})
    outputs, tangents = sweep.run(ys)
    filled = tuple(t if t is not None else zeros_like(y)
                   for y, t in zip(outputs, tangents, strict=True))
    return ir.Tuple((*outputs, *filled), span), names
