-- A literal beyond float64 would silently become infinity.
-- error: E102 at 3:20
fn scaled(x) ↦ x · 1e999
