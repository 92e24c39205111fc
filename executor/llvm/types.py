"""The type of every local of a loop-IR function (executor/codegen/loops.py), inferred from its
parameters' as Numba infers them: a scalar (complex128, complex64, float64, float32, int64,
bool) or an array of a dtype and rank. A local assigned values of several number types takes
their union (int64 and float32: float64; complex64 and float64: complex128), as Numba unifies
them; anything else (an array assigned twice with
different ranks, a string, a slice) is `Unsupported`, and the call stays on the host tier."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ...compiler.plan.layout import SMALL_PRODUCT
from ..codegen import loop_types, loops
from ..codegen.loops import (
    Assign,
    Call,
    Compare,
    Expr,
    Fmt,
    For,
    Num,
    Op,
    Pick,
    Select,
    Sub,
    Update,
    Var,
    View,
)
from ..codegen.spelling import INFIX, PREFIX, WRAP, spelled
from .templates import dotted, field, parsed
from .unsupported import Unsupported

#: The kernels' constants templates read (kernels.SMALL_PRODUCT: the plan's own bound).
KERNEL_CONSTANTS = {"K.SMALL_PRODUCT": SMALL_PRODUCT}


@dataclass(frozen=True)
class Array:
    dtype: str
    rank: int


#: Scalar types, narrowest first (their union is the wider, but int64 ∪ float32 = float64 and
#: complex64 ∪ float64 (or int64) = complex128).
SCALARS = ("bool", "int64", "float32", "float64", "complex64", "complex128")
FLOATS = ("float32", "float64")
COMPLEX = ("complex64", "complex128")
Type = str | Array | tuple


def unify(a: Type, b: Type) -> Type:
    """The type of a local assigned values of types `a` and `b`."""
    if a == b:
        return a
    if isinstance(a, str) and isinstance(b, str):
        if {a, b} == {"int64", "float32"}:
            return "float64"
        if {a, b} & {"int64", "float64"} and "complex64" in (a, b):
            return "complex128"
        return max(a, b, key=SCALARS.index)
    raise Unsupported(f"a local of types {a} and {b}")


def number(t: Type) -> str:
    """`t` as an operand of arithmetic (bool counts as int64), Unsupported when no number."""
    if t == "bool":
        return "int64"
    if isinstance(t, str) and t in SCALARS:
        return t
    raise Unsupported(f"arithmetic on {t}")


ARITHMETIC = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
              ast.Mod: "%"}
COMPARISONS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==",
               ast.NotEq: "!="}
BITWISE = {ast.BitAnd: "&", ast.BitOr: "|"}


def binary(op: str, a: Type, b: Type) -> str:
    """The type of `a op b` (op: ARITHMETIC's, COMPARISONS' or BITWISE's)."""
    if op in COMPARISONS.values():
        if (number(a) in COMPLEX or number(b) in COMPLEX) and op not in ("==", "!="):
            raise Unsupported(f"the ordering {op} of complex numbers")
        return "bool"
    if op in BITWISE.values():
        if a == b == "bool":
            return "bool"
        if number(a) == number(b) == "int64":
            return "int64"
        raise Unsupported(f"{a} {op} {b}")
    common = unify(number(a), number(b))
    if op == "/" and common == "int64":
        return "float64"
    if op in ("//", "%") and common in COMPLEX:
        raise Unsupported(f"{op} of {common}")
    return common  # type: ignore[return-value]


#: The calls this back end makes, each with the type of its result from its arguments' and
#: the code's dtype (executor/numba/kernels.py and kernels32.py: what Numba makes of them).
def call_type(fn: str, args: tuple[Type, ...], code: str) -> Type:
    if any(isinstance(a, str) and a in COMPLEX for a in args):
        return _complex_call(fn, args)
    match fn, args:
        case "K.empty", (tuple() as shape,):
            return Array(code, len(shape))
        case "K.contiguous", (Array() as x,):
            return x
        case "K.counted_empty", (tuple() as shape,):
            return Array("float64", len(shape))
        case "K.partials", (size,):  # (pairwise.partials: float64 whatever the code's dtype)
            return Array("float64", len(size) if isinstance(size, tuple) else 1)
        case ("K.fmax" | "K.fmin"), (a, b):
            own = code == "float32" and number(a) == number(b) == "float32"
            return "float32" if own else "float64"
        case ("K.exp" | "K.log" | "K.tanh" | "K.exp_fast" | "K.tanh_fast" | "K.erf"), (x,):
            # (float32 code's are vmath32's, float32 only of a float32: maths32.py)
            return "float32" if code == "float32" and number(x) == "float32" else "float64"
        case "K.power", (a, b):  # (kernels32.power: float32 in float32 code, whatever in)
            number(a), number(b)
            return "float32" if code == "float32" else "float64"
        case ("np.cos" | "np.sin" | "np.tan"), (x,):
            return number(x) if number(x) in FLOATS else "float64"
        case "np.full", (size, value):  # (a scalar as a vector of one: control.py's _flat)
            number(size)
            return Array(number(value), 1)
        case "K.levels", (count,):  # (pairwise.py's: how deep a stack of pushed sums is)
            number(count)
            return "int64"
        case "K.keyed_draws", (kind, key, step, Array()):  # (draws.py: 0, or 1 for E512)
            number(kind), number(key), number(step)
            return "int64"
        case "K.push_rows", (Array(), count, Array()):
            number(count)
            return "int64"
        case ("K.add_any_order" | "K.quotient" | "np.float64" | "float"), _:
            return "float64"
        case ("K.quotient_unsafe" | "K.divisor_unsafe" | "int"), _:
            return "int64"
        case "np.float32", _:
            return "float32"
        case ("np.complex128" | "np.complex64"), (x,):  # (a step count made data again)
            number(x)
            return fn[3:]
        case ("np.conj" | "np.real" | "np.imag"), (x,):  # (of a real number in complex code)
            return number(x) if number(x) in FLOATS else "float64"
        case ("np.sqrt" | "np.floor"), (x,):
            return number(x) if number(x) in FLOATS else "float64"
        case ("np.abs" | "abs"), (x,):
            return number(x)
        case ("min" | "max"), (a, b) if number(a) == number(b) == "int64":
            return "int64"  # (a block's length: sums.py)
    raise Unsupported(f"a call of {fn}")


#: The calls of a complex number lowered (complex.py), by the real functions' names:
#: np.abs (a modulus), conj, re and im as complex code spells them (spelling.py), and the
#: maths functions (C's cexp, clog, …: complex.MATHS).
COMPLEX_CALLS = {"np.abs": "abs", "abs": "abs", "np.conj": "conj", "np.real": "re",
                 "np.imag": "im", "K.exp": "exp", "K.exp_fast": "exp", "K.log": "log",
                 "K.tanh": "tanh", "K.tanh_fast": "tanh", "np.sqrt": "sqrt", "np.sin": "sin",
                 "np.cos": "cos", "np.tan": "tan"}


def _complex_call(fn: str, args: tuple[Type, ...]) -> Type:
    """The type of a call of a complex number: its parts' for abs, re and im, its own for
    conj and the maths functions, the sum's for K.add_any_order."""
    if fn == "K.add_any_order" and len(args) == 2:
        return unify(number(args[0]), number(args[1]))
    if fn in ("np.complex128", "np.complex64") and len(args) == 1:
        return fn[3:]
    if fn not in COMPLEX_CALLS or len(args) != 1:
        raise Unsupported(f"a call of {fn} on a complex number")
    if COMPLEX_CALLS[fn] not in ("abs", "re", "im"):  # (conj, and the maths functions)
        return args[0]
    return "float64" if args[0] == "complex128" else "float32"


#: The dtypes an array is converted to by `x.astype(np.…)` (counted.py: a counted tensor's
#: buffer read in the code's dtype, or the code's dtype's in float64).
CONVERSIONS = ("np.float64", "np.float32")


def astype(base: Type, kind: str) -> Array:
    """The type of `x.astype(kind)`: a new array of x's rank in `kind`'s dtype."""
    if not isinstance(base, Array):
        raise Unsupported(f"astype of a {base}")
    return Array(kind[3:], base.rank)


def axis_order(axes: Num) -> list[int]:
    """The axes of K.transposed's text (`"2,0,1"`), Unsupported when they are no order."""
    order = axes.text.strip('"').split(",")
    if not all(p.strip().isdigit() for p in order) or sorted(map(int, order)) != list(
            range(len(order))):
        raise Unsupported(f"the transpose {axes.text}")
    return [int(p) for p in order]


def view_type(base: Type, form: str, args: tuple) -> Array:
    """The type of the view `form` of an array of type `base` (loop_types.view_type's rank)."""
    if not isinstance(base, Array):
        raise Unsupported(f"a view of a {base}")
    made = loop_types.view_type(loop_types.Type(base.dtype, base.rank), form, args)
    if made is None:
        raise Unsupported(f"the view {form!r}")
    return Array(base.dtype, made.rank)


def literal(num: Num) -> Type:
    """A literal's type (its dtype), Unsupported when it is no number."""
    if num.dtype in SCALARS:
        return num.dtype
    raise Unsupported(f"the constant {num.text}")


class Inference:
    """The types of a function's locals (`locals`), from its parameters' (`params`), for
    code of dtype `code` (what K.empty makes)."""

    def __init__(self, params: dict[str, Type], code: str):
        self.code = code
        self.locals: dict[str, Type] = dict(params)
        self._params = set(params)

    def run(self, body: list) -> dict[str, Type]:
        """Every local's type: assignments visited until no type widens."""
        while True:
            before = dict(self.locals)
            for stmt in loops.statements(body):
                self._statement(stmt)
            if before == self.locals:
                return self.locals

    def _set(self, name: str, t: Type) -> None:
        if name in self._params and self.locals[name] != t:
            raise Unsupported(f"the parameter {name} assigned a {t}")
        self.locals[name] = unify(self.locals[name], t) if name in self.locals else t

    def _statement(self, stmt) -> None:
        match stmt:
            case Assign(targets=targets, values=values):
                for name, value in zip(targets, values, strict=True):
                    self._set(name, self.of(value))
            case Update(name=name, op=op, value=value):
                self._set(name, binary(op[0], self.of(Var(name)), self.of(value)))
            case For(index=index):
                self._set(index, "int64")

    def of(self, expr: Expr) -> Type:
        """`expr`'s type (a local not yet assigned: Unsupported, until a later round)."""
        match expr:
            case Var(name=name):
                if name not in self.locals:
                    raise Unsupported(f"{name} read before it is assigned")
                return self.locals[name]
            case Num():
                return literal(expr)
            case Sub(base=base, index=index):
                return indexed(self.of(base), index, self.of)
            case View(base=base, form=form, args=args):
                for a in args:
                    self.of(a)
                return view_type(self.of(base), form, args)
            case Pick(a=a, test=test, b=b):
                self.of(test)
                return unify(self.of(a), self.of(b))
            case Call(fn="K.transposed", args=(base, Num() as axes)):
                t = self.of(base)
                if not isinstance(t, Array) or len(axis_order(axes)) != t.rank:
                    raise Unsupported(f"a transpose of {t} by {axes.text}")
                return t
            case Call(fn=fn, args=args):
                return call_type(fn, tuple(self.of(a) for a in args), self.code)
            case Fmt(template=template, args=args):
                return self._tree(parsed(template), tuple(self.of(a) for a in args))
            case Op(fn=fn, args=args, tier=tier):
                return op_type(fn, tier, tuple(self.of(a) for a in args), self.code)
            case Compare(op=op, left=left, right=right):
                return binary(op, self.of(left), self.of(right))
            case Select(test=test, a=a, b=b):
                self.of(test)
                return unify(self.of(a), self.of(b))
        raise Unsupported(f"the expression {type(expr).__name__}")

    def _tree(self, node: ast.expr, fields: tuple[Type, ...]) -> Type:
        """The type of a template's tree whose fields have types `fields`."""
        return tree_type(node, fields, lambda n: self._tree(n, fields), self.code)


def op_type(fn: str, tier: str, args: tuple[Type, ...], code: str) -> Type:
    """The type of the op table's function `fn` of `args`, spelled as `tier` writes it
    (executor/codegen/spelling.py): an operator's as the operator's, a call's as the call's."""
    form, name = spelled(fn, tier)
    if form == INFIX:
        return binary(name, *args)
    if form == WRAP and number(args[0]) in COMPLEX:  # (`real`: a real value's own part)
        raise Unsupported(f"{fn} of a complex number")
    if form in (PREFIX, WRAP):
        return number(args[0])
    return call_type(name, args, code)


def whole_axis(index: Expr) -> bool:
    """Whether an index of a Sub keeps its axis: `:` (all of it) or `{}:{}` (a range)."""
    return (isinstance(index, Num) and index.text == ":"
            or isinstance(index, Fmt) and index.template == "{}:{}")


def is_part(base: Type, index: tuple[Expr, ...]) -> bool:
    """Whether base[index] is a view (a slice, or fewer indices than axes), not an entry."""
    return isinstance(base, Array) and (any(whole_axis(i) for i in index)
                                         or len(index) < base.rank)


def indexed(base: Type, index: tuple[Expr, ...], of) -> Type:
    """The type of base[index] (`of` types an expression): an entry, or a view with an axis
    fewer for each whole number in `index` (NumPy's basic indexing)."""
    if not is_part(base, index):
        return element(base, [of(i) for i in index])
    assert isinstance(base, Array)
    if len(index) > base.rank:
        raise Unsupported(f"an index of {base} by {len(index)}")
    numbers = [i for i in index if not whole_axis(i)]
    bounds = [b for i in index if isinstance(i, Fmt) and whole_axis(i) for b in i.args]
    for t in (of(i) for i in numbers + bounds):
        if number(t) != "int64":
            raise Unsupported(f"an index of type {t}")
    return Array(base.dtype, base.rank - len(numbers))


def element(base: Type, index: list[Type]) -> Type:
    """The type of base[index]: an array's entry (every index a whole number)."""
    if not isinstance(base, Array) or len(index) != base.rank:
        raise Unsupported(f"an index of {base} by {len(index)}")
    for t in index:
        if number(t) != "int64":
            raise Unsupported(f"an index of type {t}")
    return base.dtype


def tree_type(node: ast.expr, fields: tuple[Type, ...], of, code: str) -> Type:
    """The type of one node of a template's tree (`of` types its children)."""
    k = field(node)
    if k is not None:
        return fields[k]
    match node:
        case ast.Constant(value=bool()):
            return "bool"
        case ast.Constant(value=int()):
            return "int64"
        case ast.Constant(value=float()):
            return "float64"
        case ast.Constant(value=complex()):
            return "complex128"
        case ast.BinOp(left=left, op=op, right=right) if type(op) in ARITHMETIC | BITWISE:
            return binary((ARITHMETIC | BITWISE)[type(op)], of(left), of(right))
        case ast.UnaryOp(op=ast.USub() | ast.UAdd(), operand=operand):
            return number(of(operand))
        case ast.UnaryOp(op=ast.Not(), operand=operand):
            of(operand)
            return "bool"
        case ast.Compare(left=left, ops=ops, comparators=rights) if all(
                type(op) in COMPARISONS for op in ops):  # (`0 <= p < n`: each pair's)
            sides = [left, *rights]
            for op, a, b in zip(ops, sides, sides[1:], strict=False):
                binary(COMPARISONS[type(op)], of(a), of(b))
            return "bool"
        case ast.BoolOp(values=values) if all(of(v) == "bool" for v in values):
            return "bool"
        case ast.IfExp(test=test, body=body, orelse=orelse):
            of(test)
            return unify(of(body), of(orelse))
        case ast.Tuple(elts=elts):
            return tuple(of(e) for e in elts)
        case ast.Call(func=ast.Attribute(value=base, attr="astype"), args=[kind],
                      keywords=[]) if dotted(kind) in CONVERSIONS:
            return astype(of(base), dotted(kind))
        case ast.Call(func=func, args=args, keywords=[]) if dotted(func):
            return call_type(dotted(func), tuple(of(a) for a in args), code)
        case ast.Attribute() if dotted(node) in KERNEL_CONSTANTS:
            return "int64"
        case ast.Subscript(value=ast.Attribute(value=base, attr="shape"),
                           slice=ast.Constant(value=int())):
            if not isinstance(of(base), Array):
                raise Unsupported("the shape of a scalar")
            return "int64"
    raise Unsupported(f"the template form {ast.dump(node)[:60]}")
