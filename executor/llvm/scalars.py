"""Numbers in LLVM IR as generated code computes them: literals, the bits the C ABI carries,
and arithmetic and comparisons with Numba's types and NumPy's error model."""

from __future__ import annotations

import math

from llvmlite import ir

from ...compiler.dtypes import FLOAT32_MAX
from ..codegen.loops import Num
from . import complex as cplx
from .runtime import DOUBLE, I1, I64, LLVM, _declared
from .types import BITWISE, COMPARISONS, Type, binary, literal, number, unify
from .unsupported import Unsupported


def constant(num: Num) -> ir.Constant:
    t = literal(num)
    text = num.text.replace(" ", "")
    values = {"np.inf": float("inf"), "(-np.inf)": float("-inf"), "-np.inf": float("-inf"),
              "np.nan": float("nan"), "True": True, "False": False}
    value = values[text] if text in values else (int(text) if t == "int64" else float(text))
    if t in cplx.PARTS:  # (a real number's text, in complex code)
        return cplx.constant(complex(value), t)
    if t == "float32" and math.isfinite(value) and abs(value) > FLOAT32_MAX:
        value = math.copysign(FLOAT32_MAX, value)  # (as precision.literal writes it)
    return ir.Constant(LLVM[t], value)


def words(t: Type) -> int:
    """How many of the ABI's words a number of type `t` takes (a complex one: its parts')."""
    return 2 if t in cplx.PARTS else 1


def from_words(b: ir.IRBuilder, given: list, t: Type) -> ir.Value:
    """A number of type `t` from its words (`words(t)` of them)."""
    if t in cplx.PARTS:
        return cplx.from_words(b, given, t, from_bits)  # type: ignore[arg-type]
    return from_bits(b, given[0], t)


def to_words(b: ir.IRBuilder, value: ir.Value, t: str) -> list:
    """The words of a number of type `t`."""
    if t in cplx.PARTS:
        return cplx.to_words(b, value, t, to_bits)
    return [to_bits(b, value, t)]


def from_bits(b: ir.IRBuilder, bits: ir.Value, t: Type) -> ir.Value:
    if t == "float64":
        return b.bitcast(bits, DOUBLE)
    if t == "float32":
        return b.bitcast(b.trunc(bits, ir.IntType(32)), LLVM[t])
    if t == "bool":
        return b.trunc(bits, I1)
    if t == "int64":
        return bits
    raise Unsupported(f"a parameter of type {t}")


def to_bits(b: ir.IRBuilder, value: ir.Value, t: str) -> ir.Value:
    if t in cplx.PARTS:
        raise Unsupported(f"a {t} in one word")
    if t == "float64":
        return b.bitcast(value, I64)
    if t == "float32":
        return b.zext(b.bitcast(value, ir.IntType(32)), I64)
    if t == "bool":
        return b.zext(value, I64)
    return value


def binary_value(b: ir.IRBuilder, cast, op: str, a: tuple, other: tuple) -> tuple:
    """(value, type) of `a op other` as Numba computes it on numbers (NumPy's error model:
    a float divided by 0 is inf or NaN, an integer divided by 0 is 0)."""
    result = binary(op, a[1], other[1])
    if op in BITWISE.values():
        return (b.and_ if op == "&" else b.or_)(cast(*a, result), cast(*other, result)), result
    common = unify(number(a[1]), number(other[1]))  # (the operands' type)
    if op == "/" and common == "int64":
        common = "float64"
    x, y = cast(*a, common), cast(*other, common)
    if common in cplx.PARTS:
        return cplx.arithmetic(b, op, x, y, common), result
    if op in COMPARISONS.values():
        if common == "int64":
            return b.icmp_signed(op, x, y), "bool"
        compare = b.fcmp_unordered if op == "!=" else b.fcmp_ordered
        return compare(op, x, y), "bool"
    if common == "int64":
        return _integer(b, op, x, y), result
    if op in ("//", "%"):
        return _floored(b, op, x, y), result
    made = {"+": b.fadd, "-": b.fsub, "*": b.fmul, "/": b.fdiv}[op](x, y)
    return made, result


def _floored(b: ir.IRBuilder, op: str, x, y) -> ir.Value:
    """Python's float `x // y` or `x % y` as Numba computes them (CPython's float_divmod:
    the remainder from fmod given the divisor's sign, the quotient from (x − remainder) / y
    snapped to the nearest whole number, a zero keeping the true quotient's sign), in the
    operands' own width; a zero divisor gives x / y and fmod's NaN (NumPy's error model)."""
    t = x.type
    zero, negative_zero, one = ir.Constant(t, 0.0), ir.Constant(t, -0.0), ir.Constant(t, 1.0)
    mod = b.frem(x, y)
    div = b.fdiv(b.fsub(x, mod), y)
    remains = b.fcmp_unordered("!=", mod, zero)  # (nonzero, or NaN)
    below = b.fcmp_ordered("<", y, zero)
    flip = b.and_(remains, b.icmp_unsigned("!=", below, b.fcmp_ordered("<", mod, zero)))
    by_zero = b.fcmp_ordered("==", y, zero)
    if op == "%":
        signed = b.select(remains, b.select(flip, b.fadd(mod, y), mod),
                          b.select(below, negative_zero, zero))
        return b.select(by_zero, b.frem(x, y), signed)
    div = b.select(flip, b.fsub(div, one), div)
    floor = _declared(b.module, f"llvm.floor.{'f32' if t == ir.FloatType() else 'f64'}",
                      ir.FunctionType(t, [t]))
    whole = b.call(floor, [div])
    snapped = b.select(b.fcmp_ordered(">", b.fsub(div, whole), ir.Constant(t, 0.5)),
                       b.fadd(whole, one), whole)
    zero_signed = b.fdiv(b.fmul(b.fmul(div, div), x), y)  # (a zero with the sign of x / y)
    quotient = b.select(b.fcmp_ordered("!=", div, zero), snapped, zero_signed)
    return b.select(by_zero, b.fdiv(x, y), quotient)


def _integer(b: ir.IRBuilder, op: str, x, y) -> ir.Value:
    """Python's integer `x op y` (floor division and remainder, 0 for a zero divisor)."""
    if op in ("+", "-", "*"):
        return {"+": b.add, "-": b.sub, "*": b.mul}[op](x, y)
    zero, one = ir.Constant(I64, 0), ir.Constant(I64, 1)
    nothing = b.icmp_signed("==", y, zero)
    divisor = b.select(nothing, one, y)
    quotient, remainder = b.sdiv(x, divisor), b.srem(x, divisor)
    # (C's truncation moved to Python's floor where the signs differ and something remains)
    off = b.and_(b.icmp_signed("!=", remainder, zero),
                 b.icmp_signed("<", b.xor(remainder, divisor), zero))
    if op == "//":
        made = b.sub(quotient, b.zext(off, I64))
    else:
        made = b.add(remainder, b.select(off, divisor, zero))
    return b.select(nothing, zero, made)


def cast(b: ir.IRBuilder, value: ir.Value, have: Type, want: Type) -> ir.Value:
    """`value` of scalar type `have` as `want` (Numba's conversions)."""
    if have == want:
        return value
    if have in cplx.PARTS or want in cplx.PARTS:
        return cplx.cast(b, lambda v, h, w: cast(b, v, h, w), value, have, want)  # type: ignore[arg-type]
    if want == "bool":
        if have == "int64":
            return b.icmp_signed("!=", value, ir.Constant(I64, 0))
        return b.fcmp_unordered("!=", value, ir.Constant(LLVM[have], 0.0))
    if have == "bool":
        return b.zext(value, I64) if want == "int64" else b.uitofp(value, LLVM[want])
    if have == "int64":
        return b.sitofp(value, LLVM[want])
    if want == "int64":
        return b.fptosi(value, I64)
    return b.fpext(value, DOUBLE) if want == "float64" else b.fptrunc(value, LLVM[want])


def least(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    """The smaller of two int64 values."""
    return b.select(b.icmp_signed("<", x, y), x, y)
