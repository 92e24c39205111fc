"""The compiler's passes, as data: every pass named, with the IR layer it takes and the one it
gives (compiler/ir/verify.py's LAYERS), in the pipelines the driver runs. `run` applies a
pipeline: after each pass HILBERT_DUMP=name prints the IR, and HILBERT_VERIFY checks it
against the layer the pass gives (the test suite sets it). The passes themselves are the
modules of this folder, one pass each (docs/architecture.md lists them in pipeline order)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .. import ir
from ..debug import dump
from ..ir import verify
from .fuse import fuse
from .hoist import hoist_invariants
from .masks import eliminate_masks, split_windowed_dots
from .share import share


@dataclass(frozen=True)
class Pass:
    """One pass: its name (what HILBERT_DUMP names), what it does to IR, and what it ensures."""

    name: str
    run: Callable[[ir.Node], ir.Node]
    ensures: str


PASSES: dict[str, Pass] = {p.name: p for p in [
    Pass("share", share, "structurally equal nodes are one object (twin loops one loop)"),
    Pass("masks", eliminate_masks, "einsums over index masks read shifted or taken operands"),
    Pass("hoist", hoist_invariants, "what a loop computes from state it never changes is "
         "computed once, before it"),
    Pass("fuse", fuse, "no einsum reads a single-use einsum (where merging costs no more)"),
    Pass("windows", split_windowed_dots, "a convolution's dot with its kernel is an entrywise "
         "product summed, one pass over the windows"),
]}

#: (pass, layer it takes, layer it gives), in order. SHARE, MASK and OPTIMISE make an entry
#: point's IR once (compiler/entry.py): SHARE's result is what the shape rules are checked
#: on, MASK's what the reference executor runs, OPTIMISE's what the planned executors run.
#: AGAIN optimises once more for one signature, after derivatives' polymorphic ops are written
#: as einsums (compiler/driver.py); GENERATE gives what generated code runs
#: (executor/numba/tiers.py, generated_ir).
Pipeline = tuple[tuple[str, str, str], ...]
SHARE: Pipeline = (("share", "entry", "entry"),)
MASK: Pipeline = (("masks", "entry", "masked"), ("share", "masked", "masked"))
OPTIMISE: Pipeline = (("hoist", "masked", "optimised"), ("fuse", "optimised", "optimised"))
AGAIN: Pipeline = tuple((name, "specialised", "specialised")
                        for name in ("masks", "share", "hoist", "fuse"))
GENERATE: Pipeline = (("windows", "specialised", "generated"),)


def run(pipeline: Pipeline, node: ir.Node) -> ir.Node:
    """`node` through every pass of `pipeline`, each result dumped and (under HILBERT_VERIFY)
    verified against the layer its pass gives."""
    check = verify.enabled()
    for name, _takes, gives in pipeline:
        node = PASSES[name].run(node)
        dump(name, node)
        if check:
            verify.verify(node, gives)
    return node
