"""Long sums in loop nests added pairwise: rounding that grows as log n, as NumPy's does.

A nest sums into a local with `K.add_any_order`, which LLVM vectorises as a partial sum per
vector lane; each lane still adds its n / lanes entries one after another, so the error of
a sum of n entries grows as n: the mean of 10⁶ copies of 1 + 8196·eps was 8.6e-13 off
(NumPy's own test), where NumPy's pairwise sum and the host tier are 5e-16 off. Here a sum
whose loops cover more than BLOCK entries is cut into blocks: each block summed in any order
as before (vector lanes, as fast), its sum then pushed onto a stack of partial sums that
executor/numba/pairwise.py's rule combines as a binary counter carries (two groups of equal
size at a time: `pushed`, written out in the loop IR), and the total read off the stack after
the sum's loops.
The sum is then added along a tree of depth log2(n / BLOCK) above blocks of BLOCK entries:
the same mean is 7e-16 off.

- A sum over the innermost axis (a row sum, a vector's total, a layer norm's mean over a long
  row) of more than BLOCK entries runs that loop in blocks: `for ib in range(…)`, `for j in
  range(min(BLOCK, n − lo))`, the nest's index `i = lo + j` (rows.py takes a name that is a
  loop's index anywhere for an index, not a number carried), the block's sum pushed after it.
- A sum over several axes (a matrix's total) whose innermost axis is short pushes what it has
  gathered once that passes BLOCK entries, after the innermost loop.
- A sum kept in an array over loop 0 (column sums: `out[j] += x[i, j]`) adds into a float64
  array of out's shape instead, pushed whole (a stack of such arrays, one per level of the
  counter: log2 of loop 0's length) once each entry has gathered BLOCK, and out written from
  the stack after loop 0. NumPy's own column sums add row after row (O(n · eps)); float32
  code's added in float32 into out.

The stack (64 float64 numbers) is made once before the nest (before the enclosing loop, in a
loop's body); a nest whose rows run on threads has one per row, made before it as one array
(no allocation inside a threaded loop). Only a sum's own numbers are blocked: every other
value of the nest is computed at the same entries, in the same order. Sums of BLOCK entries
or fewer, maxima and minima (exact in any order) are as they were, and so are float32 code's sums kept in a local,
which add in float64 (`pairwise_locals`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from . import rows
from .loops import (
    ACCUMULATOR,
    Assign,
    Break,
    Do,
    Expr,
    Fmt,
    If,
    Stmt,
    Store,
    Sub,
    Update,
    Var,
    While,
    call,
    fmt,
    number,
    product,
    sizes,
    whole,
)

#: Entries a block sums in any order (in vector lanes) before its sum joins the pairwise
#: combination. Its lanes add BLOCK / lanes entries each, one after another: the worst case
#: (10⁶ copies of one number, NumPy's test and six others) was 1.1, 2.2, 3.2, 4.6 and 11.4 eps
#: off at blocks of 256 to 4096, NumPy's own 2.1; the time of a 10⁶-entry sum the same from
#: 256 to 4096, and a block's push is a few instructions.
BLOCK = 1024
#: Levels of the binary counter of pushed block sums (the room generated code asks
#: `K.partials` for, executor/numba/pairwise.py): room for 2⁶⁴ pushed sums.
LEVELS = 64


@dataclass(frozen=True)
class Long:
    """A long sum of a nest: its local `acc`, set before loop `depth` and read after it."""

    acc: str
    depth: int


@dataclass(frozen=True)
class Pairwise:
    """A long sum added pairwise: its local `acc`, its stack of partial sums, how many it
    holds, and (a sum over several loops whose innermost loop is not blocked) how many
    entries `acc` holds since its last push. `row`: in a nest whose rows run on threads, the
    outer index, whose row of a stack per row this sum's is (None: one stack)."""

    acc: str
    depth: int
    stack: str
    count: str
    filled: str
    row: Var | None = None

    def level(self, level: Var) -> Sub:
        """The stack's entry at `level` (in this row's stack, when there is one per row)."""
        return Sub(Var(self.stack), (level,) if self.row is None else (self.row, level))


def pairwise_locals(em) -> bool:
    """Whether long sums kept in a local are added pairwise: in compiled float64 code. Float32
    code's locals sum in float64 (loops.ACCUMULATOR), 2²⁹ times finer than its data: a sum of
    10⁶ float32 numbers is off by about 1e-10 before it is rounded once, far below float32's
    eps, so its blocks would buy nothing (and cost 3–5% of an in-cache float32 sum)."""
    return not em.host and em.dtype == "float64"


def long(acc: str, depth: int, shape: tuple[int, ...]) -> Long | None:
    """The sum into `acc` over the axes of `shape` from `depth` on, when they hold more than
    BLOCK entries (the signature's sizes: code for other sizes is generated for those)."""
    return Long(acc, depth) if math.prod(shape[depth:]) > BLOCK else None


def blocked(em, shape: tuple[int, ...]) -> bool:
    """Whether a nest of `shape` with long sums runs its innermost loop in blocks: the axis is
    long, and there is room for two more loops (the blocks', the push's: the nest not flat)."""
    return bool(shape) and shape[-1] > BLOCK and em.out.merged(len(shape) + 2) == 0


def arrange(em, found: list[Long], before: list, after: list, dims: tuple[Expr, ...],
            inner: bool, row: Var | None) -> list[Pairwise]:
    """The long sums added pairwise: each one's count started before its loop and its total
    read first after it; where the innermost loop is not blocked (`inner` False: a sum over
    several loops), a push after that loop once BLOCK entries are gathered. `row`: the outer
    index of a nest whose rows run on threads (a stack per row), else None."""
    last = len(dims) - 1
    if em.out.merged(len(dims) + 1):
        return []  # (a flat nest: no room for the push's loop, after loops it does not open)
    # (one stack for a serial nest is private to the row being summed: a row scratch array
    # to rows.py, which then runs the nest row by row with its neighbours, but never on
    # threads; a nest on threads has a stack per row, written at its row)
    sums = [Pairwise(f.acc, f.depth, em.fresh(rows.SCRATCH if row is None else "stack"),
                     em.fresh("count"), em.fresh("filled"), row) for f in found]
    for s in sums:
        before[s.depth].append(Assign((s.count,), (whole(0),)))
        after[s.depth][:0] = _total(em, s)
        if inner or s.depth == last:
            continue
        before[s.depth].append(Assign((s.filled,), (whole(0),)))
        after[last] += [Update(s.filled, "+=", dims[last]),
                        If(Fmt(f"{{}} >= {BLOCK}", (Var(s.filled),)),
                           [*pushed(em, s), Assign((s.filled,), (whole(0),))])]
    return sums


def stacks(em, sums: list[Pairwise], dims: tuple[Expr, ...]) -> None:
    """Make each sum's stack, once, before the nest (before the loop whose body it is in):
    LEVELS numbers, or in a nest whose rows run on threads one stack per row, as many levels
    as a row's sum can push (`K.levels`: a few, 32 bytes a row of 4096)."""
    for s in sums:
        if s.row is None:
            room: Expr = whole(LEVELS)
        else:
            pushes = Fmt(f"{{}} // {BLOCK} + 1", (product(list(dims[s.depth:])),))
            room = sizes((dims[0], call("K.levels", pushes)))
        made = Assign((s.stack,), (call("K.partials", room),))
        if em.frame.hoist is not None:
            em.frame.hoist.append(made)
        else:
            em.out.add(made)


def write_blocked(em, sums: list[Pairwise], index: Var, size: Expr, body: list[Stmt],
                  kernels: tuple[int, ...]) -> None:
    """The innermost loop over `index` (of `size` entries) in blocks of BLOCK, each block's
    sums pushed after it. `kernels`: the nest's number, when this is its outer loop."""
    block, low, step = (em.fresh(p) for p in ("ib", "lo", "j"))
    em.out.open_for(block, Fmt(f"({{}} + {BLOCK - 1}) // {BLOCK}", (size,)), kernels=kernels)
    em.out.add(Assign((low,), (Fmt(f"{{}} * {BLOCK}", (Var(block),)),)))
    # (from 0, the index added: LLVM vectorises the sum of `for j in range(m)` and not that of
    # `for i in range(lo, hi)`, which Numba lowers so that it stays scalar, 7–28× slower)
    em.out.open_for(step, call("min", whole(BLOCK), Fmt("{} - {}", (size, Var(low)))))
    em.out.add(Assign((index.name,), (Fmt("{} + {}", (Var(low), Var(step))),)), *body)
    em.out.close()
    for s in sums:
        em.out.add(*pushed(em, s))
    em.out.close()


def into_array(em, out: Var, kept: list[int], shape: tuple[int, ...], dims: tuple[Expr, ...],
               index: list[Var], x: Expr, before: list, after: list) -> Store | None:
    """A long sum kept in an array (over loop 0 and any other axes but `kept`: column sums)
    added pairwise: the nest adds into a float64 `part` of out's shape, pushed whole after
    the row of loop 0 that brings it past BLOCK entries (`K.push_rows`), and out written from
    the stack after loop 0 (`K.total_rows`). The statement the nest adds with, or None where
    the sum is short, or not over loop 0, or the nest flat: it adds into out as before."""
    reduced = [k for k in range(len(shape)) if k not in kept]
    if (em.host or 0 in kept or math.prod(shape[k] for k in reduced) <= BLOCK
            or em.out.merged(len(shape))):
        return None
    part, stack, count, filled = (em.fresh(p) for p in ("part", "stack", "count", "filled"))
    kept_dims = tuple(dims[k] for k in kept)
    made = [Assign((part,), (call("K.partials", sizes(kept_dims)),)),
            Assign((stack,), (call("K.partials", sizes((call("K.levels", dims[0]),
                                                         *kept_dims))),))]
    if em.frame.hoist is not None:
        em.frame.hoist.extend(made)
    else:
        em.out.add(*made)
    before[0] += [Do(fmt("{}.fill({})", Var(part), number(0.0, em.dtype))), Assign((count,), (whole(0),)),
                  Assign((filled,), (whole(0),))]
    after[1] += [Update(filled, "+=", product([dims[k] for k in reduced if k])),
                 If(Fmt(f"{{}} >= {BLOCK}", (Var(filled),)), [
                     Assign((count,), (call("K.push_rows", Var(stack), Var(count), Var(part)),)),
                     Assign((filled,), (whole(0),))])]
    after[0].insert(0, Do(call("K.total_rows", Var(stack), Var(count), Var(part), out)))
    return Store(Sub(Var(part), tuple(index[k] for k in kept)), x, add=True)


def pushed(em, s: Pairwise) -> list[Stmt]:
    """`acc` pushed onto the stack (what pairwise.push does, written out: a call, with the
    stack passed and counted, cost a fused layer norm over rows of 4096 13%), then started
    again (at 0.0 typed loops.ACCUMULATOR, float64 in code of every dtype): while the groups below
    it are of its size, they are added to it, older first."""
    carried, level = em.fresh("c"), em.fresh("l")
    acc = Var(s.acc)
    return [Assign((carried, level), (Var(s.count), whole(0))),
            While([If(Fmt("{} % 2 == 0", (Var(carried),)), [Break()]),
                   Assign((s.acc,), (Fmt("{} + {}", (s.level(Var(level)), acc)),)),
                   Update(level, "+=", whole(1)),
                   Assign((carried,), (Fmt("{} // 2", (Var(carried),)),))]),
            Store(s.level(Var(level)), acc),
            Update(s.count, "+=", whole(1)),
            Assign((s.acc,), (number(0.0, ACCUMULATOR),))]


def _total(em, s: Pairwise) -> list[Stmt]:
    """`acc` made the whole sum: the stack's groups added to it, smallest first (what
    pairwise.total does, written out as `pushed` is)."""
    level, count = em.fresh("l"), Var(s.count)
    return [Assign((level,), (whole(0),)),
            While([If(Fmt("{} == 0", (count,)), [Break()]),
                   If(Fmt("{} % 2 == 1", (count,)), [
                       Assign((s.acc,), (Fmt("{} + {}", (s.level(Var(level)), Var(s.acc))),))]),
                   Update(level, "+=", whole(1)),
                   Assign((s.count,), (Fmt("{} // 2", (count,)),))])]
