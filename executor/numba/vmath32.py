"""exp, log, tanh and erf of float32 numbers in float32 arithmetic, for float32 generated code
(kernels32.py): straight-line code with no branches or calls, as vmath.py's float64 ones are,
so LLVM runs them in vector lanes inside loop nests: 16 entries at a time on an AVX-512 CPU,
twice the lanes of the float64 functions (which float32 code used before, rounding their
results: as accurate, but half as fast in cache). The bit casts and fma are vmath.py's, made
for float32.

- exp: x = k·ln 2 + r with |r| ≤ ½ ln 2 (ln 2 split so that k·LN2_HI is exact), e^r = 1 + r +
  r²·Q(r), then multiplied by 2^k built from its bits (two factors: subnormal results round
  once in the scaling).
- log: x = 2^k·m with m in [√½, √2) (from the bits; subnormals scaled by 2^24 first),
  f = m − 1, log m = f − f²/2 + f³·R(f), plus k·ln 2 (k·LN2_HI exact).
- tanh: |x| < 0.625: x + x³·P(x²); above: m / (m + 2) with m = e^{2|x|} − 1 from exp's parts
  (2^k·(1 + p) − 1 in one multiply-add), which keeps m's relative accuracy.
- erf: |x| < 1: x + x·Q(x²) (one multiply-add: Q's rounding is relative to 0.13, not to 1.13);
  1 ≤ |x| < 4: 1 − e^{−x²}·R(1/|x| − 0.625), x² split exactly into hi + lo by a multiply-add
  and e^{−hi−lo} = e^{−hi}·(1 − lo); from 4 on, ±1 (erfc 4 is 1.5e-8, below half an ulp of 1).

Q (degree 5), R (degree 9) and P (degree 5, in x²) are near-minimax fits (least squares at
1,000s of Chebyshev nodes, in 40-digit mpmath arithmetic) over the reduced ranges, rounded to
float32; erf's two (degrees 6 and 10, relative to erf and to erfc·e^{x²}) are fitted with each
coefficient rounded to float32 in turn and the rest fitted again, so the rounding is
compensated. erf measured over every float32 below 4.5 against SciPy's float64 erf: at most
0.997 ulp (at 1.0158), 1.4% of results 1 ulp off the correctly rounded value. Measured over every float32 where each function is neither 0, ±1 nor ∞
(tests/test_float32_maths.py samples it): within 1 ulp of the correctly rounded value, where
NumPy's own float32 exp and log are up to 2 and 3 ulp from it; ±0, ±∞, NaN, log of 0 and of
negatives, and the overflow and underflow thresholds give NumPy's values.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
from numba import njit, types

from . import disk, vmath
from .vmath32_constants import (  # noqa: F401 (the constants, read as vmath32.X too)
    _ERF_Q,
    _ERF_R,
    _P,
    _Q,
    _R,
    ERF_MIDDLE,
    ERF_ONE,
    ERF_SMALL,
    EXP_ABOVE,
    EXP_LN2_HI,
    EXP_LN2_LO,
    EXP_ZERO,
    HALF,
    LOG2_E,
    LOG_LN2_HI,
    LOG_LN2_LO,
    NAN,
    NEG_INF,
    ONE,
    SHIFTER,
    SHIFTER_BITS,
    SIGN,
    SQRT_HALF_BITS,
    TANH_ONE,
    TANH_SMALL,
    TINY,
    TWO,
    TWO_24,
    ZERO,
    F,
)

#: What this module's machine code depends on: it, its constants and vmath.py (its intrinsics).
STAMP = (hashlib.sha256(b"".join(Path(__file__).with_name(name).read_bytes() for name in (
    "vmath32.py", "vmath32_constants.py"))).hexdigest()[:16] + f" {vmath.STAMP}")

_compiled = vmath.keeping(STAMP)
bits_of, float_of = vmath.bit_casts(types.float32)
fma = vmath.fused_multiply_add(types.float32)


@_compiled
def _power_of_two(k):
    """2^k as a float32 for −126 ≤ k ≤ 127 (from its exponent bits)."""
    return float_of((k + 127) << 23)


@_compiled
def _exp_parts(x):
    """(p, k) with e^x ≈ (1 + p)·2^k, p = e^r − 1 for |r| ≤ ½ ln 2, for |x| ≤ 104."""
    shifted = fma(x, LOG2_E, SHIFTER)  # x·log2 e rounded to a whole number k, in the low bits
    kf = shifted - SHIFTER
    r = fma(-kf, EXP_LN2_LO, fma(-kf, EXP_LN2_HI, x))
    r2 = r * r
    q = fma(r, _Q[5], _Q[4])
    q = fma(r, q, _Q[3])
    q = fma(r, q, _Q[2])
    q = fma(r, q, _Q[1])
    q = fma(r, q, _Q[0])
    return fma(r2, q, r), bits_of(shifted) - SHIFTER_BITS


@_compiled
def exp(x):
    """e^x of a float32, within an ulp of the correctly rounded value; NumPy's values at 0,
    ±∞, NaN and the thresholds."""
    zero = x < EXP_ZERO
    clamped = x if x < EXP_ABOVE else EXP_ABOVE
    clamped = ZERO if zero else clamped
    p, k = _exp_parts(clamped)
    half = k >> 1
    y = (ONE + p) * _power_of_two(half) * _power_of_two(k - half)
    y = ZERO if zero else y
    return y if x == x else x


@_compiled
def log(x):
    """ln x of a float32, within an ulp of the correctly rounded value: −∞ at ±0, NaN below
    0, ∞ at ∞, NaN at NaN."""
    tiny = x < TINY
    scaled = x * TWO_24 if tiny else x  # subnormals become normal
    bits = bits_of(scaled)
    k = (bits - SQRT_HALF_BITS) >> 23
    f = float_of(bits - (k << 23)) - ONE  # m − 1, exact for m in [√½, √2)
    kf = F(k) - (F(24.0) if tiny else ZERO)
    r = fma(f, _R[9], _R[8])
    r = fma(f, r, _R[7])
    r = fma(f, r, _R[6])
    r = fma(f, r, _R[5])
    r = fma(f, r, _R[4])
    r = fma(f, r, _R[3])
    r = fma(f, r, _R[2])
    r = fma(f, r, _R[1])
    r = fma(f, r, _R[0])
    f2 = f * f
    low = fma(f2 * f, r, fma(kf, LOG_LN2_LO, -HALF * f2))  # f³·R + k·ln2_lo − f²/2
    y = fma(kf, LOG_LN2_HI, f + low)
    y = NEG_INF if x == ZERO else y
    y = NAN if x < ZERO else y
    return y if x < np.inf else x  # ∞ and NaN are their own logarithms


@_compiled
def tanh(x):
    """tanh x of a float32, within an ulp of the correctly rounded value; ±0 kept, ±1 at ±∞,
    NaN at NaN."""
    a = abs(x)
    y = a * a
    p = fma(y, _P[5], _P[4])
    p = fma(y, p, _P[3])
    p = fma(y, p, _P[2])
    p = fma(y, p, _P[1])
    p = fma(y, p, _P[0])
    small = fma(a * y, p, a)
    clamped = a if a < TANH_ONE else TANH_ONE
    e, k = _exp_parts(clamped + clamped)
    scale = _power_of_two(k)
    m = fma(e, scale, scale - ONE)  # e^{2a} − 1 = 2^k·(1 + e) − 1, 2^k − 1 exact
    large = m / (m + TWO)
    t = small if a < TANH_SMALL else large
    signed = float_of(bits_of(t) | (bits_of(x) & SIGN))  # x's sign
    return signed if x == x else x


def _erf(x):
    """erf x of a float32, within an ulp of the correctly rounded value (±0 kept, ±1 at ±∞,
    NaN at NaN): below 1, x + x·Q(x²); from 1 to 4, 1 − e^{−x²}·R(1/x − 0.625), with x² split
    exactly into hi + lo (e^{−hi − lo} = e^{−hi}·(1 − lo) to well under an ulp); from 4 on, 1."""
    a = abs(x)
    y = a * a
    q = fma(y, _ERF_Q[6], _ERF_Q[5])
    q = fma(y, q, _ERF_Q[4])
    q = fma(y, q, _ERF_Q[3])
    q = fma(y, q, _ERF_Q[2])
    q = fma(y, q, _ERF_Q[1])
    q = fma(y, q, _ERF_Q[0])
    small = fma(a, q, a)
    b = a if a < ERF_ONE else ERF_ONE
    b = b if b > ERF_SMALL else ERF_SMALL
    t = ONE / b - ERF_MIDDLE
    r = fma(t, _ERF_R[10], _ERF_R[9])
    r = fma(t, r, _ERF_R[8])
    r = fma(t, r, _ERF_R[7])
    r = fma(t, r, _ERF_R[6])
    r = fma(t, r, _ERF_R[5])
    r = fma(t, r, _ERF_R[4])
    r = fma(t, r, _ERF_R[3])
    r = fma(t, r, _ERF_R[2])
    r = fma(t, r, _ERF_R[1])
    r = fma(t, r, _ERF_R[0])
    hi = b * b
    lo = fma(b, b, -hi)
    p, k = _exp_parts(-hi)
    half = k >> 1
    e = (ONE + p) * _power_of_two(half) * _power_of_two(k - half)
    large = ONE - fma(-e, lo, e) * r
    v = small if a < ERF_SMALL else large
    signed = float_of(bits_of(v) | (bits_of(x) & SIGN))
    return signed if x == x else x


#: erf is inlined where it is called (Numba's own inliner): LLVM's would not take a function
#: this long, and a call per entry keeps a loop nest from running in vector lanes (21× slower).
erf = disk.keep(njit(_erf, inline="always", nogil=True, error_model="numpy", boundscheck=False),
                STAMP)
