"""Consecutive loop nests over the same rows run as one loop over the rows.

A layer norm is three nests over an n×p array: the row sums, then the centred values and their
squares' sums, then the division. Each reads the whole array from memory. When every value one
nest hands the next is written and read at the row being computed (`b[i0, …]`), the rows can
be computed one after another instead, each nest's work on a row done before the next row
starts: the row stays in the cache between the nests, and memory is read once. A softmax's
maximum, exponentials and division fuse the same way.

The decision and the rewrite are apart (emitter.Emitter.function runs both, before the
function is printed): `decide` reads the loop IR and gives the schedule's record of which nests
join (compiler/plan/schedule.py: RowLoop, the units' `rows`), and `join` performs exactly that
record. The outer loops of fused nests are the `For` statements that name their `kernels` (the
nests' unit numbers); a merged loop names them all. Two of them in one block, over the same
size, with only new buffers allocated between them (`b = K.empty(…)`, a sum's stack
`K.partials(…)`: moved up), are merged when

- neither carries a number across its rows (a local its body sets that a statement outside it
  names: a total's start before the loop, its use after it);
- every array either writes is written at `i0` first; every array written in one and read
  in the other is read at `i0` first too; and no other array the two access may be a view of
  it (views are followed through every assignment in the function: a slice, a reshape, a
  transpose, `a if c else b`); an array written and named whole (passed to a call) stops the
  merge.

The merged loop is a prange when any of the nests was one (their rows are independent).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

from ...compiler.plan.schedule import RowLoop
from .loops import (
    Assign,
    Call,
    Expr,
    For,
    If,
    Stmt,
    Store,
    Sub,
    Var,
    While,
    aliases,
    assigned,
    exprs,
    kids,
    mentions,
    statements,
    walk,
)

#: The names of a nest's row scratch arrays (division.py): private to the row being computed,
#: but one array reused by every row, so a nest using one never joins a prange.
SCRATCH = "row"


def is_scratch(name: str) -> bool:
    return name.startswith(SCRATCH) and name[len(SCRATCH):].isdigit()


def decide(body: list[Stmt]) -> tuple[RowLoop, ...]:
    """Which runs of row-wise nests of `body` run as one loop over their rows (see the
    module's doc), in the order the code runs them: the schedule's record (Unit.rows), which
    `join` performs. The nests' own threads are decided already (their loops say so)."""
    every = statements(body)
    if sum(isinstance(s, For) and bool(s.kernels) for s in every) < 2:
        return ()
    # (a loop's index anywhere is an index wherever it is set: sums.py sets a nest's innermost
    # index from the start of a block, `i1 = lo + j`, carrying nothing across rows)
    indices = {s.index for s in every if isinstance(s, For)}
    found: list[RowLoop] = []
    _decide(body, _Facts(mentions(body), _parents(body), indices), found)
    return tuple(found)


@dataclass(frozen=True)
class _Facts:
    """What every merge in a function reads: each local's mentions, each array's possible
    parents (views), and the loop indices."""

    counts: Counter
    parents: dict[str, set[str]]
    indices: set[str]


def _decide(body: list[Stmt], facts: _Facts, found: list[RowLoop]) -> None:
    """The row loops of `body` and of the blocks inside it, appended to `found` in order."""
    i = 0
    while i < len(body):
        head = body[i]
        if not (isinstance(head, For) and head.kernels):
            for block in _blocks(head):
                _decide(block, facts, found)
            i += 1
            continue
        i += 1
        if _carries(head.body, facts.counts, facts.indices):
            continue
        bodies, parallel, kernels = [head.body], head.parallel, head.kernels
        while True:
            k = i
            while k < len(body) and _is_alloc(body[k]):
                k += 1
            nxt = body[k] if k < len(body) else None
            if not (isinstance(nxt, For) and nxt.kernels and nxt.size == head.size):
                break
            if _carries(nxt.body, facts.counts, facts.indices) or not _row_local(
                    [s for b in bodies for s in b], nxt.body, facts.parents):
                break
            if (parallel or nxt.parallel) and any(_writes_scratch(b) for b in [*bodies, nxt.body]):
                break  # (one scratch row shared by threads)
            bodies.append(nxt.body)
            kernels += nxt.kernels
            parallel = parallel or nxt.parallel
            i = k + 1
        if len(bodies) > 1:
            found.append(RowLoop(kernels, parallel))


def _blocks(stmt: Stmt) -> list[list[Stmt]]:
    """The blocks of statements inside `stmt`."""
    match stmt:
        case For() | While():
            return [stmt.body]
        case If():
            return [stmt.body, stmt.orelse]
    return []


def join(body: list[Stmt], loops: tuple[RowLoop, ...]) -> list[Stmt]:
    """`body` with the nests of each of `loops` (`decide`) merged into one loop over their
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


def _writes_scratch(body: list[Stmt]) -> bool:
    """Whether `body` writes a row scratch array."""
    return any(isinstance(s, Store) and is_scratch(_base(s.target)) for s in statements(body))


def _base(sub: Sub) -> str:
    return sub.base.name if isinstance(sub.base, Var) else ""


def _carries(body: list[Stmt], counts: Counter, indices: set[str]) -> bool:
    """Whether a nest carries a scalar across its rows: a local its body sets (other than a
    loop index) that statements outside it also name (a total's start before the loop, its use
    after it, or a later nest reading it)."""
    here = mentions(body)
    for stmt in statements(body):
        name = assigned(stmt)
        if name is not None and name not in indices and counts[name] > here[name]:
            return True
    return False


def _parents(body: list[Stmt]) -> dict[str, set[str]]:
    """For each local assigned in `body`, the locals whose arrays it may be a view of."""
    found: dict[str, set[str]] = {}
    for stmt in statements(body):
        if isinstance(stmt, Assign):
            for target, value in zip(stmt.targets, stmt.values, strict=True):
                found.setdefault(target, set()).update(aliases(value))
    return found


def _roots(name: str, parents: dict[str, set[str]]) -> set[str]:
    """`name` and every name it may be a view of."""
    seen, stack = set(), [name]
    while stack:
        n = stack.pop()
        if n not in seen:
            seen.add(n)
            stack.extend(parents.get(n, ()))
    return seen


#: The index of the row being computed: a nest's outer loop (entrywise.emit_group).
ROW = Var("i0")


def _uses(body: list[Stmt]) -> tuple[dict[str, set[Expr]], dict[str, set[Expr]]]:
    """The arrays written and read in `body`, each with the first index of every access."""
    writes: dict[str, set[Expr]] = {}
    reads: dict[str, set[Expr]] = {}
    for stmt in statements(body):
        values = exprs(stmt)
        if isinstance(stmt, Store):
            first = stmt.target.index[0]
            writes.setdefault(_base(stmt.target), set()).add(first)
            if stmt.add:
                reads.setdefault(_base(stmt.target), set()).add(first)
            values = (*stmt.target.index, stmt.value)
        for value in values:
            for node in walk(value):
                if isinstance(node, Sub) and isinstance(node.base, Var):
                    reads.setdefault(node.base.name, set()).add(node.index[0])
    for name in [n for n in (*writes, *reads) if is_scratch(n)]:
        writes.pop(name, None)  # a row's own scratch (division.py): filled and read again
        reads.pop(name, None)   # within the row
    return writes, reads


def _row_local(first: list[Stmt], second: list[Stmt], parents: dict[str, set[str]]) -> bool:
    """Whether `second` may run row by row interleaved with `first` (see the module's doc)."""
    w1, r1 = _uses(first)
    w2, r2 = _uses(second)
    if any(index != {ROW} for index in (*w1.values(), *w2.values())):
        return False  # (a row's results go elsewhere: a sum into other rows, another layout)
    written = set(w1) | set(w2)
    accessed = written | set(r1) | set(r2)
    whole = _named_whole(first + second)
    for name in written:
        if name in whole:
            return False
        shared = name in (set(w1) & (set(w2) | set(r2))) or name in (set(w2) & set(r1))
        if shared:
            indices = w1.get(name, set()) | w2.get(name, set()) | r1.get(name, set()) \
                | r2.get(name, set())
            if indices != {ROW}:
                return False
        roots = _roots(name, parents)
        for other in accessed - {name}:
            if roots & _roots(other, parents):
                return False
    return True


def _named_whole(body: list[Stmt]) -> set[str]:
    """The locals `body` names other than as the array of an element or slice read."""
    found: set[str] = set()
    for stmt in statements(body):
        if isinstance(stmt, Assign):
            found.update(stmt.targets)
        elif assigned(stmt) is not None:
            found.add(assigned(stmt))
        for value in exprs(stmt):
            stack = [value]
            while stack:
                node = stack.pop()
                if isinstance(node, Sub) and isinstance(node.base, Var):
                    stack.extend(node.index)
                    continue
                if isinstance(node, Var):
                    found.add(node.name)
                stack.extend(kids(node))
    return found
