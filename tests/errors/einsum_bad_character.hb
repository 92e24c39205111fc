-- Axes are ASCII letters.
-- error: E300 at 3:18
fn t(a) ↦ einsum("i1->1i", a)
