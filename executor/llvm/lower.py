"""A loop-IR function (executor/codegen/loops.py) as LLVM IR (llvmlite.ir), through the fixed
C ABI that call.py calls:

    int64 run(int64 *args, int64 *results)

`args` holds each parameter in turn: an array as its data's address, its shape and its strides
in bytes, as NumPy's (1 + 2·rank slots; a multiple of the entry size: indexing is in entries),
a number as its bits in one slot (a float32's in the low half; a complex number as its real and
imaginary parts', two slots: complex.py). `results` receives each returned value in turn: an
array made by the function as its data's address and its shape (1 + rank slots: C order, memory
from malloc that the caller now owns and frees; a view is returned as a C-ordered copy, so that
each address has one owner, and an array returned twice as the same address twice), a number as
its bits (a complex one's in two); an array that is a parameter takes no slot (the caller hands
back its own). The answer is 0, or the number (1, 2, …) of the `raise` that stopped it: a coded
runtime error (executor/numba/faults.py) whose arguments are then in `results`, as bits, for
call.py to raise it as Numba-built code would.

Scalars live in stack slots (LLVM makes them registers); arrays are each assigned once, at the
function's top level (so their pointers, shapes and strides are values there), and every array
the function makes and does not return is freed before it returns."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from llvmlite import ir

from ..codegen.loops import (
    Assign,
    Break,
    Call,
    Delete,
    Do,
    Expr,
    Fmt,
    For,
    If,
    Raise,
    Return,
    Store,
    Sub,
    Update,
    Var,
    While,
)
from ..numba.vmath_constants import WIDE
from . import outline, pairwise, threads
from .expressions import ITEMSIZE, ArrayValue, Expressions
from .held import Held, copies, held, scratch
from .products import CALLS as PRODUCTS
from .products import multiply
from .remade import remade
from .runtime import I64, LLVM
from .scalars import from_words, to_words
from .scalars import words as number_words
from .templates import field, parsed
from .types import Array, Inference, Type, call_type, is_part
from .unsupported import Unsupported
from .views import c_strides

#: The ABI's function type, and the name of the function.
SIGNATURE = ir.FunctionType(I64, [I64.as_pointer(), I64.as_pointer()])
NAME = "hb_run"

#: The coded runtime errors generated code raises (executor/numba/faults.py's classes).
FAULTS = ("K.StepCountError", "K.PositionError", "K.LabelError", "K.DrawError")


@dataclass(frozen=True)
class Result:
    """One returned value as the ABI hands it back: `kind` "param" (parameter `index`), "held"
    (a held local's array: held.py; a parameter's memory or one made here, of `dtype`, `rank`),
    "fresh" (an array of `dtype` and `rank`), "number" (a scalar of `dtype`) or "tuple" (the
    `rank` values after it, returned as one tuple)."""

    kind: str
    dtype: str = ""
    rank: int = 0
    index: int = -1


class Lowering(Held, Expressions):
    """The LLVM module of one function; `results` says what its call returns."""

    def __init__(self, body: list, params: list[tuple[str, Type]], code: str,
                 contiguous: bool = False):
        super().__init__(ir.Function(ir.Module(name="hilbert"), SIGNATURE, NAME),
                         Inference(dict(params), code).run(body), code)
        self._contiguous = contiguous  # (array parameters C-ordered: strides from shapes)
        self.module = self.function.module
        self.function.attributes.add("nounwind")
        self.results: list[Result] = []
        self.raises: list[tuple[str, tuple[str, ...]]] = []  # (class, argument types) by number
        self._breaks: list[ir.Block] = []  # (where a `break` goes: the innermost loop's end)
        self._returned = False
        self.hold_slots(held(body, self.types) - {name for name, _ in params})
        self.hold_scratch((scratch(body, self.types) | copies(body, self.types)
                           | remade(body, self.types)) & set(self.held))
        self._parameters(params)
        self._pieces = outline.chosen(body, self.types)  # (runs outlined: outline.py)
        self._nests = {id(nest) for nest in self._pieces.values()}
        self.outlined: list[ir.Function] = []
        self._block(body)
        for made in self.outlined:  # (the vector width, set where its statement ran)
            for attribute in sorted(self.function.attributes):
                set.add(made.attributes, attribute)
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
                strides = (c_strides(self.builder, shape) if self._contiguous
                           else [b.sdiv(w, item) for w in words[1 + t.rank:]])
                self.arrays[name] = ArrayValue(b.inttoptr(words[0], LLVM[t.dtype].as_pointer()),
                                               shape, strides, t.dtype, False, k,
                                               self._contiguous)
                at += 1 + 2 * t.rank
            else:  # (a number: its bits, a complex one's parts' in two words)
                given = [b.load(b.gep(args, [ir.Constant(I64, at + j)]))
                         for j in range(number_words(t))]
                b.store(from_words(b, given, t), self._slot(name))
                at += number_words(t)

    # ------------------------------------------------------------------ statements

    def _block(self, body: list) -> None:
        rows = getattr(self, "_in_rows", False)  # (a run's own statements: threads.py's rows)
        for stmt in body if rows else outline.grouped(body, self._pieces):
            if self._returned:
                raise Unsupported("statements after the return")
            self._statement(stmt)

    def _statement(self, stmt) -> None:
        match stmt:
            case Assign(targets=(name,), values=(Call(fn="K.contiguous", args=(source,)),)) if (
                    name in self.scratch):  # (a copy made anywhere: held.copies)
                array, t = self.value(source)
                self.remade(name, self.contiguous(array, t, anywhere=True))
            case Assign(targets=(name,), values=(Call(fn=fn, args=(shape,)),)) if (
                    name in self.scratch):  # (made anywhere: the one before it freed)
                t = call_type(fn, (self.value(shape)[1],), self.code)
                sizes = [self.cast(v, vt, "int64") for v, vt in self.value(shape)[0]]
                self.remade(name, self._empty(sizes, t, anywhere=True))
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
            case Do(expr=Call(fn="K.copy_into", args=(target, source))):
                self._copy(self.value(target)[0], self.value(source)[0])
            case Do(expr=Call(fn="K.arranged_into", args=(source, target))):
                self._copy(self.value(target)[0], self.value(source)[0])
            case Do(expr=Call(fn="K.total_rows", args=args)):  # (pairwise.py)
                pairwise.total_rows(self, *(self.value(a)[0] for a in args))
            case Do(expr=Call(fn=fn, args=args)) if fn in PRODUCTS:  # (products.py)
                multiply(self, fn, [self.value(a) for a in args])
            case Do(expr=Call(fn="K.wide_vectors", args=())):
                set.add(self.function.attributes,  # (as vmath.wide_vectors asks Numba's LLVM)
                        f'"prefer-vector-width"="{WIDE}"')
            case For() if id(stmt) in self._nests:
                self.outlined.append(outline.piece(self, stmt))
            case For(index=index, size=size, body=body, parallel=False):
                self._for(index, size, body)
            case For(parallel=True):
                threads.nest(self, stmt)  # (its rows on threads: threads.py)
            case If(test=test, body=body, orelse=orelse):
                self._if(test, body, orelse)
            case While(body=body):
                self._while(body)
            case Break() if self._breaks:
                self.builder.branch(self._breaks[-1])
                self._unreachable()
            case Raise(error=Call(fn=fn, args=args)) if fn in FAULTS:
                self._raise(fn, args)
            case Return(value=value) if self._depth == 0:
                self._return(value)
            case Delete():
                pass
            case _:
                raise Unsupported(f"the statement {type(stmt).__name__}")

    def _assign(self, name: str, value, t: Type) -> None:
        if name in self.held:
            if value.fresh:  # (made here: freed at the return unless a held local is returned)
                self.arrays[f"{name}.made{len(self.arrays)}"] = value
            self.hold(name, value)
            return
        if isinstance(t, Array):
            if name in self.arrays or self._depth:
                raise Unsupported(f"the array {name} assigned twice or inside a block")
            self.arrays[name] = value
            return
        self.builder.store(self.cast(value, t, self.types[name]), self._slot(name))

    def _store(self, target: Sub, value: Expr, add: bool) -> None:
        base = self.value(target.base)
        if is_part(base[1], target.index):  # (`x[i, :] = v`: every entry of the view)
            self._store_part(self._part(base[0], target.index), self.value(value), add)
            return
        array, pointer = self._address(target, base)
        computed = self.value(value)
        if add:
            computed = self._binary("+", (self.builder.load(pointer), array.dtype), computed)
        self.builder.store(self.cast(*computed, array.dtype), pointer)

    def _store_part(self, view: ArrayValue, value: tuple, add: bool) -> None:
        """`view[...] = value` (a number, or an array of its shape)."""
        if add:
            raise Unsupported("a view added to")
        if isinstance(value[0], ArrayValue):
            self._copy(view, value[0])
        else:
            self._fill(view, value)

    def _for(self, index: str, size: Expr, body: list) -> None:
        def step(at: ir.Value) -> None:
            self.builder.store(at, self._slot(index))
            self._depth += 1
            self._block(body)
            self._depth -= 1

        self._loop(index, self.cast(*self.value(size), "int64"), step)

    def _while(self, body: list) -> None:
        """`while True:`, left by a `break` (or a `raise`)."""
        b = self.builder
        inside = self.function.append_basic_block("while.body")
        after = self.function.append_basic_block("while.end")
        b.branch(inside)
        b.position_at_end(inside)
        self._breaks.append(after)
        self._depth += 1
        self._block(body)
        self._depth -= 1
        self._breaks.pop()
        b.branch(inside)
        b.position_at_end(after)

    def _unreachable(self) -> None:
        """A fresh block for what follows a jump in the same block (no path reaches it)."""
        self.builder.position_at_end(self.function.append_basic_block("after"))

    def _raise(self, fn: str, args: tuple) -> None:
        """The coded error `fn(args)`: its arguments' bits written to `results`, the arrays
        made so far freed, and its number answered."""
        b, out, types, at = self.builder, self.function.args[1], [], 0
        for arg in args:
            computed, t = self.value(arg)
            if not isinstance(t, str):
                raise Unsupported(f"a {t} raised")
            for word in to_words(b, computed, t):  # (a complex number's parts: two words)
                b.store(word, b.gep(out, [ir.Constant(I64, at)]))
                at += 1
            types.append(t)
        self.raises.append((fn[2:], tuple(types)))
        self.release_unless(set(), [])
        b.ret(ir.Constant(I64, len(self.raises)))
        self._unreachable()

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
        words, handed, kept = [], set(), []
        for item in _items(value):
            inner = _items(item, ())
            if inner:  # (a tuple of values: its length, then each of them)
                self.results.append(Result("tuple", rank=len(inner)))
                for each in inner:
                    words += self._result_words(each, handed, kept)
            else:
                words += self._result_words(item, handed, kept)
        for at, word in enumerate(words):
            b.store(word, b.gep(self.function.args[1], [ir.Constant(I64, at)]))
        self.release_unless(handed, kept)
        b.ret(ir.Constant(I64, 0))
        self._returned = True

    def _result_words(self, item: Expr, handed: set, kept: list) -> list:
        """The words of one returned value (its Result noted), the arrays handed back noted
        in `handed` (by id) and `kept` (held locals' addresses). A view, or a held local that
        may hold one, is returned as a C-ordered copy: call.py makes every address it is
        handed the one owner of that memory (the same address twice is one array)."""
        b = self.builder
        if isinstance(item, Var) and item.name in self.held:
            array = self.holding(item.name)
            if not (array.ordered and self.holds_own(item.name)):
                copy = self.contiguous(array, self.types[item.name])
                return _fresh_words(b, self.results, copy, handed)
            kept.append((b.ptrtoint(array.data, I64), item.name))
            self.results.append(Result("held", array.dtype, len(array.shape)))
            return [kept[-1][0], *array.shape]
        computed, t = self.value(item)
        if isinstance(computed, ArrayValue):
            if computed.param >= 0:
                self.results.append(Result("param", index=computed.param))
                return []
            made = computed if computed.fresh else self.contiguous(computed, t)
            return _fresh_words(b, self.results, made, handed)
        if not isinstance(t, str):
            raise Unsupported(f"a returned {t}")
        self.results.append(Result("number", t))
        return to_words(b, computed, t)




def _items(value: Expr, alone: tuple = None) -> list[Expr]:  # type: ignore[assignment]
    """The items of a returned tuple (generated code returns `value, steps`; a value may be a
    tuple of arrays), or `alone` (default: [value]) when it is no tuple."""
    if isinstance(value, Fmt):
        tree = parsed(value.template)
        if isinstance(tree, ast.Tuple) and all(field(e) is not None for e in tree.elts):
            return [value.args[field(e)] for e in tree.elts]  # type: ignore[index]
    return [value] if alone is None else list(alone)


def _fresh_words(b: ir.IRBuilder, results: list, array: ArrayValue, handed: set) -> list:
    """The words of an array the function made, returned (not freed: `handed`)."""
    handed.add(id(array))
    results.append(Result("fresh", array.dtype, len(array.shape)))
    return [b.ptrtoint(array.data, I64), *array.shape]
