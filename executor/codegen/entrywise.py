"""Entrywise code: fused loop nests (fusion.Group), their reductions, and scalar values.

Each entrywise op's expression is its row's `code` in the op table, a lowering as data
(compiler/ops/loop_code.py), made loop IR typed by the dtype it computes in (op_code.py) and
spelled per tier (spelling.py: vmath's exp in compiled code, NumPy's in host code).
"""

from __future__ import annotations

import numpy as np

from ...compiler import ir
from ...compiler.dtypes import is_complex
from ...compiler.ops.einsum_spec import parse_spec
from ...compiler.ops.loop_code import COMPLEX_CODE
from ...compiler.ops.primitives import BY_OP
from ...compiler.plan import fusion
from . import division, forms, rows, sums
from .division import Division
from .loops import (
    ACCUMULATOR,
    Assign,
    Do,
    Expr,
    Fmt,
    Num,
    Op,
    Stmt,
    Store,
    Sub,
    Var,
    call,
    fmt,
    number,
)
from .op_code import lowered, tier

#: Shift coefficients and offsets below this are written as integers when whole.
WHOLE = 2.0 ** 31

def placed(index: list, layout: tuple[int, ...] | None) -> tuple:
    """An element's index in a buffer whose axes are in `layout` order (None: its own)."""
    return tuple(index if layout is None else [index[k] for k in layout])


def emit_scalar(em, node: ir.Prim) -> None:
    if all(isinstance(a, ir.Const) for a in node.args):  # fold: no Python-float x/0
        with np.errstate(all="ignore"):
            folded = BY_OP[node.op].numpy(*(np.float64(a.value) for a in node.args))
        em.bind(node, em.literal(folded, em.counts(node)))
        return
    name = em.fresh("v")
    em.pending = []
    value = expr(em, node, [], {})
    em.out.add(*em.pending)  # the position a scalar take or shift reads
    em.out.add(Assign((name,), (value,)))
    em.bind(node, Var(name))


def expr(em, node: ir.Node, index: list, temps: dict) -> Expr:
    """An expression for `node`'s value at `index` (its own axes), reading inputs there: an
    op's by the lowering of its row's form (forms.py), an einsum's as the product of its
    operands."""
    match node:
        case ir.Prim():
            return forms.lowering(node, "value")(em, node, index, temps)
        case ir.Einsum(spec=spec):
            parsed = parse_spec(spec)
            where = dict(zip(parsed.output, index, strict=True))
            factors = [operand(em, node, k, [where[ch] for ch in term], temps)
                       for k, term in enumerate(parsed.inputs)]
            if len(factors) == 1:
                return factors[0]
            return Fmt("(" + " * ".join("{}" for _ in factors) + ")", tuple(factors))
    raise AssertionError(f"code generation: no entrywise form for {node!r}")


@forms.lowers("code", "value")
def coded(em, node: ir.Prim, index: list, temps: dict) -> Expr:
    """An entrywise op: its row's code applied to its arguments at `index`. x ^ 0 is 1 and
    x ^ 2 is x · x (fusion.is_ones, is_square: facts of one op's exponent, not of a row); a
    division is split for division.py's rewrite where the nest makes one (that rewrite is of
    division itself)."""
    match node:
        case ir.Prim() if fusion.is_ones(node):
            return number(1.0, em.dtype)
        case ir.Prim() if fusion.is_square(node):
            x = operand(em, node, 0, index, temps)
            return Op("mul", (x, x), em.dtype, tier(em))
        case ir.Prim(op="div") if em.divisions is not None:
            numerator, divisor = (operand(em, node, k, index, temps) for k in (0, 1))
            split = Division(*(em.fresh(p) for p in ("quo", "num", "den", "rec")), em.dtype)
            em.pending += [Assign((split.numerator,), (numerator,)),
                           Assign((split.divisor,), (divisor,)), split.fast]
            em.divisions.append(split)
            return Var(split.quotient)
        case ir.Prim(op=op, args=args) if BY_OP[op].code is not None:
            code = COMPLEX_CODE.get(op) if is_complex(em.dtype) else None
            return lowered(code or BY_OP[op].code, tuple(operand(em, node, k, index, temps)
                                                         for k in range(len(args))),
                           em.dtype, tier(em))
    raise AssertionError(f"code generation: {node.op} has no code")


@forms.lowers("position", "value")
def _position(em, node: ir.Prim, index: list, temps: dict) -> Expr:
    """positions(x, k): the index along its one axis, a counted number."""
    return em.counted_number(index[0])


def operand(em, node: ir.Node, position: int, index: list, temps: dict) -> Expr:
    """Argument `position` of `node` read at `index` (`at`) as `node` reads it: a counted
    value (compiler/counting.py) converted to the code's dtype where `node`'s value is data,
    but kept where `node` counts too or reads it as a position (its op's `counts`)."""
    arg = ir.children(node)[position]
    counted = em.counts(node)
    if isinstance(arg, ir.Const):
        return em.literal(arg.value, counted)
    value = at(em, arg, index, temps)
    if counted or isinstance(node, ir.Prim) and position in BY_OP[node.op].counts:
        return value
    return em.as_data(arg, value)


def at(em, node: ir.Node, index: list, temps: dict) -> Expr:
    """`node` read at `index`: a scalar, a local of this loop nest, an inlined generator, or
    an element of a stored array."""
    if isinstance(node, ir.Const):
        return number(node.value, em.dtype)
    if not em.shape(node):
        return em.value(node)
    if node in temps and index == em.identity:
        return temps[node]
    if fusion.is_generator(node, em.frame.shapes):
        return expr(em, node, index, temps)
    if node in em.frame.recomputed and em.lookup(node) is None:
        if index != em.identity:
            return expr(em, node, index, temps)
        temps[node] = Var(em.fresh("t"))  # computed once per index, before its first reader
        em.pending.append(Assign((temps[node].name,), (expr(em, node, index, temps),)))
        return temps[node]
    return Sub(em.value(node), placed(index, em.frame.layouts.get(node)))


@forms.lowers("shifted", "value")
def _shifted(em, node: ir.Prim, index: list, temps: dict) -> Expr:
    """shift: x read along `axis` at const + Σ coefs·(new indices), zero outside x."""
    axis, coefs, const = node.attrs
    x = node.args[0]
    rank = len(em.shape(x)) - 1
    outer, new = index[:rank], index[rank:]
    name = em.fresh("p")
    size = em.dims_of(x)[axis]
    if all(float(v).is_integer() and abs(v) < WHOLE for v in (const, *coefs)):
        # whole steps (a window, a convolution): integer positions, which LLVM sees
        # advance by one with the loop, so it reads x in vector loads, not gathers
        terms = [str(int(const))] + [f"{int(c)} * {{}}" for c in coefs]
        em.pending.append(Assign((name,), (Fmt(" + ".join(terms), tuple(new)),)))
        inner = outer[:axis] + [Var(name)] + outer[axis:]
        return fmt("({} if 0 <= {} < {} else {})", at(em, x, inner, temps), Var(name), size,
                   number(0.0, em.dtype))
    terms = (number(const, em.dtype), *(arg for c, n in zip(coefs, new, strict=True)
                                        for arg in (number(c, em.dtype), n)))
    em.pending.append(Assign((name,), (Fmt(" + ".join(["{}", *("{} * {}" for _ in coefs)]),
                                           terms),)))
    inner = outer[:axis] + [call("int", Var(name))] + outer[axis:]
    return fmt("({} if {} <= {} < {} else {})", at(em, x, inner, temps), number(0.0, em.dtype),
               Var(name), size, number(0.0, em.dtype))


@forms.lowers("taken", "value")
def _taken(em, node: ir.Prim, index: list, temps: dict) -> Expr:
    """take: x read along `axis` at the s with coef·s + const = t, zero when there is none
    (s not whole, out of range, NaN): the mask's own test, on scalars only, so LLVM makes
    it once, outside the loop nest."""
    x, where = node.args
    axis, coef, const = node.attrs
    t, p, ok = (Var(em.fresh(prefix)) for prefix in ("t", "p", "ok"))
    size = em.dims_of(x)[axis]
    c, k, zero = (number(v, em.dtype) for v in (const, coef, 0.0))
    em.pending += [
        Assign((t.name,), (em.value(where),)),
        Assign((p.name,), (fmt("({} - {}) * {}", t, c, k),)),
        Assign((ok.name,), (fmt("{} <= {} < {} and np.floor({}) == {} and {} * {} + {} == {}",
                                zero, p, size, p, p, k, p, c, t),))]
    inner = index[:axis] + [call("int", p)] + index[axis:]
    return fmt("({} if {} else {})", at(em, x, inner, temps), ok, zero)


def emit_group(em, group: fusion.Group) -> None:
    """One loop nest: every member computed once per index, stored if read outside, tails
    accumulated in the same pass."""
    if not group.stored and not group.tails:
        return  # every reader recomputes its members (fusion: an LSTM's a + u + b)
    em.kernels += 1
    dims = em.dims_of(group.space)
    rank = len(dims)
    index = [Var(f"i{k}") for k in range(rank)]
    inner = _blocked(em, group)
    em.identity = index
    before: list[list[Stmt]] = [[] for _ in range(rank + 1)]
    after: list[list[Stmt]] = [[] for _ in range(rank + 1)]
    body: list[Stmt] = []
    temps: dict = {}
    overwritable = _read_in_place(em, group)
    stores = {}
    for member in group.members:
        if member in group.stored:
            stores[member] = _store(em, member, dims, overwritable)
            overwritable.pop(member, None)
    divisions: list[Division] = []
    em.divisions = None if em.host or not em.rewrites_division else divisions
    for member in group.members:
        em.pending = []
        value = expr(em, member, index, temps)
        body += em.pending
        temps[member] = Var(em.fresh("t"))
        body.append(Assign((temps[member].name,), (value,)))
    long: list[sums.Long] = []  # sums over more than sums.BLOCK entries
    for tail in group.tails:
        em.pending = []
        _accumulate(em, tail, index, temps, before, after, body, long)
    em.divisions = None
    # stores last: an output may be the buffer of an input, read above at the same index
    written = [Store(Sub(stores[m], placed(index, em.frame.layouts.get(m))), temps[m])
               for m in stores]
    parallel = _parallel(em)
    pairwise = sums.arrange(em, long, before, after, dims, inner,
                            index[0] if parallel else None)
    nest = division.Nest(index, dims, before, after, body, written)
    body = division.rewrite(nest, divisions, em.fresh("bad"),
                            [em.fresh(rows.SCRATCH) for _ in written],
                            allowed=not parallel and not em.out.merged(rank)
                            and em.out.room() > rank and not long,
                            fast=em.decided.fast and not em.out.merged(rank))
    kernel = em.record("nest", em.shape(group.space), _described(group),
                       _kept(group, stores, em.frame.layouts), parallel)
    sums.stacks(em, pairwise, dims)
    _write(em, nest, body, parallel, kernel, pairwise if inner else None)
    for member, name in stores.items():
        em.bind(member, name)


def _write(em, nest: division.Nest, body: list[Stmt], parallel: bool, kernel: int,
           blocked: list[sums.Pairwise] | None) -> None:
    """The nest's loops around `body`; its innermost loop in blocks when `blocked` names the
    long sums pushed after each block (sums.py)."""
    rank = len(nest.dims)
    names = [i.name for i in nest.index]
    if blocked is None:
        merged = em.out.nest(nest.dims, names, nest.before, parallel, kernel)
        em.out.add(*body)
        em.out.unnest(rank, merged, nest.after)
        return
    merged = em.out.nest(nest.dims[:-1], names[:-1], nest.before, parallel, kernel)
    em.out.add(*nest.before[rank - 1])
    sums.write_blocked(em, blocked, nest.index[-1], nest.dims[-1], body,
                       (kernel,) if rank == 1 else ())
    em.out.add(*nest.after[rank - 1])
    em.out.unnest(rank - 1, merged, nest.after)


#: How many of a nest's values the plan names before it counts the rest.
SHOWN = 8


def _described(group: fusion.Group) -> str:
    """A nest's values as the plan names them: its ops, then its reductions after "→"."""
    def name(node: ir.Node) -> str:
        return node.op if isinstance(node, ir.Prim) else f"einsum {node.spec}"

    def reduction(node: ir.Node) -> str:
        return f"{node.op} over axis {node.attrs[0]}" if isinstance(node, ir.Prim) else \
            f"sum {node.spec}"
    names = [name(m) for m in group.members]
    if len(names) > SHOWN:
        names = [*names[:SHOWN], f"… ({len(names)} values)"]
    members = " ".join(names)
    tails = ", ".join(reduction(t) for t in group.tails)
    return f"{members} → {tails}" if members and tails else members or f"→ {tails}"


def _kept(group: fusion.Group, stores: dict, layouts: dict) -> str:
    """What a nest writes to memory: how many of its values, and any laid out axis first."""
    parts = [f"stores {len(stores)} of {len(group.members)}"] if group.members else []
    parts += [f"axis order {layouts[m]}" for m in stores if m in layouts]
    if group.tails:
        parts.append(f"reduces {len(group.tails)}")
    return ", ".join(parts)


def _store(em, member: ir.Node, dims: tuple, overwritable: dict) -> Var:
    """The buffer a group stores `member` in. One whose every reader takes slices along its
    last axis (gates read as `gate(z, k)`, z B×D×G) is laid out with that axis first, so
    each slice is contiguous and the nests reading it vectorise (sliced)."""
    axis = em.frame.gathered.get(member)
    if axis is None or member in em.frame.destinations:
        return em.reuse(member, dims, [x for x in overwritable if x not in em.frame.layouts])
    order = (axis, *(k for k in range(len(dims)) if k != axis))
    em.frame.layouts[member] = order
    return em.alloc(member, tuple(dims[k] for k in order))


def _read_in_place(em, group: fusion.Group) -> dict[ir.Node, None]:
    """Stored values the group reads only at its own index (recomputed members seen
    through), in the order first read: a member may be written over one of them once
    nothing else needs it. (Ordered, not a set: which buffer is taken over must not follow
    the process's hashing, or the generated code would differ from process to process.)"""
    same: dict[ir.Node, None] = {}
    other: set[ir.Node] = set()
    pending = list(group.members + group.tails)
    seen: set[ir.Node] = set()
    while pending:
        node = pending.pop()
        if node in seen:
            continue
        seen.add(node)
        for kid, identity in fusion.reads(node, em.frame.shapes):
            if kid in em.frame.recomputed and kid not in group.members:
                pending.append(kid) if identity else other.update(
                    fusion.stored_kids(kid, em.frame.recomputed))
            elif kid not in group.members:
                if identity:
                    same[kid] = None
                else:
                    other.add(kid)
    return {n: None for n in same if n not in other}


def _accumulate(em, tail: ir.Node, index: list, temps: dict, before: list, after: list,
                body: list, long: list) -> None:
    """A reduction folded into the nest: in a local when it keeps the leading axes (row
    sums, row maxima), else into its output array. A local sum adds in any order
    (K.add_any_order): LLVM then vectorises its loop with a partial sum per vector lane,
    combined after the loop, where adding in order would wait 4 cycles for each addition
    and keep the loop scalar (a 4096×512 layer norm: 2.3 → 1.5 ms; a softmax's exp pass
    over 2048² scores: 2 ms of 20). A local maximum is exact in any order: K.fmax is
    LLVM's maximum, which LLVM vectorises as it is. A local sum over more than sums.BLOCK
    entries is added pairwise above blocks of them (sums.py: `long`)."""
    x = operand(em, tail, 0, index, temps)
    body += em.pending
    combine, start, kept = _reduced(tail, len(index))
    depth = len(kept)
    dims = tuple(em.dims_of(tail.args[0])[k] for k in kept)
    if _local(em, kept, len(index)):
        acc = Var(em.fresh("acc"))
        # (a sum's accumulator is float64 in code of every dtype, rounded once when stored;
        # another reduction starts in the code's dtype: a maximum at an infinity of it)
        start_dtype = ACCUMULATOR if combine == "+" else em.dtype
        before[depth].append(Assign((acc.name,), (Num(start, start_dtype),)))
        body.append(Assign((acc.name,), (call("K.add_any_order", acc, x) if combine == "+" else
                                         _combined(combine, acc, x, em.dtype),)))
        found = sums.long(acc.name, depth, em.shape(tail.args[0])) if (
            combine == "+" and sums.pairwise_locals(em)) else None
        if found is not None:
            long.append(found)
        if depth == 0:
            em.bind(tail, acc)
            return
        out = em.alloc(tail, dims)
        after[depth].append(Store(Sub(out, tuple(index[:depth])), acc))
    else:
        out = em.alloc(tail, dims)
        adding = sums.into_array(em, out, kept, em.shape(tail.args[0]), em.dims_of(tail.args[0]),
                                 index, x, before, after) if combine == "+" else None
        if adding is not None:  # (pairwise: sums.py)
            body.append(adding)
            em.bind(tail, out)
            return
        before[0].append(Do(fmt("{}.fill({})", out, Num(start, em.dtype))))
        target = Sub(out, tuple(index[k] for k in kept))
        body.append(Store(target, x, add=True) if combine == "+" else
                    Store(target, _combined(combine, target, x, em.dtype)))
    em.bind(tail, out)


def _combined(combine: str, acc: Expr, x: Expr, dtype: str) -> Expr:
    """`x` folded into `acc` by the op `combine` (the op table's lowering, as compiled code
    spells it in every tier)."""
    code = BY_OP[combine].code
    assert code is not None, f"{combine} has no code"
    return lowered(code, (acc, x), dtype, "compiled")


def _reduced(tail: ir.Node, rank: int) -> tuple[str, str, list[int]]:
    """A reduction's combining op (a sum's `+`; the op table's `combine` op for the rest), its
    start, and the axes it keeps."""
    if isinstance(tail, ir.Prim):
        return forms.lowering(tail, "fold")(tail, rank)
    parsed = parse_spec(tail.spec)
    return "+", "0.0", [parsed.inputs[0].index(ch) for ch in parsed.output]


@forms.lowers("fold", "fold")
def _folded(tail: ir.Prim, rank: int) -> tuple[str, str, list[int]]:
    """A reduction of the table: its `combine` op, its `start`, the axes it keeps."""
    row = BY_OP[tail.op]
    assert row.combine is not None and row.start is not None, f"{tail.op} is not a tail"
    combine = row.combine
    start = number(row.start, "float64").text.removeprefix("(").removesuffix(")")  # (`-np.inf`)
    return combine, start, [k for k in range(rank) if k != tail.attrs[0]]


def _local(em, kept: list[int], rank: int) -> bool:
    """Whether a reduction keeping axes `kept` is kept in a local: one per leading index,
    unless the nest runs those axes as one flat loop."""
    depth = len(kept)
    return kept == list(range(depth)) and not 0 < depth < em.out.merged(rank)


def _blocked(em, group: fusion.Group) -> bool:
    """Whether the nest runs its innermost loop in blocks: a sum of it, kept in a local, is
    longer than sums.BLOCK (sums.py)."""
    shape = em.shape(group.space)
    if not sums.pairwise_locals(em) or not sums.blocked(em, shape):
        return False
    for tail in group.tails:
        combine, _, kept = _reduced(tail, len(shape))
        if combine == "+" and _local(em, kept, len(shape)):
            return True  # (its span, the innermost axis at least, is long)
    return False


def _parallel(em) -> bool:
    """Whether the nest being written runs its rows on several threads, as the plan decided
    (compiler/plan/threads.py, row_loops.py: alone, or in a loop over rows that does)."""
    assert em.block is not None
    return em.block.position in em.block.plan.threads
