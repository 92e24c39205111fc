-- Both opened modules define twice.
-- error: E202 at 5:17
open shared.Left
open shared.Right
fn doubled(x) ↦ twice(x) + left(x)
