-- Qualifying by a module that was never opened.
-- error: E200 at 3:15
fn layer(a) ↦ Networks.relu(a)
