-- Trigonometry
--
-- The trigonometric laws of the original language's Prelude.Trigonometry: the Pythagorean
-- identity (both orders) and the double angles and the tangent, each written in the direction
-- that does not expand a term. A module that opens Prelude.Trigonometry has them applied to
-- every body before planning: sin(x)² + cos(x)² becomes exactly 1, where doubles computed
-- directly give 0.9999999999999999 at x = 0.009 (docs/laws.md). Each law is checked
-- numerically before use (E120).

-- pythagorean · sin(x)² + cos(x)² = 1
law pythagorean = sin(x)² + cos(x)² = 1

-- pythagorean_left · cos(x)² + sin(x)² = 1 (matching is not commutative)
law pythagorean_left = cos(x)² + sin(x)² = 1

-- double_sine · 2 · sin(x) · cos(x) = sin(2 · x)
law double_sine = 2 · sin(x) · cos(x) = sin(2 · x)

-- double_cosine · cos(x)² − sin(x)² = cos(2 · x)
law double_cosine = cos(x)² − sin(x)² = cos(2 · x)

-- tangent · sin(x) / cos(x) = tan(x)
law tangent = sin(x) / cos(x) = tan(x)
