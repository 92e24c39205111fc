-- A method of a value, as in NumPy: .hb values have no methods (sum with einsum).
-- error: E200 at 3:19
fn total(x) ↦ 1 + x.sum()
