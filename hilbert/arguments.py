"""Normalises Python arguments into float64 arrays, or says plainly what is wrong with them."""

from __future__ import annotations

import decimal
import math
import numbers

import numpy as np

from hilbert.compiler.passes.shapes import describe_shape
from hilbert.compiler.plan import ITEM_BYTES, memory_limit
from hilbert.compiler.plan.text import human_bytes
from hilbert.grammar.errors import ArgumentError, RuntimeHilbertError

_FLOAT64 = np.dtype(np.float64)


def bind_arguments(entry, args: tuple, kwargs: dict) -> tuple[np.ndarray, ...]:
    """Match positional and keyword arguments to `entry`'s parameters and convert each."""
    params = entry.params
    if not kwargs and len(args) == len(params) and all(_ready(v) for v in args):
        return args  # the fast path: float64 C-ordered arrays, one per parameter, go as they are
    span = entry.definition.span
    name = entry.name
    if len(args) > len(params):
        raise ArgumentError("E600", f"{name} takes {len(params)} argument(s) "
                            f"({', '.join(params)}) but was given {len(args)}", span)
    bound = dict(zip(params, args, strict=False))
    for key, value in kwargs.items():
        if key not in params:
            raise ArgumentError("E600", f"{name} has no parameter {key!r} (its parameters: "
                                f"{', '.join(params) or 'none'})", span)
        if key in bound:
            raise ArgumentError("E600", f"{name} was given parameter {key} twice", span)
        bound[key] = value
    missing = [p for p in params if p not in bound]
    if missing:
        raise ArgumentError("E600", f"{name} is missing argument(s) {', '.join(missing)}", span)
    return tuple(to_array(name, p, bound[p], span) for p in params)


def _ready(value) -> bool:
    """Already what every executor takes: a float64, C-ordered ndarray (not a subclass)."""
    return type(value) is np.ndarray and value.dtype is _FLOAT64 and value.flags.c_contiguous


def to_array(function: str, param: str, value, span) -> np.ndarray:
    """`value` as a float64 array; anything that is not real numbers is an ArgumentError."""

    def bad(what: str) -> ArgumentError:
        return ArgumentError("E601", f"argument {param} of {function} must be a real number or "
                             f"an array of real numbers, but it is {what}", span)

    if value is None:
        return _raise(bad("None"))
    if isinstance(value, (str, bytes, bytearray, memoryview)):
        return _raise(bad(f"a string ({value!r:.40})"))
    if isinstance(value, numbers.Complex) and not isinstance(value, numbers.Real):
        return _raise(bad(f"the complex number {value}"))
    if isinstance(value, np.ma.MaskedArray) and np.ma.is_masked(value):
        return _raise(bad("a masked array (its masked entries have no value)"))
    try:
        array = np.asarray(value)
    except (ValueError, TypeError) as err:
        ragged = isinstance(value, (list, tuple)) and "inhomogeneous" in str(err)
        return _raise(bad("a ragged list (its rows have different lengths)" if ragged
                          else f"not an array of numbers ({err})"))
    if array.dtype.kind == "c":
        return _raise(bad("an array of complex numbers"))
    if array.dtype.kind == "O":
        array = _from_objects(array, value, bad)
    if array.dtype.kind in "US":
        return _raise(bad("a list containing text" if isinstance(value, (list, tuple))
                          else "an array of text"))
    if array.dtype.kind not in "biuf":
        return _raise(bad(f"an array of {array.dtype}"))
    if array.dtype != _FLOAT64 or not array.flags.c_contiguous:
        _check_copy(function, param, array, span)
    array = np.asarray(array, dtype=np.float64)
    return array if array.flags.c_contiguous else np.array(array, order="C")


def _check_copy(function: str, param: str, array: np.ndarray, span) -> None:
    """E700 before copying `array` into a float64 C-ordered array too large for the memory
    limit (a broadcast view of a million by a million takes no memory until it is copied)."""
    needed = math.prod(array.shape) * ITEM_BYTES
    limit = memory_limit()
    if needed > limit:
        raise RuntimeHilbertError(
            "E700", f"argument {param} of {function} is {describe_shape(array.shape)}, which as "
            f"the float64 array every executor reads would take {human_bytes(needed)}, over the "
            f"limit of {human_bytes(limit)} (set HILBERT_MEMORY_LIMIT to change it)", span)


#: Python types that are real numbers without being registered as numbers.Real.
_REAL = (numbers.Real, decimal.Decimal)


def _from_objects(array: np.ndarray, value, bad) -> np.ndarray:
    """An object array (big integers, None or other things inside lists) as float64, or the
    ArgumentError that says what the first bad entry is."""
    if not isinstance(value, (list, tuple, *_REAL)):
        return _raise(bad(f"a {type(value).__name__}"))
    for item in array.flat:
        if isinstance(item, (list, tuple)):
            return _raise(bad("a ragged list (its rows have different lengths)"))
        if not isinstance(item, _REAL):
            return _raise(bad(f"a list containing {item!r:.40} ({type(item).__name__})"))
        try:
            infinite = item.is_infinite() if isinstance(item, decimal.Decimal) else math.isinf(item)
            overflows = math.isinf(float(item)) and not infinite
        except OverflowError:
            overflows = True
        if overflows:
            return _raise(bad(f"a number too large for float64 ({str(item)[:12]}…, "
                              f"{len(str(item))} characters)"))
    return np.array([float(item) for item in array.flat]).reshape(array.shape)


def _raise(err: Exception):
    raise err
