"""Array locals a loop reassigns (its state, and the buffer each step writes: control.py's
double buffering): held in stack slots (data pointer, shape, strides) that each assignment
writes and each read loads, where other arrays are values assigned once.

Which memory such a local holds is known only at run time, so what the function made is freed
by address at its return: every array it made but those a returned local holds then. A held
local returned takes only arrays this function made or was given (not views), so whatever it
holds then is one of those: call.py hands back the parameter itself, or adopts the rest."""

from __future__ import annotations

from dataclasses import dataclass, field

from llvmlite import ir

from ..codegen.loops import Assign, For, If, While
from . import runtime
from .expressions import ArrayValue
from .runtime import I8P, I64, LLVM
from .types import Array, Type
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

    def hold(self, name: str, value: ArrayValue) -> None:
        """`name = value` for a held local."""
        slots, b = self.held[name], self.builder
        slots.owned = slots.owned and (value.fresh or value.param >= 0 or value.owned)
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
        seen, todo = set(), [name]
        while todo:
            at = todo.pop()
            if at not in seen:
                seen.add(at)
                if not self.held[at].owned:
                    return False
                todo.extend(self.held[at].sources)
        return True

    def release_unless(self, handed: set[int], kept: list[ir.Value]) -> None:
        """Every array this function made freed, but those in `handed` (by id) and those at
        the addresses `kept` (what returned held locals hold)."""
        b = self.builder
        for array in {id(a): a for a in self.arrays.values()}.values():
            if not array.fresh or id(array) in handed:
                continue
            address = b.ptrtoint(array.data, I64)
            free = ir.Constant(ir.IntType(1), 1)
            for other in kept:
                free = b.and_(free, b.icmp_unsigned("!=", address, other))
            with b.if_then(free):
                runtime.release(b, b.bitcast(array.data, I8P))
