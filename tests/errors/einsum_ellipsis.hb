-- An ellipsis is three dots, once per term.
-- error: E301 at 3:24
fn lastSum(a) ↦ einsum("..i->..", a)
