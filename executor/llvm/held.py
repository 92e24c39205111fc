"""Array locals a loop reassigns (its state, and the buffer each step writes: control.py's
double buffering): held in stack slots (data pointer, shape, strides) that each assignment
writes and each read loads, where other arrays are values assigned once.

An array made inside a block (scratch rows, a turn's copies, the arrays remade.py finds dead
where they are made again) has a slot of its own for what it made last, freed when it makes the
next. Which memory such a local holds is known only at run time, so what the function made is
freed by address at its return: every array it made but those a returned local holds then. A
held local returned takes only arrays this function made or was given (not views), so whatever
it holds then is one of those: call.py hands back the parameter itself, or adopts the rest."""

from __future__ import annotations

import collections
from dataclasses import dataclass, field, replace

from llvmlite import ir

from ..codegen.loops import (
    Assign,
    Call,
    Expr,
    For,
    If,
    Sub,
    Var,
    While,
    blocks,
    exprs,
    kids,
    names,
    statements,
)
from . import runtime
from .expressions import ArrayValue
from .runtime import I8P, I64, LLVM
from .types import Array, Type, is_part
from .unsupported import Unsupported


@dataclass
class Slots:
    """A held local's slots, and what it may hold (`ordered`: only C-ordered arrays; `owned`:
    only arrays made or given, no views, which it may then be returned as)."""

    data: ir.Value
    shape: list
    strides: list
    dtype: str
    ordered: bool = True
    owned: bool = True
    sources: set = field(default_factory=set)  # (held locals it took arrays from)
    read: bool = False  # (read as C-ordered already: an unordered array may not come later)


def held(body: list, types: dict[str, Type]) -> set[str]:
    """The array locals of `body` assigned more than once or inside a block."""
    seen: set[str] = set()
    found: set[str] = set()

    def visit(stmts: list, depth: int) -> None:
        for stmt in stmts:
            if isinstance(stmt, Assign):
                for name in stmt.targets:
                    if isinstance(types.get(name), Array) and (depth or name in seen):
                        found.add(name)
                    seen.add(name)
            elif isinstance(stmt, (For, While)):
                visit(stmt.body, depth + 1)
            elif isinstance(stmt, If):
                visit(stmt.body, depth + 1)
                visit(stmt.orelse, depth + 1)

    visit(body, 0)
    return found


#: The calls that make a fresh array.
MAKERS = ("K.empty", "K.counted_empty")


def scratch(body: list, types: dict[str, Type]) -> set[str]:
    """The array locals of `body` that are only made (K.empty) and read or written entry by
    entry (the division rewrite's row buffers): no view, copy or return of one shares its
    memory, so each one made frees the one before it (made inside a loop, once a turn)."""
    found = {name for stmt in statements(body) if isinstance(stmt, Assign)
             for name, value in zip(stmt.targets, stmt.values, strict=True)
             if isinstance(types.get(name), Array) and isinstance(value, Call)
             and value.fn in MAKERS}
    for stmt in statements(body):
        if isinstance(stmt, Assign):
            found -= {name for name, value in zip(stmt.targets, stmt.values, strict=True)
                      if not (isinstance(value, Call) and value.fn in MAKERS)}
        for expr in exprs(stmt):
            found -= _shared(expr, types)
    return found


def copies(body: list, types: dict[str, Type]) -> set[str]:
    """The array locals of `body` made by K.contiguous inside a block (a product's operand
    copied C-ordered in a loop's step), each made once in the code, whose memory (the local
    and every array local that may take a view of it) is read only later in that block, in
    the same turn: each one made frees the one before it, no view of which is read again."""
    assigned = collections.Counter(name for stmt in statements(body) if isinstance(stmt, Assign)
                                   for name in stmt.targets)
    reads = [(stmt, names_read(stmt)) for stmt in statements(body)]
    found = set()
    for block in (b for stmt in statements(body) for b in blocks(stmt)):
        for at, stmt in enumerate(block):
            if (isinstance(stmt, Assign) and len(stmt.targets) == 1
                    and isinstance(types.get(stmt.targets[0]), Array)
                    and isinstance(stmt.values[0], Call) and stmt.values[0].fn == "K.contiguous"
                    and assigned[stmt.targets[0]] == 1
                    and _read_in_turn(stmt.targets[0], block, at, types, assigned, reads)):
                found.add(stmt.targets[0])
    return found


def names_read(stmt) -> set[str]:
    """The locals `stmt` itself reads (not those of the statements inside it)."""
    return set().union(set(), *(names(e) for e in exprs(stmt)))


def _read_in_turn(made: str, block: list, at: int, types: dict[str, Type],
                  assigned: collections.Counter, reads: list) -> bool:
    """Whether `made` (assigned by block[at]) and the array locals that may view it are each
    assigned once, at the top of `block`, and read only by the statements after that."""
    after = {made: at}
    for k in range(at + 1, len(block)):
        stmt = block[k]
        for inner in statements([stmt])[1:]:  # (a view of it made inside a nested block)
            if isinstance(inner, Assign) and names_read(inner) & set(after) and any(
                    isinstance(types.get(t), Array) for t in inner.targets):
                return False
        if isinstance(stmt, Assign):
            for name, value in zip(stmt.targets, stmt.values, strict=True):
                if isinstance(types.get(name), Array) and names(value) & set(after):
                    if assigned[name] != 1:
                        return False
                    after[name] = k
    allowed = {name: {id(s) for s in statements(block[k + 1:])} for name, k in after.items()}
    return all(id(stmt) in allowed[name] for stmt, read in reads for name in read & set(after))


def _shared(expr: Expr, types: dict[str, Type]) -> set[str]:
    """The locals `expr` reads other than as the array of an entry (`x[i, j]`)."""
    if isinstance(expr, Var):
        return {expr.name}
    if isinstance(expr, Sub) and isinstance(expr.base, Var):
        t = types.get(expr.base.name)
        entry = isinstance(t, Array) and not is_part(t, expr.index)
        inner = set().union(*(_shared(i, types) for i in expr.index))
        return inner if entry else inner | {expr.base.name}
    return set().union(set(), *(_shared(kid, types) for kid in kids(expr)))


class Held:
    """The held locals of one Lowering (its `builder`, `_entry` block, `types`)."""

    def hold_slots(self, names: set[str]) -> None:
        self.held: dict[str, Slots] = {}
        b = self.builder
        with b.goto_block(self._entry):
            b.position_at_start(self._entry)
            for name in sorted(names):
                t = self.types[name]
                self.held[name] = Slots(b.alloca(LLVM[t.dtype].as_pointer(), name=name),
                                        [b.alloca(I64) for _ in range(t.rank)],
                                        [b.alloca(I64) for _ in range(t.rank)], t.dtype)

    def hold_scratch(self, names: set[str]) -> None:
        """A slot for what each local made inside a block (`scratch`, `copies`, remade.py)
        made last: NULL until it makes one."""
        self.scratch: dict[str, ir.Value] = {}
        b = self.builder
        with b.goto_block(self._entry):
            b.position_at_start(self._entry)
            for name in sorted(names):
                self.scratch[name] = b.alloca(I8P, name=f"{name}.made")
                b.store(ir.Constant(I8P, None), self.scratch[name])

    def remade(self, name: str, value: ArrayValue) -> None:
        """`name = value` for a scratch local: what it made before freed, `value` held."""
        b = self.builder
        runtime.release(b, b.load(self.scratch[name]))  # (free(NULL) does nothing)
        b.store(b.bitcast(value.data, I8P), self.scratch[name])
        self.hold(name, replace(value, fresh=False, owned=True))

    def hold(self, name: str, value: ArrayValue) -> None:
        """`name = value` for a held local."""
        slots, b = self.held[name], self.builder
        slots.owned = slots.owned and (value.fresh or value.param >= 0 or value.owned)
        for made in value.made():
            self.stored.setdefault(made, set()).add(name)
        slots.sources |= value.sources
        if value.dtype != slots.dtype:
            raise Unsupported(f"the array {name} of two dtypes")
        if not value.ordered:
            if slots.read:
                raise Unsupported(f"the array {name} read as C-ordered, then not")
            slots.ordered = False
        b.store(value.data, slots.data)
        for slot, v in zip(slots.shape + slots.strides, value.shape + value.strides,
                           strict=True):
            b.store(v, slot)

    def holding(self, name: str) -> ArrayValue:
        """The array the held local `name` holds now."""
        slots, b = self.held[name], self.builder
        slots.read = slots.read or slots.ordered
        return ArrayValue(b.load(slots.data), [b.load(s) for s in slots.shape],
                          [b.load(s) for s in slots.strides], slots.dtype, False,
                          ordered=slots.ordered, owned=True, sources=frozenset({name}))

    def holds_own(self, name: str) -> bool:
        """Whether the held local `name` holds only arrays made or given (never a view), as
        every held local it took arrays from (once every assignment is lowered)."""
        return all(self.held[at].owned for at in self._took_from(name))

    def _took_from(self, name: str) -> set[str]:
        """The held local `name` and every held local it took arrays from."""
        seen, todo = set(), [name]
        while todo:
            at = todo.pop()
            if at not in seen:
                seen.add(at)
                todo.extend(self.held[at].sources)
        return seen

    def release_unless(self, handed: set[int], kept: list[tuple]) -> None:
        """Every array this function made freed, but those in `handed` (by id) and those at
        the addresses `kept` (what returned held locals hold: address and local, each
        compared only with the arrays that local, or one it took arrays from, took)."""
        b = self.builder
        for name, made in self.scratch.items():  # (what each made last: `remade`)
            self._free_unless(b.load(made), {name}, kept)
        for array in {id(a): a for a in self.arrays.values()}.values():
            if array.fresh and id(array) not in handed:
                self._free_unless(b.bitcast(array.data, I8P),
                                  self.stored.get(id(array.data), set()), kept)

    def _free_unless(self, memory: ir.Value, took: set[str], kept: list[tuple]) -> None:
        """`memory` freed unless a returned held local that took from one of `took` (the
        held locals it was stored in) holds it now."""
        b = self.builder
        others = [at for at, name in kept if took & self._took_from(name)]
        if not others:  # (no returned local can hold it)
            runtime.release(b, memory)
            return
        address = b.ptrtoint(memory, I64)
        free = ir.Constant(ir.IntType(1), 1)
        for other in others:
            free = b.and_(free, b.icmp_unsigned("!=", address, other))
        with b.if_then(free):
            runtime.release(b, memory)
