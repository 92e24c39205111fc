-- The output must be written after ->.
-- error: E302 at 3:27
fn product(a, b) ↦ einsum("ij,jk", a, b)
