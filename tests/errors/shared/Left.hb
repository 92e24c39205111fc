-- Helper module for ambiguous_name.hb.
def twice(x) ≔ 2 · x
def left(x) ≔ x
