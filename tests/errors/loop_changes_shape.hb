-- Each step turns the state into its outer product with itself.
-- call: grown 2 ones:2
-- error: E315 at 4:51
def grow(t, x) ≔ if t = 0 then x else grow(t − 1, einsum("i,j->ij", x, x))
fn grown(t, x) ↦ grow(t, x)
