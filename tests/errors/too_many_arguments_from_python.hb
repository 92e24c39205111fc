-- Called from Python with three arguments.
-- call: add 1 2 3
-- error: E600 at 4:1
fn add(x, y) ↦ x + y
