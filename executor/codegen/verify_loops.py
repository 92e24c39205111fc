"""The loop IR's verifier: `verify(body, dtype, args, after, params)` checks a generated function's
statements (loops.py) between the rewrites (the emitter runs it when HILBERT_VERIFY is set, as
the test suite does, after emitting, rows.py and tidy.py).

It checks that every literal is typed (a dtype of loops.DTYPES, a number's text for a number's
dtype); that no template, view form or call holds a number of its own (its numbers are typed
arguments); that the numbers an expression combines are of the code's dtype (one of another
dtype only as an accumulator's start, a whole assignment: loops.ACCUMULATOR); that every
statement is well formed; and that every local is set (an argument, an assignment, a loop's
index) before it is read and not read after it is deleted. Then the types (loop_types.py, from
the arguments' types the emitter declares): every local read is typed, none is set to values
of two ranks or kinds, every op of the op table's lowerings is a known function of its arity
and of the dtype its operands make, and every store's value is a number its array holds. A
loop over rows that joins nests (the plan's, rows.py) writes every array at its row first."""

from __future__ import annotations

from ...compiler.ir.verify import enabled
from ...compiler.ops.loop_code import COMPARISONS, FUNCTIONS
from . import render, spelling
from .loop_types import ORDER, Type, locals_of, of, widest
from .loops import (
    ACCUMULATOR,
    DTYPES,
    FLOATS,
    OTHER,
    Assign,
    Call,
    Compare,
    Delete,
    Expr,
    Fmt,
    For,
    Num,
    Op,
    Select,
    Stmt,
    Store,
    Update,
    Var,
    View,
    blocks,
    exprs,
    floats,
    kids,
    statements,
    walk,
)
from .rows import is_scratch

__all__ = ["LoopVerifyError", "enabled", "verify"]


class LoopVerifyError(AssertionError):
    """Loop IR that breaks its rules: a code generator's bug, never a user's error."""


def verify(body: list[Stmt], dtype: str, args: list[str], after: str,
           params: dict[str, Type]) -> None:
    """Check `body`, a function of `args` (typed by `params`) whose numbers are of `dtype`,
    as `after` (the step that made it) left it. Raises LoopVerifyError naming the statement
    and what is wrong."""
    _Checker(dtype, set(args), after).block(body)
    _TypeChecker(dtype, after).check(body, {name: params[name] for name in args})


class _Checker:
    def __init__(self, dtype: str, defined: set[str], after: str) -> None:
        self.dtype, self.defined, self.after = dtype, defined, after

    def fail(self, stmt: Stmt, what: str) -> None:
        raise LoopVerifyError(f"loop IR after {self.after}: {what}, in\n{_shown(stmt)}")

    def block(self, body: list[Stmt]) -> None:
        for stmt in body:
            self.statement(stmt)

    def statement(self, stmt: Stmt) -> None:
        self.shape(stmt)
        for expr in exprs(stmt):
            self.expression(stmt, expr, whole=_starts(stmt, expr))
        match stmt:
            case Assign(targets=targets):
                self.defined.update(targets)
            case Update(name=name) if name not in self.defined:
                self.fail(stmt, f"{name} updated before it is set")
            case For(index=index, body=body, kernels=kernels):
                self.defined.add(index)
                if len(kernels) > 1:
                    self.row_loop(stmt, index, body)
                self.block(body)
            case Delete(names=names):
                self.defined.difference_update(names)
            case _:
                for block in blocks(stmt):
                    self.block(block)

    def row_loop(self, stmt: Stmt, index: str, body: list[Stmt]) -> None:
        """A loop over rows joining nests (the plan's row loop, rows.py) writes every array
        at the row it computes, first (a row's scratch array aside: division.py)."""
        for inner in statements(body):
            if isinstance(inner, Store) and not (
                    isinstance(inner.target.base, Var) and is_scratch(inner.target.base.name)) \
                    and inner.target.index[:1] != (Var(index),):
                self.fail(stmt, f"a row loop writes {_printed(inner.target)}, not at its row")

    def shape(self, stmt: Stmt) -> None:
        """The statement's own form."""
        match stmt:
            case Assign(targets=targets, values=values) if len(targets) != len(values) or \
                    not targets:
                self.fail(stmt, "an assignment of another number of values than targets")
            case Update(op=op) if op not in ("+=", "-="):
                self.fail(stmt, f"an update by {op!r}")

    def expression(self, stmt: Stmt, expr: Expr, whole: bool) -> None:
        for node in walk(expr):
            match node:
                case Var(name=name) if name not in self.defined:
                    self.fail(stmt, f"{name} read before it is set")
                case Num():
                    self.literal(stmt, node, whole and node is expr)
                case Fmt(template=text) | View(form=text) | Call(fn=text) if floats(text):
                    self.fail(stmt, f"a number of its own in {text!r} (not a typed Num)")
            if not isinstance(node, Num):
                self.operands(stmt, node)

    def literal(self, stmt: Stmt, num: Num, start: bool) -> None:
        """A literal's dtype is one of DTYPES and fits its text; a float one is of the code's
        dtype but for an accumulator's start (and in complex code, of its parts' dtype: the
        bounds a step count's real part is checked against, control.py)."""
        if num.dtype not in DTYPES:
            self.fail(stmt, f"the literal {num.text!r} untyped ({num.dtype!r})")
        if _kind(num.text) != _KINDS.get(num.dtype, float):
            self.fail(stmt, f"the literal {num.text!r} typed {num.dtype}")
        if num.dtype in FLOATS and num.dtype not in (self.dtype, PARTS.get(self.dtype)) and \
                not (start and num.dtype == ACCUMULATOR):
            self.fail(stmt, f"a {num.dtype} literal {num.text} in {self.dtype} code")

    def operands(self, stmt: Stmt, node: Expr) -> None:
        """The literals one expression combines are of one float dtype."""
        kinds = {k.dtype for k in kids(node) if isinstance(k, Num) and k.dtype in FLOATS}
        if len(kinds) > 1:
            self.fail(stmt, f"operands of dtypes {sorted(kinds)} combined")


def _printed(expr: Expr) -> str:
    try:
        return render.expr(expr)
    except KeyError:
        return repr(expr)[:300]


def _shown(stmt: Stmt) -> str:
    """The statement's first lines as printed (as data where it cannot be printed: an op of
    no known spelling)."""
    try:
        return "\n".join(render.lines([stmt], 0)[:6])
    except KeyError:
        return repr(stmt)[:600]


def _starts(stmt: Stmt, expr: Expr) -> bool:
    """Whether `expr` is a whole value a local starts at (an accumulator's start)."""
    return isinstance(stmt, Assign) and expr in stmt.values


#: Complex code's parts' dtype, whose literals it may hold (`literal`).
PARTS = {"complex128": "float64", "complex64": "float32"}

#: What a literal of each dtype is written as (_kind); a float or complex one as a float.
_KINDS: dict[str, type | None] = {"int64": int, "bool": bool, OTHER: None}


def _kind(text: str) -> type | None:
    """What `text` is: an int (whole's), a bool, a float (number's: `-2.5`, `(-np.inf)`), or
    None for no number."""
    if text in ("True", "False"):
        return bool
    bare = text.removeprefix("(").removesuffix(")").removeprefix("-")
    if bare.isdigit():
        return int
    found = floats(bare)
    return float if len(found) == 1 and found[0][:2] == (0, len(bare)) else None


class _TypeChecker:
    """The types (loop_types.py): every expression and every local typed (a local of one type,
    or numbers of one rank that widen), every op of the op table's lowerings well formed and of the dtype its operands
    make (the widest of theirs), and every store's value a number its array holds."""

    def __init__(self, dtype: str, after: str) -> None:
        self.dtype, self.after = dtype, after

    def fail(self, stmt: Stmt, what: str) -> None:
        raise LoopVerifyError(f"loop IR after {self.after}: {what}, in\n{_shown(stmt)}")

    def check(self, body: list[Stmt], params: dict[str, Type]) -> None:
        clashes: list = []
        self.table = locals_of(body, params, self.dtype, clashes)
        for name, kind, other in clashes:
            self.fail(body[0], f"{name} set to a {kind} and to a {other}")
        for stmt in statements(body):
            for expr in exprs(stmt):
                for node in walk(expr):
                    self.node(stmt, node)
            if isinstance(stmt, Store):
                self.store(stmt)

    def type(self, stmt: Stmt, expr: Expr) -> Type:
        found = of(expr, self.table, self.dtype)
        if found is None:
            self.fail(stmt, f"{_printed(expr)} untyped")
        assert found is not None
        return found

    def node(self, stmt: Stmt, node: Expr) -> None:
        match node:
            case Var(name=name) if self.table.get(name) is None:
                self.fail(stmt, f"{name} read untyped")
            case _ if of(node, self.table, self.dtype) is None:
                self.fail(stmt, f"{_printed(node)} untyped")
            case Op(fn=fn, args=args, tier=tier) if FUNCTIONS.get(fn) != len(args) or \
                    tier not in spelling.TIERS:
                self.fail(stmt, f"{fn} of {len(args)} argument(s) in tier {tier!r}")
            case Op(args=args, dtype=dtype):
                self.operands(stmt, args, dtype, node)
            case Compare(op=op) if op not in COMPARISONS:
                self.fail(stmt, f"the comparison {op!r}")
            case Compare(left=left, right=right, dtype=dtype):
                self.operands(stmt, (left, right), dtype, node)
            case Select(test=test) if not isinstance(test, Compare):
                self.fail(stmt, "a choice by something other than a comparison")
            case Select(a=a, b=b, dtype=dtype):
                self.operands(stmt, (a, b), dtype, node)

    def operands(self, stmt: Stmt, args: tuple[Expr, ...], dtype: str, node: Expr) -> None:
        """Each operand a typed number, and the node's dtype the widest of theirs (what it
        computes in: loop_types.widest)."""
        kinds = [self.type(stmt, arg) for arg in args]
        if any(k.rank or k.dtype not in ORDER for k in kinds):
            self.fail(stmt, f"an operand of {kinds} in a {type(node).__name__}")
        if dtype != widest([k.dtype for k in kinds]):
            self.fail(stmt, f"a {dtype} {type(node).__name__} of {render.expr(node)} over "
                            f"operands of {sorted({k.dtype for k in kinds})}")

    def store(self, stmt: Store) -> None:
        """The value stored is a number, converted to its array's dtype where they differ: a
        widening (exact), or a float64 accumulator's value rounded once to the code's dtype."""
        target, value = self.type(stmt, stmt.target), self.type(stmt, stmt.value)
        if value.dtype not in ORDER or target.dtype not in ORDER:
            self.fail(stmt, f"a {value.dtype} value stored into an array of {target.dtype}")
        narrowed = ORDER.index(value.dtype) > ORDER.index(target.dtype)
        if narrowed and (value.dtype, target.dtype) != (ACCUMULATOR, self.dtype):
            self.fail(stmt, f"a {value.dtype} value stored into an array of {target.dtype}")
