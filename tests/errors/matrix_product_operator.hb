-- Python's matrix product operator: .hb writes products with einsum.
-- error: E104 at 3:22
fn product(x, w) ↦ x @ w
