-- The outer product of two 200 000-vectors has 4·10¹⁰ entries (320 GB).
-- call: outer ones:200000 ones:200000
-- error: E700 at 4:18
fn outer(x, y) ↦ einsum("i,j->ij", x, y)
