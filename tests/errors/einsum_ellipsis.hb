-- Ellipsis is not supported: name every axis.
-- error: E301 at 3:24
fn lastSum(a) ↦ einsum("...i->...", a)
