"""Fusion: an einsum whose operand is an einsum used nowhere else becomes one einsum."""

from __future__ import annotations

from collections import Counter

from .. import ir
from ..ops.einsum_spec import ELLIPSIS, letters, parse_spec


def fuse(root: ir.Node) -> ir.Node:
    """Requires inlined IR; ensures no einsum has a single-use einsum operand, in every scope,
    loop bodies included. Results are unchanged."""
    return ir.rewrite_scopes(root, _fuse_scope)


def _fuse_scope(roots: tuple[ir.Node, ...], bodies: dict) -> tuple[ir.Node, ...]:
    """One scope's roots with its einsum chains merged; its loops take their fused bodies."""
    # One scope: a value two roots (a loop's steps) share must stay shared, so count uses
    # across all of them.
    holder = ir.Tuple(roots, roots[0].span)
    uses = _use_counts(holder)

    def visit(node: ir.Node, kids: tuple[ir.Node, ...]) -> ir.Node:
        if ir.is_loop(node):
            return ir.with_scopes(node, kids, bodies)
        rebuilt = ir.rebuild(node, kids)
        if isinstance(rebuilt, ir.Einsum) and isinstance(node, ir.Einsum):
            return _merge(rebuilt, node, uses)
        return rebuilt

    return ir.transform(holder, visit).items  # type: ignore[union-attr]


def _use_counts(root: ir.Node) -> Counter:
    """How many parents read each node (by identity) in `root`'s scope."""
    counts: Counter = Counter()
    for node in ir.topological(root):
        for kid in ir.children(node):
            counts[id(kid)] += 1
    return counts


def _merge(node: ir.Einsum, original: ir.Einsum, uses: Counter) -> ir.Node:
    """Merge every operand of `node` that is an einsum read only by `original`."""
    spec = parse_spec(node.spec)
    terms = list(spec.inputs)
    operands = list(node.args)
    originals = list(original.args)
    position = 0
    while position < len(operands):
        operand, before = operands[position], originals[position]
        if isinstance(operand, ir.Einsum) and uses[id(before)] == 1:
            merged = _splice(terms, spec.output, position, operand)
            if merged is not None and _worth_it(terms, position, merged[0], spec.output):
                inner_terms, inner_args = merged
                terms[position:position + 1] = inner_terms
                operands[position:position + 1] = list(inner_args)
                originals[position:position + 1] = list(inner_args)
                continue
        position += 1
    if len(operands) == len(node.args) and all(a is b for a, b in zip(operands, node.args, strict=True)):
        return node
    return ir.Einsum(",".join(terms) + "->" + spec.output, tuple(operands), node.span)


def _worth_it(terms: list[str], position: int, inner_terms: list[str], output: str) -> bool:
    """Merging pays unless some summed letter would sit in one operand alone: opt_einsum's
    pairwise paths never sum such a letter out first, so the merged einsum would cost more."""
    merged = terms[:position] + inner_terms + terms[position + 1:]
    for letter in set("".join(merged)) - set(output):
        if sum(letter in term for term in merged) == 1:
            return False
    return True


def _splice(terms: list[str], output: str, position: int, inner: ir.Einsum):
    """The inner einsum's terms renamed into the outer's letters (its summed ones fresh)."""
    inner_spec = parse_spec(inner.spec)
    outer_term = terms[position]
    if len(outer_term) != len(inner_spec.output):  # a rank error: leave it for shapes.py
        return None
    if ELLIPSIS in inner.spec or ELLIPSIS in outer_term:  # its axes are named once shapes are
        return None                                       # known; merged again after that
    rename = dict(zip(inner_spec.output, outer_term, strict=True))
    used = set("".join(terms)) | set(output)
    free = (ch for ch in letters() if ch not in used)
    for letter in sorted(set("".join(inner_spec.inputs)) - set(inner_spec.output)):
        rename[letter] = next(free)
    return [("".join(rename[ch] for ch in term)) for term in inner_spec.inputs], inner.args


def count_einsums(root: ir.Node) -> int:
    """The number of einsum nodes in `root`, loop bodies included (for structure tests)."""
    return sum(_per_scope(root, lambda node: isinstance(node, ir.Einsum)))


def count_loops(root: ir.Node) -> int:
    """The number of distinct loops in `root`, nested ones included."""
    return sum(_per_scope(root, lambda node: isinstance(node, ir.Loop)))


def _per_scope(root: ir.Node, test) -> list[int]:
    """For `root`'s scope and each loop body scope inside it (once per loop, by identity),
    how many of its distinct nodes pass `test`."""
    counts: list[int] = []
    pending: list[tuple[ir.Node, ...]] = [(root,)]
    seen: set[int] = set()
    while pending:
        order = ir.topological(*pending.pop())
        counts.append(sum(1 for node in order if test(node)))
        for node in order:
            if ir.is_loop(node) and id(node) not in seen:
                seen.add(id(node))
                pending += ir.bodies(node)
    return counts
