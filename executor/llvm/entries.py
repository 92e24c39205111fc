"""Loops over every entry of arrays as LLVM IR: counted loops, `.fill`, copies between arrays
of one shape (K.copy_into, K.arranged_into, K.contiguous, a store into a view)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from .runtime import I64
from .unsupported import Unsupported

if TYPE_CHECKING:
    from .expressions import ArrayValue


def counted(b: ir.IRBuilder, counter: ir.Value, start: ir.Value, stop: ir.Value,
            step: int | ir.Value, body, name: str = "") -> None:
    """`body(i)` for i = start, start + step, … below stop, written by `b` (its counter in
    the int64 slot `counter`); `b` is left after the loop. Every counted loop of the back end
    (entries, nests, the product kernel's) is this one."""
    b.store(start, counter)
    increment = step if isinstance(step, ir.Value) else ir.Constant(I64, step)
    at: list[ir.Value] = []  # (the counter as the test read it: the body's index)

    def test() -> ir.Value:
        at.append(b.load(counter))
        return b.icmp_signed("<", at[0], stop)

    def once() -> None:
        body(at[0])
        b.store(b.add(at[0], increment), counter)

    while_(b, test, once, name)


def while_(b: ir.IRBuilder, test, body, name: str = "") -> None:
    """`body()` while `test()` is true, each written by `b` in the loop's own blocks; `b` is
    left after the loop."""
    function = b.function
    check, inside, after = (function.append_basic_block(f"{name}.{part}" if name else part)
                            for part in ("test", "body", "end"))
    b.branch(check)
    b.position_at_end(check)
    b.cbranch(test(), inside, after)
    b.position_at_end(inside)
    body()
    b.branch(check)
    b.position_at_end(after)


class Entries:
    """Counted loops written by `builder` into `function` (of an Expressions: its slots)."""

    def _loop(self, name: str, count: ir.Value, step) -> None:
        """`step(i)` for i = 0 … count − 1 (a counter in a slot of its own)."""
        counter = self._slot(f"{name}.count{len(self.slots)}", "int64")
        counted(self.builder, counter, ir.Constant(I64, 0), count, 1, step, name)

    def _fill(self, array: ArrayValue, value: tuple) -> None:
        """`array.fill(value)`: every entry, axis by axis."""
        entry = self.cast(*value, array.dtype)
        self._entries([array], lambda pointers: self.builder.store(entry, pointers[0]))

    def _copy(self, out: ArrayValue, source: ArrayValue) -> None:
        """K.copy_into(out, source): source's entries written to out's (of one shape)."""
        b = self.builder
        if len(out.shape) != len(source.shape):
            raise Unsupported("a copy between ranks")
        self._entries([out, source], lambda pointers: b.store(
            self.cast(b.load(pointers[1]), source.dtype, out.dtype), pointers[0]))

    def _entries(self, arrays: list[ArrayValue], do) -> None:
        """`do(pointers)` at every position of the first array's shape, axis by axis, with
        each array's entry's pointer there."""
        b = self.builder

        def axis(k: int, offsets: list) -> None:
            if k == len(arrays[0].shape):
                do([b.gep(a.data, [o]) for a, o in zip(arrays, offsets, strict=True)])
                return
            self._loop(f"entries{k}", arrays[0].shape[k], lambda at: axis(
                k + 1, [b.add(o, b.mul(at, a.strides[k]))
                        for a, o in zip(arrays, offsets, strict=True)]))

        axis(0, [ir.Constant(I64, 0)] * len(arrays))
