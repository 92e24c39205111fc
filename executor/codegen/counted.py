"""The code generator's counted values (compiler/counting.py: sizes, positions, counters):
computed in float64 in code of another dtype, converted where data reads them. A part of the
Emitter (emitter.py), which it reads through `narrow`, `dtype`, `counting`, `frame`, `out`,
`fresh` and `value`."""

from __future__ import annotations

import numpy as np

from ...compiler import ir
from ...compiler.ops.primitives import BY_OP
from .loops import Assign, Expr, Fmt, Num, Var, call, number, sizes, whole


class CountedValues:
    """Emitter's methods for counted values."""

    def counts(self, node: ir.Node) -> bool:
        """Whether `node` is a counted value (compiler/counting.py: a size, a position, a
        counter) computed in float64 in code of another dtype, in the scope being emitted."""
        scope = self.frame.scope
        return self.narrow and node in self.counting.at(scope[-1] if scope else None)

    def counted_number(self, whole: Expr) -> Expr:
        """A whole number (an int: a size, an index, steps left) as a counted value: float64
        in code of every dtype."""
        return call("np.float64", whole)

    def as_data(self, node: ir.Node, value: Expr) -> Expr:
        """`value`, `node`'s, as a consumer whose value is data reads it: a counted value
        converted to the code's dtype."""
        if not self.counts(node) or isinstance(value, Num):  # (a literal is of the dtype)
            return value
        return call(f"np.{self.dtype}", value)

    def widened(self, node: ir.Node) -> bool:
        """Whether `node`'s buffer is float64 in code of another dtype: a counted tensor
        (compiler/counting.py: positions, the first positions argmax finds along a line) but
        a comparison's 0/1 marks, which the code's dtype holds exactly."""
        return (self.counts(node) and bool(self.shape(node))
                and not (isinstance(node, ir.Prim) and BY_OP[node.op].kind == "compare"))

    def stored_as(self, node: ir.Node, value: Expr, wide: bool) -> Expr:
        """`value`, `node`'s buffer, as a reader that takes a float64 buffer (`wide`) or one
        of the code's dtype reads it: converted into a new one where they differ."""
        if self.widened(node) == wide:
            return value
        name = Var(self.fresh("b"))
        kind = "np.float64" if wide else f"np.{self.dtype}"
        self.out.add(Assign((name.name,), (Fmt(f"{{}}.astype({kind})", (value,)),)))
        return name

    def answer(self, root: ir.Node) -> Expr:
        """The call's result as the code hands it back: a counted tensor in the code's dtype
        (each of a tuple's)."""
        if isinstance(root, ir.Tuple):
            return sizes([self.answer(item) for item in root.items])
        return self.stored_as(root, self.value(root), False)

    def literal(self, value: float, counted: bool) -> Expr:
        """A constant as a counted value reads it (`counted`: exactly, in float64, where the
        code's dtype would round it) or as data does."""
        if counted and self.narrow and float(value) != float(np.float32(value)):
            return self.counted_number(whole(int(value)))
        return number(value, self.dtype)
