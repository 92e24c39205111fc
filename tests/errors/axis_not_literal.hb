-- The axis decides the shape of the result, so it must be written as a number.
-- error: E314 at 3:31
fn largest(x, k) ↦ maximum(x, k)
