-- Two definitions of one name in one module.
-- error: E205 at 4:1
def half(x) ≔ x / 2
def half(x) ≔ 0.5 · x
