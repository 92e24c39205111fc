"""The loop IR's types: each expression's and each local's dtype and rank.

The emitter declares its arguments' types (their inputs' dtypes and ranks; `stop` a flag
array); everything else is derived from them and from the typed leaves, once, by `typed`
after emitting, which writes the dtype of each op of the op table's lowerings (Op, Compare,
Select) into the node: the widest of its operands' dtypes, as NumPy's scalars and Numba
compute it. Then `locals_of` is the function's table of locals (name → Type: a loop's index
int64, an assignment its value's type, a local set to numbers of two dtypes the wider) and
`of` any expression's type: a literal's dtype (loops.Num), an op's as `typed` wrote it (a
comparison a bool), a local's from the table, an element of an array its dtype with an axis
fewer for each whole-number index, a view its base's, a call's by the rule of the function
it calls (CALLS, ALLOCATIONS), and a form of the generator's own (Fmt) by its operators
(arithmetic, a test, a shape's entry, a choice, a tuple). What is no number (a tuple, a
kernel's effect, an error) is of dtype OTHER; None is untyped, which the verifier refuses
(verify_loops.py). A back end that writes machine code reads its types here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from .loops import (
    OTHER,
    Assign,
    Call,
    Compare,
    Do,
    Expr,
    Fmt,
    For,
    If,
    Num,
    Op,
    Pick,
    Raise,
    Return,
    Select,
    Stmt,
    Store,
    Sub,
    Update,
    Var,
    View,
    While,
    statements,
)


@dataclass(frozen=True)
class Type:
    """A value's dtype (loops.DTYPES: a float dtype, int64, bool, or OTHER for what is no
    number: a tuple, an error, a string) and rank (0: a scalar; n: an array of n axes)."""

    dtype: str
    rank: int = 0


INT = Type("int64")
BOOL = Type("bool")
#: What is no number: a tuple (a shape, a loop's state), a kernel's effect, an error.
NOTHING = Type(OTHER)
#: The `stop` argument of a function with loops: a one-entry int64 array (Ctrl-C's flag).
STOP = Type("int64", 1)


def _same(args: list[Type | None]) -> Type | None:
    return args[0] if args else None


def _scalar(dtype: str) -> Callable[[list[Type | None]], Type | None]:
    return lambda args: Type(dtype)


def _converted(dtype: str) -> Callable[[list[Type | None]], Type | None]:
    """np.float64(x), np.float32(x): x's rank in `dtype`."""
    return lambda args: Type(dtype, args[0].rank if args and args[0] else 0)


def _part(args: list[Type | None]) -> Type | None:
    """np.real(x), np.imag(x): x's rank in its parts' dtype (a real x's own)."""
    if not args or args[0] is None:
        return None
    parts = {"complex128": "float64", "complex64": "float32"}
    return Type(parts.get(args[0].dtype, args[0].dtype), args[0].rank)


def _product(args: list[Type | None]) -> Type | None:
    """np.dot(a, b) (and K.shared_product, its compiled twin): the last axis of a summed
    against b's last but one."""
    if len(args) < 2 or args[0] is None or args[1] is None:
        return None
    return Type(widest([args[0].dtype, args[1].dtype]), max(args[0].rank + args[1].rank - 2, 0))


def _stacked(args: list[Type | None]) -> Type | None:
    """np.matmul over stacks of matrices: the stack's axes and a matrix's."""
    if not args or any(a is None for a in args):
        return None
    return Type(widest([a.dtype for a in args if a]), max(a.rank for a in args if a))


def _filled(args: list[Type | None]) -> Type | None:
    """np.full(n, x): a vector of x's dtype."""
    return Type(args[1].dtype, 1) if len(args) == 2 and args[1] else None


def _into(position: int) -> Callable[[list[Type | None]], Type | None]:
    """A kernel that writes into its argument `position` and hands it back."""
    return lambda args: args[position] if len(args) > position else None


#: Kernels called for their effect alone (Do): their value is none (OTHER).
_EFFECTS = ("K.total_rows", "K.wide_vectors")

#: The result type of each function a Call calls, from its arguments' types. Allocations
#: (K.empty, K.partials, K.counted_empty) are typed where the call is (`of`: their rank is
#: their shape tuple's length), and calls run only for their effect (Do) need none.
CALLS: dict[str, Callable[[list[Type | None]], Type | None]] = {
    "int": _scalar("int64"), "min": _scalar("int64"), "K.levels": _scalar("int64"),
    "np.float64": _converted("float64"), "np.float32": _converted("float32"),
    "np.complex128": _converted("complex128"), "np.complex64": _converted("complex64"),
    "np.real": _part, "np.imag": _part,
    "K.add_any_order": _same, "K.quotient": _same, "np.ascontiguousarray": _same,
    "K.contiguous": _same, "K.transposed": _same, "np.dot": _product,
    "K.shared_product": _product, "np.matmul": _stacked, "np.full": _filled,
    "K.divisor_unsafe": _scalar("int64"), "K.quotient_unsafe": _scalar("int64"),
    "K.stop_requested": _scalar("bool"), "K.keyed_draws": _scalar("int64"),
    "K.StepCountError": _scalar(OTHER), "K.PositionError": _scalar(OTHER),
    "K.LabelError": _scalar(OTHER), "K.DrawError": _scalar(OTHER),
    "K.gemm": _into(2), "K.gemm_beta": _into(2), "K.small_product_into": _into(2),
    "K.small_product_beta": _into(2), "K.arranged_into": _into(1), "K.copy_into": _into(0),
    "K.push_rows": _scalar("int64"),  # (the count of sums on the stack)
    **{fn: _scalar(OTHER) for fn in _EFFECTS},
}
#: Allocations: a new array of the code's dtype (float64 for K.counted_empty and a sum's
#: partial sums), of as many axes as its shape tuple has entries.
ALLOCATIONS = {"K.empty": None, "K.counted_empty": "float64", "K.partials": "float64"}
#: What Fmt forms are typed by: arithmetic on numbers of one type gives that type, a
#: comparison or a test a bool.
_ARITHMETIC = set("{}()+-*/% ")
_TESTS = ("==", "!=", "<", ">", " and ", " or ", "not ")


def of(expr: Expr, table: dict[str, Type | None], code: str) -> Type | None:
    """`expr`'s type in code of dtype `code` whose locals are typed by `table`."""
    match expr:
        case Var(name=name):
            return table.get(name)
        case Num(dtype=dtype):
            return Type(dtype)
        case Op(dtype=dtype) | Select(dtype=dtype):  # (as `typed` wrote it)
            return Type(dtype)
        case Compare():
            return BOOL
        case Sub(base=base, index=index):
            return _element(of(base, table, code), index, table, code)
        case View(base=base, form=form, args=args):
            return view_type(of(base, table, code), form, args)
        case Pick(a=a, b=b):
            kinds = {of(a, table, code), of(b, table, code)}
            return kinds.pop() if len(kinds) == 1 else None
        case Call(fn=fn, args=args):
            if fn in ALLOCATIONS:  # (of a shape, or of a size: a vector)
                rank = 1 if args and of(args[0], table, code) == INT else \
                    _length(args[0]) if args else None
                return None if rank is None else Type(ALLOCATIONS[fn] or code, rank)
            rule = CALLS.get(fn)
            return rule([of(a, table, code) for a in args]) if rule else None
        case Fmt(template=template, args=args):
            return _form(template, [of(a, table, code) for a in args])
    return None


def _computed(kinds: list[Type | None]) -> Type | None:
    """What an op of the op table's lowerings gives: a number of the widest of its operands'
    dtypes (None where one is untyped or no number)."""
    if any(k is None or k.rank or k.dtype not in ORDER for k in kinds):
        return None
    return Type(widest([k.dtype for k in kinds if k]))


def _element(base: Type | None, index: tuple[Expr, ...], table, code: str) -> Type | None:
    """An element or a slice of an array of type `base`: an axis fewer for each index that is
    a whole number, the same for each slice (`:`, `a:b`)."""
    if base is None:
        return None
    dropped = sum(of(i, table, code) == INT for i in index)
    kept = sum(isinstance(i, Num) and i.text == ":" or isinstance(i, Fmt) and i.template == "{}:{}"
               for i in index)
    if dropped + kept != len(index) or dropped > base.rank:
        return None
    return Type(base.dtype, base.rank - dropped)


def view_type(base: Type | None, form: str, args: tuple[Expr, ...]) -> Type | None:
    """A view of an array of type `base`: its dtype; its rank a transpose's or a slice's
    (the same, and one more for each new axis), or a reshape's (its shape's entries)."""
    if base is None:
        return None
    if form == "{0}.T" or form.startswith("{0}.transpose("):
        return base
    if form.startswith("{0}[") and form.endswith("]"):  # (slices keep an axis, None adds one)
        entries = [e.strip() for e in form[4:-1].split(",") if e.strip()]
        if all(":" in e or e == "None" for e in entries):
            return Type(base.dtype, base.rank + entries.count("None"))
    if form.startswith("{0}.reshape(("):
        return Type(base.dtype, len(args))
    if form == "{0}.reshape({1})":
        rank = _length(args[0])
        return None if rank is None else Type(base.dtype, rank)
    return None


def _length(shape: Expr) -> int | None:
    """How many entries a shape tuple (loops.sizes: `(n1, n2, )`) has."""
    if isinstance(shape, Fmt) and shape.template.startswith("(") and not \
            shape.template.replace("{}", "").strip("(), "):
        return len(shape.args)
    return None


def _form(template: str, args: list[Type | None]) -> Type | None:
    """A form of the generator's own: `{}.shape[k]` an int64; a test a bool; arithmetic on
    scalars of one type that type."""
    if template.startswith("{}.shape[") and template.endswith("]"):
        return INT
    if template.startswith("{}.astype(np.") and template.endswith(")") and args[0]:
        return Type(template[len("{}.astype(np."):-1], args[0].rank)
    bare = template.removeprefix("(").removesuffix(")")
    if bare.startswith("{} if ") and bare.endswith(" else {}"):
        kinds = {args[0], args[-1]}  # (a value, or another where a test fails)
        return kinds.pop() if len(kinds) == 1 else None
    if template in ("{}.fill({})", "{}:{}") or "," in template and not template.replace("{}", "").strip(
            "(), "):
        return NOTHING  # (an array filled; a slice; a tuple: a shape, a loop's state, a result)
    if any(test in template for test in _TESTS):
        return BOOL
    bare = template.replace("//", "/")
    if not set(bare) - set("0123456789") <= _ARITHMETIC:
        return None
    if not args:  # (a whole number written as it is: `2`)
        return INT if bare.strip("() ").isdigit() else None
    if any(kind is None or kind.rank for kind in args):
        return None
    return Type(widest([kind.dtype for kind in args if kind is not None]))


#: The numbers' dtypes, narrowest first: arithmetic on several gives the widest (as NumPy's
#: scalars and Numba do: a float32 and a float64 make a float64; a complex64 and a float64 a
#: complex128).
ORDER = ("bool", "int64", "float32", "float64", "complex64", "complex128")


def widest(dtypes: list[str]) -> str:
    """The dtype arithmetic on numbers of `dtypes` gives (OTHER where one is no number)."""
    if any(d not in ORDER for d in dtypes):
        return OTHER
    found = max(dtypes, key=ORDER.index)
    return "complex128" if found == "complex64" and "float64" in dtypes else found


def locals_of(body: list[Stmt], params: dict[str, Type], code: str,
              clashes: list[tuple[str, Type, Type]] | None = None) -> dict[str, Type | None]:
    """Every local of a typed function (its statements `body`, as `typed` left them, and its
    arguments typed by `params`) with its type: None where what sets it is untyped. A local
    set to numbers of several dtypes is of the widest (as Numba unifies them: a float32 start
    of a float64 minimum); one set to values of another rank or kind is added to `clashes`
    (name, type, the other), where given."""
    table: dict[str, Type | None] = dict(params)
    found: list[tuple[str, Type, Type]] = []
    for stmt in statements(body):
        match stmt:
            case For(index=index):
                table[index] = INT
            case Assign(targets=targets, values=values):
                for target, value in zip(targets, values, strict=True):
                    _set(table, target, of(value, table, code), found)
    if clashes is not None:
        clashes.extend(found)
    return table


def _set(table: dict[str, Type | None], name: str, kind: Type | None,
         clashes: list[tuple[str, Type, Type]]) -> bool:
    """`name` set to a value of `kind`: its type, or the wider of it and the one it had;
    whether it was widened."""
    known = table.get(name)
    if known is None or kind is None or kind == known:
        table[name] = known or kind
    elif kind.rank == known.rank and {kind.dtype, known.dtype} <= set(ORDER):
        table[name] = Type(widest([kind.dtype, known.dtype]), kind.rank)
        return table[name] != known
    else:
        clashes.append((name, known, kind))
    return False


def typed(body: list[Stmt], params: dict[str, Type], code: str) -> list[Stmt]:
    """`body` with each op of the op table's lowerings (Op, Compare, Select) given the dtype it
    computes in: the widest of its operands' (`widest`), what Python and Numba compute it in.
    The generator types the leaves (literals, arguments, allocations); this derives the rest,
    bottom up, each local's type from what sets it, in the statements' order (each local is
    set before it is read). Where a local is widened after it was read (a float32 start of a
    float64 minimum), once more with every local's final type. Run once, after emitting: the
    rewrites after it keep types."""
    typer = _Typer(dict(params), code)
    out = [typer.statement(stmt) for stmt in body]
    if typer.widened:
        typer.fixed = True
        out = [typer.statement(stmt) for stmt in out]
    return out


class _Typer:
    def __init__(self, table: dict[str, Type | None], code: str) -> None:
        self.table, self.code = table, code
        self.widened = self.fixed = False

    def set(self, name: str, kind: Type | None) -> None:
        if not self.fixed:
            self.widened |= _set(self.table, name, kind, [])

    def statement(self, stmt: Stmt) -> Stmt:
        """`stmt` with its ops typed (itself where nothing changes: most ops are of the code's
        dtype, as the generator made them)."""
        match stmt:
            case Assign(targets=targets, values=values):
                typed_values = self.all(values)
                for target, value in zip(targets, typed_values, strict=True):
                    self.set(target, of(value, self.table, self.code))
                return stmt if typed_values is values else replace(stmt, values=typed_values)
            case For(index=index, size=size, body=inside):
                self.set(index, INT)
                size_, inside_ = self.expr(size), self.block(inside)
                return stmt if size_ is size and inside_ is inside else \
                    replace(stmt, size=size_, body=inside_)
            case If(test=test, body=inside, orelse=orelse):
                test_, inside_, orelse_ = self.expr(test), self.block(inside), self.block(orelse)
                return stmt if test_ is test and inside_ is inside and orelse_ is orelse else \
                    replace(stmt, test=test_, body=inside_, orelse=orelse_)
            case While(body=inside):
                inside_ = self.block(inside)
                return stmt if inside_ is inside else replace(stmt, body=inside_)
            case Store(target=target, value=value):
                target_, value_ = self.expr(target), self.expr(value)
                return stmt if target_ is target and value_ is value else \
                    replace(stmt, target=target_, value=value_)
            case Update(value=value) | Return(value=value):
                value_ = self.expr(value)
                return stmt if value_ is value else replace(stmt, value=value_)
            case Do(expr=value):
                value_ = self.expr(value)
                return stmt if value_ is value else replace(stmt, expr=value_)
            case Raise(error=value):
                value_ = self.expr(value)
                return stmt if value_ is value else replace(stmt, error=value_)
        return stmt

    def block(self, body: list[Stmt]) -> list[Stmt]:
        """`body` typed (the same list where no statement changes)."""
        out = [self.statement(stmt) for stmt in body]
        return body if all(a is b for a, b in zip(out, body, strict=True)) else out

    def all(self, exprs: tuple[Expr, ...]) -> tuple[Expr, ...]:
        """`exprs` typed (the same tuple where none changes)."""
        out = tuple(self.expr(e) for e in exprs)
        return exprs if all(a is b for a, b in zip(out, exprs, strict=True)) else out

    def kinds(self, exprs: tuple[Expr, ...]) -> list[Type | None]:
        return [of(e, self.table, self.code) for e in exprs]

    def expr(self, expr: Expr) -> Expr:
        """`expr` with its ops typed, operands first (each op's type is then read from its
        operands' fields, not computed again); itself where nothing changes."""
        match expr:
            case Var() | Num():
                return expr
            case Sub(base=base, index=index):
                base_, index_ = self.expr(base), self.all(index)
                return expr if base_ is base and index_ is index else Sub(base_, index_)
            case View(base=base, args=args):
                base_, args_ = self.expr(base), self.all(args)
                return expr if base_ is base and args_ is args else \
                    replace(expr, base=base_, args=args_)
            case Pick(a=a, test=test, b=b):
                kids = (a, test, b)
                kids_ = self.all(kids)
                return expr if kids_ is kids else Pick(*kids_)
            case Call(args=args) | Fmt(args=args):
                args_ = self.all(args)
                return expr if args_ is args else replace(expr, args=args_)
            case Op(args=args, dtype=dtype):
                args_ = self.all(args)
                found = _dtype(self.kinds(args_), dtype)
                return expr if args_ is args and found == dtype else \
                    replace(expr, args=args_, dtype=found)
            case Compare(left=left, right=right, dtype=dtype):
                kids = (left, right)
                kids_ = self.all(kids)
                found = _dtype(self.kinds(kids_), dtype)
                return expr if kids_ is kids and found == dtype else \
                    Compare(expr.op, kids_[0], kids_[1], found)
            case Select(test=test, a=a, b=b, dtype=dtype):
                kids = (test, a, b)
                kids_ = self.all(kids)
                found = _dtype(self.kinds(kids_[1:]), dtype)
                return expr if kids_ is kids and found == dtype else \
                    Select(kids_[0], kids_[1], kids_[2], found)  # type: ignore[arg-type]
        return expr


def _dtype(kinds: list[Type | None], given: str) -> str:
    """The dtype an op over operands of `kinds` computes in (`given` where one is untyped)."""
    found = _computed(kinds)
    return found.dtype if found else given
