"""A large function in pieces: each run of its statements that keeps its values to itself and
holds a loop written into an internal LLVM function of its own (threads.py's `rows`, run on
the caller's thread, never inlined) and called where the run was.

Why: LLVM's loop passes (the vectoriser, the unroller, loop strength reduction) and its
register allocator take a time per loop that grows with the size of the function around the
loop, so one function of many nests costs more than the same nests as functions of their own.
Measured (2-core machine, LLVM's `-time-passes`): the circle classifier's step, 306 KiB of IR
with 70 loops, takes 1.1 s of LLVM; the transformer block's training step, 994 KiB with 324
loops, 7.7 s, its vectoriser ×8 and its unroller ×10 of the circle's for ×4.6 of its loops.
In pieces (52) the block's step takes 4.1–4.5 s of LLVM against 6.8–7.0 s whole, and the
QAOA network's function (1415 statements) 4.6–4.8 s against 4.9–6.1 s; the circle's (747
statements) took no less in pieces (0.99 s against 0.96 s) and its warm step 1–2% longer
(calls of each form interleaved in one process), so a function of its size stays whole;
the block's warm step took the same time in either form (medians ×0.99 and ×1.01), the
QAOA network's ×1.02.

Which runs: in a function of more than `LARGE` statements (the gain grows with the size), the
longest runs of consecutive statements, at any depth, that (a) assign no array (what the
function makes, it frees), (b) hold no `break` out of them, no `return`, no parallel nest and no
vector width's statement, (c) read only numbers and arrays from around them, and (d) assign no
local that the function reads outside them (but the index of another loop, which that loop sets
before reading it: threads.check's rule; a statement that does is left where it is, and the run
split there), each run holding a loop (a nest, a fill, a copy). A run is a nest of its own, or a
loop of one step around its statements. What it reads from around it is handed over as
threads.py's rows are (arrays as their data's address, shape and strides, numbers as bits); a
`raise` inside it writes its arguments to the function's own `results` and answers its number,
which the function then answers after freeing what it made. The choice is made from the loop IR
alone: the same program gives the same module in every process."""

from __future__ import annotations

from llvmlite import ir

from ..codegen.loops import (
    Break,
    Call,
    Do,
    Fmt,
    For,
    If,
    Return,
    Var,
    While,
    exprs,
    names,
    statements,
    whole,
)
from . import threads
from .runtime import I64
from .types import Array

#: Statements above which a function is outlined in pieces (the module's doc: the block's 1972
#: gain a third of their LLVM time). The circle classifier's 747 gain nothing in one module, but
#: in pieces its module compiles in two parts on two cores (parts.py): its cold start 1.66–1.85 s
#: whole against 1.49–1.57 s in parts (2-core machine under load, two runs each), its warm step
#: 1–2% longer (the module's doc).
LARGE = 600


def chosen(body: list, types: dict) -> dict[int, For]:
    """The runs of `body` to outline: by the id of each run's first statement, the nest that
    runs them (the nest itself, or a loop of one step around the run; its index typed in
    `types`)."""
    found = statements(body)
    if len(found) <= LARGE:
        return {}
    picked: dict[int, For] = {}
    uses = _uses(found)
    taken: set[int] = set()  # (the statements of the runs picked: none looked into again)

    def visit(block: list) -> None:
        for run in _runs(block, uses, types):
            if len(run) == 1 and isinstance(run[0], For):
                picked[id(run[0])] = run[0]
            elif any(_loops(s) for s in run):
                index = f"hb.run{len(picked)}"
                types[index] = "int64"
                picked[id(run[0])] = For(index, whole(1), list(run))
            else:
                continue
            taken.update(id(s) for s in run)
        for stmt in block:
            if id(stmt) in taken:
                continue
            if isinstance(stmt, (For, While)) and not (isinstance(stmt, For) and stmt.parallel):
                visit(stmt.body)
            elif isinstance(stmt, If):
                visit(stmt.body)
                visit(stmt.orelse)

    visit(body)
    return picked


def grouped(block: list, picked: dict[int, For]):
    """`block`'s statements, each run that `picked` outlines as its nest."""
    at = 0
    while at < len(block):
        nest = picked.get(id(block[at]))
        yield nest or block[at]
        at += 1 if nest is None or nest is block[at] else len(nest.body)


def _runs(block: list, uses: tuple[dict, dict], types: dict) -> list[list]:
    """The longest runs of `block`'s statements that may be outlined together (the module's
    rule: (a) to (d))."""
    runs, run = [], []
    for stmt in [*block, None]:
        if stmt is not None and _joins(stmt, types):
            run.append(stmt)
            continue
        while run:  # (statements whose values are read after the run: left where they are)
            kept = _kept(run, uses)
            if not kept:
                runs.append(run)
                break
            cut = run.index(kept[0])
            runs.extend(_runs(run[:cut], uses, types))
            run = run[cut + 1:]
        run = []
    return runs


def _joins(stmt, types: dict) -> bool:
    """Whether `stmt` may be in a run: it leaves nothing (`_closed`), assigns no array and
    reads nothing but numbers and arrays."""
    inside = statements([stmt])
    if not _closed([stmt], False) or (isinstance(stmt, For) and stmt.parallel):
        return False
    if any(isinstance(types.get(n), Array) for s in inside for n in threads._sets(s)):
        return False
    return all(isinstance(types.get(n), (str, Array)) for n in free([stmt]))


def _kept(run: list, uses: tuple[dict, dict]) -> list:
    """The statements of `run` that assign a local read outside the run (threads.check's rule:
    but the index of another loop, which that loop sets before reading it). `uses`: by local,
    the statements (ids) that read it and the loops that it is the index of."""
    within = {id(s) for s in statements(run)}
    readers, loops = uses

    def outside(name: str) -> bool:
        return bool(readers.get(name, set()) - within) and not loops.get(name, set()) - within

    return [stmt for stmt in run
            if any(outside(n) for s in statements([stmt]) for n in threads._sets(s))]


def _uses(found: list) -> tuple[dict, dict]:
    """By local, the statements of `found` (ids) that read it, and the loops it indexes."""
    readers: dict[str, set[int]] = {}
    loops: dict[str, set[int]] = {}
    for stmt in found:
        for name in threads._gets(stmt):
            readers.setdefault(name, set()).add(id(stmt))
        if isinstance(stmt, For):
            loops.setdefault(stmt.index, set()).add(id(stmt))
    return readers, loops


def _loops(stmt) -> bool:
    """Whether `stmt` is or makes a loop (a nest, a fill, a copy)."""
    match stmt:
        case For() | Do(expr=Fmt(template="{}.fill({})")):
            return True
        case Do(expr=Call(fn="K.copy_into" | "K.arranged_into")):
            return True
    return False


def _closed(block: list, in_while: bool) -> bool:
    """Whether `block` holds nothing that leaves it or that only its function may do: a
    `break` out of it, a `return`, a parallel nest, the vector width's statement."""
    for stmt in block:
        match stmt:
            case Break() if not in_while:
                return False
            case Return() | For(parallel=True) | Do(expr=Call(fn="K.wide_vectors")):
                return False
            case For(body=inner) if not _closed(inner, in_while):
                return False
            case While(body=inner) if not _closed(inner, True):
                return False
            case If(body=then, orelse=otherwise) if not (_closed(then, in_while)
                                                         and _closed(otherwise, in_while)):
                return False
    return True


def free(block: list) -> set[str]:
    """The locals `block` reads before it assigns them (in the order it runs, a value assigned
    in a branch or a loop counted as assigned only inside it): what it reads from around it."""
    found: set[str] = set()
    _scan(block, set(), found)
    return found


def _scan(block: list, defined: set[str], found: set[str]) -> None:
    for stmt in block:
        found.update({n for e in exprs(stmt) for n in names(e)} - defined)
        match stmt:
            case For(index=index, body=inner):
                _scan(inner, defined | {index}, found)
            case While(body=inner):
                _scan(inner, set(defined), found)
            case If(body=then, orelse=otherwise):
                _scan(then, set(defined), found)
                _scan(otherwise, set(defined), found)
            case _:
                found.update(threads._gets(stmt) - defined)
                defined.update(threads._sets(stmt))


def piece(lowering, loop: For) -> ir.Function:
    """`loop` written into a function of its own and called here (the module's doc)."""
    b = lowering.builder
    rows = lowering.cast(*lowering.value(loop.size), "int64")
    captured = [(name, *lowering.value(Var(name))) for name in sorted(free([loop]))]
    first = len(lowering.raises)
    outlined = threads._outlined(lowering, loop, captured, "hb_nest")
    outlined.attributes.add("noinline")
    answer = b.call(outlined, [threads._packed(lowering, captured),
                               lowering.function.args[1], ir.Constant(I64, 0), rows])
    if len(lowering.raises) > first:
        failed = lowering.function.append_basic_block("nest.raised")
        fine = lowering.function.append_basic_block("nest.fine")
        b.cbranch(b.icmp_signed("!=", answer, ir.Constant(I64, 0)), failed, fine)
        b.position_at_end(failed)
        lowering.release_unless(set(), [])
        b.ret(answer)
        b.position_at_end(fine)
    return outlined
