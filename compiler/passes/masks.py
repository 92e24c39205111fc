"""Index masks: an einsum reading a 0/1 mask [s = t + j] over positions reads a shifted
operand instead, so the mask (often L×K×L) is never built; against a one-hot [s = t] of a
value t (a loop counter, say) it reads the slice at t, so each read costs the slice, not the
whole axis."""

from __future__ import annotations

from dataclasses import dataclass, field

from .. import ir
from ..ops.einsum_spec import ELLIPSIS, parse_spec
from ..ops.primitives import BY_OP, having

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


@dataclass(frozen=True)
class Facts:
    """What is known of one scope's loop state: the components that are certainly scalars
    (a counter, or a component that starts as one), and the components the loop never
    changes that hold an affine vector (positions made before the loop), by index."""

    scalar: frozenset[int] = frozenset()
    affine: tuple[tuple[int, Affine], ...] = ()
    memo: dict = field(default_factory=dict, compare=False, hash=False, repr=False)

    def state(self, index: int) -> Affine | None:
        return dict(self.affine).get(index)


NOTHING = Facts()


def affine(node: ir.Node, memo: dict, facts: Facts = NOTHING) -> Affine | None:
    """The affine form of `node`, if it is built from positions, constants, ^0, + − and
    outer-product einsums (or is loop state that holds one: `facts`); None otherwise."""
    if node not in memo:
        for inner in ir.topological(node):  # inputs first, so _affine finds them in memo
            if inner not in memo:
                memo[inner] = _affine(inner, memo, facts)
    return memo[node]


def _affine(node: ir.Node, memo: dict, facts: Facts) -> Affine | None:
    match node:
        case ir.State(index=i):
            return facts.state(i)
        case ir.Const(value=v):
            return Affine((), v, ())
        case ir.Prim(op="positions"):
            return Affine((1.0,), 0.0, (node,))
        case ir.Prim(op="pow", args=(base, ir.Const(value=0.0))):
            inner = memo[base]
            return None if inner is None else Affine((0.0,) * len(inner.coefs), 1.0, inner.witness)
        case ir.Prim(op="add" | "sub", args=(a, b)):
            return _combine(memo[a], memo[b], 1.0 if node.op == "add" else -1.0)
        case ir.Prim(op="neg", args=(a,)):
            inner = memo[a]
            return None if inner is None else _scale(inner, -1.0)
        case ir.Prim(op="mul", args=(a, b)):
            left, right = memo[a], memo[b]
            if left is None or right is None:
                return None
            if not right.coefs and right.constant:
                return _scale(left, right.const)
            if not left.coefs and left.constant:
                return _scale(right, left.const)
            return None
        case ir.Einsum():
            return _outer(node, [memo[a] for a in node.args])
    return None


# -------------------------------------------------------------------- what loops hold

_ENTRYWISE = having("entrywise")


def scalars(roots: tuple[ir.Node, ...], facts: Facts) -> set[ir.Node]:
    """The nodes of the scope of `roots` that are certainly scalars, whatever the argument
    shapes (shapes are not known here): numbers, sizes, arithmetic on scalars, einsums with a
    scalar result, and loop state that `facts` says is scalar."""
    found: set[ir.Node] = set()
    for node in ir.topological(*roots):
        match node:
            case ir.Const():
                found.add(node)
            case ir.Prim(op=op) if BY_OP[op].kind == "size":
                found.add(node)
            case ir.State(index=i) if i in facts.scalar:
                found.add(node)
            case ir.Einsum(spec=spec) if spec.endswith("->"):
                found.add(node)
            case ir.Prim(op=op, args=args) if (op in _ENTRYWISE
                                               and all(a in found for a in args)):
                found.add(node)
            case ir.Cond(then=t, orelse=o) if t in found and o in found:
                found.add(node)
            case ir.Project(loop=ir.Loop() as loop, index=i) if loop.init[i] in found:
                found.add(node)
    return found


def loop_facts(root: ir.Node) -> dict[int, Facts]:
    """Facts of every loop's body (by id of the Loop): its counter and the components that
    start as certain scalars are scalars; a component it never changes that starts as an
    affine vector is one throughout. A loop reached from several scopes keeps what holds in
    all of them."""
    found: dict[int, Facts] = {}
    pending: list[tuple[tuple[ir.Node, ...], Facts]] = [((root,), NOTHING)]
    while pending:
        roots, outer = pending.pop()
        certain = scalars(roots, outer)
        memo: dict = {}
        for node in ir.topological(*roots):
            loop = node.loop if isinstance(node, ir.LoopGrad) else node
            if not isinstance(loop, ir.Loop):
                continue
            facts = _facts_of(loop, outer, certain, memo)
            known = found.get(id(loop))
            if known is not None:
                if known == facts or _within(known, facts):
                    continue
                facts = _meet(known, facts)
            found[id(loop)] = facts
            pending.append(((loop.until, *loop.step), facts))
    return found


def _facts_of(loop: ir.Loop, outer: Facts, certain: set[ir.Node], memo: dict) -> Facts:
    fixed = [i for i, s in enumerate(loop.step) if s == ir.State(i, None)]
    scalar = {i for i, init in enumerate(loop.init) if init in certain}
    if loop.counter is not None:
        scalar.add(loop.counter)
    vectors = []
    for i in fixed:
        form = affine(loop.init[i], memo, outer)
        if form is not None and len(form.coefs) == 1:  # the state itself tells its length
            vectors.append((i, Affine(form.coefs, form.const, (ir.State(i, loop.span),))))
    return Facts(frozenset(scalar), tuple(vectors))


def _within(known: Facts, new: Facts) -> bool:
    return known.scalar <= new.scalar and set(known.affine) <= set(new.affine)


def _meet(a: Facts, b: Facts) -> Facts:
    return Facts(a.scalar & b.scalar, tuple(x for x in a.affine if x in b.affine))


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
    if any(p is None for p in parts) or ELLIPSIS in node.spec:
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
    never read, inf and NaN included (docs/semantics.md, "Index masks"). A mask [s + b = t]
    against a scalar t known only when the program runs (a loop counter, a value) becomes a
    read of the slice at s = t − b (`take`, zeros when that is no position)."""
    facts = loop_facts(root)

    def scope(roots: tuple[ir.Node, ...], bodies: dict, owner) -> tuple[ir.Node, ...]:
        known = facts.get(id(owner), NOTHING) if isinstance(owner, ir.Loop) else NOTHING
        here = Facts(known.scalar, known.affine)  # a memo per scope: equal nodes of two
        # scopes may read different states

        def visit(node: ir.Node, kids: tuple[ir.Node, ...]) -> ir.Node:
            if ir.is_loop(node):
                return ir.with_scopes(node, kids, bodies)
            rebuilt = ir.rebuild(node, kids)
            if isinstance(rebuilt, ir.Einsum):
                return _rewrite(rebuilt, here)
            return rebuilt

        return tuple(ir.transform(r, visit) for r in roots)

    # loops nest as deep as definitions: no recursion
    return ir.rewrite_scopes(root, scope, owners=True)


@dataclass(frozen=True)
class Mask:
    """A 0/1 mask that tests `form` (affine over the mask's axes) against `value`: zero
    (`value` None), or a scalar known only when the program runs (a loop counter, say)."""

    form: Affine
    value: ir.Node | None = None


def _mask(node: ir.Node, facts: Facts) -> Mask | None:
    """The mask `node` is, if it is one: [a = b] over positions (or against a number, such as
    [g = k], which picks one slice; or against a scalar value, [s = t])."""
    if not (isinstance(node, ir.Prim) and node.op == "eq"):
        return None
    a, b = (affine(x, facts.memo, facts) for x in node.args)
    if a is not None and b is not None:
        if not (a.coefs or b.coefs):
            return None
        if len(a.coefs) == len(b.coefs) or not a.coefs or not b.coefs:
            return Mask(_combine(a, b, -1.0))  # type: ignore[arg-type]
        return None
    for form, value in ((a, node.args[1]), (b, node.args[0])):
        if form is not None and not form.constant and value in scalars((value,), facts):
            return Mask(form, value)
    return None


def _rewrite(node: ir.Einsum, facts: Facts) -> ir.Node:
    if ELLIPSIS in node.spec:  # (read once its axes have letters: passes.AGAIN)
        return node
    spec = parse_spec(node.spec)
    for position, operand in enumerate(node.args):
        mask = _mask(operand, facts)
        if mask is None:
            continue
        rewritten = _use_mask(node, spec, position, mask)
        if rewritten is not None:
            return _rewrite(rewritten, facts)
    return node


def split_windowed_dots(root: ir.Node) -> ir.Node:
    """Requires fused IR (einsum chains merged: fuse would merge these back) that only
    generated code runs (executor/tiers.generated_ir); ensures no einsum
    dots a shifted read with an operand whose every letter is summed (a convolution's kernel:
    einsum("itj,j->it", shift(x), k)): it is the entrywise product, summed. The sum is the
    same; code generation runs it in one pass over the windows (a sliding dot product) instead
    of storing every window (B×L×K) for a matrix-vector product."""

    def scope(roots: tuple[ir.Node, ...], bodies: dict) -> tuple[ir.Node, ...]:
        def visit(node: ir.Node, kids: tuple[ir.Node, ...]) -> ir.Node:
            if ir.is_loop(node):
                return ir.with_scopes(node, kids, bodies)
            return _windowed_dot(ir.rebuild(node, kids))

        return tuple(ir.transform(r, visit) for r in roots)

    return ir.rewrite_scopes(root, scope)


def _windowed_dot(node: ir.Node) -> ir.Node:
    """`node` split as split_windowed_dots says, if it is such a dot."""
    if not isinstance(node, ir.Einsum) or len(node.args) != 2:
        return node
    spec = parse_spec(node.spec)
    for read in (0, 1):
        window, kernel = spec.inputs[read], spec.inputs[1 - read]
        shifted = node.args[read]
        if not (isinstance(shifted, ir.Prim) and shifted.op == "shift"):
            continue
        if (len(set(window)) != len(window) or len(set(kernel)) != len(kernel)
                or not set(kernel) <= set(window) - set(spec.output)
                or not set(spec.output) <= set(window)):
            continue
        product = ir.Einsum(f"{spec.inputs[0]},{spec.inputs[1]}->{window}", node.args, node.span)
        return ir.Einsum(f"{window}->{spec.output}", (product,), node.span)
    return node


def _use_mask(node: ir.Einsum, spec, position: int, found: Mask) -> ir.Einsum | None:
    term = spec.inputs[position]
    mask = found.form
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
        if found.value is not None:
            # one letter only, and a whole constant: the read position is then exact
            if others or not float(mask.const).is_integer():
                continue
            read = _take(node.args[reader], source.index(letter), found.value, mask, coef,
                         node.span)
        elif any(not float(c).is_integer() for _, c, _ in others) or not float(-mask.const / coef).is_integer():
            continue
        else:
            read = ir.Prim("shift", (node.args[reader], *(w for _, _, w in others)),
                           (source.index(letter), tuple(c for _, c, _ in others), -mask.const / coef),
                           node.span)
        new_term = source.replace(letter, "") + "".join(ch for ch, _, _ in others)
        # The mask's axes with zero coefficient only repeat: they keep their letters via ones.
        free = [d for d, ch in enumerate(term) if d != axis and mask.coefs[d] == 0]
        terms = list(spec.inputs)
        args = list(node.args)
        terms[reader], args[reader] = new_term, read
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


def _take(x: ir.Node, axis: int, value: ir.Node, form: Affine, coef: float, span) -> ir.Prim:
    """x read along `axis` at the s with coef·s + const = value (coef ±1, const whole): the
    slice there, or zeros when there is none (no entry of the mask is 1 then)."""
    return ir.Prim("take", (x, value), (axis, coef, form.const), span)
