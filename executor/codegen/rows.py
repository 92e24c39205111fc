"""Consecutive loop nests over the same rows run as one loop over the rows, as the plan says.

Which nests join is the plan's decision (compiler/plan/row_loops.py: BlockPlan.rows, made from
the fusion groups before any code is written); the emitter numbers each run's nests as it
writes them (the schedule's RowLoop records) and `join` performs exactly that record here, on
the function's loop IR: the outer loops of the nests (the `For` statements that name their
`kernels`, the nests' unit numbers) become one loop whose body is theirs in turn, the
buffers allocated between them (`b = K.empty(…)`, a sum's stack `K.partials(…)`) made before
it. The merged loop is a prange when the record says it runs on threads.
"""

from __future__ import annotations

from dataclasses import replace

from ...compiler.plan.schedule import RowLoop
from .loops import Assign, Call, For, If, Stmt, While

#: The names of a nest's row scratch arrays (division.py): private to the row being computed,
#: but one array reused by every row, so a nest on threads never writes one (the plan puts a
#: nest whose row loop runs on threads on threads itself: row_loops.py).
SCRATCH = "row"


def is_scratch(name: str) -> bool:
    return name.startswith(SCRATCH) and name[len(SCRATCH):].isdigit()


def join(body: list[Stmt], loops: tuple[RowLoop, ...]) -> list[Stmt]:
    """`body` with the nests of each of `loops` (the plan's, numbered) merged into one loop over their
    rows, a prange when the loop runs on threads, the buffers allocated between them made
    before it. Performs the decision as it is: it decides nothing."""
    return _joined(body, {loop.kernels[0]: loop for loop in loops}) if loops else body


def _joined(body: list[Stmt], heads: dict[int, RowLoop]) -> list[Stmt]:
    out: list[Stmt] = []
    i = 0
    while i < len(body):
        head = body[i]
        loop = heads.get(head.kernels[0]) if isinstance(head, For) and head.kernels else None
        if loop is None:
            out.append(_inside(head, heads))
            i += 1
            continue
        bodies, rest = [head.body], loop.kernels[len(head.kernels):]
        i += 1
        while rest:
            while _is_alloc(body[i]):
                out.append(body[i])
                i += 1
            nxt = body[i]
            assert isinstance(nxt, For) and nxt.kernels == rest[:len(nxt.kernels)], \
                f"code generation: the nests of row loop {loop.kernels} are not side by side"
            bodies.append(nxt.body)
            rest = rest[len(nxt.kernels):]
            i += 1
        out.append(For(head.index, head.size, [s for b in bodies for s in b], loop.parallel,
                       loop.kernels))
    return out


def _inside(stmt: Stmt, heads: dict[int, RowLoop]) -> Stmt:
    """`stmt` with the blocks inside it rewritten too (a nest's own loops hold no nest)."""
    match stmt:
        case For(kernels=()) | While():
            return replace(stmt, body=_joined(stmt.body, heads))
        case If():
            return replace(stmt, body=_joined(stmt.body, heads),
                           orelse=_joined(stmt.orelse, heads))
    return stmt


#: The kernels that make a new array (a buffer; a counted tensor's float64 buffer in float32
#: code, emitter.py; a long sum's stack of partial sums: sums.py).
_MAKERS = ("K.empty", "K.counted_empty", "K.partials")


def _is_alloc(stmt: Stmt) -> bool:
    return (isinstance(stmt, Assign) and len(stmt.targets) == 1
            and isinstance(stmt.values[0], Call) and stmt.values[0].fn in _MAKERS)
