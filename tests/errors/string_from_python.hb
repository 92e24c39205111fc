-- Called from Python with a string.
-- call: add 1 "two"
-- error: E601 at 4:1
fn add(x, y) ↦ x + y
