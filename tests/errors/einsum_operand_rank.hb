-- The term ij needs a matrix; a vector is given.
-- call: t ones:3
-- error: E306 at 4:11
fn t(a) ↦ einsum("ij->ji", a)
