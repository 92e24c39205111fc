"""Whether a fused loop nest runs its rows on several threads: the planner's rule, from what
the nest does per entry and how many threads its function may use.

The plan measures each nest from its fusion group (`measure`: its shape, the statements and
kernel calls its body makes per entry, whether a value is carried across its rows) and asks
`parallel`; the answer is the nest's unit's `parallel` in the plan's schedule (schedule.py),
and the code generator writes the loops as it says. A nest is worth threads when its work,
entries times a rough cost per entry, pays for waking them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .. import ir
from ..ops.loop_code import kernel_calls
from ..ops.primitives import BY_OP
from . import fusion

Shape = tuple[int, ...]

#: A nest runs its outer loop on several threads from this much work (entries × cost per
#: entry, counting a statement of the body as 1 and a call of a kernel, such as K.exp, as
#: CALL_COST): about half a millisecond on one core, against the tens of microseconds that
#: waking sleeping threads may take.
PARALLEL_WORK = 1 << 20
CALL_COST = 8
#: The statements a value of these forms needs before its own (executor/codegen/entrywise.py):
#: a shift's position; a take's position, its index and its test.
BEFORE = {"shifted": 1, "taken": 3}
#: How many loops deep Python compiles a function (its statically nested `for`, `while` and
#: `with` blocks): a nest deeper than this runs its outer axes as one flat loop
#: (executor/codegen/writer.py).
NESTED_BLOCKS = 20
#: A division split for its rewrite (executor/codegen/division.py): numerator, divisor and
#: quotient, each a statement.
DIVISION = 3


@dataclass(frozen=True, slots=True)
class NestWork:
    """What decides a nest's threads: its `shape`; whether it `carries` a value across its
    rows (a total started before its outer loop, or one read after it: its rows are then not
    independent); whether its outer axes run as one `flat` loop (a nest deeper than Python's
    blocks allow); and its body per entry: `statements`, and `calls` of hilbert's kernels
    among them (a sum's K.add_any_order not counted: LLVM inlines it)."""

    shape: Shape
    carries: bool
    flat: bool
    statements: int
    calls: int

    @property
    def work(self) -> int:
        """Entries × cost per entry."""
        return math.prod(self.shape) * (self.statements + CALL_COST * self.calls)


def parallel(nest: NestWork, threads: int) -> bool:
    """Whether `nest` runs its outer loop on `threads` threads (1: its function's nests run
    serially): its rows are independent, there are at least two of them, and its work pays.

    >>> parallel(NestWork((4096, 512), carries=False, flat=False, statements=3, calls=1), 4)
    True
    >>> parallel(NestWork((64, 48), carries=False, flat=False, statements=3, calls=1), 4)
    False
    """
    if threads < 2 or nest.carries or nest.flat or not nest.shape or nest.shape[0] < 2:
        return False
    return nest.work >= PARALLEL_WORK


def flat(rank: int, depth: int) -> int:
    """How many outer axes a nest of `rank` loops, inside `depth` loops, runs as one flat
    loop (0: none)."""
    room = NESTED_BLOCKS - depth
    return 0 if rank <= room else min(rank, rank - room + 1)


def measure(group: fusion.Group, shapes: dict, recomputed: set[ir.Node], carries: bool,
            flat: bool, divides: bool) -> NestWork:
    """The work of the nest computing `group` (in a scope of `shapes`, where the values
    `recomputed` are computed again by each reader). Per entry it makes a statement for each
    member and reduction, for each value it recomputes at its own index (once: the readers
    share it) and those its forms need first (BEFORE; a division's, DIVISION, where the code
    generator splits it: `divides`), and the kernel calls of its ops' code (loop_code.py)
    and of its reductions' combining ops, a recomputed value read elsewhere and a value of
    the index alone counted at every read. `carries`, `flat`: as NestWork."""
    count = _Count(group, shapes, recomputed, divides)
    for node in (*group.members, *group.tails):
        count.value(node, True)
        count.statements += 1
    return NestWork(tuple(shapes[group.space]), carries, flat, count.statements, count.calls)


class _Count:
    def __init__(self, group: fusion.Group, shapes: dict, recomputed: set[ir.Node],
                 divides: bool):
        self.group, self.shapes, self.recomputed = group, shapes, recomputed
        self.divides = divides
        self.statements = self.calls = 0
        self.shared: set[ir.Node] = set()  # recomputed values already held for this entry

    def value(self, node: ir.Node, own: bool) -> None:
        """Count computing `node` (at the nest's own index where `own`)."""
        if fusion.is_ones(node):
            return
        self.own_work(node)
        for kid, same in fusion.reads(node, self.shapes):
            self.read(kid, own and same)

    def own_work(self, node: ir.Node) -> None:
        if not isinstance(node, ir.Prim) or fusion.is_square(node):
            return
        row = BY_OP[node.op]
        if row.role == "tail":
            assert row.combine is not None
            if row.combine != "add":  # (a sum's K.add_any_order is inlined)
                code = BY_OP[row.combine].code
                self.calls += kernel_calls(code) if code is not None else 0
            return
        if node.op == "div":  # (a true division, where it is not split: no call)
            self.statements += DIVISION if self.divides else 0
            return
        self.statements += BEFORE.get(row.form or "", 0)
        self.calls += kernel_calls(row.code) if row.code is not None else 0

    def read(self, kid: ir.Node, own: bool) -> None:
        if kid in self.group.members and own:
            return  # (a local of this entry)
        if fusion.is_generator(kid, self.shapes):
            self.value(kid, own)
        elif kid in self.recomputed and kid not in self.group.members:
            if not own:
                self.value(kid, False)
            elif kid not in self.shared:
                self.shared.add(kid)
                self.statements += 1
                self.value(kid, True)
