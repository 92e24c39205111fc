-- A vector has only axis 0.
-- call: largest ones:3
-- error: E314 at 4:17
fn largest(x) ↦ maximum(x, 1)
