"""Laws: named rewrites of .hb terms, checked numerically before use, applied to a fixpoint in
the shrinking direction (rewrite.py), and derivations built on them (derive.py)."""
