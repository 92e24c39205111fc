"""Derivations on terms: simplify (the laws to a fixpoint, arithmetic on numbers folded),
substitute, equivalent (equal simplified forms) and solve (equation laws searched breadth
first, within limits), each giving a result and the names of the steps taken."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from ...grammar import syntax as s
from .matching import instantiate, match
from .rewrite import Rule, applies, rewrite
from .terms import equal, names, size, transform

#: How many equation-law steps a solution may take, and how many equations a search may
#: visit, unless a caller widens them.
DEPTH = 8
GOALS = 1000


@dataclass(frozen=True)
class Outcome:
    """What a derivation gives: its result term (an expression, or an equation as a Compare),
    the names of its steps in order, and its status ("simplified", "unchanged",
    "substituted", "equivalent", "not shown equivalent", "solved", "unsolved")."""

    term: object
    steps: tuple[str, ...]
    status: str


def simplify(term, laws: tuple[Rule, ...]) -> Outcome:
    """`term` with the term laws applied until none applies, arithmetic on numbers folded."""
    steps: list[str] = []
    after = rewrite(term, laws, True, steps)
    return Outcome(after, tuple(steps), "simplified" if steps else "unchanged")


def substitute(term, name: str, replacement, laws: tuple[Rule, ...]) -> Outcome:
    """`term` with every `name` replaced by `replacement`, then simplified."""
    def placed_at(node):
        return replacement if isinstance(node, s.Name) and node.name == name \
            and node.module is None else node

    placed = transform(term, placed_at)
    done = simplify(placed, laws)
    return Outcome(done.term, done.steps, "substituted")


def equivalent(a, b, laws: tuple[Rule, ...]) -> Outcome:
    """Whether `a` and `b` simplify to the same term (the common form as the result, or
    a's simplified form where they differ)."""
    left, right = simplify(a, laws), simplify(b, laws)
    same = equal(left.term, right.term)
    return Outcome(left.term, left.steps + right.steps,
                   "equivalent" if same else "not shown equivalent")


def solve(equation: s.Compare, name: str, laws: tuple[Rule, ...], depth: int = DEPTH,
          goals: int = GOALS) -> Outcome:
    """`equation` solved for `name` (`name = e`, e without `name`) by equation laws, each step
    followed by simplifying both sides, searched breadth first up to `depth` steps and `goals`
    equations visited; unsolved, the closest equation reached (the fewest nodes where `name`
    stands) with the steps to it."""
    start, first = _simplified(equation, laws)
    queue = deque([(start, first, 0)])
    seen = [start]
    closest = (start, first)
    while queue:
        current, steps, level = queue.popleft()
        solved = _solution(current, name)
        if solved is not None:
            return Outcome(solved, steps, "solved")
        if _distance(current, name) < _distance(closest[0], name):
            closest = (current, steps)
        if level >= depth:
            continue
        for law_name, after in _moves(current, laws):
            following, more = _simplified(after, laws)
            if any(equal(following, other) for other in seen) or len(seen) >= goals:
                continue
            seen.append(following)
            queue.append((following, steps + (law_name,) + more, level + 1))
    return Outcome(closest[0], closest[1], "unsolved")


def _simplified(equation: s.Compare, laws: tuple[Rule, ...]) -> tuple[s.Compare, tuple[str, ...]]:
    left, right = simplify(equation.left, laws), simplify(equation.right, laws)
    return s.Compare("=", left.term, right.term, equation.span), left.steps + right.steps


def _moves(equation: s.Compare, laws: tuple[Rule, ...]):
    """Each equation law that rewrites the equation (read either way round), and its result."""
    for rule in laws:
        if rule.law.solved is None:
            continue
        for left, right in ((equation.left, equation.right), (equation.right, equation.left)):
            bound = match(rule.law.lhs, left, rule.variables)
            bound = match(rule.law.rhs, right, rule.variables, bound) if bound is not None else None
            if bound is None or not applies(rule, bound):
                continue
            new_left, new_right = (instantiate(side, bound, equation.span)
                                   for side in rule.law.solved)
            yield rule.law.name, s.Compare("=", new_left, new_right, equation.span)


def _solution(equation: s.Compare, name: str) -> s.Compare | None:
    """`name = e` if one side is `name` alone and the other has no `name`."""
    for one, other in ((equation.left, equation.right), (equation.right, equation.left)):
        if isinstance(one, s.Name) and one.name == name and one.module is None \
                and name not in names(other):
            return s.Compare("=", one, other, equation.span)
    return None


def _distance(equation: s.Compare, name: str) -> int:
    """How far from solved: the nodes of the sides that hold `name`, less one."""
    holding = [side for side in (equation.left, equation.right) if name in names(side)]
    return sum(size(side) for side in holding) - 1 if holding else 10**9


__all__ = ["Outcome", "equivalent", "simplify", "solve", "substitute"]
