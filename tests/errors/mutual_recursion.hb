-- even and odd call each other.
-- error: E401 at 3:36
def even(n) ≔ if n = 0 then 1 else odd(n − 1)
def odd(n) ≔ if n = 0 then 0 else even(n − 1)
