"""Builds an entry point: a definition inlined, shared, fused and masked into one DAG."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from . import ir, passes, products
from .debug import dump
from .ir import verify
from .passes.axes import DeclaredValue, declared_values
from .passes.inline import Inliner
from .passes.resolve import Definition
from .passes.tuples import check_settled


@dataclass(frozen=True, slots=True)
class Entry:
    """A callable definition, inlined: `body` is IR over Param(0…n−1) as written (shape rules
    are checked on it), `masked` the same with index masks read as shifts (what the reference
    executor runs) and `fused` that after fusion (what planned executors run)."""

    name: str
    params: tuple[str, ...]
    body: ir.Node
    masked: ir.Node
    fused: ir.Node
    definition: Definition = field(compare=False)
    kept_as: str = field(default="", compare=False)  # its name on disk (compiler/kept.py), if kept
    #: the values of declared axes whose sizes a call checks (compiler/passes/axes.py, E331)
    declared: tuple[DeclaredValue, ...] = field(default=(), compare=False)


def build_entry(d: Definition, inliner: Inliner) -> Entry:
    """Requires checked definitions; ensures the entry's IR, inlined and optimised."""
    inlined = inliner.body(d.key)
    check_settled(inlined)
    return _finished(d, d.name, d.params, inlined, declared_values(d, inliner))


def build_product(d: Definition, inliner: Inliner, kind: str) -> Entry:
    """The entry of the vjp or jvp (`kind`) of definition `d` (compiler/products.py): its
    parameters are d's followed by the cotangents of its results (vjp) or the tangents of its
    parameters (jvp)."""
    inlined = inliner.body(d.key)
    check_settled(inlined)
    make = products.vjp if kind == "vjp" else products.jvp
    body, extra = make(inlined, d.params, d.span)
    return _finished(d, f"{kind} of {d.name}", (*d.params, *extra), body)


def _finished(d: Definition, name: str, names: tuple[str, ...], inlined: ir.Node,
              declared: tuple[DeclaredValue, ...] = ()) -> Entry:
    """The entry `name` over parameters `names` whose inlined body (over Local, its tuples
    settled) is `inlined`: shared, masked and optimised."""
    params = {ir.Local(i, p, d.span): ir.Param(i, p, d.span) for i, p in enumerate(names)}
    body = ir.substitute(inlined, params)
    declared = tuple(replace(v, node=ir.substitute(v.node, params)) for v in declared)
    dump("inline", body)
    if verify.enabled():
        verify.verify(body, "entry")
    body = passes.run(passes.SHARE, body)                     # equal work done once
    masked = passes.run(passes.MASK, body)                    # [s = t + j] masks -> shifts
    fused = passes.run(passes.OPTIMISE, masked)  # invariants before loops; einsum chains -> one
    return Entry(name, names, body, masked, fused, d, declared=declared)


