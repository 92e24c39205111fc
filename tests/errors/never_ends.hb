-- Every branch calls itself again.
-- error: E402 at 3:1
def forever(t, x) ≔ if t = 0 then forever(t, x) else forever(t − 1, x)
