"""A loop-IR function (executor/codegen/loops.py) as LLVM IR (llvmlite.ir), through the fixed
C ABI that call.py calls:

    int64 run(int64 *args, int64 *results)

`args` holds each parameter in turn: an array as its data's address, its shape and its
strides in bytes, as NumPy's (1 + 2·rank slots; a multiple of the entry size: indexing is in
entries), a number as its bits in one slot (a float32's in the low
half). `results` receives each returned value in turn: an array made by the function as its
data's address and its shape (1 + rank slots: C order, memory from malloc that the caller now
owns and frees), a number as its bits; an array that is a parameter takes no slot (the caller
hands back its own). The answer is 0 (a coded runtime error's number, later).

Scalars live in stack slots (LLVM makes them registers); arrays are each assigned once, at the
function's top level (so their pointers, shapes and strides are values there), and every array
the function makes and does not return is freed before it returns."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from llvmlite import ir

from ..codegen.loops import (
    Assign,
    Call,
    Delete,
    Do,
    Expr,
    Fmt,
    For,
    If,
    Return,
    Store,
    Sub,
    Update,
    Var,
)
from ..numba.vmath import WIDE
from . import runtime
from .expressions import ITEMSIZE, ArrayValue, Expressions
from .runtime import I8P, I64, LLVM
from .scalars import from_bits, to_bits
from .templates import field, parsed
from .types import Array, Inference, Type
from .unsupported import Unsupported

#: The ABI's function type, and the name of the function.
SIGNATURE = ir.FunctionType(I64, [I64.as_pointer(), I64.as_pointer()])
NAME = "hb_run"


@dataclass(frozen=True)
class Result:
    """One returned value as the ABI hands it back: `kind` "param" (parameter `index`),
    "fresh" (an array of `dtype` and `rank`) or "number" (a scalar of `dtype`)."""

    kind: str
    dtype: str = ""
    rank: int = 0
    index: int = -1


class Lowering(Expressions):
    """The LLVM module of one function; `results` says what its call returns."""

    def __init__(self, body: list, params: list[tuple[str, Type]], code: str,
                 contiguous: bool = False):
        super().__init__(ir.Function(ir.Module(name="hilbert"), SIGNATURE, NAME),
                         Inference(dict(params), code).run(body), code)
        self._contiguous = contiguous  # (array parameters C-ordered: strides from shapes)
        self.module = self.function.module
        self.function.attributes.add("nounwind")
        self.results: list[Result] = []
        self._returned = False
        self._parameters(params)
        self._block(body)
        if not self._returned:
            raise Unsupported("a function that does not end in a return")

    @property
    def text(self) -> str:
        return str(self.module)

    def _parameters(self, params: list[tuple[str, Type]]) -> None:
        b, at = self.builder, 0
        args = self.function.args[0]
        for k, (name, t) in enumerate(params):
            if isinstance(t, Array):
                words = [b.load(b.gep(args, [ir.Constant(I64, at + j)]))
                         for j in range(1 + 2 * t.rank)]
                shape = words[1:1 + t.rank]
                item = ir.Constant(I64, ITEMSIZE[t.dtype])  # (strides: bytes to entries)
                strides = (self.c_strides(shape) if self._contiguous
                           else [b.sdiv(w, item) for w in words[1 + t.rank:]])
                self.arrays[name] = ArrayValue(b.inttoptr(words[0], LLVM[t.dtype].as_pointer()),
                                               shape, strides, t.dtype, False, k)
                at += 1 + 2 * t.rank
            else:
                bits = b.load(b.gep(args, [ir.Constant(I64, at)]))
                b.store(from_bits(b, bits, t), self._slot(name))
                at += 1

    # ------------------------------------------------------------------ statements

    def _block(self, body: list) -> None:
        for stmt in body:
            if self._returned:
                raise Unsupported("statements after the return")
            self._statement(stmt)

    def _statement(self, stmt) -> None:
        match stmt:
            case Assign(targets=targets, values=values):
                computed = [self.value(v) for v in values]
                for name, (value, t) in zip(targets, computed, strict=True):
                    self._assign(name, value, t)
            case Update(name=name, op=op, value=value):
                self._assign(name, *self._binary(op[0], (self._read(name), self.types[name]),
                                                 self.value(value)))
            case Store(target=target, value=value, add=add):
                self._store(target, value, add)
            case Do(expr=Fmt(template="{}.fill({})", args=(array, value))):
                self._fill(self.value(array)[0], self.value(value))
            case Do(expr=Call(fn="K.wide_vectors", args=())):
                set.add(self.function.attributes,  # (as vmath.wide_vectors asks Numba's LLVM)
                        f'"prefer-vector-width"="{WIDE}"')
            case For(index=index, size=size, body=body, parallel=False):
                self._for(index, size, body)
            case If(test=test, body=body, orelse=orelse):
                self._if(test, body, orelse)
            case Return(value=value) if self._depth == 0:
                self._return(value)
            case Delete():
                pass
            case _:
                raise Unsupported(f"the statement {type(stmt).__name__}")

    def _assign(self, name: str, value, t: Type) -> None:
        if isinstance(t, Array):
            if name in self.arrays or self._depth:
                raise Unsupported(f"the array {name} assigned twice or inside a block")
            self.arrays[name] = value
            return
        self.builder.store(self.cast(value, t, self.types[name]), self._slot(name))

    def _store(self, target: Sub, value: Expr, add: bool) -> None:
        array, pointer = self._address(target)
        computed = self.value(value)
        if add:
            computed = self._binary("+", (self.builder.load(pointer), array.dtype), computed)
        self.builder.store(self.cast(*computed, array.dtype), pointer)

    def _for(self, index: str, size: Expr, body: list) -> None:
        def step(at: ir.Value) -> None:
            self.builder.store(at, self._slot(index))
            self._depth += 1
            self._block(body)
            self._depth -= 1

        self._loop(index, self.cast(*self.value(size), "int64"), step)

    def _loop(self, name: str, count: ir.Value, step) -> None:
        """`step(i)` for i = 0 … count − 1 (a counter in a slot of its own)."""
        b = self.builder
        counter = self._slot(f"{name}.count{len(self.slots)}", "int64")
        b.store(ir.Constant(I64, 0), counter)
        test = self.function.append_basic_block(f"{name}.test")
        inside = self.function.append_basic_block(f"{name}.body")
        after = self.function.append_basic_block(f"{name}.end")
        b.branch(test)
        b.position_at_end(test)
        at = b.load(counter)
        b.cbranch(b.icmp_signed("<", at, count), inside, after)
        b.position_at_end(inside)
        step(at)
        b.store(b.add(at, ir.Constant(I64, 1)), counter)
        b.branch(test)
        b.position_at_end(after)

    def _fill(self, array: ArrayValue, value: tuple) -> None:
        """`array.fill(value)`: every entry, axis by axis."""
        b = self.builder
        entry = self.cast(*value, array.dtype)

        def axis(k: int, offset: ir.Value) -> None:
            if k == len(array.shape):
                b.store(entry, b.gep(array.data, [offset]))
                return
            self._loop(f"fill{k}", array.shape[k],
                       lambda at: axis(k + 1, b.add(offset, b.mul(at, array.strides[k]))))

        axis(0, ir.Constant(I64, 0))

    def _if(self, test: Expr, body: list, orelse: list) -> None:
        b = self.builder
        condition = self.cast(*self.value(test), "bool")
        self._depth += 1
        with b.if_else(condition) as (then, otherwise):
            with then:
                self._block(body)
            with otherwise:
                self._block(orelse)
        self._depth -= 1

    def _return(self, value: Expr) -> None:
        """The returned values written to `results`; the arrays made and not returned freed."""
        b = self.builder
        items = _items(value)
        out, at, handed = self.function.args[1], 0, set()
        for item in items:
            if isinstance(item, Var) and item.name in self.arrays:
                array = self.arrays[item.name]
                if array.param >= 0:
                    self.results.append(Result("param", index=array.param))
                    continue
                if id(array) in handed:
                    raise Unsupported("an array returned twice")
                handed.add(id(array))
                words = [b.ptrtoint(array.data, I64), *array.shape]
                self.results.append(Result("fresh", array.dtype, len(array.shape)))
            else:
                computed, t = self.value(item)
                if not isinstance(t, str):
                    raise Unsupported(f"a returned {t}")
                words = [to_bits(b, computed, t)]
                self.results.append(Result("number", t))
            for word in words:
                b.store(word, b.gep(out, [ir.Constant(I64, at)]))
                at += 1
        for array in {id(a): a for a in self.arrays.values()}.values():
            if array.fresh and id(array) not in handed:
                runtime.release(b, b.bitcast(array.data, I8P))
        b.ret(ir.Constant(I64, 0))
        self._returned = True

def _items(value: Expr) -> list[Expr]:
    """The returned expressions (generated code returns `value, steps`)."""
    if isinstance(value, Fmt):
        tree = parsed(value.template)
        if isinstance(tree, ast.Tuple) and all(field(e) is not None for e in tree.elts):
            return [value.args[field(e)] for e in tree.elts]  # type: ignore[index]
    return [value]
