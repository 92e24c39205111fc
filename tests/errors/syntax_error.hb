-- A binary operator with no right operand.
-- error: E100 at 4:20
def half(x) ≔ x / 2
fn broken(x) ↦ x + · 2
