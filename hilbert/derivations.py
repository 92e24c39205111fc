"""Derivations as an API: hilbert.simplify, substitute, equivalent and solve, on .hb text,
under the laws of .hb declarations (docs/laws.md); each gives a Derivation, never an
exception for an answer it cannot reach ("unsolved", "not shown equivalent")."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hilbert.compiler.laws import derive
from hilbert.compiler.laws.rewrite import Rule, rules
from hilbert.compiler.modules import Loader
from hilbert.compiler.passes.resolve import resolve
from hilbert.grammar import syntax as s
from hilbert.grammar.errors import ArgumentError
from hilbert.grammar.printer import print_expr
from hilbert.grammar.source import nowhere

#: The laws a derivation uses unless told otherwise: the Prelude's.
PRELUDE_LAWS = "open Prelude.Laws\nopen Prelude.Trigonometry"


@dataclass(frozen=True)
class Derivation:
    """A derivation's answer: `result`, the expression or equation reached (.hb text);
    `steps`, the names of the laws that fired in order ("arithmetic" where numbers were
    folded); `status`, one of "simplified", "unchanged", "substituted", "equivalent", "not
    shown equivalent", "solved", "unsolved" (then `result` is the closest equation reached)."""

    result: str
    steps: tuple[str, ...]
    status: str

    @property
    def holds(self) -> bool:
        """True where the derivation reached what it was asked for (a solution, an
        equivalence, a simplified form)."""
        return self.status not in ("unsolved", "not shown equivalent")

    def __str__(self) -> str:
        return self.result


def _laws(laws: str | None, search_path) -> tuple[Rule, ...]:
    """The rules of every law `laws` (.hb declarations: laws, law-only models, opens)
    declares or opens, each checked (E120, E121); the Prelude's where None."""
    text = PRELUDE_LAWS if laws is None else laws
    if not isinstance(text, str):
        raise ArgumentError("E600", "laws must be .hb text (law declarations, law-only models "
                            f"or opens), but it is a {type(text).__name__}", nowhere("laws"))
    loader = Loader(search_path)
    root = loader.from_text(text, "<laws>", None)
    return rules(resolve(loader, root).scopes[root.key].laws)


def _term(text: str, what: str):
    if not isinstance(text, str):
        raise ArgumentError("E600", f"{what} must be .hb text, but it is a "
                            f"{type(text).__name__}", nowhere(what))
    from hilbert.grammar.parser import parse_expression  # (Lark, loaded only when deriving)

    return parse_expression(text, f"<{what}>")


def _answer(outcome: derive.Outcome) -> Derivation:
    return Derivation(print_expr(outcome.term, unicode=True), outcome.steps, outcome.status)


def simplify(text: str, laws: str | None = None,
             search_path: str | Path | list[str | Path] | None = None) -> Derivation:
    """`text` (an expression) with the laws applied, innermost first, until none applies (each
    rewrite making it smaller), and arithmetic on numbers folded.

    >>> simplify("x · 1 + 0")
    Derivation(result='x', steps=('unit', 'zero'), status='simplified')
    """
    return _answer(derive.simplify(_term(text, "expression"), _laws(laws, search_path)))


def substitute(text: str, name: str, replacement: str, laws: str | None = None,
               search_path: str | Path | list[str | Path] | None = None) -> Derivation:
    """`text` with every `name` replaced by the expression `replacement`, then simplified.

    >>> str(substitute("x · 1", "x", "a + 1"))
    'a + 1'
    """
    return _answer(derive.substitute(_term(text, "expression"), _name(name),
                                     _term(replacement, "replacement"), _laws(laws, search_path)))


def equivalent(a: str, b: str, laws: str | None = None,
               search_path: str | Path | list[str | Path] | None = None) -> Derivation:
    """Whether expressions `a` and `b` simplify to the same form ("equivalent"; else "not
    shown equivalent": the laws found no common form, which does not prove them different).

    >>> equivalent("x · 1 + 0", "x").holds
    True
    """
    given = _laws(laws, search_path)
    return _answer(derive.equivalent(_term(a, "expression"), _term(b, "expression"), given))


def solve(equation: str, name: str, laws: str | None = None, depth: int = derive.DEPTH,
          goals: int = derive.GOALS,
          search_path: str | Path | list[str | Path] | None = None) -> Derivation:
    """`equation` (`l = r`) solved for `name` by the equation laws (`law n = l = r ⇔ v = e`),
    each step followed by simplifying, searched breadth first up to `depth` steps and `goals`
    equations; "unsolved" (with the closest equation reached) where no solution is found."""
    parsed = _term(equation, "equation")
    if not (isinstance(parsed, s.Compare) and parsed.op == "="):
        raise ArgumentError("E601", f"solve needs an equation l = r, but {equation!r} is not "
                            "one", nowhere("hilbert.solve"))
    for limit, value in (("depth", depth), ("goals", goals)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ArgumentError("E601", f"{limit} must be a whole number of at least 1, not "
                                f"{value!r}", nowhere("hilbert.solve"))
    return _answer(derive.solve(parsed, _name(name), _laws(laws, search_path), depth, goals))


def _name(name: str) -> str:
    if not (isinstance(name, str) and name.isidentifier()):
        raise ArgumentError("E601", f"a name to replace or solve for is one .hb name, such as "
                            f"'x', not {name!r}", nowhere("hilbert.derivations"))
    return name
