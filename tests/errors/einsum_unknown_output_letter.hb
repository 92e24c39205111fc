-- k is in no input.
-- error: E304 at 3:18
fn t(a) ↦ einsum("ij->k", a)
