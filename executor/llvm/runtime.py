"""What generated code calls, as LLVM IR: the shared kernels of executor/numba/kernels.py
(and kernels32.py for float32 code) and NumPy's functions on one number, each made to give
the numba path's result: LLVM's own intrinsics where Numba uses them (fmax and fmin are
llvm.maximum and llvm.minimum, sqrt, floor and abs LLVM's), maths.py's and maths32.py's
ports of the vector maths (float64's and float32's, exact and math="fast"), the division
kernels of vmath.py operation for operation, and C's pow, cos, sin, tan and (float64 code's)
erf where Numba calls them (LLVM's pow, cos and sin are C's); the depth of a pairwise sum's
stack (pairwise.py writes its pushes). Memory comes from the C library's malloc and goes back
with its free (call.py frees what a call returns)."""

from __future__ import annotations

from llvmlite import ir

from ..numba import vmath_constants as vmath
from . import complex as cplx
from . import maths, maths32
from .types import COMPLEX_CALLS, Type
from .unsupported import Unsupported

DOUBLE, FLOAT, I64, I1 = ir.DoubleType(), ir.FloatType(), ir.IntType(64), ir.IntType(1)
I8P = ir.IntType(8).as_pointer()
#: Each scalar type's LLVM type (a complex number's: its two parts, complex.py).
LLVM = {"float64": DOUBLE, "float32": FLOAT, "int64": I64, "bool": I1, **cplx.TYPES}


def _declared(module: ir.Module, name: str, kind: ir.FunctionType) -> ir.Function:
    found = module.globals.get(name)
    return found if found is not None else ir.Function(module, kind, name)


def allocate(builder: ir.IRBuilder, size) -> ir.Value:
    """`size` bytes from malloc (at least one: malloc(0) may answer NULL)."""
    malloc = _declared(builder.module, "malloc", ir.FunctionType(I8P, [I64]))
    one = ir.Constant(I64, 1)
    return builder.call(malloc, [builder.select(builder.icmp_signed("<", size, one), one, size)])


def release(builder: ir.IRBuilder, data: ir.Value) -> None:
    free = _declared(builder.module, "free", ir.FunctionType(ir.VoidType(), [I8P]))
    builder.call(free, [data])


def call(lowering, fn: str, args: list[tuple[ir.Value, Type]], result: Type) -> ir.Value:
    """The value of `fn(args)` (each argument with its type), of type `result` (types.call_type
    decided it)."""
    b, cast = lowering.builder, lowering.cast
    if any(t in cplx.PARTS for _, t in args):  # (types.COMPLEX_CALLS, and sums' adds)
        if fn in ("np.complex128", "np.complex64"):
            return cast(*args[0], result)
        if fn == "K.add_any_order":  # (each part's sum reassociated, as a real one's)
            x, y = (cplx.parts(b, cast(v, t, result)) for v, t in args)
            return cplx.made(b, *(b.fadd(p, q, flags=("reassoc",))
                                  for p, q in zip(x, y, strict=True)), result)
        return cplx.unary(b, COMPLEX_CALLS[fn], *args[0])[0]
    if fn in ("np.conj", "np.real", "np.imag"):  # (of a real number: itself, or 0)
        value = cast(*args[0], result)
        return ir.Constant(LLVM[result], 0.0) if fn == "np.imag" else value
    if lowering.code == "float32" and fn in maths32.FUNCTIONS:  # (kernels32's: vmath32's)
        return b.call(maths32.function(b.module, fn, args[0][1]), [args[0][0]])
    m = maths.Code(b)
    numbers = [cast(v, t, result if fn in _OWN else "float64") for v, t in args]
    match fn:
        case "K.fmax" | "K.fmin":
            width = "f32" if result == "float32" else "f64"
            return m.intrinsic(f"llvm.{'maximum' if fn == 'K.fmax' else 'minimum'}.{width}",
                               *numbers)
        case "K.exp" | "K.log" | "K.tanh" | "K.exp_fast" | "K.tanh_fast":
            value = b.call(maths.function(b.module, fn), [cast(*args[0], "float64")])
            return cast(value, "float64", result)
        case "K.power":
            return cast(_power(m, *numbers), "float64", result)
        case "K.erf" | "np.cos" | "np.sin" | "np.tan":
            return _c_maths(m, fn, numbers[0], result)
        case "K.levels":  # (pairwise.levels: 1 and the count's length in bits)
            count = numbers[0]
            bits = b.sub(m.w(64), m.intrinsic("llvm.ctlz.i64", count, ir.Constant(I1, 0)))
            return b.select(b.icmp_signed(">", count, m.w(0)), b.add(bits, m.w(1)), m.w(1))
        case "K.add_any_order":
            return b.fadd(*numbers, flags=("reassoc",))
        case "K.quotient":
            return _quotient(m, *numbers)
        case "K.quotient_unsafe":
            return _quotient_unsafe(m, *numbers)
        case "K.divisor_unsafe":
            size = m.intrinsic("llvm.fabs.f64", numbers[0])
            inside = b.and_(b.fcmp_ordered(">=", size, m.c(vmath.DIVISOR_LOW)),
                            b.fcmp_ordered("<=", size, m.c(vmath.DIVISOR_HIGH)))
            return b.select(inside, m.w(0), m.w(1))
        case "np.float64" | "np.float32" | "float" | "int" | "np.complex128" | "np.complex64":
            return cast(*args[0], result)
        case "np.sqrt" | "np.floor":
            width = "f32" if result == "float32" else "f64"
            return m.intrinsic(f"llvm.{fn[3:]}.{width}", cast(*args[0], result))
        case "min" | "max":  # (Python's: the first unless the second is below, or above)
            x, y = numbers
            return b.select(b.icmp_signed("<" if fn == "min" else ">", y, x), y, x)
        case "np.abs" | "abs":
            value = cast(*args[0], result)
            if result == "int64":
                return b.select(b.icmp_signed("<", value, m.w(0)), b.neg(value), value)
            return m.intrinsic(f"llvm.fabs.{'f32' if result == 'float32' else 'f64'}", value)
    raise Unsupported(f"a call of {fn}")


#: The calls whose arguments are taken in their result's type (the others' in float64).
_OWN = ("K.fmax", "K.fmin", "np.float64", "np.float32", "float", "int", "np.sqrt", "np.floor",
        "np.abs", "abs", "np.cos", "np.sin", "np.tan", "min", "max", "np.complex128",
        "np.complex64", "K.levels")


def _c_maths(m: maths.Code, fn: str, x: ir.Value, result: str) -> ir.Value:
    """C's erf (as Numba calls it for math.erf), cos and sin (LLVM's intrinsics, C's), and tan
    (C's tan or tanf, as Numba calls them: LLVM has no tan of its own) of `x`, in `result`."""
    b, width = m.b, "f32" if result == "float32" else "f64"
    if fn in ("np.cos", "np.sin"):
        return m.intrinsic(f"llvm.{fn[3:]}.{width}", x)
    name = "erf" if fn == "K.erf" else "tanf" if result == "float32" else "tan"
    kind = LLVM["float64" if fn == "K.erf" else result]
    return b.call(_declared(b.module, name, ir.FunctionType(kind, [kind])), [x])


def _power(m: maths.Code, x, y):
    """kernels.power: x·x, √x and 1/x for the exponents 2, ½ and −1 (NumPy's own ways), else
    LLVM's pow (Numba's np.power: C's pow)."""
    general = m.intrinsic("llvm.pow.f64", x, y)
    made = m.pick(m.eq(y, -1.0), m.div(1.0, x), general)
    made = m.pick(m.eq(y, 0.5), m.intrinsic("llvm.sqrt.f64", x), made)
    return m.pick(m.eq(y, 2.0), m.mul(x, x), made)


def _quotient(m: maths.Code, a, d, y):
    """vmath.quotient: a/d from y = 1/d by Markstein's correction."""
    q = m.mul(a, y)
    r = m.fma(m.neg(q), d, a)
    return m.pick(m.eq(r, 0.0), q, m.fma(r, y, q))


def _quotient_unsafe(m: maths.Code, a, q):
    """vmath.quotient_unsafe: 1 where the quotient may not be a/d, else 0."""
    b = m.b
    low, high = vmath.QUOTIENT_EXPONENTS
    exponent = b.and_(b.ashr(m.bits(q), m.w(52)), m.w(0x7FF))
    inside = b.icmp_unsigned("<=", b.sub(exponent, m.w(low)), m.w(high - low))
    zero = b.icmp_signed("==", b.shl(m.bits(a), m.w(1)), m.w(0))
    return b.select(b.or_(inside, zero), m.w(0), m.w(1))
