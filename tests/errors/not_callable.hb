-- w is a parameter (a value), not a definition.
-- error: E206 at 3:18
fn apply(w, x) ↦ w(x)
