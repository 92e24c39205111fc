-- j is 3 in a but 4 in b.
-- call: product ones:2x3 ones:4x5
-- error: E305 at 4:20
fn product(a, b) ↦ einsum("ij,jk->ik", a, b)
