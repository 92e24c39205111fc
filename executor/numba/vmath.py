"""exp, log and tanh as straight-line float arithmetic that LLVM vectorises inside loop nests.

Numba compiles `np.exp(x)` on one number to a call of the C library's `exp`, and LLVM cannot
vectorise a loop that calls a function without a vector maths library. Intel's SVML would be
one, but the llvmlite wheels on PyPI are built without it (`llvmlite.binding.targets.has_svml()`
is False), so installing `intel-cmplr-lib-rt` changes nothing. These functions are written as
arithmetic instead, with no branches (special values are chosen with selects) and no calls,
so once Numba inlines them into a generated loop LLVM runs them in vector lanes: 8 entries
at a time on an AVX-512 CPU in a function that calls `wide_vectors` first (generated code
does when its nests call these), 4 otherwise, as NumPy's ufuncs do:

- exp: x = k·ln 2 + r with |r| ≤ ½ ln 2 (ln 2 split in two so k·ln2_hi is exact),
  e^r = 1 + r + r²·(½ + r·Q(r)), the 1 + r kept exact (Fast2Sum) and rounded once at the end,
  then multiplied by 2^k built from its bits (two factors, so subnormal results round once).
- log: x = 2^k·m with m in [√½, √2) (from the bits; subnormals scaled by 2^54 first),
  f = m − 1, s = f / (2 + f), log m = f − f²/2 + s·(f²/2 + z·G(z)) with z = s², plus k·ln 2.
- tanh: |x| < 0.3: x + x³·P(x²); above: 1 − 2 / (e^{2|x|} + 1) with e^{2|x|} carried as a
  double-double and the division corrected with an FMA, so only the last step rounds.

Q, G and P are near-minimax polynomials: `mpmath.chebyfit` at 60 digits over the reduced
ranges ([−½ ln 2, ½ ln 2] for Q of degree 9, [0, (3 − 2√2)²] for G of degree 6, [0, 0.09] for
P of degree 7, each widened by 0.1%), rounded to float64. Measured against NumPy on this
machine (tests/test_vector_math.py, which allows 2 ulp): within 1 ulp of NumPy everywhere
and about 95% of results equal, within an ulp of the true value; ±0, ±∞, NaN, log of 0 and
of negatives, and the overflow and underflow thresholds give NumPy's values exactly.

A loop that sums what these return (a softmax's row sum, acc += e^x) adds with
`add_any_order`, so LLVM vectorises it whole, a partial sum per lane; added in order, the sum
would keep the loop scalar, exp included. (This module sets no LLVM option: nothing changes for
the rest of the process's Numba code.)

Under NUMBA_DISABLE_JIT=1 (everything run as Python) these names are NumPy's own functions.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
from llvmlite import ir as llvm_ir
from numba import config, njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from . import disk
from .vmath_constants import (
    _G,
    _P,
    _Q,
    DIVISOR_HIGH,
    DIVISOR_LOW,
    EXP_ABOVE,
    EXP_ZERO,
    LN2_HI,
    LN2_LO,
    LOG2_E,
    QUOTIENT_EXPONENTS,
    SHIFTER,
    SHIFTER_BITS,
    SQRT_HALF_BITS,
    TANH_ONE,
    TANH_SMALL,
    TINY,
    WIDE,
)

#: NUMBA_DISABLE_JIT=1: the functions below are NumPy's (intrinsics cannot run as Python).
PYTHON_MODE = bool(getattr(config, "DISABLE_JIT", False))
#: What this module's machine code depends on (part of kernels.STAMP, the cache key).
STAMP = hashlib.sha256(b"".join(Path(__file__).with_name(name).read_bytes() for name in (
    "vmath.py", "vmath_constants.py"))).hexdigest()[:16]


def keeping(stamp: str):
    """A decorator compiling a function as all of hilbert's code is (executor/kernels.jit:
    NumPy's error model, no GIL, no bounds checks), its machine code kept in the private disk
    cache under `stamp` (what that code depends on)."""
    def compiled(function):
        return disk.keep(njit(function, nogil=True, error_model="numpy", boundscheck=False),
                         stamp)
    return compiled


_compiled = keeping(STAMP)

#: Each float type the intrinsics below are made for: its LLVM type, its width in bits.
_FLOATS = {types.float64: (llvm_ir.DoubleType(), 64), types.float32: (llvm_ir.FloatType(), 32)}


def bit_casts(real) -> tuple:
    """(bits_of, float_of) for the float type `real` (types.float64 or float32): the IEEE bits
    of such a float as a signed integer of its width, and the float whose bits are the low
    ones of an integer (bit casts: no conversion)."""
    single, width = _FLOATS[real]
    integer = getattr(types, f"int{width}")

    @intrinsic
    def bits_of(typingctx, x):
        if not isinstance(x, types.Float):
            return None

        def codegen(context, builder, signature, args):
            value = context.cast(builder, args[0], signature.args[0], real)
            return builder.bitcast(value, llvm_ir.IntType(width))

        return integer(x), codegen

    @intrinsic
    def float_of(typingctx, bits):
        if not isinstance(bits, types.Integer):
            return None

        def codegen(context, builder, signature, args):
            value = context.cast(builder, args[0], signature.args[0], integer)
            return builder.bitcast(value, single)

        return real(bits), codegen

    bits_of.__doc__ = f"The IEEE bits of a {real}, as an {integer} (a bit cast)."
    float_of.__doc__ = f"The {real} whose IEEE bits are the low {width} of `bits` (a bit cast)."
    return bits_of, float_of


def fused_multiply_add(real):
    """fma(a, b, c) for the float type `real`: a·b + c rounded once (llvm.fma: one vfmadd
    instruction where the CPU has FMA)."""
    single, width = _FLOATS[real]
    name = f"llvm.fma.f{width}"

    @intrinsic
    def fma(typingctx, a, b, c):
        if not all(isinstance(t, types.Float) for t in (a, b, c)):
            return None

        def codegen(context, builder, signature, args):
            values = [context.cast(builder, v, t, real)
                      for v, t in zip(args, signature.args, strict=True)]
            kind = llvm_ir.FunctionType(single, [single, single, single])
            return builder.call(cgutils.get_or_insert_function(builder.module, kind, name),
                                values)

        return real(a, b, c), codegen

    fma.__doc__ = f"a·b + c in {real}, rounded once ({name})."
    return fma


bits_of, float_of = bit_casts(types.float64)
fma = fused_multiply_add(types.float64)


def _doubles(context, builder, signature, args) -> list:
    """An intrinsic's arguments as LLVM doubles."""
    return [context.cast(builder, v, t, types.float64)
            for v, t in zip(args, signature.args, strict=True)]


def _binary_intrinsic(name: str, doc: str, own: bool = False):
    """An intrinsic calling LLVM's float64 `name` on two numbers; `own`: its float32 twin on
    two float32 numbers (their own precision: a float32 nest's), float64 otherwise."""

    def typer(typingctx, a, b):
        if not all(isinstance(t, (types.Float, types.Integer)) for t in (a, b)):
            return None
        single = own and a == b == types.float32

        def codegen(context, builder, signature, args):
            if single:
                values, number, called = args, llvm_ir.FloatType(), name[:-3] + "f32"
            else:
                values = _doubles(context, builder, signature, args)
                number, called = llvm_ir.DoubleType(), name
            kind = llvm_ir.FunctionType(number, [number, number])
            return builder.call(cgutils.get_or_insert_function(builder.module, kind, called),
                                values)

        return (types.float32 if single else types.float64)(a, b), codegen

    typer.__doc__ = doc
    typer.__name__ = name.split(".")[1]
    return intrinsic(typer)


maximum = _binary_intrinsic("llvm.maximum.f64", """The larger of two numbers, NaN if either is
    NaN as in np.maximum, +0 above −0 (IEEE 754-2019's maximum). LLVM vectorises a loop that
    reduces with it, which it does not for the same rule written as a comparison and a
    select: a row maximum over 2048×2048 entries took 2.5 ms so, 7–15 ms before.""")
minimum = _binary_intrinsic("llvm.minimum.f64", """The smaller of two numbers, NaN if either is
    NaN as in np.minimum, −0 below +0; vectorised as `maximum` is.""")
#: `maximum` and `minimum` in the numbers' own precision: float32 for two float32 numbers,
#: float64 where one is float64 (float32 code's counted values: compiler/counting.py).
maximum_own = _binary_intrinsic("llvm.maximum.f64", maximum.__doc__ or "", own=True)
minimum_own = _binary_intrinsic("llvm.minimum.f64", minimum.__doc__ or "", own=True)


@intrinsic
def add_any_order(typingctx, a, b):
    """a + b, which LLVM may regroup with other such additions (the `reassoc` flag): a loop
    summing with it is vectorised as partial sums, one per lane, combined after the loop
    (the order NumPy's own sums use), instead of a chain in which each addition waits for the
    last (4 cycles an entry)."""
    if not all(isinstance(t, types.Float) for t in (a, b)):
        return None

    def codegen(context, builder, signature, args):
        values = _doubles(context, builder, signature, args)
        return builder.fadd(*values, flags=("reassoc",))

    return types.float64(a, b), codegen


@intrinsic
def wide_vectors(typingctx):
    """Ask LLVM to vectorise the calling function's loops with 512-bit vectors (8 float64) where
    the CPU has them. On AVX-512 CPUs LLVM prefers 256-bit vectors unless told otherwise;
    NumPy's own ufunc loops use 512. The request is the function attribute
    "prefer-vector-width" on the calling function only (generated code calls this first), so
    no other Numba function in the process compiles differently; on a CPU without AVX-512 it
    changes nothing. llvmlite's attribute set lists only LLVM's keyword attributes, so the
    string attribute is added to the set directly."""

    def codegen(context, builder, signature, args):
        set.add(builder.function.attributes, f'"prefer-vector-width"="{WIDE}"')
        return context.get_dummy_value()

    return types.none(), codegen


@_compiled
def _power_of_two(k):
    """2^k as a float64 for −1022 ≤ k ≤ 1023 (from its exponent bits)."""
    return float_of((k + 1023) << 52)


@_compiled
def _exp_parts(x):
    """(p, c, k) with e^x ≈ (p + c)·2^k, p rounded to nearest and c what it left out (to about
    2^−60 of p), for |x| ≤ 746."""
    shifted = fma(x, LOG2_E, SHIFTER)  # x·log2 e rounded to a whole number k, in the low bits
    kf = shifted - SHIFTER
    hi = fma(-kf, LN2_HI, x)  # exact: k·LN2_HI is exact and close to x
    lo = kf * LN2_LO
    r = hi - lo
    r2 = r * r
    tail = r2 * fma(r, _q(r, r2), 0.5)
    s = 1.0 + hi
    c = ((1.0 - s) + hi) + (tail - lo)  # (1 − s) + hi: what s lost of 1 + hi (Fast2Sum)
    rounded = s + c
    return rounded, (s - rounded) + c, bits_of(shifted) - SHIFTER_BITS


@_compiled
def _q(r, r2):
    """Q(r), r2 = r², in Estrin's order: four rounds of independent multiply-adds where
    Horner's rule chains nine, each waiting for the last (4 cycles): a tanh over 64×32 entries
    3.75 → 3.5 µs, an exp over 2048² 4.5 → 4.0 ms."""
    r4 = r2 * r2
    low = fma(r2, fma(r, _Q[3], _Q[2]), fma(r, _Q[1], _Q[0]))
    high = fma(r2, fma(r, _Q[7], _Q[6]), fma(r, _Q[5], _Q[4]))
    return fma(r4, fma(r4, fma(r, _Q[9], _Q[8]), high), low)


@_compiled
def exp(x):
    """e^x, within an ulp of NumPy's np.exp; NumPy's values at 0, ±∞, NaN and the thresholds.

    >>> exp(1.0)
    2.718281828459045
    """
    zero = x < EXP_ZERO
    clamped = x if x < EXP_ABOVE else EXP_ABOVE
    clamped = 0.0 if zero else clamped
    p, _, k = _exp_parts(clamped)
    half = k >> 1
    y = p * _power_of_two(half) * _power_of_two(k - half)
    y = 0.0 if zero else y
    return y if x == x else x


@_compiled
def log(x):
    """ln x, within an ulp of NumPy's np.log: −∞ at ±0, NaN below 0, ∞ at ∞, NaN at NaN.

    >>> log(2.0)
    0.6931471805599453
    """
    tiny = x < TINY
    scaled = x * 18014398509481984.0 if tiny else x  # 2^54: subnormals become normal
    bits = bits_of(scaled)
    k = (bits - SQRT_HALF_BITS) >> 52
    f = float_of(bits - (k << 52)) - 1.0  # m − 1, exact for m in [√½, √2)
    kf = np.float64(k) - (54.0 if tiny else 0.0)
    s = f / (2.0 + f)
    z = s * s
    g = fma(z, _G[6], _G[5])
    g = fma(z, g, _G[4])
    g = fma(z, g, _G[3])
    g = fma(z, g, _G[2])
    g = fma(z, g, _G[1])
    g = fma(z, g, _G[0])
    half_square = 0.5 * f * f
    y = kf * LN2_HI + (f - (half_square - (s * (half_square + z * g) + kf * LN2_LO)))
    y = -np.inf if x == 0.0 else y
    y = np.nan if x < 0.0 else y
    return y if x < np.inf else x  # ∞ and NaN are their own logarithms


@_compiled
def _tanh_small(a):
    """tanh a for 0 ≤ a < 0.3: a + a³·P(a²)."""
    y = a * a
    p = fma(y, _P[7], _P[6])
    p = fma(y, p, _P[5])
    p = fma(y, p, _P[4])
    p = fma(y, p, _P[3])
    p = fma(y, p, _P[2])
    p = fma(y, p, _P[1])
    p = fma(y, p, _P[0])
    return fma(a * y, p, a)


@_compiled
def _tanh_large(a):
    """tanh a for 0.3 ≤ a ≤ 20: 1 − 2 / (e^{2a} + 1), rounded once at the end."""
    p, c, k = _exp_parts(2.0 * a)
    scale = _power_of_two(k)
    big, small = p * scale, c * scale  # e^{2a} ≈ big + small, big ≥ 1
    d = big + 1.0
    d_error = (1.0 - (d - big)) + small  # e^{2a} + 1 ≈ d + d_error
    q = 2.0 / d
    q_error = (fma(-q, d, 2.0) - q * d_error) * (0.5 * q)  # 2 / (d + d_error) ≈ q + q_error
    u = 1.0 - q
    u_error = (1.0 - u) - q  # Fast2Sum: u + u_error = 1 − q exactly
    return u + (u_error - q_error)


@_compiled
def tanh(x):
    """tanh x, within 2 ulp of NumPy's np.tanh; ±0 kept, ±1 at ±∞, NaN at NaN.

    >>> tanh(0.5)
    0.46211715726000974
    """
    a = abs(x)
    clamped = a if a < TANH_ONE else TANH_ONE
    small, large = _tanh_small(a), _tanh_large(clamped)  # both, then a select: no branch
    t = small if a < TANH_SMALL else large
    bits = bits_of(x)
    signed = float_of(bits_of(t) | ((bits >> 63) << 63))  # t with x's sign (−0 stays −0)
    return signed if x == x else x


# -- math="fast" (executor/codegen/spelling.py: FAST spells exp and tanh so) ------------------
# Within 4 ulp of NumPy rather than 1, for less work: no compensated sums, one formula for
# tanh where the exact one computes two and a double-double division.


@_compiled
def _expm1_parts(x):
    """(e^r − 1, k) with e^x = 2^k·e^r, e^r − 1 to about an ulp of itself, for |x| ≤ 746."""
    shifted = fma(x, LOG2_E, SHIFTER)
    kf = shifted - SHIFTER
    r = fma(-kf, LN2_LO, fma(-kf, LN2_HI, x))
    r2 = r * r
    return fma(r2, fma(r, _q(r, r2), 0.5), r), bits_of(shifted) - SHIFTER_BITS


@_compiled
def exp_fast(x):
    """e^x within 2 ulp of NumPy's np.exp (math="fast"): `exp` without its compensated sum;
    NumPy's values at 0, ±∞, NaN and the thresholds."""
    zero = x < EXP_ZERO
    clamped = x if x < EXP_ABOVE else EXP_ABOVE
    clamped = 0.0 if zero else clamped
    m, k = _expm1_parts(clamped)
    half = k >> 1
    y = (1.0 + m) * _power_of_two(half) * _power_of_two(k - half)
    y = 0.0 if zero else y
    return y if x == x else x


@_compiled
def tanh_fast(x):
    """tanh x within 4 ulp of NumPy's np.tanh (math="fast"): with m = e^{2|x|} − 1,
    tanh |x| = m / (m + 2), one formula for every |x| (m keeps its relative accuracy near 0,
    where tanh x ≈ x); ±0 kept, ±1 at ±∞, NaN at NaN."""
    a = abs(x)
    clamped = a if a < TANH_ONE else TANH_ONE
    m, k = _expm1_parts(2.0 * clamped)
    scale = _power_of_two(k)
    e = fma(m, scale, scale - 1.0)  # 2^k·(1 + m) − 1: 2^k − 1 exact
    t = e / (e + 2.0)
    signed = float_of(bits_of(t) | ((bits_of(x) >> 63) << 63))
    return signed if x == x else x


@_compiled
def quotient(a, d, y):
    """a / d correctly rounded (NumPy's result, to the bit) from y = 1/d, without dividing:
    q = a·y is within an ulp and a half of a/d, the remainder a − d·q is then exact in one
    multiply-add, and q + remainder·y rounds to a/d (Markstein's correction; checked
    against NumPy on 2·10⁸ quotients, near-2 mantissas among them). Three multiply-adds,
    where a vectorised division costs about 2 cycles an entry. It holds for a divisor
    `divisor_unsafe` accepts and a quotient `quotient_unsafe` accepts; a loop dividing by one
    d uses it and divides again where it does not hold (executor/codegen/division.py)."""
    q = a * y
    r = fma(-q, d, a)
    return q if r == 0.0 else fma(r, y, q)  # (r = 0: q is exact, and keeps the sign of 0)


@_compiled
def quotient_unsafe(a, q):
    """1 where q = quotient(a, d, y) may not be a/d, else 0: unless a is ±0, a quotient outside
    [2^−850, 2^850] (not finite included) may come from a numerator whose remainder or
    quotient leaves the normal range. A whole number from the exponent bits, which a loop
    sums: over 4096 entries in cache the test costs 0.46 µs so, 0.54–0.83 µs as float
    comparisons."""
    exponent = (bits_of(q) >> 52) & 0x7FF
    inside = np.uint64(exponent - QUOTIENT_EXPONENTS[0]) <= np.uint64(
        QUOTIENT_EXPONENTS[1] - QUOTIENT_EXPONENTS[0])
    return 0 if inside | ((bits_of(a) << 1) == 0) else 1


@_compiled
def divisor_unsafe(d):
    """0 if DIVISOR_LOW ≤ |d| ≤ DIVISOR_HIGH, else 1 (NaN included)."""
    m = abs(d)
    return 0 if (m >= DIVISOR_LOW) & (m <= DIVISOR_HIGH) else 1


if PYTHON_MODE:
    exp, log, tanh = np.exp, np.log, np.tanh  # type: ignore[assignment]  # noqa: F811
    exp_fast, tanh_fast = np.exp, np.tanh  # type: ignore[assignment]  # noqa: F811

    maximum, minimum = np.maximum, np.minimum  # type: ignore[assignment]  # noqa: F811

    def add_any_order(a, b):  # type: ignore[no-redef]  # noqa: F811
        """a + b (as Python: in order)."""
        return a + b

    def wide_vectors() -> None:  # type: ignore[no-redef]  # noqa: F811
        """Nothing to ask of LLVM: the code runs as Python."""

    def quotient(a, d, y):  # type: ignore[no-redef]  # noqa: F811
        """a / d (NumPy's scalar division)."""
        return np.true_divide(a, d)

    def quotient_unsafe(a, q):  # type: ignore[no-redef]  # noqa: F811
        """0: `quotient` divides."""
        return 0
