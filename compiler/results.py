"""Results handed back to Python: numbers for scalars, and arrays the caller owns."""

from __future__ import annotations

import numpy as np


def to_python(result, inputs, lazy=None, dtype: str = "float64"):
    """`result` as the caller gets it: a number for a scalar (`_number`); otherwise a writeable
    array (of the call's dtype) sharing memory with no input and with no other component of the same result (a
    tuple answering `(a, a)` or `(a, a[0:2])` gives fresh arrays, never one object twice nor
    a view); a tuple of those for a tuple. Values `lazy` says are lazy (dask arrays) pass as
    they are. `dtype` is the call's: compiled code hands a float32 scalar back as a Python
    float, which becomes a float32 again here.

    >>> a = np.ones(2); first, second = to_python((a, a), ())
    >>> first is second, np.shares_memory(first, second)
    (False, False)
    """
    return _one(result, _arrays(inputs), [], lazy, dtype)


def _one(value, inputs: list[np.ndarray], given: list[np.ndarray], lazy, dtype: str):
    """`to_python` of one value, `given` the arrays handed out so far. (A module function, not
    a closure: a closure calling itself is a reference cycle that would keep every result, and
    its memory, alive until the garbage collector runs, and each call would fault in fresh
    pages.)"""
    if isinstance(value, tuple):
        return tuple(_one(v, inputs, given, lazy, dtype) for v in value)
    if lazy is not None and lazy(value):
        return value
    array = np.asarray(value)
    if array.ndim == 0:
        return scalar(array, dtype)
    # (may_share_memory compares bounds: a false alarm costs a copy, never a wrong answer;
    # a view of a view has no `.base` chain to the array it views)
    if not array.flags.writeable or any(np.may_share_memory(array, v)
                                        for v in (*given, *inputs)):
        array = array.copy()
    given.append(array)
    return array


def _arrays(values) -> list[np.ndarray]:
    return [v for v in values if isinstance(v, np.ndarray)]


def scalar(array: np.ndarray, dtype: str = "float64"):
    """A scalar result of a call in `dtype`: a Python float or complex in the 64-bit dtypes
    (what Python computes in), a NumPy float32 or complex64 scalar in those (so float32 in
    gives float32 out)."""
    if dtype in ("float32", "complex64") and array.dtype.itemsize == 8 and array.dtype.kind == "f":
        array = array.astype(np.float32)  # (a float32 that compiled code boxed as a float)
    if dtype == "complex64" and array.dtype.itemsize == 16:
        array = array.astype(np.complex64)  # (a complex64 boxed as Python's complex)
    if array.dtype.itemsize == 8 and array.dtype.kind == "f" or array.dtype.kind in "biu":
        return float(array)
    if array.dtype.kind == "c" and array.dtype.itemsize == 16:
        return complex(array)
    return array[()]
