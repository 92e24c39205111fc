-- An n×1 matrix minus an n-vector: nothing broadcasts.
-- call: residual ones:3x1 ones:3
-- error: E310 at 4:21
fn residual(y, p) ↦ y − p
