"""exp, log and tanh in float64 as LLVM functions: executor/numba/vmath.py's exact maths step
for step (the same operations on the same constants in the same order, each fused
multiply-add an llvm.fma), so that they give its results to the bit. Straight-line code with
selects, no calls: inlined into a loop, LLVM vectorises it as it does Numba's.

Float32 code's are vmath32.py's, ported by maths32.py."""

from __future__ import annotations

from llvmlite import ir

from ..numba import vmath_constants as V

DOUBLE, I64, I1 = ir.DoubleType(), ir.IntType(64), ir.IntType(1)


class Code:
    """Float64 arithmetic written with Python's operators into one basic block."""

    def __init__(self, builder: ir.IRBuilder):
        self.b = builder

    def c(self, value: float) -> ir.Constant:
        return ir.Constant(DOUBLE, value)

    def w(self, value: int) -> ir.Constant:
        return ir.Constant(I64, value)

    def _v(self, x):
        return self.c(x) if isinstance(x, float) else x

    def add(self, a, b):
        return self.b.fadd(self._v(a), self._v(b))

    def sub(self, a, b):
        return self.b.fsub(self._v(a), self._v(b))

    def mul(self, a, b):
        return self.b.fmul(self._v(a), self._v(b))

    def div(self, a, b):
        return self.b.fdiv(self._v(a), self._v(b))

    def neg(self, a):
        return self.b.fneg(a)

    def fma(self, a, b, c):
        return self.intrinsic("llvm.fma.f64", a, b, c)

    def intrinsic(self, name: str, *args):
        values = [self._v(a) for a in args]
        kind = ir.FunctionType(values[0].type, [v.type for v in values])
        module = self.b.module
        found = module.globals.get(name) or ir.Function(module, kind, name)
        return self.b.call(found, values)

    def lt(self, a, b):
        return self.b.fcmp_ordered("<", self._v(a), self._v(b))

    def eq(self, a, b):
        return self.b.fcmp_ordered("==", self._v(a), self._v(b))

    def pick(self, test, a, b):
        return self.b.select(test, self._v(a), self._v(b))

    def bits(self, x):
        return self.b.bitcast(x, I64)

    def real(self, bits):
        return self.b.bitcast(bits, DOUBLE)

    def power_of_two(self, k):
        """2^k for −1022 ≤ k ≤ 1023, from its exponent bits."""
        return self.real(self.b.shl(self.b.add(k, self.w(1023)), self.w(52)))


def _q(m: Code, r, r2):
    """vmath._q: Q(r) in Estrin's order."""
    q = V._Q
    r4 = m.mul(r2, r2)
    low = m.fma(r2, m.fma(r, q[3], q[2]), m.fma(r, q[1], q[0]))
    high = m.fma(r2, m.fma(r, q[7], q[6]), m.fma(r, q[5], q[4]))
    return m.fma(r4, m.fma(r4, m.fma(r, q[9], q[8]), high), low)


def _exp_parts(m: Code, x):
    """vmath._exp_parts: (p, c, k) with e^x ≈ (p + c)·2^k."""
    shifted = m.fma(x, V.LOG2_E, V.SHIFTER)
    kf = m.sub(shifted, V.SHIFTER)
    hi = m.fma(m.neg(kf), V.LN2_HI, x)
    lo = m.mul(kf, V.LN2_LO)
    r = m.sub(hi, lo)
    r2 = m.mul(r, r)
    tail = m.mul(r2, m.fma(r, _q(m, r, r2), 0.5))
    s = m.add(1.0, hi)
    c = m.add(m.add(m.sub(1.0, s), hi), m.sub(tail, lo))
    rounded = m.add(s, c)
    k = m.b.sub(m.bits(shifted), m.w(V.SHIFTER_BITS))
    return rounded, m.add(m.sub(s, rounded), c), k


def exp(m: Code, x):
    """vmath.exp."""
    zero = m.lt(x, V.EXP_ZERO)
    clamped = m.pick(m.lt(x, V.EXP_ABOVE), x, V.EXP_ABOVE)
    clamped = m.pick(zero, 0.0, clamped)
    p, _, k = _exp_parts(m, clamped)
    half = m.b.ashr(k, m.w(1))
    y = m.mul(m.mul(p, m.power_of_two(half)), m.power_of_two(m.b.sub(k, half)))
    y = m.pick(zero, 0.0, y)
    return m.pick(m.eq(x, x), y, x)


def log(m: Code, x):
    """vmath.log."""
    tiny = m.lt(x, V.TINY)
    scaled = m.pick(tiny, m.mul(x, 18014398509481984.0), x)
    bits = m.bits(scaled)
    k = m.b.ashr(m.b.sub(bits, m.w(V.SQRT_HALF_BITS)), m.w(52))
    f = m.sub(m.real(m.b.sub(bits, m.b.shl(k, m.w(52)))), 1.0)
    kf = m.sub(m.b.sitofp(k, DOUBLE), m.pick(tiny, 54.0, 0.0))
    s = m.div(f, m.add(2.0, f))
    z = m.mul(s, s)
    g = m.fma(z, V._G[6], V._G[5])
    for coefficient in reversed(V._G[:5]):
        g = m.fma(z, g, coefficient)
    half_square = m.mul(m.mul(0.5, f), f)
    inner = m.add(m.mul(s, m.add(half_square, m.mul(z, g))), m.mul(kf, V.LN2_LO))
    y = m.add(m.mul(kf, V.LN2_HI), m.sub(f, m.sub(half_square, inner)))
    y = m.pick(m.eq(x, 0.0), float("-inf"), y)
    y = m.pick(m.lt(x, 0.0), float("nan"), y)
    return m.pick(m.lt(x, float("inf")), y, x)


def _tanh_small(m: Code, a):
    y = m.mul(a, a)
    p = m.fma(y, V._P[7], V._P[6])
    for coefficient in reversed(V._P[:6]):
        p = m.fma(y, p, coefficient)
    return m.fma(m.mul(a, y), p, a)


def _tanh_large(m: Code, a):
    p, c, k = _exp_parts(m, m.mul(2.0, a))
    scale = m.power_of_two(k)
    big, small = m.mul(p, scale), m.mul(c, scale)
    d = m.add(big, 1.0)
    d_error = m.add(m.sub(1.0, m.sub(d, big)), small)
    q = m.div(2.0, d)
    q_error = m.mul(m.sub(m.fma(m.neg(q), d, 2.0), m.mul(q, d_error)), m.mul(0.5, q))
    u = m.sub(1.0, q)
    u_error = m.sub(m.sub(1.0, u), q)
    return m.add(u, m.sub(u_error, q_error))


def tanh(m: Code, x):
    """vmath.tanh."""
    a = m.intrinsic("llvm.fabs.f64", x)
    clamped = m.pick(m.lt(a, V.TANH_ONE), a, V.TANH_ONE)
    t = m.pick(m.lt(a, V.TANH_SMALL), _tanh_small(m, a), _tanh_large(m, clamped))
    sign = m.b.shl(m.b.ashr(m.bits(x), m.w(63)), m.w(63))
    signed = m.real(m.b.or_(m.bits(t), sign))
    return m.pick(m.eq(x, x), signed, x)


def _expm1_parts(m: Code, x):
    """vmath._expm1_parts: (e^r − 1, k) with e^x = 2^k·e^r (math="fast")."""
    shifted = m.fma(x, V.LOG2_E, V.SHIFTER)
    kf = m.sub(shifted, V.SHIFTER)
    r = m.fma(m.neg(kf), V.LN2_LO, m.fma(m.neg(kf), V.LN2_HI, x))
    r2 = m.mul(r, r)
    expm1 = m.fma(r2, m.fma(r, _q(m, r, r2), 0.5), r)
    return expm1, m.b.sub(m.bits(shifted), m.w(V.SHIFTER_BITS))


def exp_fast(m: Code, x):
    """vmath.exp_fast."""
    zero = m.lt(x, V.EXP_ZERO)
    clamped = m.pick(m.lt(x, V.EXP_ABOVE), x, V.EXP_ABOVE)
    clamped = m.pick(zero, 0.0, clamped)
    e, k = _expm1_parts(m, clamped)
    half = m.b.ashr(k, m.w(1))
    y = m.mul(m.mul(m.add(1.0, e), m.power_of_two(half)), m.power_of_two(m.b.sub(k, half)))
    y = m.pick(zero, 0.0, y)
    return m.pick(m.eq(x, x), y, x)


def tanh_fast(m: Code, x):
    """vmath.tanh_fast."""
    a = m.intrinsic("llvm.fabs.f64", x)
    clamped = m.pick(m.lt(a, V.TANH_ONE), a, V.TANH_ONE)
    e, k = _expm1_parts(m, m.mul(2.0, clamped))
    scale = m.power_of_two(k)
    big = m.fma(e, scale, m.sub(scale, 1.0))
    t = m.div(big, m.add(big, 2.0))
    signed = m.real(m.b.or_(m.bits(t), m.b.shl(m.b.ashr(m.bits(x), m.w(63)), m.w(63))))
    return m.pick(m.eq(x, x), signed, x)


#: Each function by the name generated code calls it by (math="fast": the _fast ones).
FUNCTIONS = {"K.exp": exp, "K.log": log, "K.tanh": tanh, "K.exp_fast": exp_fast,
             "K.tanh_fast": tanh_fast}


def function(module: ir.Module, name: str) -> ir.Function:
    """The float64 function `name` (FUNCTIONS) in `module`, defined there once, internal and
    always inlined (a loop calling it is vectorised only once it is inlined)."""
    symbol = "hb_" + name.split(".")[1]  # (hb_exp_fast: math="fast"'s)
    found = module.globals.get(symbol)
    if found is not None:
        return found
    made = ir.Function(module, ir.FunctionType(DOUBLE, [DOUBLE]), symbol)
    made.linkage = "internal"
    made.attributes.add("alwaysinline")
    made.attributes.add("nounwind")
    builder = ir.IRBuilder(made.append_basic_block())
    builder.ret(FUNCTIONS[name](Code(builder), made.args[0]))
    return made
