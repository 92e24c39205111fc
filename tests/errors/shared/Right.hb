-- Helper module for ambiguous_name.hb.
def twice(x) ≔ x + x
