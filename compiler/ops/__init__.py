"""The ops: the op table (primitives.py, one row per primitive) and its columns written out at
length: what each op means in NumPy (meanings.py), its shape rule (shape_rules.py), its
derivative (derivative_rules.py), and einsum's specifications (einsum_spec.py)."""
