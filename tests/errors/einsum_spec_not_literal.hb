-- The specification must be written in place, as a string.
-- error: E307 at 3:24
fn t(a, spec) ↦ einsum(spec, a)
