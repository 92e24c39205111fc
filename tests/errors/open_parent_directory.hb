-- A module path is names joined by dots: `..` is not a module path at all.
-- error: E100 at 3:6
open ..outside.Secret
fn f(x) ↦ x
