"""A loop-IR function (executor/codegen/loops.py) as LLVM IR (llvmlite.ir), through the fixed
C ABI that call.py calls:

    int64 run(int64 *args, int64 *results)

`args` holds each parameter in turn: an array as its data's address, its shape and its
strides in bytes (1 + 2·rank slots), a number as its bits in one slot (a float32's in the low
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
    Num,
    Pick,
    Return,
    Store,
    Sub,
    Update,
    Var,
)
from ..numba.vmath import WIDE
from . import runtime
from .runtime import I8P, I64, LLVM
from .scalars import binary_value, cast, constant, from_bits, to_bits
from .templates import dotted, field, parsed
from .types import (
    ARITHMETIC,
    BITWISE,
    COMPARISONS,
    Array,
    Inference,
    Type,
    call_type,
    element,
    literal,
    number,
    tree_type,
    unify,
)
from .unsupported import Unsupported

#: The ABI's function type, and the name of the function.
SIGNATURE = ir.FunctionType(I64, [I64.as_pointer(), I64.as_pointer()])
NAME = "hb_run"


@dataclass
class ArrayValue:
    data: ir.Value  # i8*
    shape: list
    strides: list  # in bytes
    dtype: str
    fresh: bool  # made by this function (malloc's): freed unless returned
    param: int = -1  # the parameter it is, -1 for none


@dataclass(frozen=True)
class Result:
    """One returned value as the ABI hands it back: `kind` "param" (parameter `index`),
    "fresh" (an array of `dtype` and `rank`) or "number" (a scalar of `dtype`)."""

    kind: str
    dtype: str = ""
    rank: int = 0
    index: int = -1


class Lowering:
    """The LLVM module of one function; `results` says what its call returns."""

    def __init__(self, body: list, params: list[tuple[str, Type]], code: str):
        self.code = code
        self.types = Inference(dict(params), code).run(body)
        self.module = ir.Module(name="hilbert")
        self.function = ir.Function(self.module, SIGNATURE, NAME)
        self.function.attributes.add("nounwind")
        self._entry = self.function.append_basic_block("entry")
        self.builder = ir.IRBuilder(self._entry)
        self.slots: dict[str, ir.Value] = {}
        self.arrays: dict[str, ArrayValue] = {}
        self.results: list[Result] = []
        self._depth = 0
        self._returned = False
        self._parameters(params)
        self._block(body)
        if not self._returned:
            raise Unsupported("a function that does not end in a return")

    @property
    def text(self) -> str:
        return str(self.module)

    # ------------------------------------------------------------------ values

    def cast(self, value: ir.Value, have: Type, want: Type) -> ir.Value:
        """`value` of scalar type `have` as `want` (Numba's conversions)."""
        return cast(self.builder, value, have, want)

    def _slot(self, name: str, t: Type = "") -> ir.Value:
        """The stack slot of the scalar local `name` (made in the entry block), of its
        inferred type unless `t` says."""
        if name not in self.slots:
            t = t or self.types[name]
            if not isinstance(t, str):
                raise Unsupported(f"the local {name} of type {t}")
            with self.builder.goto_block(self._entry):
                self.builder.position_at_start(self._entry)
                self.slots[name] = self.builder.alloca(LLVM[t], name=name)
        return self.slots[name]

    def _parameters(self, params: list[tuple[str, Type]]) -> None:
        b, at = self.builder, 0
        args = self.function.args[0]
        for k, (name, t) in enumerate(params):
            if isinstance(t, Array):
                words = [b.load(b.gep(args, [ir.Constant(I64, at + j)]))
                         for j in range(1 + 2 * t.rank)]
                self.arrays[name] = ArrayValue(b.inttoptr(words[0], I8P), words[1:1 + t.rank],
                                               words[1 + t.rank:], t.dtype, False, k)
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

    def _read(self, name: str) -> ir.Value:
        return self.builder.load(self._slot(name))

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
                pointer = b.bitcast(b.gep(array.data, [offset]), LLVM[array.dtype].as_pointer())
                b.store(entry, pointer)
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
                runtime.release(b, array.data)
        b.ret(ir.Constant(I64, 0))
        self._returned = True

    # ------------------------------------------------------------------ expressions

    def value(self, expr: Expr) -> tuple:
        """(value, type) of `expr` (an array's value: its ArrayValue)."""
        match expr:
            case Var(name=name):
                if name in self.arrays:
                    array = self.arrays[name]
                    return array, Array(array.dtype, len(array.shape))
                return self._read(name), self.types[name]
            case Num():
                return constant(expr), literal(expr)
            case Sub():
                array, pointer = self._address(expr)
                return self.builder.load(pointer), array.dtype
            case Pick(a=a, test=test, b=other):
                return self._pick(self.value(test), self.value(a), self.value(other))
            case Call(fn=fn, args=args):
                return self._call(fn, [self.value(a) for a in args])
            case Fmt(template=template, args=args):
                return self._tree(parsed(template), [self.value(a) for a in args])
        raise Unsupported(f"the expression {type(expr).__name__}")

    def _address(self, sub: Sub) -> tuple[ArrayValue, ir.Value]:
        array, t = self.value(sub.base)
        indices = [self.value(i) for i in sub.index]
        element(t, [it for _, it in indices])
        b = self.builder
        offset = ir.Constant(I64, 0)
        for (index, it), stride in zip(indices, array.strides, strict=True):
            offset = b.add(offset, b.mul(self.cast(index, it, "int64"), stride))
        pointer = b.gep(array.data, [offset])
        return array, b.bitcast(pointer, LLVM[array.dtype].as_pointer())

    def _pick(self, test, a, other) -> tuple:
        """`a if test else other` as a select (both sides are computed: they have no effect)."""
        t = unify(a[1], other[1])
        if not isinstance(t, str):
            raise Unsupported("a choice of arrays")
        return (self.builder.select(self.cast(*test, "bool"), self.cast(*a, t),
                                    self.cast(*other, t)), t)

    def _call(self, fn: str, args: list[tuple]) -> tuple:
        t = call_type(fn, tuple(at for _, at in args), self.code)
        if isinstance(t, Array):
            return self._empty(args[0], t), t
        return runtime.call(self, fn, args, t), t

    def _empty(self, shape: tuple, t: Array) -> ArrayValue:
        """A C-ordered array of `shape` (a tuple's value) from malloc."""
        if self._depth:
            raise Unsupported("an array made inside a block")
        b = self.builder
        sizes = [self.cast(v, vt, "int64") for v, vt in shape[0]]
        strides = [ir.Constant(I64, 8 if t.dtype != "float32" else 4)]
        for size in reversed(sizes[1:]):
            strides.insert(0, b.mul(strides[0], size))
        total = b.mul(strides[0], sizes[0]) if sizes else strides[0]
        return ArrayValue(runtime.allocate(b, total), sizes, strides, t.dtype, True)

    def _binary(self, op: str, a: tuple, other: tuple) -> tuple:
        return binary_value(self.builder, self.cast, op, a, other)

    def _tree(self, node: ast.expr, fields: list[tuple]) -> tuple:
        """(value, type) of a template's tree whose fields have values `fields`."""
        k = field(node)
        if k is not None:
            return fields[k]
        of = (lambda n: self._tree(n, fields))  # noqa: E731
        match node:
            case ast.Constant(value=value) if not isinstance(value, str):
                t = tree_type(node, (), of, self.code)
                return ir.Constant(LLVM[t], value), t  # type: ignore[index]
            case ast.BinOp(left=left, op=op, right=right) if type(op) in ARITHMETIC | BITWISE:
                return self._binary((ARITHMETIC | BITWISE)[type(op)], of(left), of(right))
            case ast.Compare(left=left, ops=[op], comparators=[right]) if type(op) in COMPARISONS:
                return self._binary(COMPARISONS[type(op)], of(left), of(right))
            case ast.UnaryOp(op=ast.USub(), operand=operand):
                value, t = of(operand)
                value, t = self.cast(value, t, number(t)), number(t)
                return (self.builder.fneg(value) if t != "int64"
                        else self.builder.neg(value)), t
            case ast.UnaryOp(op=ast.UAdd(), operand=operand):
                return of(operand)
            case ast.UnaryOp(op=ast.Not(), operand=operand):
                return self.builder.not_(self.cast(*of(operand), "bool")), "bool"
            case ast.BoolOp(op=op, values=values):
                parts = [self.cast(*of(v), "bool") for v in values]
                joined = parts[0]
                for part in parts[1:]:
                    joined = (self.builder.and_ if isinstance(op, ast.And)
                              else self.builder.or_)(joined, part)
                return joined, "bool"
            case ast.IfExp(test=test, body=body, orelse=orelse):
                return self._pick(of(test), of(body), of(orelse))
            case ast.Tuple(elts=elts):
                items = [of(e) for e in elts]
                return items, tuple(t for _, t in items)
            case ast.Call(func=func, args=args, keywords=[]) if dotted(func):
                return self._call(dotted(func), [of(a) for a in args])  # type: ignore[arg-type]
            case ast.Subscript(value=ast.Attribute(value=base, attr="shape"),
                               slice=ast.Constant(value=int() as axis)):
                array, t = of(base)
                if not isinstance(t, Array) or axis >= t.rank:
                    raise Unsupported("the shape of no array")
                return array.shape[axis], "int64"
        raise Unsupported(f"the template form {ast.dump(node)[:60]}")


def _items(value: Expr) -> list[Expr]:
    """The returned expressions (generated code returns `value, steps`)."""
    if isinstance(value, Fmt):
        tree = parsed(value.template)
        if isinstance(tree, ast.Tuple) and all(field(e) is not None for e in tree.elts):
            return [value.args[field(e)] for e in tree.elts]  # type: ignore[index]
    return [value]
