-- The self-call is inside a product, so it is not the whole value of its branch.
-- error: E400 at 3:45
def factorial(n) ≔ if n = 0 then 1 else n · factorial(n − 1)
