-- Laws
--
-- The arithmetic laws of the original language's Prelude.Arithmetic, under the names its
-- derivations show: units, zeros and powers. A module that opens Prelude.Laws has them applied
-- to every body before planning (each rewrite makes the term smaller), and hilbert.simplify,
-- hilbert.solve and the other derivations use them by default (docs/laws.md).
--
-- Matching is structural, not associative or commutative, so a law and its mirror image are
-- two laws (unit and unit_left). Each law is checked numerically before use (E120). They hold
-- on the real numbers: a rewritten body can differ from the one written for an infinity or NaN
-- (x − x is NaN for x = ∞; nil makes it 0), and x + 0 is +0 where x is −0.

-- unit · x · 1 = x
law unit = x · 1 = x

-- unit_left · 1 · x = x
law unit_left = 1 · x = x

-- unit_right · x / 1 = x: 1 is the unit of division on the right
law unit_right = x / 1 = x

-- zero · x + 0 = x
law zero = x + 0 = x

-- zero_left · 0 + x = x
law zero_left = 0 + x = x

-- minus_zero · x − 0 = x
law minus_zero = x − 0 = x

-- nil · x − x = 0
law nil = x − x = 0

-- power_one · x ^ 1 = x
law power_one = x ^ 1 = x

-- power_zero · x ^ 0 = 1 (0 ^ 0 is 1, as in NumPy)
law power_zero = x ^ 0 = 1

-- cancel · x / x = 1 where x ≠ 0: rewrites only where x is a number other than 0
law cancel = x / x = 1 where x ≠ 0
