"""Division by a value a nest's innermost loop does not change, without dividing, to the bit.

A vector division costs about 2 cycles an entry, and a softmax or a layer norm divides every
entry of a row by one number: causal attention over 1024 positions spent 0.4–0.8 ms of its
4.7–5 ms dividing. Here such a loop multiplies instead. Its divisor d and the reciprocal y = 1/d are
computed once, before the loop, and each quotient is vmath.quotient(a, d, y): a·y corrected by
one exact remainder, which is a/d correctly rounded (NumPy's result, to the bit) wherever the
numbers stay in range. Where they may not (a divisor outside [2^−100, 2^100], or a quotient
outside [2^−850, 2^850] or not finite, from a numerator other than ±0: vmath.divisor_unsafe,
vmath.quotient_unsafe, summed over the row), the row's loop runs again with true divisions.
So that the second run reads what the first read, a first run that would write over its own
numerators (an array the nest reuses) writes into a row-sized scratch array instead, copied
into place after it when no second run was needed.

entrywise.emit_group writes each division in a nest as three statements, `num = …`,
`den = …`, `quo = K.quotient(num, den, rec)`, and hands the nest's loop IR here. `rewrite` then

- moves every statement the innermost loop does not change (one naming neither its index nor
  a statement that does, transitively) to before that loop: the divisors among them;
- gives each division by such a divisor its reciprocal and its check, and writes the others
  (a divisor that changes along the row; a quotient that does not, computed once) as true
  divisions, `quo = (num / den)`;
- writes the second run, and the copy, after the loop.

It leaves the nest dividing when it cannot do this safely: a parallel nest (its scratch would
be shared), a flat nest, no room for one more loop, a total kept across the innermost loop's
runs (a second run would count a row twice), or a statement other than `x = …` in its body
(a reduction into an array). And it leaves nests of one axis as they are: their divisor is
the same for the whole nest, whose check would then reach past its end, and rows.py could no
longer run it row by row with its neighbours (a layer norm's means and spreads: one division a
row).

Under math="fast" (docs/semantics.md) each such division is `quo = num * rec`: the reciprocal
computed before the loop, no check and no second run, so any nest of two axes or more that is
not flat takes it, parallel ones included (nothing to share).
"""

from __future__ import annotations

from dataclasses import dataclass

from .loops import (
    Assign,
    Call,
    Expr,
    Fmt,
    For,
    If,
    Stmt,
    Store,
    Sub,
    Update,
    Var,
    call,
    fmt,
    names,
    number,
)


@dataclass(frozen=True)
class Division:
    """One division as emit_group wrote it: `quotient = numerator / divisor` (four names of
    its own, the reciprocal's among them), in numbers of `dtype`."""

    quotient: str
    numerator: str
    divisor: str
    reciprocal: str
    dtype: str

    @property
    def fast(self) -> Assign:
        return Assign((self.quotient,), (call("K.quotient", Var(self.numerator),
                                              Var(self.divisor), Var(self.reciprocal)),))

    @property
    def by_reciprocal(self) -> Assign:
        """math="fast": a·(1/d), rounded twice (within 1.5 ulp of a/d where 1/d is normal)."""
        return Assign((self.quotient,), (fmt("({} * {})", Var(self.numerator),
                                             Var(self.reciprocal)),))

    @property
    def exact(self) -> Assign:
        return Assign((self.quotient,), (fmt("({} / {})", Var(self.numerator),
                                             Var(self.divisor)),))


@dataclass(frozen=True)
class Nest:
    """A nest's statements as emit_group collects them: `before[k]`/`after[k]` run
    before/after loop k, `body` in the innermost loop, then `stores` (`b[i0, i1] = t`)."""

    index: list[Var]
    dims: tuple[Expr, ...]
    before: list[list[Stmt]]
    after: list[list[Stmt]]
    body: list[Stmt]
    stores: list[Store]


def exact(body: list[Stmt], divisions: list[Division]) -> list[Stmt]:
    """`body` with every division in `divisions` a true division."""
    swap = {d.fast: d.exact for d in divisions}
    return [swap.get(s, s) for s in body]


def rewrite(nest: Nest, divisions: list[Division], flag: str, scratch: list[str],
            allowed: bool, fast: bool = False) -> list[Stmt]:
    """The innermost loop's statements, its divisions by invariant divisors made
    multiplications (see the module's doc); `nest.before` and `nest.after` gain what runs
    around the loop. `flag` and `scratch` (one per store) are fresh names; `allowed`: whether
    the caller's nest may take this (serial, not flat, room for a loop). `fast` (math="fast",
    a nest that is not flat): each such division is a multiplication by the reciprocal, with
    no check and no second run, in any nest (`allowed` or not)."""
    body = nest.body
    if not divisions:
        return body + nest.stores
    assigns = all(isinstance(s, Assign) and len(s.targets) == 1 for s in body)
    if fast and assigns and len(nest.index) >= 2:
        return _by_reciprocals(nest, divisions)
    plain = assigns and all(not s.add and isinstance(s.value, Var) for s in nest.stores)
    if not allowed or len(nest.index) < 2 or not plain:
        return exact(body, divisions) + nest.stores
    return _checked(nest, divisions, flag, scratch)


def _by_reciprocals(nest: Nest, divisions: list[Division]) -> list[Stmt]:
    """math="fast": what the innermost loop does not change moved before it, each division
    by such a divisor a multiplication by its reciprocal, computed there."""
    varying, _ = _varying(nest.index[-1], nest.body)
    fast = _by_invariants(divisions, varying)
    swap = {d.fast: d.by_reciprocal for d in fast}
    kept = [swap.get(s, s) for s in _hoisted(nest, divisions, varying, fast)]
    return exact(kept, divisions) + nest.stores


def _by_invariants(divisions: list[Division], varying: set[str]) -> list[Division]:
    """The divisions whose divisor the innermost loop does not change (a quotient it does not
    change either is computed once, before it, as it is)."""
    return [d for d in divisions if d.divisor not in varying and d.quotient in varying]


def _hoisted(nest: Nest, divisions: list[Division], varying: set[str],
             fast: list[Division]) -> list[Stmt]:
    """What the innermost loop does not change moved before it (dividing), with the
    reciprocal of each divisor of `fast`; the statements the loop keeps."""
    moved = [s for s in nest.body if s.targets[0] not in varying]
    nest.before[len(nest.index) - 1] += exact(moved, divisions) + [
        Assign((d.reciprocal,), (fmt("{} / {}", number(1.0, d.dtype), Var(d.divisor)),)) for d in fast]
    return [s for s in nest.body if s.targets[0] in varying]


def _varying(inner: Var, body: list[Stmt]) -> tuple[set[str], set[str]]:
    """The locals of `body` the innermost loop (index `inner`) changes, and among them the
    totals carried from entry to entry."""
    varying, totals = {inner.name}, set()
    for stmt in body:
        name, read = stmt.targets[0], names(stmt.values[0])
        if name in read:
            totals.add(name)  # acc = f(acc, x): carried from entry to entry
        if name in read or read & varying:
            varying.add(name)
    return varying, totals


def _checked(nest: Nest, divisions: list[Division], flag: str, scratch: list[str]) -> list[Stmt]:
    """The exact rewrite: reciprocals, checks, and the second run where a check fails."""
    inner, k = nest.index[-1], len(nest.index) - 1
    body = nest.body
    varying, totals = _varying(inner, body)
    starts = {s.targets[0]: s for s in nest.before[k]
              if isinstance(s, Assign) and len(s.targets) == 1}
    fast = _by_invariants(divisions, varying)
    if not fast or not totals <= starts.keys():
        return exact(body, divisions) + nest.stores  # (a total from outside: counted twice)
    restart = [stmt for name, stmt in starts.items() if name in totals]
    kept = _hoisted(nest, divisions, varying, fast)
    unsafe = [call("K.divisor_unsafe", Var(d.divisor)) for d in fast]
    nest.before[k].append(Assign((flag,), (Fmt(" + ".join("{}" for _ in unsafe), tuple(unsafe)),)))
    checks = [Update(flag, "+=", call("K.quotient_unsafe", Var(d.numerator), Var(d.quotient)))
              for d in fast]
    again = If(fmt("{} > 0", Var(flag)), [
        *restart, For(inner.name, nest.dims[-1], exact(kept, divisions) + nest.stores)])
    read = set().union(*(names(s.values[0]) for s in kept))
    if read & {s.target.base.name for s in nest.stores}:  # (written over: read it again)
        nest.before[0][:0] = [Assign((name,), (Call("K.empty", (fmt("({},)", nest.dims[-1]),)),))
                              for name in scratch]
        drafts = [Store(Sub(Var(name), (inner,)), s.value)
                  for name, s in zip(scratch, nest.stores, strict=True)]
        again.orelse.append(For(inner.name, nest.dims[-1], [
            Store(s.target, Sub(Var(name), (inner,)))
            for name, s in zip(scratch, nest.stores, strict=True)]))
    else:
        drafts = list(nest.stores)
    nest.after[k][:0] = [again]
    return exact(kept, [d for d in divisions if d not in fast]) + checks + drafts
