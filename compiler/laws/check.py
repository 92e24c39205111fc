"""A law is checked before it is used: both sides evaluated with NumPy, in float64 and in
float32, on random inputs of several magnitudes and on special values, restricted to where the law's `where`
comparisons hold; a law whose sides differ beyond rounding is refused (E120) with a
counterexample, one the check cannot evaluate is refused too (E121)."""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from ...grammar import syntax as s
from ...grammar.errors import CheckError
from ...grammar.printer import print_expr
from ..ops import meanings
from ..ops.primitives import OPERATORS, PRIMITIVES
from .terms import names

#: How far apart the sides may be in each dtype, relative to the larger of them (and at least
#: this much absolutely): rounding in a few operations of the dtype is far below it (float32's
#: unit roundoff is 6e-8, float64's 1e-16), a false law far above.
TOLERANCES = {"float64": 1e-9, "float32": 1e-4}
#: The magnitudes random inputs are drawn at (uniformly in ±m), SAMPLES of each.
MAGNITUDES = (1e-6, 1e-3, 1.0, 1e3, 1e6)
SAMPLES = 64
#: How many inputs each variable takes (SPECIAL drawn 2·SAMPLES times, then each magnitude).
INPUTS = SAMPLES * (len(MAGNITUDES) + 2)
#: Special values, combined at random: zeros, units, halves, π and its half, a tiny number.
SPECIAL = (0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, math.pi, -math.pi, math.pi / 2, 1e-12)
#: Fewer inputs than this inside a law's domain and the check cannot vouch for it.
ENOUGH = 16


class Unevaluable(Exception):
    """A part of a term the check (and constant folding) cannot compute: its message says
    what."""


def evaluate(term, values: dict[str, np.ndarray], dtype: str = "float64"):
    """The term's value from its names' values (NumPy, entrywise, its numbers in `dtype`), or
    Unevaluable."""
    match term:
        case s.Number(value=v):
            return np.dtype(dtype).type(v)
        case s.Name(name=n, module=None) if n in values:
            return values[n]
        case s.Binary(op="^", left=a, right=b):
            return meanings.power(evaluate(a, values, dtype), evaluate(b, values, dtype))
        case s.Binary(op=op, left=a, right=b) | s.Compare(op=op, left=a, right=b):
            function = OPERATORS[op].numpy
            assert function is not None, op
            return (function(evaluate(a, values, dtype), evaluate(b, values, dtype)) * 1.0)
        case s.Negate(operand=a):
            return np.negative(evaluate(a, values, dtype))
        case s.If(cond=c, then=t, orelse=o):
            return np.where(evaluate(c, values, dtype) != 0, evaluate(t, values, dtype), evaluate(o, values, dtype))
        case s.Call(name=n, args=args) if _entrywise(n, len(args)):
            function = PRIMITIVES[n].numpy
            assert function is not None, n
            return function(*(evaluate(a, values, dtype) for a in args))
    raise Unevaluable(_unevaluable(term))


def _entrywise(name: str, count: int) -> bool:
    row = PRIMITIVES.get(name)
    return (row is not None and row.kind in ("unary", "binary") and row.arity == count
            and row.numpy is not None)


def _unevaluable(term) -> str:
    match term:
        case s.Name(name=n):
            return f"{n} has no value"
        case s.Call(name=n):
            return f"{n}(…) is not an entrywise primitive"
        case s.Derivative():
            return "a derivative ∂ has no value of its own"
    return f"{print_expr(term, True)} is not arithmetic on numbers"


def constant(term) -> float | None:
    """The value of a term without names (`7 − 3`), if it has one; else None."""
    try:
        with np.errstate(all="ignore"):
            value = evaluate(term, {})
    except (Unevaluable, RecursionError):  # (a term too deep to compute here: not known)
        return None
    return float(value)


def check_law(law: s.Law) -> None:
    """Requires a parsed law; ensures it holds on its domain wherever the check can see, or
    raises E120 (a counterexample) or E121 (it cannot be checked)."""
    _checked(law)


@lru_cache(maxsize=1024)
def _checked(law: s.Law) -> bool:  # (equal laws, wherever written, are checked once)
    _known_names(law)
    for dtype in TOLERANCES:
        _checked_in(law, dtype)
    return True


def _checked_in(law: s.Law, dtype: str) -> None:
    """The check in one dtype: the inputs rounded to it, every number and operation in it."""
    left, right, values = _sides(law, dtype)
    with np.errstate(all="ignore"):
        keep = np.ones(INPUTS, dtype=bool)
        for condition in law.conditions:
            if isinstance(condition, s.Compare):
                keep &= np.broadcast_to(_value(condition, values, law, dtype) != 0, keep.shape)
        if int(keep.sum()) < ENOUGH:
            raise CheckError("E121", f"law {law.name} cannot be checked: its where conditions "
                             "leave almost no inputs to try it on", law.span)
        l_value = np.broadcast_to(_value(left, values, law, dtype), keep.shape)
        r_value = np.broadcast_to(_value(right, values, law, dtype), keep.shape)
        scale = np.maximum(1.0, np.maximum(np.abs(l_value), np.abs(r_value)))
        agree = ((l_value == r_value) | (np.isnan(l_value) & np.isnan(r_value))
                 | (np.abs(l_value - r_value) <= TOLERANCES[dtype] * scale))
    wrong = np.flatnonzero(keep & ~agree)
    if wrong.size:
        at = int(wrong[0])
        raise CheckError("E120", _counterexample(law, left, right, values, at,
                                                 float(l_value[at]), float(r_value[at]), dtype),
                         law.span)


def _known_names(law: s.Law) -> None:
    """E121 where the right side (or a solved equation) names what the left side does not
    bind: a rewrite would not know what it stands for."""
    bound = names(law.lhs) | (names(law.rhs) if law.solved is not None else set())
    later = names(law.rhs) if law.solved is None else names(law.solved[0]) | names(law.solved[1])
    for condition in law.conditions:
        if isinstance(condition, s.NotIn):
            later |= {condition.name} | names(condition.term)
        else:
            later |= names(condition)
    unknown = sorted(later - bound)
    if unknown:
        raise CheckError("E121", f"law {law.name} names {', '.join(unknown)}, which its left "
                         "side does not: a rewrite would not know what it stands for", law.span)


def _sides(law: s.Law, dtype: str):
    """The two terms to compare and the inputs: a term law's sides; for an equation law
    l = r ⇔ v = e, l and r with v taken to be e (the solved form solves the equation)."""
    values = _inputs(sorted(names(law.lhs) | names(law.rhs)
                            | (names(law.solved[1]) if law.solved else set())), dtype)
    if law.solved is None:
        return law.lhs, law.rhs, values
    target, solution = law.solved
    if not (isinstance(target, s.Name) and target.module is None):
        raise CheckError("E121", f"law {law.name} cannot be checked: its solved equation "
                         "must have one name on its left (as b = c / a)", law.span)
    with np.errstate(all="ignore"):
        values[target.name] = _value(solution, values, law, dtype)
    return law.lhs, law.rhs, values


def _inputs(variables: list[str], dtype: str) -> dict[str, np.ndarray]:
    """Each variable's inputs: 2·SAMPLES draws of SPECIAL, then SAMPLES at each magnitude,
    rounded to `dtype`."""
    rng = np.random.default_rng(52)
    values = {}
    for name in variables:
        drawn = [rng.choice(np.array(SPECIAL), 2 * SAMPLES)]  # (first: the plainest examples)
        drawn += [rng.uniform(-m, m, SAMPLES) for m in MAGNITUDES]
        values[name] = np.concatenate(drawn).astype(dtype)
        assert values[name].size == INPUTS
    return values


def _value(term, values, law: s.Law, dtype: str):
    try:
        return np.asarray(evaluate(term, values, dtype), dtype=dtype)
    except Unevaluable as why:
        raise CheckError("E121", f"law {law.name} cannot be checked: {why}; a law's sides "
                         "are arithmetic and entrywise primitives on its names", law.span) from None


def _counterexample(law: s.Law, left, right, values, at: int, l_value: float,
                    r_value: float, dtype: str) -> str:
    where = ", ".join(f"{n} = {float(v[at])!r}" for n, v in values.items()) or "every input"
    hint = ("" if any(isinstance(c, s.Compare) for c in law.conditions) else
            "; a law true only on part of the numbers says where, as law name = … where x > 0")
    return (f"law {law.name} does not hold in {dtype}: at {where}, {print_expr(left, True)} is "
            f"{l_value!r} but {print_expr(right, True)} is {r_value!r}{hint}")
