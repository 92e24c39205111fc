"""A contraction step as one loop nest in compiled code: its letters looped over in the order
the schedule chose (layout.nest: the innermost letter unit-stride where it can be), and
letters that sit side by side, in that order, in every array that holds them looped over as
one (the arrays viewed with those axes merged), so a step over many small axes (a tensor
network's, of 2s and 3s) opens a few long loops, not a dozen short ones."""

from __future__ import annotations

from dataclasses import dataclass

from ...compiler.plan.layout import merged_groups
from .loops import (
    Assign,
    Do,
    Expr,
    Fmt,
    Store,
    Sub,
    Update,
    Var,
    View,
    fmt,
    number,
    product,
)


@dataclass(frozen=True)
class Operand:
    """A value in generated code with one einsum letter per axis (`node`: the IR node it holds,
    when it is one, so a copy of a loop-invariant operand can be made once, before the loop)."""

    value: Expr
    term: str
    dims: tuple[Expr, ...]
    node: object = None


def _merged(op: Operand, groups: list[str], dims_of: dict) -> Operand:
    """`op` viewed with each group's axes as one (its first letter names it; a group's
    letters lie side by side in `op`, or none of them is there)."""
    starts = {g[0]: g for g in groups if len(g) > 1 and g[0] in op.term}
    if not starts:
        return op
    axes: list[str] = []
    at = 0
    while at < len(op.term):
        group = starts.get(op.term[at], op.term[at])
        axes.append(group)
        at += len(group)
    shape = tuple(product([dims_of[ch] for ch in g]) for g in axes)
    form = "{0}.reshape((" + "".join(f"{{{k + 1}}}, " for k in range(len(shape))) + "))"
    return Operand(View(op.value, form, shape), "".join(g[0] for g in axes), shape)


def _held(em, op: Operand, held: dict) -> Operand:
    """`op` with a merged view held in a local, made once before the loops (`held`: the
    views made so far, by their expression)."""
    if not isinstance(op.value, View):
        return op
    if op.value not in held:
        held[op.value] = Var(em.fresh("r"))
        em.out.add(Assign((held[op.value].name,), (op.value,)))
    return Operand(held[op.value], op.term, op.dims)


def loop_nest(em, taken: list[Operand], output: str, dims_of: dict, node,
              order: str = "") -> Operand:
    """Any einsum step as loops over its letters (in `order`, else the output's letters and
    then the summed ones): the sum of products into the output."""
    letters = list(dict.fromkeys(order or list(output) + [ch for op in taken for ch in op.term
                                                          if ch not in output]))
    groups = merged_groups("".join(letters), [op.term for op in taken] + [output])
    sizes = {g[0]: product([dims_of[ch] for ch in g]) for g in groups}
    dims = tuple(dims_of[ch] for ch in output)
    held: dict = {}  # (an operand read twice, "ij,ij->", is viewed once)
    reads = [_held(em, _merged(op, groups, dims_of), held) for op in taken]
    index = {g[0]: Var(em.fresh("j")) for g in groups}
    factors = [Sub(op.value, tuple(index[ch] for ch in op.term)) if op.term else op.value
               for op in reads]
    summand = (Fmt(" * ".join("{}" for _ in factors), tuple(factors)) if len(factors) > 1 else
               factors[0] if factors else number(1.0, em.dtype))
    summing = len(letters) > len(output)
    loops = [g[0] for g in groups]
    if output:
        out = em.alloc(node, dims)
        if summing:
            em.out.add(Do(fmt("{}.fill({})", out, number(0.0, em.dtype))))
        target = _held(em, _merged(Operand(out, output, dims), groups, dims_of), {})
        merged = em.out.nest([sizes[ch] for ch in loops], [index[ch].name for ch in loops])
        em.out.add(Store(Sub(target.value, tuple(index[ch] for ch in target.term)), summand,
                         add=summing))
    else:
        out = Var(em.fresh("v"))
        em.out.add(Assign((out.name,), (number(0.0, em.dtype),)))
        merged = em.out.nest([sizes[ch] for ch in loops], [index[ch].name for ch in loops])
        em.out.add(Update(out.name, "+=", summand))
    em.out.unnest(len(loops), merged)
    return Operand(out, output, dims)
