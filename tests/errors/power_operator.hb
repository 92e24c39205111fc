-- Python's power operator: .hb writes x ^ 2 (or x²).
-- error: E104 at 3:18
fn square(x) ↦ x ** 2 + 1
