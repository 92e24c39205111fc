"""An entrywise op's lowering in generated loops, as data: the op table's `code` column.

A lowering is a small expression over the op's arguments (`Arg(k)`), constants (`Const`, a
number of the code's dtype: float32 code's constants are float32), functions of a closed set
(`Apply`, FUNCTIONS: arithmetic and the maths functions) and a choice between two values by
a comparison (`Select` of a `Compare`). It says what the op computes, for code of any float
dtype, and nothing of how a back end spells it: the code generator (executor/codegen) turns
it into loop-IR nodes typed by the code's dtype and spells each function per tier (compiled,
host, fast maths), and a back end that writes machine code reads the same names.

Typing rules (checked by the loop-IR verifier): every function of FUNCTIONS takes arguments
of one float dtype and gives that dtype; a comparison takes two of one dtype and gives a
bool; a choice takes a bool and two values of one dtype and gives that dtype.
"""

from __future__ import annotations

from dataclasses import dataclass

#: The functions a lowering applies, by arity: arithmetic (add … neg, `real`: a real value's
#: real part, itself; conj, re and im: a complex value's conjugate and parts, COMPLEX_CODE),
#: and maths functions (exp, log, … erf; fmax and fmin: IEEE maximum and minimum, the other
#: argument where one is NaN in compiled code, as NumPy's fmax).
FUNCTIONS: dict[str, int] = {
    "add": 2, "sub": 2, "mul": 2, "div": 2, "mod": 2, "floordiv": 2, "pow": 2,
    "fmax": 2, "fmin": 2, "neg": 1, "real": 1, "conj": 1, "re": 1, "im": 1,
    "exp": 1, "log": 1, "sqrt": 1, "tanh": 1, "sin": 1, "cos": 1, "tan": 1, "abs": 1,
    "floor": 1, "erf": 1,
}
#: The functions compiled code calls as kernels (vector maths and LLVM's maximum and minimum),
#: where the rest are arithmetic written inline or a libm call LLVM expands: what a nest's
#: work per entry counts as calls (compiler/plan/threads.py). executor/codegen/spelling.py
#: spells exactly these as `K.…` (tests/test_op_table.py checks it).
KERNELS = frozenset({"pow", "fmax", "fmin", "exp", "log", "tanh", "erf"})
#: The comparisons a `Compare` makes (Python's and C's spelling alike).
COMPARISONS = ("==", "!=", "<", ">", "<=", ">=")


@dataclass(frozen=True, slots=True)
class Arg:
    """The op's argument `position`, of the code's dtype."""

    position: int


@dataclass(frozen=True, slots=True)
class Const:
    """A number, of the code's dtype."""

    value: float


@dataclass(frozen=True, slots=True)
class Apply:
    """`fn(args…)`, fn one of FUNCTIONS."""

    fn: str
    args: tuple[Form, ...]


@dataclass(frozen=True, slots=True)
class Compare:
    """`left op right` (op one of COMPARISONS): a bool."""

    op: str
    left: Form
    right: Form


@dataclass(frozen=True, slots=True)
class Select:
    """`then` where `test` holds, else `otherwise`."""

    test: Compare
    then: Form
    otherwise: Form


Form = Arg | Const | Apply | Select


def unary(fn: str) -> Apply:
    """fn of the op's one argument: `unary("exp")`."""
    return Apply(fn, (Arg(0),))


def binary(fn: str) -> Apply:
    """fn of the op's two arguments in order: `binary("mul")`."""
    return Apply(fn, (Arg(0), Arg(1)))


def marks(op: str) -> Select:
    """1 where the comparison `op` of the op's two arguments holds, else 0."""
    return Select(Compare(op, Arg(0), Arg(1)), Const(1.0), Const(0.0))


def parts(form: Form | Compare) -> tuple[Form | Compare, ...]:
    """The forms directly inside `form`."""
    match form:
        case Apply(args=args):
            return args
        case Compare(left=left, right=right):
            return (left, right)
        case Select(test=test, then=then, otherwise=otherwise):
            return (test, then, otherwise)
    return ()


def kernel_calls(form: Form | Compare) -> int:
    """How many calls of KERNELS `form` makes.

    >>> kernel_calls(Apply("mul", (unary("exp"), unary("tanh"))))
    2
    """
    own = isinstance(form, Apply) and form.fn in KERNELS
    return own + sum(kernel_calls(part) for part in parts(form))


def read(form: Form | Compare) -> set[int]:
    """The argument positions `form` reads."""
    if isinstance(form, Arg):
        return {form.position}
    return set().union(*(read(part) for part in parts(form)))


def well_formed(form: Form | Compare) -> bool:
    """Whether every function of `form` is one of FUNCTIONS, applied to as many arguments as
    it takes, and every comparison one of COMPARISONS."""
    match form:
        case Apply(fn=fn, args=args) if FUNCTIONS.get(fn) != len(args):
            return False
        case Compare(op=op) if op not in COMPARISONS:
            return False
        case Const(value=value) if not isinstance(value, float):
            return False
    return all(well_formed(part) for part in parts(form))


#: What conj, re and im compute in complex code: the op table's rows give their real meaning
#: (the value, the value, 0: compiler/ops/primitives.py), which complex code replaces.
COMPLEX_CODE: dict[str, Form] = {op: unary(op) for op in ("conj", "re", "im")}
