-- columns needs a matrix; the seed's meanPool on a vector fails this way.
-- call: width ones:4
-- error: E311 at 4:15
fn width(k) ↦ columns(k ^ 0)
