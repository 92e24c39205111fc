"""Arrays made inside a block whose earlier ones are dead when they are made again: a loop
nested in a loop's step makes its state's buffers at each turn of the outer loop (held.py keeps
what each made last in a slot, frees it when it makes the next, and at the return frees the
last unless a returned local holds it).

That is right where nothing can read an earlier one again: no local that may hold memory made
there (`Holders`: the local made, and every array local assigned from an expression naming
one that may, a copy of the handle, a view, a choice; a forward analysis) is live where it is
made again (`Liveness`: read on some path from there before it is assigned; a backward one).
Both run over the loop IR's blocks to their fixed points, each loop's body until what reaches
its head stops growing; a loop that assigns no array local is read once."""

from __future__ import annotations

from ..codegen.loops import (
    Assign,
    Break,
    Call,
    For,
    If,
    Raise,
    Return,
    Update,
    While,
    blocks,
    exprs,
    names,
    statements,
)
from .types import Type

#: The calls that make an array of their own (held.MAKERS and a C-ordered copy).
MAKING = ("K.empty", "K.counted_empty", "K.contiguous")


def remade(body: list, types: dict[str, Type]) -> set[str]:
    """The array locals of `body` made (MAKING, alone in their statement) inside a block, none
    of whose memory's takers is live at any place one is made."""
    arrays = {name for name, t in types.items() if not isinstance(t, str)}
    inside = {id(stmt) for at in statements(body) for block in blocks(at)
              for stmt in block}
    sites: dict[str, list] = {}
    for stmt in statements(body):
        if isinstance(stmt, Assign) and _makes(stmt) and stmt.targets[0] in arrays:
            sites.setdefault(stmt.targets[0], []).append(stmt)
    rows = {id(stmt) for loop in statements(body) if isinstance(loop, For) and loop.parallel
            for stmt in statements(loop.body)}  # (a row's arrays are its thread's own)
    sites = {name: made for name, made in sites.items()
             if any(id(stmt) in inside for stmt in made)
             and not any(id(stmt) in rows for stmt in made)}
    if not sites:
        return set()
    live = Liveness(arrays).run(body)
    holding = Holders(arrays, sites).run(body)
    return {name for name, made in sites.items()
            if not any({local for local, held in holding.get(id(stmt), {}).items()
                        if name in held} & live.get(id(stmt), set()) for stmt in made)}


def _makes(stmt: Assign) -> bool:
    return (len(stmt.targets) == 1 and isinstance(stmt.values[0], Call)
            and stmt.values[0].fn in MAKING)


class Holders:
    """For each statement (by id: the union over every place it is), the array locals that
    may hold memory made by each site (`sites`: a local's statements that make it) before it,
    as local → the sites' names: one pass for every site at once."""

    def __init__(self, arrays: set[str], sites: dict[str, list]):
        self._arrays = arrays
        self._site = {id(stmt): name for name, made in sites.items() for stmt in made}
        self.before: dict[int, dict[str, frozenset]] = {}
        self._leaving: list[dict[str, frozenset]] = []  # (what reaches each open loop's exit)

    def run(self, body: list) -> dict[int, dict[str, frozenset]]:
        self._block(body, {})
        return self.before

    def _block(self, body: list, holding: dict) -> dict:
        for stmt in body:
            _merge_into(self.before.setdefault(id(stmt), {}), holding)
            holding = self._statement(stmt, holding)
        return holding

    def _statement(self, stmt, holding: dict) -> dict:
        match stmt:
            case Assign(targets=targets, values=values):
                taking = {t: frozenset().union(*(holding.get(n, ()) for n in names(v)))
                          for t, v in zip(targets, values, strict=True) if t in self._arrays}
                site = self._site.get(id(stmt))
                after = {k: v for k, v in holding.items() if k not in targets}
                after.update({t: held for t, held in taking.items() if held})
                if site is not None:
                    for t in targets:
                        after[t] = after.get(t, frozenset()) | {site}
                return after
            case Raise() | Return():
                return {}
            case Break():
                for leaving in self._leaving:  # (a break in a For leaves the While around it)
                    _merge_into(leaving, holding)
                return {}
            case If(body=inner, orelse=orelse):
                return _merged(self._block(inner, holding), self._block(orelse, holding))
            case For(body=inner) | While(body=inner):
                return self._loop(stmt, inner, holding)
        return holding

    def _loop(self, loop, body: list, holding: dict) -> dict:
        """What leaves `loop` (a For: at its end or by a break; a While: by a break only)."""
        self._leaving.append({})
        head = dict(holding)
        while True:
            grown = _merged(head, self._block(body, head))
            if grown == head:
                break
            head = grown
        leaving = self._leaving.pop()
        return _merged(head, leaving) if isinstance(loop, For) else leaving


def _merged(a: dict, b: dict) -> dict:
    """Each local's sites in `a` or `b`."""
    made = dict(a)
    _merge_into(made, b)
    return made


def _merge_into(into: dict, more: dict) -> None:
    for local, held in more.items():
        into[local] = into.get(local, frozenset()) | held


class Liveness:
    """The array locals live before each statement (by id: the union over every place it is,
    so a statement object used twice counts as live what either place has)."""

    def __init__(self, arrays: set[str]):
        self._arrays = arrays
        self.before: dict[int, set[str]] = {}

    def run(self, body: list) -> dict[int, set[str]]:
        self._block(body, set(), set())
        return self.before

    def _reads(self, stmt) -> set[str]:
        read = set().union(set(), *(names(e) for e in exprs(stmt)))
        if isinstance(stmt, Update):
            read.add(stmt.name)
        return read & self._arrays

    def _assigns(self, body: list) -> bool:
        """Whether an array local is assigned inside `body` (else nothing in it ends a local's
        life, nor is made: its loop reads what it reads, without a fixed point)."""
        return any(isinstance(s, Assign) and set(s.targets) & self._arrays
                   for s in statements(body))

    def _inner_reads(self, loop, leaving: set[str]) -> set[str]:
        """What a loop that assigns no array local reads (where a `break` in it goes too)."""
        found = statements([loop])
        read = set().union(set(), *(self._reads(s) for s in found))
        return read | leaving if any(isinstance(s, Break) for s in found) else read

    def _block(self, body: list, after: set[str], leaving: set[str]) -> set[str]:
        """What is live before `body`, given what is live after it and where a `break` goes."""
        live = after
        for stmt in reversed(body):
            live = self._statement(stmt, live, leaving)
            self.before.setdefault(id(stmt), set()).update(live)
        return live

    def _statement(self, stmt, after: set[str], leaving: set[str]) -> set[str]:
        match stmt:
            case Assign(targets=targets):
                return (after - set(targets)) | self._reads(stmt)
            case Raise() | Return():
                return self._reads(stmt)
            case Break():
                return set(leaving)
            case If(body=inner, orelse=orelse):
                return (self._block(inner, after, leaving) | self._block(orelse, after, leaving)
                        | self._reads(stmt))
            case For(body=inner) | While(body=inner) if not self._assigns(inner):
                return after | self._inner_reads(stmt, leaving if isinstance(stmt, For) else set())
            case For(body=inner):  # (run no times or more: back to its head after each)
                head = set(after)
                while True:
                    grown = after | self._block(inner, head, after | leaving)
                    if grown == head:
                        return head | self._reads(stmt)
                    head = grown
            case While(body=inner):  # (left only by a break)
                head: set[str] = set()
                while True:
                    grown = self._block(inner, head, after)
                    if grown == head:
                        return head
                    head = grown
        return after | self._reads(stmt)
