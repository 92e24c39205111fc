"""The partial sums of a long sum combined pairwise (executor/codegen/sums.py writes the loops
around them): a generated loop nest sums each block of entries in any order (vector lanes)
and pushes the block's sum onto a stack; pushed sums are combined as the carries of a binary
counter are, two groups of equal size at a time, so n entries are added along a tree of depth
log2(n / block) and the rounding error grows as NumPy's pairwise sums' does, O(log n · eps),
not O(n · eps). A sum kept in a number is pushed by statements sums.py writes out (a call a
block cost too much); a sum kept in an array (column sums) by `push_rows` here, once a block
of rows. Plain Python: kernels.py compiles them (its `compiled`), and generated code of every
dtype calls them as `K.partials`, `K.levels`, `K.push_rows`, `K.total_rows` (float64
throughout: float32 code's sums accumulate in float64 too)."""

from __future__ import annotations

import numpy as np


def partials(levels):
    """Room for the pending partial sums of one sum (float64, whatever the code's dtype)."""
    return np.empty(levels)


def levels(count):
    """How many arrays a stack of pushed partial sums needs for at most `count` pushes."""
    needed = 1
    while count > 0:
        needed += 1
        count //= 2
    return needed


def push_rows(stack, count, part):
    """`push` for a sum kept in an array (column sums): `part` pushed onto `stack` (one
    array of part's size per level) entry by entry, then emptied (zeros) for the next block;
    the new count."""
    flat = part.reshape(part.size)
    rows = stack.reshape((stack.shape[0], part.size))
    level = 0
    carried = count
    while carried % 2 == 1:
        for j in range(flat.size):
            flat[j] = rows[level, j] + flat[j]
        level += 1
        carried //= 2
    for j in range(flat.size):
        rows[level, j] = flat[j]
        flat[j] = 0.0
    return count + 1


def total_rows(stack, count, part, out):
    """`total` for a sum kept in an array: out = the pushed arrays and `part` added, smallest
    groups first (out may be float32: each entry rounded once)."""
    flat = part.reshape(part.size)
    rows = stack.reshape((stack.shape[0], part.size))
    written = out.reshape(out.size)
    level = 0
    while count > 0:
        if count % 2 == 1:
            for j in range(flat.size):
                flat[j] = rows[level, j] + flat[j]
        level += 1
        count //= 2
    for j in range(flat.size):
        written[j] = flat[j]
