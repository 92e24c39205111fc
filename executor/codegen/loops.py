"""The loop IR: what a generated function does, as data, before it is printed.

The code generator (emitter.py and the modules it calls) builds a function as statements over
expressions; the rewrites (rows.py, division.py, tidy.py) read and change that structure, and
render.py only prints it. Names are the generator's own (counters: `b3`, `t12`, `i0`), so a
name is never mistaken for another; every node is a frozen dataclass, and statement bodies are
lists the generator fills as it goes (a loop's body is complete once the loop is closed).

Expressions: Var (a local), Num (a literal, or a constant of np or K, naming no local), Sub
(an element or a slice: base[index]), View (what may share base's memory: base.T, a reshape, a
slice), Pick (a if test else b, either of which it may be), Call (fn(args); fn is np's, K's or
a builtin), Fmt (a form of the generator's own, filled with expressions: index arithmetic, a
shape), and the op table's lowerings (compiler/ops/loop_code.py, made loop IR by op_code.py):
Op (a function of loop_code.FUNCTIONS, spelled per tier by spelling.py), Compare and Select,
each typed by the dtype it computes in.

Every literal carries its dtype, set when the generator builds it (DTYPES): a number of the
code's dtype (float32 code's are float32), an accumulator's start float64, a count or a size
int64. No Fmt holds a number of its own: its numbers are typed Num arguments, so render.py
writes each number as its dtype's literal (precision.literal) and nothing rewrites printed
code. verify_loops.py checks all this.
"""

from __future__ import annotations

import io
import math
import tokenize
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache

from . import spelling

# ------------------------------------------------------------------------------ expressions


@dataclass(frozen=True)
class Var:
    name: str


#: A literal's dtypes: numbers' (FLOATS: what a float is written in), and OTHER for what is no
#: number (`:`, a string, a name of np or K).
FLOATS = ("float64", "float32", "complex128", "complex64")
OTHER = "other"
DTYPES = (*FLOATS, "int64", "bool", OTHER)
#: A sum's accumulator's dtype in code of every dtype (precision.py).
ACCUMULATOR = "float64"


@dataclass(frozen=True)
class Num:
    """A literal of `dtype` (DTYPES), or a constant naming no local (`0.0`, `np.inf`, `:`,
    `K.SMALL_PRODUCT`)."""

    text: str
    dtype: str


@dataclass(frozen=True)
class Sub:
    """`base[index, …]`: an element (a loop nest's read) or a slice (a view)."""

    base: Expr
    index: tuple[Expr, ...]


@dataclass(frozen=True)
class View:
    """An expression that may share `base`'s memory: `form` with `{0}` for base and `{1}`… for
    `args` (`{0}.T`, `{0}.reshape(({1}, {2}, ))`)."""

    base: Expr
    form: str
    args: tuple[Expr, ...] = ()


@dataclass(frozen=True)
class Pick:
    """`a if test else b`: either array."""

    a: Expr
    test: Expr
    b: Expr


@dataclass(frozen=True)
class Call:
    """`fn(arg, …)`; `fn` names no local (np.…, K.…, int, range)."""

    fn: str
    args: tuple[Expr, ...]


@dataclass(frozen=True)
class Fmt:
    """An expression of its own form: `template`'s `{}` fields filled with `args` in order (an
    op table's code, `({} * {})`, a test). The template names no local."""

    template: str
    args: tuple[Expr, ...]


@dataclass(frozen=True)
class Op:
    """A function of the op table's lowerings (compiler/ops/loop_code.py: FUNCTIONS, `exp`,
    `mul`, `fmax`…) applied to `args`, giving `dtype`. `tier` names how it is spelled
    (spelling.py): "compiled", "host" (NumPy's, in uncompiled code) or "fast" (math="fast")."""

    fn: str
    args: tuple[Expr, ...]
    dtype: str
    tier: str = "compiled"


@dataclass(frozen=True)
class Compare:
    """`left op right` (op of loop_code.COMPARISONS) over two values of `dtype`: a bool."""

    op: str
    left: Expr
    right: Expr
    dtype: str


@dataclass(frozen=True)
class Select:
    """`a` where `test` holds, else `b`: a value of `dtype` (not an array's: `Pick` is)."""

    test: Compare
    a: Expr
    b: Expr
    dtype: str


Expr = Var | Num | Sub | View | Pick | Call | Fmt | Op | Compare | Select

#: Vector-maths calls of executor/numba/vmath.py (emitter: they ask for wider vectors).
VECTOR_MATHS = ("K.exp(", "K.log(", "K.tanh(")


def number(value: float, dtype: str) -> Num:
    """A float as a literal of `dtype` (inf and nan included): `number(0.5, "float32")`."""
    value = float(value)
    if math.isnan(value):
        return Num("np.nan", dtype)
    if math.isinf(value):
        return Num("np.inf" if value > 0 else "(-np.inf)", dtype)
    return Num(repr(value), dtype)


def whole(value: int) -> Num:
    """An int64 literal (a size, a count, a loop's or an error's number): `whole(3)`."""
    return Num(str(value), "int64")


def other(text: str) -> Num:
    """What is no number: `:`, a string literal, a constant of np or K."""
    return Num(text, OTHER)


@lru_cache(maxsize=4096)  # (templates repeat: the verifier reads each of every function)
def floats(text: str) -> tuple[tuple[int, int, float], ...]:
    """The float literals standing alone in `text` (Python source, or a template with `{}`
    fields): each one's start, end and value, read by Python's own tokenizer. `np.inf` and
    `np.nan` count; a sign is an operator, not part of the literal."""
    tokens: list[tokenize.TokenInfo] = []
    try:  # (a template may be part of an expression: `(` + … without its `)`)
        tokens.extend(tokenize.generate_tokens(io.StringIO(text).readline))
    except tokenize.TokenError:
        pass
    found = []
    for k, token in enumerate(tokens):
        if token.type == tokenize.NUMBER and _is_float(token.string):
            found.append((token.start[1], token.end[1], float(token.string)))
        elif (token.string in ("inf", "nan") and k >= 2 and tokens[k - 1].string == "."
              and tokens[k - 2].string == "np"):
            found.append((tokens[k - 2].start[1], token.end[1], float(token.string)))
    return tuple(found)


def _is_float(literal: str) -> bool:
    lowered = literal.lower()
    return not lowered.startswith("0x") and ("." in lowered or "e" in lowered)


def fmt(template: str, *args: Expr) -> Fmt:
    return Fmt(template, args)


def call(fn: str, *args: Expr) -> Call:
    return Call(fn, args)


def sizes(dims) -> Fmt:
    """A shape tuple as the generator writes it: `(n1, n2, )`."""
    return Fmt("(" + "{}, " * len(dims) + ")", tuple(dims))


def product(dims) -> Expr:
    """`n1 * n2 * …` (1 for none)."""
    if not dims:
        return whole(1)
    return dims[0] if len(dims) == 1 else Fmt(" * ".join("{}" for _ in dims), tuple(dims))


def kids(expr: Expr) -> tuple[Expr, ...]:
    kind = type(expr)
    if kind is Var or kind is Num:
        return ()
    if kind is Sub:
        return (expr.base, *expr.index)  # type: ignore[union-attr]
    if kind is View:
        return (expr.base, *expr.args)  # type: ignore[union-attr]
    if kind is Pick:
        return (expr.a, expr.test, expr.b)  # type: ignore[union-attr]
    if kind is Compare:
        return (expr.left, expr.right)  # type: ignore[union-attr]
    if kind is Select:
        return (expr.test, expr.a, expr.b)  # type: ignore[union-attr]
    return expr.args  # type: ignore[union-attr]


def walk(expr: Expr) -> Iterator[Expr]:
    """`expr` and every expression inside it."""
    stack = [expr]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(kids(node)))


def names(expr: Expr) -> set[str]:
    """The locals `expr` reads."""
    return {n.name for n in walk(expr) if isinstance(n, Var)}


def aliases(expr: Expr) -> set[str]:
    """The locals whose memory `expr`'s value may share (none for a computed value)."""
    match expr:
        case Var(name=name):
            return {name}
        case Sub(base=base) | View(base=base):
            return aliases(base)
        case Pick(a=a, b=b):
            return aliases(a) | aliases(b)
    return set()


def called(node: Expr) -> str | None:
    """The function a Call or an Op calls, as printed (`K.exp`, `np.sqrt`), if it calls one."""
    if isinstance(node, Call):
        return node.fn
    if isinstance(node, Op):
        form, name = spelling.spelled(node.fn, node.tier)
        return name if form == spelling.CALL else None
    return None


def kernel_calls(expr: Expr, but: str = "") -> int:
    """How many calls of hilbert's kernels (K.…) `expr` makes, not counting `but`'s."""
    count = 0
    for node in walk(expr):
        fn = called(node)
        if fn is not None:
            count += fn.startswith("K.") and fn != but
        elif isinstance(node, Fmt):
            count += node.template.count("K.") - (node.template.count(but + "(") if but else 0)
    return count


def calls_vector_maths(expr: Expr) -> bool:
    return any(f"{called(n)}(" in VECTOR_MATHS
               or isinstance(n, Fmt) and any(f in n.template for f in VECTOR_MATHS)
               for n in walk(expr))


# ------------------------------------------------------------------------------ statements


@dataclass(frozen=True)
class Assign:
    """`t1, t2 = e1, e2` (one target: `t = e`)."""

    targets: tuple[str, ...]
    values: tuple[Expr, ...]


@dataclass(frozen=True)
class Update:
    """`name += value` (`op`: "+=" or "-=")."""

    name: str
    op: str
    value: Expr


@dataclass(frozen=True)
class Store:
    """`target[index] = value`, or `+=` when `add`."""

    target: Sub
    value: Expr
    add: bool = False


@dataclass(frozen=True)
class Do:
    """An expression run for its effect: a kernel call, `b.fill(0.0)`."""

    expr: Expr


@dataclass(frozen=True)
class For:
    """`for index in range(size):` (prange when `parallel`). `kernels`: the outer loop of the
    fused nests these units of the schedule are (one; more once rows.py has run consecutive
    ones as one loop), none for any other loop."""

    index: str
    size: Expr
    body: list = field(default_factory=list, hash=False)
    parallel: bool = False
    kernels: tuple[int, ...] = ()


@dataclass(frozen=True)
class If:
    test: Expr
    body: list = field(default_factory=list, hash=False)
    orelse: list = field(default_factory=list, hash=False)  # (none: no else)


@dataclass(frozen=True)
class While:
    """`while True:`."""

    body: list = field(default_factory=list, hash=False)


@dataclass(frozen=True)
class Break:
    pass


@dataclass(frozen=True)
class Raise:
    error: Expr


@dataclass(frozen=True)
class Return:
    value: Expr


@dataclass(frozen=True)
class Delete:
    names: tuple[str, ...]


Stmt = Assign | Update | Store | Do | For | If | While | Break | Raise | Return | Delete


def blocks(stmt: Stmt) -> list[list]:
    """The statement lists directly inside `stmt`."""
    match stmt:
        case For(body=body) | While(body=body):
            return [body]
        case If(body=body, orelse=orelse):
            return [body, orelse] if orelse else [body]
    return []


def exprs(stmt: Stmt) -> tuple[Expr, ...]:
    """The expressions `stmt` itself holds (not those of the statements inside it)."""
    match stmt:
        case Assign(values=values):
            return values
        case Update(value=value) | Do(expr=value) | Raise(error=value) | Return(value=value):
            return (value,)
        case Store(target=target, value=value):
            return (target, value)
        case For(size=size):
            return (size,)
        case If(test=test):
            return (test,)
    return ()


def statements(body: list) -> list[Stmt]:
    """Every statement of `body`, those inside loops and branches included, in order."""
    found: list[Stmt] = []
    for stmt in body:
        found.append(stmt)
        if isinstance(stmt, (For, While)):
            found.extend(statements(stmt.body))
        elif isinstance(stmt, If):
            found.extend(statements(stmt.body))
            found.extend(statements(stmt.orelse))
    return found


def _count_names(expr: Expr, found: Counter) -> None:
    if isinstance(expr, Var):
        found[expr.name] += 1
    elif not isinstance(expr, Num):
        for kid in kids(expr):
            _count_names(kid, found)


def mentions(body: list) -> Counter:
    """How many times each local is named in `body` (read, assigned, looped over or deleted)."""
    found: Counter = Counter()
    for stmt in statements(body):
        match stmt:
            case Assign(targets=targets) | Delete(names=targets):
                found.update(targets)
            case Update(name=name) | For(index=name):
                found[name] += 1
        for expr in exprs(stmt):
            _count_names(expr, found)
    return found


def assigned(stmt: Stmt) -> str | None:
    """The one local `stmt` sets as a whole (`x = …`, `x += …`, `for x in …`), if any."""
    match stmt:
        case Assign(targets=(name,)) | Update(name=name) | For(index=name):
            return name
    return None
