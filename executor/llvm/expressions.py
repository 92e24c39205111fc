"""Expressions of the loop IR (executor/codegen/loops.py) as LLVM IR values: locals in stack
slots, arrays as their data pointer, shape and strides, templates read through templates.py,
calls through runtime.py, arithmetic through scalars.py. Statements are lower.py's."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from llvmlite import ir

from ..codegen.loops import Call, Compare, Expr, Fmt, Num, Op, Pick, Select, Sub, Var, View, walk
from ..codegen.spelling import INFIX, PREFIX, WRAP, spelled
from . import complex as cplx
from . import draws, pairwise, runtime
from .entries import Entries
from .runtime import I64, LLVM
from .scalars import binary_value, cast, constant
from .templates import dotted, field, parsed
from .types import (
    ARITHMETIC,
    BITWISE,
    COMPARISONS,
    CONVERSIONS,
    KERNEL_CONSTANTS,
    Array,
    Type,
    astype,
    axis_order,
    call_type,
    element,
    is_part,
    literal,
    number,
    tree_type,
    unify,
    whole_axis,
)
from .unsupported import Unsupported
from .views import ALL, c_strides, part, transposed, view

#: Each array dtype's entry size in bytes.
ITEMSIZE = {"float64": 8, "float32": 4, "int64": 8, "complex128": 16, "complex64": 8}


@dataclass
class ArrayValue:
    data: ir.Value  # a pointer to its first entry, of its dtype
    shape: list
    strides: list  # in entries (a loop along an axis of stride 1 reads its entries in a row:
    # LLVM speculates that and vectorises, which it cannot for a stride in bytes)
    dtype: str
    fresh: bool  # made by this function (malloc's): freed unless returned
    param: int = -1  # the parameter it is, -1 for none
    ordered: bool = True  # C-ordered (strides follow from the shape: a reshape is a view)
    owned: bool = False  # (not fresh itself, but one of the arrays made or given: held.py)
    sources: frozenset = frozenset()  # (the held locals it was read from: held.py)
    picked: frozenset = frozenset()  # (ids of the fresh arrays' data it is one of: a choice)

    def made(self) -> frozenset:
        """The ids of the data of the fresh arrays this may be (held.py frees by them)."""
        return self.picked | {id(self.data)} if self.fresh else self.picked


class Expressions(Entries):
    """The values of one function's expressions, written by `builder` into `function`; `types`:
    its locals' (types.Inference), `code`: its dtype."""

    def __init__(self, function: ir.Function, types: dict[str, Type], code: str):
        self.function = function
        self.types = types
        self.code = code
        self._entry = function.append_basic_block("entry")
        self.builder = ir.IRBuilder(self._entry)
        self.slots: dict[str, ir.Value] = {}
        self.arrays: dict[str, ArrayValue] = {}
        self.held: dict = {}  # (array locals in slots: held.py)
        self.stored: dict = {}  # (fresh arrays' data, by id: the held locals that took it)
        self._depth = 0  # (blocks open: 0 at the function's top level)

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

    def _read(self, name: str) -> ir.Value:
        return self.builder.load(self._slot(name))

    def value(self, expr: Expr) -> tuple:
        """(value, type) of `expr` (an array's value: its ArrayValue)."""
        match expr:
            case Var(name=name):
                if name in self.held:
                    array = self.holding(name)  # type: ignore[attr-defined]
                    return array, Array(array.dtype, len(array.shape))
                if name in self.arrays:
                    array = self.arrays[name]
                    return array, Array(array.dtype, len(array.shape))
                return self._read(name), self.types[name]
            case Num():
                return constant(expr), literal(expr)
            case Sub(base=base, index=index):
                array, t = self.value(base)
                if is_part(t, index):
                    made = self._part(array, index)
                    return made, Array(made.dtype, len(made.shape))
                array, pointer = self._address(expr, (array, t))
                return self.builder.load(pointer), array.dtype
            case Pick(a=a, test=test, b=other):
                return self._pick(self.value(test), self.value(a), self.value(other))
            case Call(fn="K.transposed", args=(base, Num() as axes)):
                array, t = self.value(base)
                return transposed(array, axis_order(axes)), t
            case Call(fn=fn, args=args):
                return self._call(fn, [self.value(a) for a in args])
            case Fmt(template=template, args=args):
                return self._tree(parsed(template), args)
            case Op(fn=fn, args=args, tier=tier):
                return self._op(fn, tier, [self.value(a) for a in args])
            case Compare(op=op, left=left, right=right):
                return self._binary(op, self.value(left), self.value(right))
            case Select(test=test, a=a, b=other):
                return self._pick(self.value(test), self.value(a), self.value(other))
            case View(base=base, form=form, args=args):
                made = view(self, self.value(base)[0], form, [self.value(a) for a in args])
                return made, Array(made.dtype, len(made.shape))
        raise Unsupported(f"the expression {type(expr).__name__}")

    def _op(self, fn: str, tier: str, args: list[tuple]) -> tuple:
        """(value, type) of the op table's function `fn` of `args`, as `tier` spells it
        (executor/codegen/spelling.py): an operator as the operator, a call as the call."""
        form, name = spelled(fn, tier)
        if form == INFIX:
            return self._binary(name, *args)
        if form == PREFIX:
            return self._negated(args[0])
        if form == WRAP:
            return args[0]
        return self._call(name, args)

    def _negated(self, operand: tuple) -> tuple:
        value, t = operand
        value, t = self.cast(value, t, number(t)), number(t)
        if t in cplx.PARTS:
            return cplx.negated(self.builder, value, t), t
        return (self.builder.fneg(value) if t != "int64" else self.builder.neg(value)), t

    def _part(self, array: ArrayValue, index: tuple) -> ArrayValue:
        """The view array[index] (types.is_part: slices, or fewer indices than axes)."""
        entries: list = []
        for i in index:
            if whole_axis(i) and isinstance(i, Num):  # (`:`)
                entries.append(ALL)
            elif whole_axis(i):  # (`{}:{}`)
                entries.append(tuple(self.cast(*self.value(a), "int64") for a in i.args))
            else:
                entries.append(self.cast(*self.value(i), "int64"))
        return part(self, array, entries)

    def _address(self, sub: Sub, base: tuple | None = None) -> tuple[ArrayValue, ir.Value]:
        """The entry sub names: its array, and a pointer to it (`base`: sub.base's value)."""
        array, t = base or self.value(sub.base)
        if is_part(t, sub.index):
            raise Unsupported("a store into a view by index")
        indices = [self.value(i) for i in sub.index]
        element(t, [it for _, it in indices])
        b = self.builder
        offset = ir.Constant(I64, 0)
        for (index, it), stride in zip(indices, array.strides, strict=True):
            offset = b.add(offset, b.mul(self.cast(index, it, "int64"), stride))
        return array, b.gep(array.data, [offset])

    def _pick(self, test, a, other) -> tuple:
        """`a if test else other` as a select (both sides are computed: they have no effect)."""
        if isinstance(a[0], ArrayValue) and isinstance(other[0], ArrayValue):
            return picked_array(self.builder, self.cast(*test, "bool"), a, other)
        t = unify(a[1], other[1])
        if not isinstance(t, str):
            raise Unsupported("a choice of arrays")
        return (self.builder.select(self.cast(*test, "bool"), self.cast(*a, t),
                                    self.cast(*other, t)), t)

    def _branched(self, test: tuple, body, orelse) -> tuple:
        """`body() if test else orelse()` computing only the side taken (a side that reads
        memory may read out of bounds where it is not: `x[p] if 0 <= p < n else 0.0`)."""
        b = self.builder
        sides = []  # (value, type, the block it ends in)
        with b.if_else(self.cast(*test, "bool")) as (then, otherwise):
            for block, side in ((then, body), (otherwise, orelse)):
                with block:
                    sides.append((*side(), b.block))
        t = unify(sides[0][1], sides[1][1])
        if not isinstance(t, str):
            raise Unsupported("a choice of arrays")
        merged = b.phi(LLVM[t])
        after = b.block
        for value, have, where in sides:  # (each cast to t at its own block's end)
            with b.goto_block(where):
                merged.add_incoming(self.cast(value, have, t), where)
        b.position_at_end(after)
        return merged, t

    def _call(self, fn: str, args: list[tuple]) -> tuple:
        if fn == "K.stop_requested":  # (stop[0], read from memory at every step: kernels.py)
            flag = self.builder.load_atomic(args[0][0].data, "monotonic", 8)
            return self.builder.icmp_signed("!=", flag, ir.Constant(I64, 0)), "bool"
        t = call_type(fn, tuple(at for _, at in args), self.code)
        if fn == "K.contiguous":
            return self.contiguous(*args[0]), t
        if fn == "np.full":  # (a scalar as a vector of `size` entries of it)
            made = self._empty([self.cast(*args[0], "int64")], t)
            self._fill(made, args[1])
            return made, t
        if fn == "K.keyed_draws":
            return draws.keyed_draws(self, args[0][0], args[1], args[2], args[3][0]), t
        if fn == "K.push_rows":
            return pairwise.push_rows(self, *(value for value, _ in args)), t
        if isinstance(t, Array):  # (a size alone, as K.partials takes it: a shape of one)
            shape = args[0] if isinstance(args[0][1], tuple) else ([args[0]], (args[0][1],))
            return self._empty([self.cast(v, vt, "int64") for v, vt in shape[0]], t), t
        return runtime.call(self, fn, args, t), t

    def contiguous(self, array: ArrayValue, t: Array, anywhere: bool = False) -> ArrayValue:
        """A C-ordered copy of `array`, always, as kernels.contiguous makes (`anywhere`: as
        `_empty`'s)."""
        made = self._empty(array.shape, t, anywhere)
        self._copy(made, array)
        return made

    def _empty(self, sizes: list, t: Array, anywhere: bool = False) -> ArrayValue:
        """A C-ordered array of `sizes` (int64 values) from malloc (inside a block only
        `anywhere`: a scratch local's, held.py, freed by address)."""
        if self._depth and not anywhere:
            raise Unsupported("an array made inside a block")
        b = self.builder
        strides = c_strides(self.builder, sizes)
        total = b.mul(strides[0], sizes[0]) if sizes else strides[0]
        memory = runtime.allocate(b, b.mul(total, ir.Constant(I64, ITEMSIZE[t.dtype])))
        return ArrayValue(b.bitcast(memory, LLVM[t.dtype].as_pointer()), sizes, strides,
                          t.dtype, True)

    def _binary(self, op: str, a: tuple, other: tuple) -> tuple:
        return binary_value(self.builder, self.cast, op, a, other)

    def _tree(self, node: ast.expr, fields: tuple[Expr, ...]) -> tuple:
        """(value, type) of a template's tree whose fields are `fields` (each computed where
        the tree reaches it: a branch of a choice only when it is taken)."""
        k = field(node)
        if k is not None:
            return self.value(fields[k])
        of = (lambda n: self._tree(n, fields))  # noqa: E731
        match node:
            case ast.Constant(value=value) if not isinstance(value, str):
                t = tree_type(node, (), of, self.code)
                return ir.Constant(LLVM[t], value), t  # type: ignore[index]
            case ast.BinOp(left=left, op=op, right=right) if type(op) in ARITHMETIC | BITWISE:
                return self._binary((ARITHMETIC | BITWISE)[type(op)], of(left), of(right))
            case ast.Compare(left=left, ops=ops, comparators=rights) if all(
                    type(op) in COMPARISONS for op in ops):  # (`0 <= p < n`: each pair's, and)
                sides = [of(left), *(of(r) for r in rights)]
                tests = [self._binary(COMPARISONS[type(op)], a, b)[0]
                         for op, a, b in zip(ops, sides, sides[1:], strict=False)]
                joined = tests[0]
                for test in tests[1:]:
                    joined = self.builder.and_(joined, test)
                return joined, "bool"
            case ast.UnaryOp(op=ast.USub(), operand=operand):
                return self._negated(of(operand))
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
                if reads(body, fields) or reads(orelse, fields):
                    return self._branched(of(test), lambda: of(body), lambda: of(orelse))
                return self._pick(of(test), of(body), of(orelse))
            case ast.Tuple(elts=elts):
                items = [of(e) for e in elts]
                return items, tuple(t for _, t in items)
            case ast.Call(func=ast.Attribute(value=base, attr="astype"), args=[kind],
                          keywords=[]) if dotted(kind) in CONVERSIONS:
                array, t = of(base)
                return self.contiguous(array, astype(t, dotted(kind))), astype(t, dotted(kind))
            case ast.Call(func=func, args=args, keywords=[]) if dotted(func):
                return self._call(dotted(func), [of(a) for a in args])  # type: ignore[arg-type]
            case ast.Attribute() if dotted(node) in KERNEL_CONSTANTS:
                return ir.Constant(I64, KERNEL_CONSTANTS[dotted(node)]), "int64"  # type: ignore[index]
            case ast.Subscript(value=ast.Attribute(value=base, attr="shape"),
                               slice=ast.Constant(value=int() as axis)):
                array, t = of(base)
                if not isinstance(t, Array) or axis >= t.rank:
                    raise Unsupported("the shape of no array")
                return array.shape[axis], "int64"
        raise Unsupported(f"the template form {ast.dump(node)[:60]}")


def picked_array(b: ir.IRBuilder, test: ir.Value, a: tuple, other: tuple) -> tuple:
    """One of two arrays of one type (the double buffers of a loop's state), by `test`."""
    if a[1] != other[1]:
        raise Unsupported("a choice of arrays of two types")
    x, y = a[0], other[0]
    picked = ArrayValue(b.select(test, x.data, y.data),
                        [b.select(test, p, q) for p, q in zip(x.shape, y.shape, strict=True)],
                        [b.select(test, p, q) for p, q in zip(x.strides, y.strides, strict=True)],
                        x.dtype, False, ordered=x.ordered and y.ordered,
                        owned=all(v.fresh or v.param >= 0 or v.owned for v in (x, y)),
                        sources=x.sources | y.sources, picked=x.made() | y.made())
    return picked, a[1]


def reads(node: ast.expr, fields: tuple[Expr, ...]) -> bool:
    """Whether a template's tree reads an array's entry (a field holding a Sub)."""
    return any(isinstance(e, Sub) for n in ast.walk(node) if (k := field(n)) is not None
               for e in walk(fields[k]))
