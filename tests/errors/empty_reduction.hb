-- The maximum of no numbers is undefined.
-- call: largest ones:0x3
-- error: E317 at 4:17
fn largest(x) ↦ maximum(x, 0)
