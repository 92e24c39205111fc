"""Complex numbers in LLVM IR: a complex128 (complex64) value is the literal structure
{double, double} ({float, float}) of its real and imaginary parts, as NumPy lays out an entry,
so an array of them is a pointer to such structures; a number crosses the C ABI as two words,
its parts' bits (a complex64's in their low halves).

Arithmetic is NumPy's and Numba's, operation for operation: a product (a + bi)(c + di) is
(ac − bd) + (ad + bc)i, rounded after each product (NumPy's scalar loop; its AVX-512 loops
fuse a multiply and an add, so an array's product may differ there by an ulp), and a quotient
is NumPy's Smith-like division (the larger of the divisor's parts divides the smaller, then
one reciprocal multiplies: the same bits as np.divide); the modulus is C's hypot (NumPy's
npy_cabs), and exp, log, sqrt, sin, cos, tan and tanh are the C library's cexp, clog, …,
as NumPy's complex loops (the same bits)."""

from __future__ import annotations

from llvmlite import ir

from .unsupported import Unsupported

#: Each complex dtype's parts' dtype, and its LLVM type.
PARTS = {"complex128": "float64", "complex64": "float32"}
_REAL = {"float64": ir.DoubleType(), "float32": ir.FloatType()}
TYPES = {t: ir.LiteralStructType([_REAL[p], _REAL[p]]) for t, p in PARTS.items()}
#: The C library's modulus of each parts' dtype.
_HYPOT = {"float64": "hypot", "float32": "hypotf"}


def is_complex(t) -> bool:
    return isinstance(t, str) and t in PARTS


def made(b: ir.IRBuilder, re: ir.Value, im: ir.Value, t: str) -> ir.Value:
    """The complex value of `t` with parts `re` and `im` (of its parts' type)."""
    value = b.insert_value(ir.Constant(TYPES[t], ir.Undefined), re, 0)
    return b.insert_value(value, im, 1)


def parts(b: ir.IRBuilder, value: ir.Value) -> tuple[ir.Value, ir.Value]:
    return b.extract_value(value, 0), b.extract_value(value, 1)


def constant(value: complex, t: str) -> ir.Constant:
    real = _REAL[PARTS[t]]
    return ir.Constant(TYPES[t], [ir.Constant(real, value.real), ir.Constant(real, value.imag)])


def cast(b: ir.IRBuilder, real_cast, value: ir.Value, have: str, want: str) -> ir.Value:
    """`value` of type `have` as the complex `want` (`real_cast` converts real numbers); a
    complex value made real is refused (NumPy drops its imaginary part with a warning, Numba
    refuses to compile it)."""
    if not is_complex(want):
        raise Unsupported(f"a {have} made {want}")
    part = PARTS[want]
    if not is_complex(have):
        return made(b, real_cast(value, have, part), ir.Constant(_REAL[part], 0.0), want)
    if have == want:
        return value
    re, im = parts(b, value)
    return made(b, real_cast(re, PARTS[have], part), real_cast(im, PARTS[have], part), want)


def arithmetic(b: ir.IRBuilder, op: str, x: ir.Value, y: ir.Value, t: str) -> ir.Value:
    """`x op y` of two complex values of `t` (op + − * / == !=)."""
    (p, q), (r, s) = parts(b, x), parts(b, y)
    if op in ("+", "-"):
        f = b.fadd if op == "+" else b.fsub
        return made(b, f(p, r), f(q, s), t)
    if op == "*":
        return made(b, b.fsub(b.fmul(p, r), b.fmul(q, s)), b.fadd(b.fmul(p, s), b.fmul(q, r)), t)
    if op == "/":
        return _quotient(b, p, q, r, s, t)
    if op == "==":
        return b.and_(b.fcmp_ordered("==", p, r), b.fcmp_ordered("==", q, s))
    if op == "!=":
        return b.or_(b.fcmp_unordered("!=", p, r), b.fcmp_unordered("!=", q, s))
    raise Unsupported(f"{op} of complex numbers")


def _quotient(b: ir.IRBuilder, p, q, r, s, t: str) -> ir.Value:
    """(p + qi) / (r + si) as NumPy divides: with |r| ≥ |s|, k = s/r, f = 1/(r + s·k), the
    parts (p + q·k)·f and (q − p·k)·f (a zero divisor: each part over |r|, inf or nan); else
    k = r/s, f = 1/(s + r·k), (p·k + q)·f and (q·k − p)·f."""
    real = _REAL[PARTS[t]]
    fabs = b.module.declare_intrinsic("llvm.fabs", [real])
    one, zero = ir.Constant(real, 1.0), ir.Constant(real, 0.0)
    ar, ai = b.call(fabs, [r]), b.call(fabs, [s])
    wide = b.fcmp_ordered(">=", ar, ai)
    # (both sides computed, then chosen: nothing here traps, and LLVM vectorises selects)
    k1 = b.fdiv(s, r)
    f1 = b.fdiv(one, b.fadd(r, b.fmul(s, k1)))
    re1, im1 = b.fmul(b.fadd(p, b.fmul(q, k1)), f1), b.fmul(b.fsub(q, b.fmul(p, k1)), f1)
    nothing = b.and_(b.fcmp_ordered("==", ar, zero), b.fcmp_ordered("==", ai, zero))
    re1, im1 = b.select(nothing, b.fdiv(p, ar), re1), b.select(nothing, b.fdiv(q, ar), im1)
    k2 = b.fdiv(r, s)
    f2 = b.fdiv(one, b.fadd(s, b.fmul(r, k2)))
    re2, im2 = b.fmul(b.fadd(b.fmul(p, k2), q), f2), b.fmul(b.fsub(b.fmul(q, k2), p), f2)
    return made(b, b.select(wide, re1, re2), b.select(wide, im1, im2), t)


def negated(b: ir.IRBuilder, x: ir.Value, t: str) -> ir.Value:
    re, im = parts(b, x)
    return made(b, b.fneg(re), b.fneg(im), t)


def unary(b: ir.IRBuilder, fn: str, x: ir.Value, t: str) -> tuple[ir.Value, str]:
    """(value, type) of conj, re, im or abs of the complex `x` of type `t`."""
    re, im = parts(b, x)
    if fn == "conj":
        return made(b, re, b.fneg(im), t), t
    if fn == "re":
        return re, PARTS[t]
    if fn == "im":
        return im, PARTS[t]
    if fn == "abs":
        real = _REAL[PARTS[t]]
        name = _HYPOT[PARTS[t]]
        hypot = b.module.globals.get(name) or ir.Function(
            b.module, ir.FunctionType(real, [real, real]), name)
        return b.call(hypot, [re, im]), PARTS[t]
    if fn in MATHS:
        return _maths(b, fn, x, t), t
    raise Unsupported(f"{fn} of a complex number")


#: The maths functions of a complex number, each C's (cexp, clog, …; cexpf, … of complex64),
#: which NumPy's complex loops give the same bits as (checked on 3 000 values of each, and
#: in tests/test_llvm_complex.py against the C library called by ctypes).
MATHS = ("exp", "log", "sqrt", "sin", "cos", "tan", "tanh")


def _maths(b: ir.IRBuilder, fn: str, x: ir.Value, t: str) -> ir.Value:
    """C's c<fn> (c<fn>f) of `x`, called as x86-64's C ABI passes a complex number: a double
    complex as two doubles, answered as their pair; a float complex as one vector of two
    floats, in and out (what clang writes for C's declarations). Elsewhere: Unsupported."""
    import llvmlite.binding as llvm

    if not llvm.get_process_triple().startswith("x86_64"):
        raise Unsupported(f"{fn} of a complex number off x86-64 (its C ABI)")
    name = f"c{fn}" if t == "complex128" else f"c{fn}f"
    real = _REAL[PARTS[t]]
    if t == "complex128":
        kind = ir.FunctionType(TYPES[t], [real, real])
    else:
        pair = ir.VectorType(real, 2)
        kind = ir.FunctionType(pair, [pair])
    found = b.module.globals.get(name)
    function = found if found is not None else ir.Function(b.module, kind, name)
    re, im = parts(b, x)
    if t == "complex128":
        return b.call(function, [re, im])
    zero, one = ir.Constant(ir.IntType(32), 0), ir.Constant(ir.IntType(32), 1)
    pair = b.insert_element(b.insert_element(ir.Constant(kind.args[0], ir.Undefined), re, zero),
                            im, one)
    made_ = b.call(function, [pair])
    return made(b, b.extract_element(made_, zero), b.extract_element(made_, one), t)


def to_words(b: ir.IRBuilder, value: ir.Value, t: str, bits) -> list[ir.Value]:
    """The ABI's two words of a complex number (`bits`: scalars.to_bits)."""
    return [bits(b, v, PARTS[t]) for v in parts(b, value)]


def from_words(b: ir.IRBuilder, words: list, t: str, number) -> ir.Value:
    """The complex number of the ABI's two words (`number`: scalars.from_bits)."""
    return made(b, *(number(b, w, PARTS[t]) for w in words), t)

