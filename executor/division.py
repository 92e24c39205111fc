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

codegen.Emitter.emit_group writes each division in a nest as three lines, `num = …`,
`den = …`, `quo = K.quotient(num, den, rec)`, and hands the nest's lines here. `rewrite` then

- moves every line the innermost loop does not change (one naming neither its index nor a
  line that does, transitively) to before that loop: the divisors among them;
- gives each division by such a divisor its reciprocal and its check, and writes the others
  (a divisor that changes along the row; a quotient that does not, computed once) as true
  divisions, `quo = (num / den)`;
- writes the second run, and the copy, after the loop.

It leaves the nest dividing when it cannot do this safely: a parallel nest (its scratch would
be shared), a flat nest, no room for one more loop, a total kept across the innermost loop's
runs (a second run would count a row twice), or a line it does not understand. And it leaves
nests of one axis as they are: their divisor is the same for the whole nest, whose check would
then reach past its end, and executor/rows.py could no longer run it row by row with its
neighbours (a layer norm's means and spreads: one division a row).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .rows import NAME

_ASSIGN = re.compile(r"^([A-Za-z_]\w*) = (.+)$")
_STORE = re.compile(r"^([A-Za-z_]\w*\[[^\[\]]*\]) = ([A-Za-z_]\w*)$")


@dataclass(frozen=True)
class Division:
    """One division as emit_group wrote it: `quotient = numerator / divisor` (four names of
    its own, the reciprocal's among them)."""

    quotient: str
    numerator: str
    divisor: str
    reciprocal: str

    @property
    def fast(self) -> str:
        return f"{self.quotient} = K.quotient({self.numerator}, {self.divisor}, {self.reciprocal})"

    @property
    def exact(self) -> str:
        return f"{self.quotient} = ({self.numerator} / {self.divisor})"


@dataclass(frozen=True)
class Nest:
    """A nest's lines as emit_group collects them: `before[k]`/`after[k]` run before/after loop
    k, `body` in the innermost loop, then `stores` (`b[i0, i1] = t`)."""

    index: list[str]
    dims: tuple[str, ...]
    before: list[list[str]]
    after: list[list[str]]
    body: list[str]
    stores: list[str]


def exact(lines: list[str], divisions: list[Division]) -> list[str]:
    """`lines` with every division in `divisions` a true division."""
    swap = {d.fast: d.exact for d in divisions}
    return [swap.get(line, line) for line in lines]


def rewrite(nest: Nest, divisions: list[Division], flag: str, scratch: list[str],
            allowed: bool) -> list[str]:
    """The innermost loop's lines, its divisions by invariant divisors made multiplications
    (see the module's doc); `nest.before` and `nest.after` gain what runs around the loop.
    `flag` and `scratch` (one per store) are fresh names; `allowed`: whether the caller's nest
    may take this (serial, not flat, room for a loop)."""
    body = nest.body
    if not divisions:
        return body + nest.stores
    inner, k = nest.index[-1], len(nest.index) - 1
    parsed = [_ASSIGN.match(line) for line in body]
    stores = [_STORE.match(line) for line in nest.stores]
    if not allowed or len(nest.index) < 2 or not all(parsed) or not all(stores):
        return exact(body, divisions) + nest.stores
    varying, totals = {inner}, set()
    for match in parsed:
        name, names = match[1], set(NAME.findall(match[2]))
        if name in names:
            totals.add(name)  # acc = f(acc, x): carried from entry to entry
        if name in names or names & varying:
            varying.add(name)
    starts = {m[1]: line for line in nest.before[k] if (m := _ASSIGN.match(line))}
    # (a quotient the loop does not change either is computed once, before it: as it is)
    fast = [d for d in divisions if d.divisor not in varying and d.quotient in varying]
    if not fast or not totals <= starts.keys():
        return exact(body, divisions) + nest.stores  # (a total from outside: counted twice)
    restart = [line for name, line in starts.items() if name in totals]
    kept: list[str] = []
    moved: list[str] = []
    for line, match in zip(body, parsed, strict=True):
        (kept if match[1] in varying else moved).append(line)
    nest.before[k] += exact(moved, divisions) + [f"{d.reciprocal} = 1.0 / {d.divisor}"
                                                 for d in fast]
    nest.before[k].append(f"{flag} = " + " + ".join(f"K.divisor_unsafe({d.divisor})"
                                                    for d in fast))
    checks = [f"{flag} += K.quotient_unsafe({d.numerator}, {d.quotient})" for d in fast]
    loop = f"for {inner} in range({nest.dims[-1]}):"
    again = [f"if {flag} > 0:", *("    " + line for line in restart), "    " + loop,
             *("        " + line for line in exact(kept, divisions) + nest.stores)]
    read = {name for line in kept for name in NAME.findall(line.partition(" = ")[2])}
    if read & {m[1].partition("[")[0] for m in stores}:  # (written over: read it again)
        nest.before[0][:0] = [f"{name} = K.empty(({nest.dims[-1]},))" for name in scratch]
        drafts = [f"{name}[{inner}] = {m[2]}" for name, m in zip(scratch, stores, strict=True)]
        again += ["else:", "    " + loop, *(f"        {m[1]} = {name}[{inner}]"
                                            for name, m in zip(scratch, stores, strict=True))]
    else:
        drafts = nest.stores
    nest.after[k][:0] = again
    return exact(kept, [d for d in divisions if d not in fast]) + checks + drafts
