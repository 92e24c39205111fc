"""Builds an entry point: a definition inlined, shared, fused and masked into one DAG."""

from __future__ import annotations

from dataclasses import dataclass, field

from hilbert.compiler import ir, passes
from hilbert.compiler.debug import dump
from hilbert.compiler.ir import verify
from hilbert.compiler.passes.inline import Inliner
from hilbert.compiler.passes.resolve import Definition
from hilbert.compiler.passes.tuples import check_settled


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


def build_entry(d: Definition, inliner: Inliner) -> Entry:
    """Requires checked definitions; ensures the entry's IR, inlined and optimised."""
    params = {ir.Local(i, p, d.span): ir.Param(i, p, d.span) for i, p in enumerate(d.params)}
    body = ir.substitute(inliner.body(d.key), params)
    check_settled(body)
    dump("inline", body)
    if verify.enabled():
        verify.verify(body, "entry")
    body = passes.run(passes.SHARE, body)                     # equal work done once
    masked = passes.run(passes.MASK, body)                    # [s = t + j] masks -> shifts
    fused = passes.run(passes.OPTIMISE, masked)  # invariants before loops; einsum chains -> one
    return Entry(d.name, d.params, body, masked, fused, d)


