-- Both branches of an if must have one shape.
-- call: pick 1 ones:2 ones:3
-- error: E313 at 4:20
fn pick(c, a, b) ↦ if c > 0 then a else b
