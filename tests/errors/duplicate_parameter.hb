-- The second x could never be read.
-- error: E205 at 3:1
fn f(x, x) ↦ x
