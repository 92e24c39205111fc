-- A string is only an einsum specification.
-- error: E316 at 3:15
fn label(x) ↦ "weights"
