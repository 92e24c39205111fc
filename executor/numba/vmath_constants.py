"""vmath.py's constants, in a module of their own that imports nothing: the LLVM back end
(executor/llvm/maths.py, runtime.py, lower.py) writes the same maths from them in a process
that need never import Numba, which vmath.py's own import does (a third of a second). Part of
vmath.STAMP, as vmath.py is."""

from __future__ import annotations

# ln 2 = LN2_HI + LN2_LO, LN2_HI with 42 significant bits: k·LN2_HI is exact for |k| < 2^11.
LN2_HI = 0.6931471805598903
LN2_LO = 5.497923018708371e-14
LOG2_E = 1.4426950408889634
#: 1.5·2^52: adding it rounds a number below 2^51 to a whole one, which its low bits then hold.
SHIFTER = 6755399441055744.0
SHIFTER_BITS = 0x4338000000000000
# e^x overflows above 709.78…: clamped just outside, 2^k does the rest.
EXP_ABOVE = 710.0
#: e^x rounds to 0 below −745.133…: those entries are computed as e^0 and then replaced by 0.
#: Letting the arithmetic underflow to 0 instead costs a microcode assist per entry on Intel
#: CPUs (about 100 cycles): causal attention over 1024 positions, whose mask lowers half the
#: scores by 1e300, took 8.3 ms so, 5.2 ms now.
EXP_ZERO = -745.2
#: The smallest normal float64; below it log scales its argument by 2^54 first.
TINY = 2.2250738585072014e-308
#: The bits of √½: x's bits minus these, shifted right by 52, are k with m = x·2^−k in [√½, √2).
SQRT_HALF_BITS = 0x3FE6A09E667F3BCD
#: Below this |x|, tanh is its odd polynomial; above, 1 − 2 / (e^{2|x|} + 1).
TANH_SMALL = 0.3
#: Beyond this |x|, tanh(x) is ±1 in float64 (from 19.06 on): e^{2|x|} stays finite.
TANH_ONE = 20.0

# (e^r − 1 − r − r²/2) / r³ on |r| ≤ ½ ln 2, lowest degree first.
_Q = (0.16666666666666669, 0.041666666666666664, 0.008333333333330039, 0.0013888888888886537,
      0.00019841269863171557, 2.4801587317228724e-05, 2.7557268276905696e-06,
      2.7557282838800484e-07, 2.5100472505694996e-08, 2.09112987659402e-09)
# (2·atanh(s)/s − 2) / z, z = s², on 0 ≤ z ≤ (3 − 2√2)².
_G = (0.666666666666667, 0.3999999999989889, 0.28571428626253836, 0.22222211089379496,
      0.1818289243253687, 0.15331611722055008, 0.14617807153417325)
# (tanh(x) − x) / x³ as a polynomial in y = x², 0 ≤ y ≤ 0.09.
_P = (-0.3333333333333333, 0.13333333333329436, -0.053968253959158, 0.021869487726147795,
      -0.008863200040230624, 0.003591281030651438, -0.0014445686042322276,
      0.0005108524105890769)

#: The vector width, in bits, asked of LLVM for the function that calls `wide_vectors`.
WIDE = 512

#: A divisor whose magnitude lies in [2^−100, 2^100] (a softmax's row sum, a spread, √d) has a
#: normal reciprocal; with it, `quotient` is a/d wherever `quotient_unsafe` says 0.
DIVISOR_LOW, DIVISOR_HIGH = 2.0 ** -100, 2.0 ** 100
#: The exponent bits of 2^−850 and 2^850: a quotient between them, by such a divisor, came from
#: a numerator within [2^−951, 2^951]. There every step of `quotient` stays normal: the
#: remainder a − d·q is exact from |a| ≥ 2^−968 on, and q is far from 0 and from overflow.
QUOTIENT_EXPONENTS = (1023 - 850, 1023 + 850)
