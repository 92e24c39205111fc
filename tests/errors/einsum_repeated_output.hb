-- An output letter may appear once.
-- error: E300 at 3:18
fn t(a) ↦ einsum("i->ii", a)
