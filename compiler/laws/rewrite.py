"""Applies laws to a term until none applies: innermost parts first, each law in the order the
laws are given, a rewrite kept only where it makes the term smaller (terms.size) or removes a ∂,
so rewriting always ends. Records the name of every law that fired, in order. Optionally folds
arithmetic on numbers (`7 − 3` to `4`), a step named "arithmetic"; optionally keeps shapes (the
compiler's way): where a law drops a term that may be a tensor (`x − x = 0`), the result is
multiplied by `t ^ 0` (ones shaped like t, whatever t's values), so a tensor stays one."""

from __future__ import annotations

from dataclasses import dataclass, field

from ...grammar import syntax as s
from .check import constant
from .matching import Bindings, instantiate, match
from .terms import derivatives, equal, names, occurs, parts, size, transform, walk

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


def rewrite(term, laws: tuple[Rule, ...], fold: bool = False, steps: list[str] | None = None,
            keep_shapes: bool = False):
    """`term` with `laws` applied (and, with `fold`, arithmetic folded) until nothing applies,
    innermost parts first; the names of the laws that fired are appended to `steps`; with
    `keep_shapes`, a dropped term that may be a tensor keeps the result its shape."""
    if not laws and not fold:
        return term
    rewriter = _Rewriter(laws, fold, keep_shapes, [] if steps is None else steps)
    return rewriter.term(term)


@dataclass
class _Rewriter:
    laws: tuple[Rule, ...]
    fold: bool
    keep_shapes: bool
    steps: list[str]
    # the `t ^ 0` factors and their products, by id (held, so no id is reused): never rewritten
    kept: dict[int, object] = field(default_factory=dict)

    def term(self, term):
        """`term` rewritten, innermost parts first."""
        return transform(term, self.at, lambda node: id(node) in self.kept)

    def at(self, term):
        """`term` (its parts already rewritten) with laws applied at its root until none
        applies (or a dropped term's shape was kept: the product is final)."""
        while id(term) not in self.kept:
            for rule in self.laws:
                if rule.law.solved is not None:
                    continue  # (an equation law rewrites whole equations: derive.solve)
                bound = match(rule.law.lhs, term, rule.variables)
                if bound is None or not applies(rule, bound):
                    continue
                span = getattr(term, "span", None)
                after = instantiate(rule.law.rhs, bound, span)
                if not shrinks(term, after):
                    continue
                mark = len(self.steps)
                self.steps.append(rule.law.name)
                after = self.shaped(self.term(after) if parts(after) else after, rule, bound,
                                    span)
                if self.keep_shapes and not shrinks(term, after):  # (a shape kept costs more)
                    del self.steps[mark:]
                    continue
                term = after
                break
            else:
                return self.folded(term) if self.fold else term
        return term

    def shaped(self, after, rule: Rule, bound: Bindings, span):
        """`after`, times `t ^ 0` for each term t the law dropped that may be a tensor."""
        if not self.keep_shapes:
            return after
        dropped: list = []
        for name in sorted(rule.variables - names(rule.law.rhs)):
            t = bound.get(name)
            if t is not None and _may_be_tensor(t) and not any(equal(t, d) for d in dropped):
                dropped.append(t)
        for t in dropped:
            ones = s.Binary("^", t, s.Number(0.0, span), span)
            after = s.Binary("*", after, ones, span)
            self.kept.update({id(ones): ones, id(after): after})
        return after

    def folded(self, term):
        """Arithmetic on numbers done: a finite value replaces the operation."""
        if isinstance(term, (s.Binary, s.Negate, s.Call)) and all(
                isinstance(p, s.Number) for p in parts(term)):
            value = constant(term)
            if value is not None and abs(value) != float("inf") and value == value:
                self.steps.append(ARITHMETIC)
                return s.Number(value, term.span)
        return term


def _may_be_tensor(term) -> bool:
    """False only for terms of numbers alone (a scalar whatever the arguments)."""
    return any(isinstance(node, (s.Name, s.Call, s.Index, s.Slice, s.Derivative))
               for node in walk(term))
