-- Called from Python with None.
-- call: add null 2
-- error: E601 at 4:1
fn add(x, y) ↦ x + y
