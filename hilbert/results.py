"""Results handed back to Python: floats for scalars, and arrays the caller owns."""

from __future__ import annotations

import numpy as np


def to_python(result, inputs, lazy=None):
    """`result` as the caller gets it: a float for a scalar; otherwise a writeable float64
    array sharing memory with no input and with no other component of the same result (a
    tuple answering `(a, a)` or `(a, a[0:2])` gives fresh arrays, never one object twice nor
    a view); a tuple of those for a tuple. Values `lazy` says are lazy (dask arrays) pass as
    they are.

    >>> a = np.ones(2); first, second = to_python((a, a), ())
    >>> first is second, np.shares_memory(first, second)
    (False, False)
    """
    given: list[np.ndarray] = []  # the arrays this result has handed out so far

    def one(value):
        if isinstance(value, tuple):
            return tuple(one(v) for v in value)
        if lazy is not None and lazy(value):
            return value
        array = np.asarray(value, dtype=np.float64)
        if array.ndim == 0:
            return float(array)
        # (may_share_memory compares bounds: a false alarm costs a copy, never a wrong answer;
        # a view of a view has no `.base` chain to the array it views)
        if not array.flags.writeable or any(
                np.may_share_memory(array, v) for v in (*given, *_arrays(inputs))):
            array = array.copy()
        given.append(array)
        return array

    return one(result)


def _arrays(values) -> list[np.ndarray]:
    return [v for v in values if isinstance(v, np.ndarray)]
