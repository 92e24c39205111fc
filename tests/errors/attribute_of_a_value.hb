-- An attribute of a value, as in NumPy: .hb values have no attributes (transpose with einsum).
-- error: E200 at 3:17
fn flipped(x) ↦ x.T
