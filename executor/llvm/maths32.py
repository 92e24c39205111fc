"""Float32 code's exp, log, tanh and erf as LLVM functions: executor/numba/vmath32.py's maths
step for step, with each value typed as Numba types it, so that they give its results to the
bit, for a float32 argument and for a float64 one alike.

vmath32's functions are generic Python that Numba compiles for the argument's type: given a
float64 (a float64 sum in float32 code, whose log a log-sum-exp takes), some of their steps
run in float64 (a comparison with x, `abs(x)`, `a * a`) and others in float32 (every `fma`
and bit cast converts its arguments), and a choice of a float32 and a float64 value is a
float64. `Real` and `Num` below carry Numba's types and unify them as it does (float32 with
float64 is float64, an integer with a float32 is float64, integers are int64), so one port
gives both. Straight-line code with selects and no calls: inlined into a loop, LLVM runs it
in vector lanes (16 float32 entries at a time with AVX-512), as it does Numba's.

math="fast" asks for the same functions in float32 code (kernels32.exp_fast is vmath32.exp)."""

from __future__ import annotations

import numpy as np
from llvmlite import ir

from ..numba import vmath32_constants as V
from .maths import Code
from .unsupported import Unsupported

FLOAT, DOUBLE, I32, I64 = ir.FloatType(), ir.DoubleType(), ir.IntType(32), ir.IntType(64)
#: Each Numba type's LLVM type (int32: a bit cast's; arithmetic on it is int64's, as Numba's).
LLVM = {"float32": FLOAT, "float64": DOUBLE, "int32": I32, "int64": I64}
INTEGERS = ("int32", "int64")


def unified(a: str, b: str) -> str:
    """The type Numba gives an operation on (or a choice of) numbers of types `a` and `b`."""
    if a in INTEGERS and b in INTEGERS:
        return "int64"
    return "float32" if a == b == "float32" else "float64"


class Num:
    """An LLVM value of a Numba type, with Python's operators as Numba compiles them."""

    __array_ufunc__ = None  # (a NumPy float32 on the left leaves the operator to these)

    def __init__(self, m: Real, value: ir.Value, t: str):
        self.m, self.v, self.t = m, value, t

    def _both(self, other) -> tuple[Num, Num, str]:
        other = self.m.lift(other)
        t = unified(self.t, other.t)
        return self.m.cast(self, t), self.m.cast(other, t), t

    def _arith(self, other, real: str, whole: str | None = None, swap: bool = False) -> Num:
        a, b, t = self._both(other)
        a, b = (b, a) if swap else (a, b)
        if t in INTEGERS:
            if whole is None:
                raise Unsupported(f"{real} of whole numbers in float32 maths")
            return Num(self.m, getattr(self.m.b, whole)(a, b), t)
        return Num(self.m, getattr(self.m.b, real)(a, b), t)

    def __add__(self, o): return self._arith(o, "fadd", "add")
    def __radd__(self, o): return self._arith(o, "fadd", "add", swap=True)
    def __sub__(self, o): return self._arith(o, "fsub", "sub")
    def __rsub__(self, o): return self._arith(o, "fsub", "sub", swap=True)
    def __mul__(self, o): return self._arith(o, "fmul", "mul")
    def __rmul__(self, o): return self._arith(o, "fmul", "mul", swap=True)
    def __truediv__(self, o): return self._arith(o, "fdiv")
    def __rtruediv__(self, o): return self._arith(o, "fdiv", swap=True)
    def __and__(self, o): return self._arith(o, "", "and_")
    def __or__(self, o): return self._arith(o, "", "or_")
    def __lshift__(self, o): return self._arith(o, "", "shl")
    def __rshift__(self, o): return self._arith(o, "", "ashr")  # (signed: arithmetic)

    def __neg__(self):
        return Num(self.m, self.m.b.fneg(self.v), self.t)

    def _compare(self, op: str, other) -> ir.Value:
        a, b, t = self._both(other)
        if t in INTEGERS:
            return self.m.b.icmp_signed(op, a, b)
        return self.m.b.fcmp_ordered(op, a, b)  # (False where either is NaN, as Python's)

    def __lt__(self, o): return self._compare("<", o)
    def __gt__(self, o): return self._compare(">", o)
    def __eq__(self, o): return self._compare("==", o)  # type: ignore[override]

    __hash__ = None  # type: ignore[assignment]


class Real:
    """vmath32's building blocks (its constants typed as Numba types them: NumPy float32s are
    float32, Python floats float64, Python ints int64) written into one basic block."""

    def __init__(self, builder: ir.IRBuilder):
        self.b = builder
        self.code = Code(builder)  # (its intrinsic calls)

    def lift(self, x) -> Num:
        if isinstance(x, Num):
            return x
        if isinstance(x, np.float32):
            return Num(self, ir.Constant(FLOAT, float(x)), "float32")
        if isinstance(x, (int, np.integer)):
            return Num(self, ir.Constant(I64, int(x)), "int64")
        return Num(self, ir.Constant(DOUBLE, float(x)), "float64")

    def cast(self, x: Num, t: str) -> ir.Value:
        """x's value as type `t` (Numba's conversions: the ones vmath32 makes)."""
        b, have = self.b, x.t
        if have == t:
            return x.v
        if have in INTEGERS and t in INTEGERS:
            return b.sext(x.v, LLVM[t]) if t == "int64" else b.trunc(x.v, LLVM[t])
        if have in INTEGERS:
            return b.sitofp(x.v, LLVM[t])
        if t in INTEGERS:
            raise Unsupported("a float made whole in float32 maths")
        return b.fpext(x.v, DOUBLE) if t == "float64" else b.fptrunc(x.v, FLOAT)

    def as_type(self, x, t: str) -> Num:
        return Num(self, self.cast(self.lift(x), t), t)

    def pick(self, test: ir.Value, a, b) -> Num:
        """`a if test else b`, of the two sides' unified type."""
        a, b = self.lift(a), self.lift(b)
        t = unified(a.t, b.t)
        return Num(self, self.b.select(test, self.cast(a, t), self.cast(b, t)), t)

    def fma(self, a, b, c) -> Num:
        """vmath32.fma: its arguments made float32, a·b + c rounded once."""
        values = [self.cast(self.lift(v), "float32") for v in (a, b, c)]
        return Num(self, self.code.intrinsic("llvm.fma.f32", *values), "float32")

    def abs(self, x: Num) -> Num:
        return Num(self, self.code.intrinsic(f"llvm.fabs.f{32 if x.t == 'float32' else 64}",
                                             x.v), x.t)

    def bits_of(self, x: Num) -> Num:
        """vmath32.bits_of: x made float32, its bits as an int32."""
        return Num(self, self.b.bitcast(self.cast(x, "float32"), I32), "int32")

    def float_of(self, bits: Num) -> Num:
        """vmath32.float_of: the float32 whose bits are bits' low 32."""
        return Num(self, self.b.bitcast(self.cast(bits, "int32"), FLOAT), "float32")


def _power_of_two(m: Real, k: Num) -> Num:
    return m.float_of((k + 127) << 23)


def _polynomial(m: Real, x: Num, coefficients: tuple) -> Num:
    """Horner's rule in vmath32's order: fma(x, c[n], c[n−1]), then fma(x, p, c[i]) down."""
    p = m.fma(x, coefficients[-1], coefficients[-2])
    for c in reversed(coefficients[:-2]):
        p = m.fma(x, p, c)
    return p


def _exp_parts(m: Real, x: Num) -> tuple[Num, Num]:
    """vmath32._exp_parts: (p, k) with e^x ≈ (1 + p)·2^k."""
    shifted = m.fma(x, V.LOG2_E, V.SHIFTER)
    kf = shifted - V.SHIFTER
    r = m.fma(-kf, V.EXP_LN2_LO, m.fma(-kf, V.EXP_LN2_HI, x))
    r2 = r * r
    q = _polynomial(m, r, V._Q)
    return m.fma(r2, q, r), m.bits_of(shifted) - V.SHIFTER_BITS


def _scaled(m: Real, p: Num, k: Num) -> Num:
    """(1 + p)·2^k in two factors (vmath32.exp's and _erf's last step)."""
    half = k >> 1
    return (V.ONE + p) * _power_of_two(m, half) * _power_of_two(m, k - half)


def exp(m: Real, x: Num) -> Num:
    """vmath32.exp."""
    zero = x < V.EXP_ZERO
    clamped = m.pick(x < V.EXP_ABOVE, x, V.EXP_ABOVE)
    clamped = m.pick(zero, V.ZERO, clamped)
    p, k = _exp_parts(m, clamped)
    y = m.pick(zero, V.ZERO, _scaled(m, p, k))
    return m.pick(x == x, y, x)


def log(m: Real, x: Num) -> Num:
    """vmath32.log."""
    tiny = x < V.TINY
    scaled = m.pick(tiny, x * V.TWO_24, x)
    bits = m.bits_of(scaled)
    k = (bits - V.SQRT_HALF_BITS) >> 23
    f = m.float_of(bits - (k << 23)) - V.ONE
    kf = m.as_type(k, "float32") - m.pick(tiny, np.float32(24.0), V.ZERO)
    r = _polynomial(m, f, V._R)
    f2 = f * f
    low = m.fma(f2 * f, r, m.fma(kf, V.LOG_LN2_LO, m.lift(-V.HALF) * f2))
    y = m.fma(kf, V.LOG_LN2_HI, f + low)
    y = m.pick(x == V.ZERO, V.NEG_INF, y)
    y = m.pick(x < V.ZERO, V.NAN, y)
    return m.pick(x < np.inf, y, x)


def _signed(m: Real, t: Num, x: Num) -> Num:
    """t with x's sign, x where x is NaN (the last two lines of vmath32's tanh and _erf)."""
    signed = m.float_of(m.bits_of(t) | (m.bits_of(x) & V.SIGN))
    return m.pick(x == x, signed, x)


def tanh(m: Real, x: Num) -> Num:
    """vmath32.tanh."""
    a = m.abs(x)
    y = a * a
    small = m.fma(a * y, _polynomial(m, y, V._P), a)
    clamped = m.pick(a < V.TANH_ONE, a, V.TANH_ONE)
    e, k = _exp_parts(m, clamped + clamped)
    scale = _power_of_two(m, k)
    big = m.fma(e, scale, scale - V.ONE)
    large = big / (big + V.TWO)
    return _signed(m, m.pick(a < V.TANH_SMALL, small, large), x)


def erf(m: Real, x: Num) -> Num:
    """vmath32._erf."""
    a = m.abs(x)
    y = a * a
    small = m.fma(a, _polynomial(m, y, V._ERF_Q), a)
    b = m.pick(a < V.ERF_ONE, a, V.ERF_ONE)
    b = m.pick(b > V.ERF_SMALL, b, V.ERF_SMALL)
    t = V.ONE / b - V.ERF_MIDDLE
    r = _polynomial(m, t, V._ERF_R)
    hi = b * b
    lo = m.fma(b, b, -hi)
    p, k = _exp_parts(m, -hi)
    e = _scaled(m, p, k)
    large = V.ONE - m.fma(-e, lo, e) * r
    return _signed(m, m.pick(a < V.ERF_SMALL, small, large), x)


#: Each function by the name float32 generated code calls it by (kernels32: math="fast"'s
#: exp_fast and tanh_fast are vmath32's exp and tanh).
FUNCTIONS = {"K.exp": exp, "K.log": log, "K.tanh": tanh, "K.erf": erf,
             "K.exp_fast": exp, "K.tanh_fast": tanh}


def result_type(argument: str) -> str:
    """The type Numba gives vmath32's functions of an `argument` (their last line chooses
    between a float32 and x)."""
    if argument not in LLVM or argument in INTEGERS:
        raise Unsupported(f"float32 code's maths of a {argument}")
    return argument


def function(module: ir.Module, name: str, argument: str) -> ir.Function:
    """Float32 code's function `name` (FUNCTIONS) of an `argument` (float32 or float64) in
    `module`, defined there once, internal and always inlined."""
    made_of = FUNCTIONS[name]
    symbol = f"hb32_{made_of.__name__}_{argument}"
    found = module.globals.get(symbol)
    if found is not None:
        return found
    result = result_type(argument)
    made = ir.Function(module, ir.FunctionType(LLVM[result], [LLVM[argument]]), symbol)
    made.linkage = "internal"
    made.attributes.add("alwaysinline")
    made.attributes.add("nounwind")
    builder = ir.IRBuilder(made.append_basic_block())
    m = Real(builder)
    value = made_of(m, Num(m, made.args[0], argument))
    builder.ret(m.cast(value, result))
    return made
