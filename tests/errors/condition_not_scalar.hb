-- if chooses one branch for the whole value; x > 0 is a vector here.
-- call: positive ones:3
-- error: E312 at 4:21
fn positive(x) ↦ if x > 0 then x else 0 − x
