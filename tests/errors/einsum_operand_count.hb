-- Two terms, three operands.
-- error: E303 at 3:30
fn product(a, b, c) ↦ einsum("ij,jk->ik", a, b, c)
