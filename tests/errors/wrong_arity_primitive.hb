-- max is entrywise and takes two arguments.
-- error: E201 at 3:14
fn relu(z) ↦ max(z)
