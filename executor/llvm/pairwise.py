"""A long sum kept in an array (column sums) added pairwise, as LLVM IR: executor/numba/
pairwise.py's `push_rows` and `total_rows`, operation for operation (the same additions in
the same order, so the same bits). The stack and the part are K.partials' fresh C-ordered
float64 arrays: the stack's level k is its entries k·n … k·n + n − 1, n the part's size."""

from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from .entries import while_
from .runtime import I64
from .unsupported import Unsupported
from .views import entries

if TYPE_CHECKING:
    from .expressions import ArrayValue, Expressions


def push_rows(lowering: Expressions, stack: ArrayValue, count: ir.Value,
              part: ArrayValue) -> ir.Value:
    """`part` pushed onto `stack`: while the count's low bit is 1, the level's row added into
    part, a level up; then part stored at that level and emptied. The new count."""
    b, n = lowering.builder, _size(lowering, stack, part)
    level, carried = _counter(lowering, "push.level", 0), _counter(lowering, "push.carried", count)
    while_(b, lambda: _odd(b, b.load(carried)), lambda: (
        _add_level(lowering, stack, part, n, b.load(level)),
        _next(b, level, carried)), "push")
    at = b.load(level)
    zero = ir.Constant(part.data.type.pointee, 0.0)
    lowering._loop("push.store", n, lambda j: (
        b.store(b.load(b.gep(part.data, [j])), _row(b, stack, n, at, j)),
        b.store(zero, b.gep(part.data, [j]))))
    return b.add(count, ir.Constant(I64, 1))


def total_rows(lowering: Expressions, stack: ArrayValue, count: ir.Value, part: ArrayValue,
               out: ArrayValue) -> None:
    """out = the stack's pushed rows and `part` added, smallest groups first (each entry
    rounded once into out's dtype)."""
    b, n = lowering.builder, _size(lowering, stack, part)
    if not out.ordered:
        raise Unsupported("a pairwise total into an array not C-ordered")
    level, carried = _counter(lowering, "total.level", 0), _counter(lowering, "total.carried",
                                                                   count)

    def step() -> None:
        with b.if_then(_odd(b, b.load(carried))):
            _add_level(lowering, stack, part, n, b.load(level))
        _next(b, level, carried)

    while_(b, lambda: b.icmp_signed(">", b.load(carried), ir.Constant(I64, 0)), step, "total")
    lowering._loop("total.write", n, lambda j: b.store(
        lowering.cast(b.load(b.gep(part.data, [j])), part.dtype, out.dtype),
        b.gep(out.data, [j])))


def _size(lowering: Expressions, stack: ArrayValue, part: ArrayValue) -> ir.Value:
    """The part's size (its entries), once both arrays are known to be C-ordered float64."""
    if not (stack.ordered and part.ordered and stack.dtype == part.dtype == "float64"):
        raise Unsupported("a pairwise push of arrays other than K.partials'")
    return entries(lowering.builder, part.shape)


def _counter(lowering: Expressions, name: str, start) -> ir.Value:
    """An int64 slot of its own holding `start`."""
    slot = lowering._slot(f"{name}{len(lowering.slots)}", "int64")
    value = ir.Constant(I64, start) if isinstance(start, int) else start
    lowering.builder.store(value, slot)
    return slot


def _odd(b: ir.IRBuilder, value: ir.Value) -> ir.Value:
    return b.icmp_signed("==", b.and_(value, ir.Constant(I64, 1)), ir.Constant(I64, 1))


def _next(b: ir.IRBuilder, level: ir.Value, carried: ir.Value) -> None:
    """A level up, and the count halved (it is never negative: a shift is its floor)."""
    b.store(b.add(b.load(level), ir.Constant(I64, 1)), level)
    b.store(b.ashr(b.load(carried), ir.Constant(I64, 1)), carried)


def _row(b: ir.IRBuilder, stack: ArrayValue, n: ir.Value, level: ir.Value,
         j: ir.Value) -> ir.Value:
    return b.gep(stack.data, [b.add(b.mul(level, n), j)])


def _add_level(lowering: Expressions, stack: ArrayValue, part: ArrayValue, n: ir.Value,
               level: ir.Value) -> None:
    """part[j] = stack[level, j] + part[j] for every j (in that order of the operands)."""
    b = lowering.builder
    lowering._loop("pairwise.add", n, lambda j: b.store(
        b.fadd(b.load(_row(b, stack, n, level, j)), b.load(b.gep(part.data, [j]))),
        b.gep(part.data, [j])))

