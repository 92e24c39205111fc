-- No such file next to this one or on the search path.
-- error: E203 at 3:1
open shared.Missing
fn f(x) ↦ x
