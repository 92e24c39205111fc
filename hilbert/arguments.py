"""Normalises Python arguments into float64 arrays, or says plainly what is wrong with them."""

from __future__ import annotations

import numbers

import numpy as np

from hilbert.grammar.errors import ArgumentError


def bind_arguments(entry, args: tuple, kwargs: dict) -> tuple[np.ndarray, ...]:
    """Match positional and keyword arguments to `entry`'s parameters and convert each."""
    params = entry.params
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


def to_array(function: str, param: str, value, span) -> np.ndarray:
    """`value` as a float64 array; anything that is not real numbers is an ArgumentError."""

    def bad(what: str) -> ArgumentError:
        return ArgumentError("E601", f"argument {param} of {function} must be a real number or "
                             f"an array of real numbers, but it is {what}", span)

    if value is None:
        return _raise(bad("None"))
    if isinstance(value, (str, bytes)):
        return _raise(bad(f"a string ({value!r:.40})"))
    if isinstance(value, numbers.Number) and not isinstance(value, numbers.Real):
        return _raise(bad(f"the complex number {value}"))
    try:
        array = np.asarray(value)
    except (ValueError, TypeError) as err:
        return _raise(bad(f"not an array of numbers ({err})"))
    if array.dtype.kind == "c":
        return _raise(bad("an array of complex numbers"))
    if array.dtype.kind == "O":
        return _raise(bad("a ragged or mixed list" if isinstance(value, (list, tuple))
                          else f"a {type(value).__name__}"))
    if array.dtype.kind not in "biuf":
        return _raise(bad(f"an array of {array.dtype}"))
    array = np.asarray(array, dtype=np.float64)
    return array if array.flags.c_contiguous else np.array(array, order="C")


def _raise(err: Exception):
    raise err
