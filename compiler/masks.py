"""Index masks: an einsum reading a 0/1 mask [s = t + j] over positions reads a shifted
operand instead, so the mask (often L×K×L) is never built."""

from __future__ import annotations

from dataclasses import dataclass

from . import ir
from .einsum_spec import parse_spec

_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


@dataclass(frozen=True, slots=True)
class Affine:
    """A tensor whose entry at index (i0, i1, …) is const + Σ coefs[d]·i_d. `witness[d]` is a
    vector node as long as axis d (what tells the executor that axis's size)."""

    coefs: tuple[float, ...]
    const: float
    witness: tuple[ir.Node, ...]

    @property
    def constant(self) -> bool:
        return not any(self.coefs)


def affine(node: ir.Node, memo: dict) -> Affine | None:
    """The affine form of `node`, if it is built from positions, constants, ^0, + − and
    outer-product einsums; None otherwise."""
    if node not in memo:
        for inner in ir.topological(node):  # inputs first, so _affine finds them in memo
            if inner not in memo:
                memo[inner] = _affine(inner, memo)
    return memo[node]


def _affine(node: ir.Node, memo: dict) -> Affine | None:
    match node:
        case ir.Const(value=v):
            return Affine((), v, ())
        case ir.Prim(op="positions"):
            return Affine((1.0,), 0.0, (node,))
        case ir.Prim(op="pow", args=(base, ir.Const(value=0.0))):
            inner = affine(base, memo)
            return None if inner is None else Affine((0.0,) * len(inner.coefs), 1.0, inner.witness)
        case ir.Prim(op="add" | "sub", args=(a, b)):
            return _combine(affine(a, memo), affine(b, memo), 1.0 if node.op == "add" else -1.0)
        case ir.Prim(op="neg", args=(a,)):
            inner = affine(a, memo)
            return None if inner is None else _scale(inner, -1.0)
        case ir.Prim(op="mul", args=(a, b)):
            left, right = affine(a, memo), affine(b, memo)
            if left is None or right is None:
                return None
            if not right.coefs and right.constant:
                return _scale(left, right.const)
            if not left.coefs and left.constant:
                return _scale(right, left.const)
            return None
        case ir.Einsum():
            return _outer(node, [affine(a, memo) for a in node.args])
    return None


def _scale(a: Affine, factor: float) -> Affine:
    return Affine(tuple(c * factor for c in a.coefs), a.const * factor, a.witness)


def _combine(a: Affine | None, b: Affine | None, sign: float) -> Affine | None:
    if a is None or b is None:
        return None
    if not b.coefs:
        return Affine(a.coefs, a.const + sign * b.const, a.witness)
    if not a.coefs:
        return Affine(tuple(sign * c for c in b.coefs), a.const + sign * b.const, b.witness)
    if len(a.coefs) != len(b.coefs):
        return None
    return Affine(tuple(x + sign * y for x, y in zip(a.coefs, b.coefs, strict=True)),
                  a.const + sign * b.const, a.witness)


def _outer(node: ir.Einsum, parts: list[Affine | None]) -> Affine | None:
    """An einsum that only lays operands side by side (no sums, no diagonals), at most one of
    them varying: the product is affine."""
    if any(p is None for p in parts):
        return None
    spec = parse_spec(node.spec)
    if set("".join(spec.inputs)) != set(spec.output) or any(len(set(t)) != len(t) for t in spec.inputs):
        return None
    if any(len(t) != len(p.coefs) for t, p in zip(spec.inputs, parts, strict=True)):  # type: ignore[union-attr]
        return None  # a rank error: shapes.py reports it
    varying = [i for i, p in enumerate(parts) if not p.constant]  # type: ignore[union-attr]
    if len(varying) > 1:
        return None
    factor = 1.0
    for p in parts:
        if p.constant:  # type: ignore[union-attr]
            factor *= p.const  # type: ignore[union-attr]
    coefs, witness = [], []
    for letter in spec.output:
        term_index = next(i for i, t in enumerate(spec.inputs) if letter in t)
        part = parts[term_index]
        axis = spec.inputs[term_index].index(letter)
        coefs.append(factor * part.coefs[axis] if term_index in varying else 0.0)  # type: ignore[union-attr]
        witness.append(part.witness[axis])  # type: ignore[union-attr]
    const = factor * parts[varying[0]].const if varying else factor  # type: ignore[union-attr]
    return Affine(tuple(coefs), const, tuple(witness))


def eliminate_masks(root: ir.Node) -> ir.Node:
    """Requires shared IR, before fusion (whether an einsum reads a mask is decided on the
    einsum as written, so every executor gives it one meaning); ensures no einsum reads a mask
    [Σ c·index + b = 0] on a letter that is summed and read by one other operand: that operand
    is read shifted (`shift`, zero outside it) instead, so its entries outside the window are
    never read, inf and NaN included (docs/semantics.md, "Index masks")."""
    def scope(roots: tuple[ir.Node, ...], bodies: dict) -> tuple[ir.Node, ...]:
        memo: dict = {}  # per scope: equal nodes of two scopes may read different states

        def visit(node: ir.Node, kids: tuple[ir.Node, ...]) -> ir.Node:
            if ir.is_loop(node):
                return ir.with_scopes(node, kids, bodies)
            rebuilt = ir.rebuild(node, kids)
            if isinstance(rebuilt, ir.Einsum):
                return _rewrite(rebuilt, memo)
            return rebuilt

        return tuple(ir.transform(r, visit) for r in roots)

    return ir.rewrite_scopes(root, scope)  # loops nest as deep as definitions: no recursion


def _mask(node: ir.Node, memo: dict) -> Affine | None:
    """The affine form a 0/1 mask tests for zero: [a = b] over positions (or against a number,
    such as [g = k], which picks one slice)."""
    if isinstance(node, ir.Prim) and node.op == "eq":
        a, b = (affine(x, memo) for x in node.args)
        if a is None or b is None or not (a.coefs or b.coefs):
            return None
        if len(a.coefs) == len(b.coefs) or not a.coefs or not b.coefs:
            return _combine(a, b, -1.0)
    return None


def _rewrite(node: ir.Einsum, memo: dict) -> ir.Node:
    spec = parse_spec(node.spec)
    for position, operand in enumerate(node.args):
        mask = _mask(operand, memo)
        if mask is None:
            continue
        rewritten = _use_mask(node, spec, position, mask)
        if rewritten is not None:
            return _rewrite(rewritten, memo)
    return node


def _use_mask(node: ir.Einsum, spec, position: int, mask: Affine) -> ir.Einsum | None:
    term = spec.inputs[position]
    if len(set(term)) != len(term) or len(term) != len(mask.coefs):
        return None
    # Shapes are not known here, so shift the operand of highest rank: that is the data
    # (a signal b×L) rather than a kernel (K), which keeps the shifted tensor small (b×L×K).
    def reader_rank(axis: int) -> int:
        return max((len(t) for i, t in enumerate(spec.inputs) if term[axis] in t and i != position),
                   default=0)

    for axis in sorted(range(len(term)), key=reader_rank, reverse=True):
        letter = term[axis]
        coef = mask.coefs[axis]
        readers = [i for i, t in enumerate(spec.inputs) if letter in t and i != position]
        if abs(coef) != 1.0 or letter in spec.output or len(readers) != 1:
            continue
        reader = readers[0]
        source = spec.inputs[reader]
        others = [(ch, -mask.coefs[d] / coef, mask.witness[d]) for d, ch in enumerate(term)
                  if d != axis and mask.coefs[d] != 0]
        if source.count(letter) != 1 or any(ch in source for ch, _, _ in others):
            continue
        if any(not float(c).is_integer() for _, c, _ in others) or not float(-mask.const / coef).is_integer():
            continue
        shifted = ir.Prim("shift", (node.args[reader], *(w for _, _, w in others)),
                          (source.index(letter), tuple(c for _, c, _ in others), -mask.const / coef),
                          node.span)
        new_term = source.replace(letter, "") + "".join(ch for ch, _, _ in others)
        # The mask's axes with zero coefficient only repeat: they keep their letters via ones.
        free = [d for d, ch in enumerate(term) if d != axis and mask.coefs[d] == 0]
        terms = list(spec.inputs)
        args = list(node.args)
        terms[reader], args[reader] = new_term, shifted
        if free:
            ones = [ir.Prim("pow", (mask.witness[d], ir.Const(0.0, node.span)), (), node.span) for d in free]
            terms[position:position + 1] = [term[d] for d in free]
            args[position:position + 1] = ones
        else:
            del terms[position], args[position]
        if not terms:
            return None
        return ir.Einsum(",".join(terms) + "->" + spec.output, tuple(args), node.span)
    return None
