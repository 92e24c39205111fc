"""Applies laws to a term until none applies: innermost parts first, each law in the order the
laws are given, a rewrite kept only where it makes the term smaller (terms.size) or removes a ∂,
so rewriting always ends. Records the name of every law that fired, in order. Optionally folds
arithmetic on numbers (`7 − 3` to `4`), a step named "arithmetic"."""

from __future__ import annotations

from dataclasses import dataclass

from ...grammar import syntax as s
from .check import constant
from .matching import Bindings, instantiate, match
from .terms import derivatives, names, occurs, parts, rebuild, size

#: The step name of folded arithmetic on numbers.
ARITHMETIC = "arithmetic"


@dataclass(frozen=True)
class Rule:
    """A law ready to rewrite with: the law and the names its sides bind."""

    law: s.Law
    variables: frozenset[str]


def rules(laws) -> tuple[Rule, ...]:
    """The rules of these (checked) laws, in order."""
    found = []
    for law in laws:
        bound = names(law.lhs) | (names(law.rhs) if law.solved is not None else set())
        found.append(Rule(law, frozenset(bound)))
    return tuple(found)


def applies(rule: Rule, bound: Bindings) -> bool:
    """True where the law's conditions hold for these bindings: each `x ∉ u` structurally,
    each comparison only where it folds to a true number (a law true on part of the numbers
    rewrites nothing it cannot see is inside that part)."""
    for condition in rule.law.conditions:
        if isinstance(condition, s.NotIn):
            inside = bound.get(condition.name)
            if inside is None or occurs(inside, instantiate(condition.term, bound, None)):
                return False
        else:
            value = constant(instantiate(condition, bound, None))
            if value is None or value == 0:
                return False
    return True


def shrinks(before, after) -> bool:
    return size(after) < size(before) or derivatives(after) < derivatives(before)


def _at(term, laws: tuple[Rule, ...], fold: bool, steps: list[str]):
    """`term` (its parts already rewritten) with laws applied at its root until none applies."""
    while True:
        for rule in laws:
            if rule.law.solved is not None:
                continue  # (an equation law rewrites whole equations: derive.solve)
            bound = match(rule.law.lhs, term, rule.variables)
            if bound is None or not applies(rule, bound):
                continue
            after = instantiate(rule.law.rhs, bound, getattr(term, "span", None))
            if shrinks(term, after):
                steps.append(rule.law.name)
                term = rewrite(after, laws, fold, steps) if parts(after) else after
                break
        else:
            return _folded(term, steps) if fold else term


def _folded(term, steps: list[str]):
    """Arithmetic on numbers done: a finite value replaces the operation."""
    if isinstance(term, (s.Binary, s.Negate, s.Call)) and all(
            isinstance(p, s.Number) for p in parts(term)):
        value = constant(term)
        if value is not None and abs(value) != float("inf") and value == value:
            steps.append(ARITHMETIC)
            return s.Number(value, term.span)
    return term


def rewrite(term, laws: tuple[Rule, ...], fold: bool = False, steps: list[str] | None = None):
    """`term` with `laws` applied (and, with `fold`, arithmetic folded) until nothing applies,
    innermost parts first; the names of the laws that fired are appended to `steps`. Walks
    without recursion over the term (a chain of operators may be long)."""
    steps = [] if steps is None else steps
    if not laws and not fold:
        return term
    done: list = []
    pending: list = [(term, False)]
    while pending:
        node, ready = pending.pop()
        if not ready:
            pending.append((node, True))
            pending.extend((p, False) for p in reversed(parts(node)))
            continue
        count = len(parts(node))
        new_parts = done[len(done) - count:] if count else []
        del done[len(done) - count:]
        done.append(_at(rebuild(node, new_parts), laws, fold, steps))
    return done[0]
