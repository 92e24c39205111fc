"""Syntax terms seen as trees, for laws: a term's parts, the term rebuilt with new parts, its
size (the measure a rewrite must shrink), where a term occurs, and the names a law binds."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import fields, replace

from ...grammar import syntax as s

#: The syntax classes that are parts of a term (a Let's bindings included).
_NODES = (s.Number, s.String, s.Name, s.Call, s.Binary, s.Negate, s.Compare, s.If, s.Let,
          s.Tuple, s.Index, s.Slice, s.Derivative, s.Binding)


def _is_node(value: object) -> bool:
    return isinstance(value, _NODES)


def parts(term) -> list:
    """The term's immediate parts, in field order (tuples of parts flattened)."""
    found: list = []
    for f in fields(term):
        value = getattr(term, f.name)
        if _is_node(value):
            found.append(value)
        elif isinstance(value, tuple):
            found.extend(v for v in value if _is_node(v))
    return found


def rebuild(term, new_parts: list):
    """`term` with its parts (as `parts` lists them) replaced by `new_parts`, in order."""
    if not new_parts:
        return term
    given = iter(new_parts)
    changes = {}
    for f in fields(term):
        value = getattr(term, f.name)
        if _is_node(value):
            changes[f.name] = next(given)
        elif isinstance(value, tuple) and any(_is_node(v) for v in value):
            changes[f.name] = tuple(next(given) if _is_node(v) else v for v in value)
    return replace(term, **changes)


def transform(term, visit: Callable, skip: Callable = lambda node: False):
    """`term` rebuilt bottom-up, each node passed to `visit` once its parts are done (`skip`ped
    nodes are kept as they are, unvisited); walked without recursion (a chain may be long)."""
    done: list = []
    pending: list = [(term, False)]
    while pending:
        node, ready = pending.pop()
        if skip(node):
            done.append(node)
        elif not ready:
            pending.append((node, True))
            pending.extend((p, False) for p in reversed(parts(node)))
        else:
            count = len(parts(node))
            new_parts = done[len(done) - count:] if count else []
            del done[len(done) - count:]
            done.append(visit(rebuild(node, new_parts)))
    return done[0]


def walk(term) -> Iterator:
    """Every part of `term`, itself included (without recursion: a chain may be long)."""
    pending = [term]
    while pending:
        node = pending.pop()
        yield node
        pending.extend(parts(node))


def size(term) -> int:
    """How many nodes the term has: the measure every rewrite must make smaller."""
    return sum(1 for _ in walk(term))


def derivatives(term) -> int:
    """How many ∂ the term holds (a rewrite that removes one is kept even if it grows)."""
    return sum(1 for node in walk(term) if isinstance(node, s.Derivative))


def occurs(part, term) -> bool:
    """True where `part` is `term` or one of its parts (a Name also as a ∂'s variable)."""
    for node in walk(term):
        if equal(node, part):
            return True
        if isinstance(part, s.Name) and isinstance(node, s.Derivative) and part.name in node.wrt:
            return True
    return False


def names(term) -> set[str]:
    """The plain names (no module) that occur in `term`, a ∂'s variables included."""
    found: set[str] = set()
    for node in walk(term):
        if isinstance(node, s.Name) and node.module is None:
            found.add(node.name)
        elif isinstance(node, s.Derivative):
            found.update(node.wrt)
    return found


def equal(a, b) -> bool:
    """Structural equality, spans aside (what the dataclasses' == says), compared without
    recursion: a chain of operators may be long."""
    pending = [(a, b)]
    while pending:
        x, y = pending.pop()
        if x is y:
            continue
        if type(x) is not type(y):
            return False
        if not _is_node(x):
            if x != y:
                return False
            continue
        for f in fields(x):
            if not f.compare:
                continue
            u, v = getattr(x, f.name), getattr(y, f.name)
            if isinstance(u, tuple) and isinstance(v, tuple):
                if len(u) != len(v):
                    return False
                pending.extend(zip(u, v, strict=True))
            else:
                pending.append((u, v))
    return True
