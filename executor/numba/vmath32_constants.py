"""vmath32.py's constants, in a module of their own that imports no Numba: the LLVM back end
(executor/llvm/maths32.py) writes the same float32 maths from them in a process that need
never import Numba, which vmath32.py's own import does. Part of vmath32.STAMP, as vmath32.py
is (vmath_constants.py is the float64 functions' twin of this module)."""

from __future__ import annotations

import numpy as np

F = np.float32
LOG2_E = F(1.442695)
#: 1.5·2^23: adding it rounds a float32 below 2^22 to a whole number, which its low bits hold.
SHIFTER = F(12582912.0)
SHIFTER_BITS = 0x4B400000
# ln 2 = EXP_LN2_HI + EXP_LN2_LO, the first with 15 significant bits: k·EXP_LN2_HI is exact.
EXP_LN2_HI = F(0.693145751953125)
EXP_LN2_LO = F(1.428606765330187e-06)
# ln 2 = LOG_LN2_HI + LOG_LN2_LO, the first with 9 significant bits (|k| ≤ 150 for log).
LOG_LN2_HI = F(0.693359375)
LOG_LN2_LO = F(-2.12194440e-04)
#: e^x overflows above 88.72…: clamped just outside, 2^k does the rest.
EXP_ABOVE = F(89.0)
#: e^x rounds to 0 below −103.97…: computed as e^0 and replaced by 0 (no underflow assists).
EXP_ZERO = F(-104.0)
#: The smallest normal float32; below it log scales its argument by 2^24.
TINY = F(1.1754944e-38)
TWO_24 = F(16777216.0)
#: The bits of √½ as a float32: x's bits minus these, shifted right by 23, are k.
SQRT_HALF_BITS = 0x3F3504F3
#: Below this |x|, tanh is its odd polynomial; above, m / (m + 2).
TANH_SMALL = F(0.625)
#: Beyond this |x|, tanh(x) is ±1 in float32 (from 9.01 on).
TANH_ONE = F(10.0)
ONE, TWO, HALF, ZERO = F(1.0), F(2.0), F(0.5), F(0.0)
NEG_INF, NAN = F(-np.inf), F(np.nan)
SIGN = np.int32(-2147483648)  # the sign bit

# (e^r − 1 − r) / r² on |r| ≤ ½ ln 2, lowest degree first.
_Q = tuple(map(F, (0.5, 0.16666667, 0.041666467, 0.008333298, 0.0013933644, 0.00019899276)))
# (log(1 + f) − f + f²/2) / f³ on √½ − 1 ≤ f ≤ √2 − 1.
_R = tuple(map(F, (0.33333334, -0.2499999, 0.19999991, -0.16668007, 0.14287494, -0.12451388,
                   0.11021009, -0.106246375, 0.1062307, -0.06362066)))
# erf(x)/x − 1 as a polynomial in y = x², 0 ≤ y ≤ 1 (erf x = x + x·Q(x²) below 1).
_ERF_Q = tuple(map(F, (0.12837916612625122, -0.3761262595653534, 0.1128358244895935,
                       -0.026853643357753754, 0.005187962669879198, -0.0008006793214008212,
                       7.842288323445246e-05)))
# erfc(x)·e^{x²} as a polynomial in t = 1/x − 0.625, 1 ≤ x ≤ 4 (−0.375 ≤ t ≤ 0.375).
_ERF_R = tuple(map(F, (0.3059529960155487, 0.3822837769985199, -0.17239531874656677,
                       0.0437665730714798, 0.023353226482868195, -0.046935174614191055,
                       0.04284345358610153, -0.026986876502633095, 0.007361392956227064,
                       0.026206033304333687, -0.040545858442783356)))
#: Below this |x|, erf is its polynomial; from it on, 1 − e^{−x²}·R; from ERF_ONE on, ±1.
ERF_SMALL, ERF_ONE, ERF_MIDDLE = F(1.0), F(4.0), F(0.625)
# (tanh(x) − x) / x³ as a polynomial in y = x², 0 ≤ y ≤ 0.625².
_P = tuple(map(F, (-0.33333334, 0.13333304, -0.053959407, 0.021769961, -0.00834698,
                   0.0022958412)))
