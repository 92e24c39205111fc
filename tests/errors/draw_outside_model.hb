-- Random draws belong in a model's weight initialisers.
-- error: E207 at 3:15
fn noise(s) ↦ gaussian(s)
