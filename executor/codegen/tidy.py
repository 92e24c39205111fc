"""Last rewrites of a function's loop IR before it is printed: sizes nothing
reads dropped, and (uncompiled code) each array let go after its last reader."""

from __future__ import annotations

from .loops import (
    Assign,
    Delete,
    Return,
    Stmt,
    blocks,
    calls_vector_maths,
    exprs,
    mentions,
    statements,
)


def without_unread(body: list[Stmt], names: set[str]) -> list[Stmt]:
    """`body` without the assignments of `names` (input sizes) that nothing reads
    (uncompiled code pays for them)."""
    counts = mentions(body)
    return [s for s in body if not (isinstance(s, Assign) and len(s.targets) == 1
                                    and s.targets[0] in names and counts[s.targets[0]] == 1)]


def calls_vector_maths_in(body: list[Stmt]) -> bool:
    """Whether `body` calls vmath's exp, log or tanh anywhere."""
    return any(calls_vector_maths(e) for s in statements(body) for e in exprs(s))


def released(body: list[Stmt]) -> list[Stmt]:
    """Uncompiled code with each array it makes let go after its last reader (`del`), as
    compiled code and the host tier do: NumPy then reuses that memory for the next product
    instead of touching fresh pages (AO→MO at N = 40: four 20 MB intermediates per call,
    21 → 16 ms). Code with a block is left as it is (a value's last reader may run again)."""
    if any(blocks(s) for s in body):
        return body
    last: dict[str, int] = {}
    for number, stmt in enumerate(body):
        for name in mentions([stmt]):
            last[name] = number
    dropped: dict[int, list[str]] = {}
    for stmt in body:
        if isinstance(stmt, Assign) and len(stmt.targets) == 1 and _made(stmt.targets[0]) \
                and not isinstance(body[last[stmt.targets[0]]], Return):
            dropped.setdefault(last[stmt.targets[0]], []).append(stmt.targets[0])
    out: list[Stmt] = []
    for number, stmt in enumerate(body):
        out.append(stmt)
        if number in dropped:
            out.append(Delete(tuple(dropped[number])))
    return out


def _made(name: str) -> bool:
    """Whether `name` is a value or buffer the emitter made (`v3`, `b7`)."""
    return name[:1] in ("v", "b") and name[1:].isdigit()
