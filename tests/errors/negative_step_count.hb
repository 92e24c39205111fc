-- A counted loop of −1 steps.
-- call: run -1 0
-- error: E500 at 5:16
def count(t, x) ≔ if t = 0 then x else count(t − 1, x + 1)
fn run(t, x) ↦ count(t, x)
