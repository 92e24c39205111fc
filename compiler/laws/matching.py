"""Structural matching of a law's side against a term: each of the law's names binds the
subterm where it stands (one name twice must bind equal subterms), everything else must be the
same node; no associativity or commutativity (`1 · x` and `x · 1` are two laws)."""

from __future__ import annotations

from dataclasses import fields, replace

from ...grammar import syntax as s
from .terms import _is_node, equal

Bindings = dict[str, object]


def match(pattern, term, variables: frozenset[str], bound: Bindings | None = None) -> Bindings | None:
    """The bindings that make `pattern` equal to `term` (extending `bound`), or None."""
    bound = dict(bound or {})
    return bound if _match(pattern, term, variables, bound) else None


def _match(pattern, term, variables: frozenset[str], bound: Bindings) -> bool:
    if isinstance(pattern, s.Name) and pattern.module is None and pattern.name in variables:
        if pattern.name in bound:
            return equal(bound[pattern.name], term)
        bound[pattern.name] = term
        return True
    if type(pattern) is not type(term):
        return False
    for f in fields(pattern):
        if f.name == "span":
            continue
        want, have = getattr(pattern, f.name), getattr(term, f.name)
        if _is_node(want):
            if not _match(want, have, variables, bound):
                return False
        elif isinstance(want, tuple) and any(_is_node(w) for w in want):
            if len(want) != len(have) or not all(
                    _match(w, h, variables, bound) for w, h in zip(want, have, strict=True)):
                return False
        elif isinstance(pattern, s.Derivative) and f.name == "wrt":
            if not _match_wrt(want, have, variables, bound):
                return False
        elif want != have and not (f.name == "module" and want is None):
            return False
    return True


def _match_wrt(want: tuple[str, ...], have: tuple[str, ...], variables: frozenset[str],
               bound: Bindings) -> bool:
    """A ∂'s variables: a law's name there binds the Name of the variable written."""
    if len(want) != len(have):
        return False
    for w, h in zip(want, have, strict=True):
        if w in variables:
            if not _match(s.Name(w, None, None), s.Name(h, None, None), variables,  # type: ignore[arg-type]
                          bound):
                return False
        elif w != h:
            return False
    return True


def instantiate(pattern, bound: Bindings, span):
    """`pattern` with each bound name replaced by its subterm; new nodes take `span` (the
    span of the term the law rewrote, so errors still point at the user's text)."""
    if isinstance(pattern, s.Name) and pattern.module is None and pattern.name in bound:
        return bound[pattern.name]
    changes: dict = {"span": span} if hasattr(pattern, "span") else {}
    for f in fields(pattern):
        value = getattr(pattern, f.name)
        if _is_node(value):
            changes[f.name] = instantiate(value, bound, span)
        elif isinstance(value, tuple) and any(_is_node(v) for v in value):
            changes[f.name] = tuple(instantiate(v, bound, span) if _is_node(v) else v
                                    for v in value)
        elif isinstance(pattern, s.Derivative) and f.name == "wrt":
            changes[f.name] = tuple(_wrt_name(w, bound) for w in value)
    return replace(pattern, **changes)


def _wrt_name(name: str, bound: Bindings) -> str:
    found = bound.get(name)
    return found.name if isinstance(found, s.Name) else name
