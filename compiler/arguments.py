"""Normalises Python arguments into arrays of one dtype (the call's: compiler/dtypes.py), or
says plainly what is wrong with them."""

from __future__ import annotations

import decimal
import math
import numbers

import numpy as np

from ..grammar.errors import ArgumentError, RuntimeHilbertError
from . import dtypes
from .passes.shapes import describe_shape
from .plan import memory_limit
from .plan.text import human_bytes


def bind_arguments(entry, args: tuple, kwargs: dict, dtype: str | None = None,
                   counted: frozenset[int] = frozenset()) -> tuple[np.ndarray, ...]:
    """Match positional and keyword arguments to `entry`'s parameters and convert each to the
    call's dtype: `dtype` when given, else the promotion of the arguments' (`call_dtype`). A
    Python number given for a parameter in `counted` (one the program reads as a whole
    number: a step count, a position; compiler/counting.py) is bound in float64 whatever the
    call's dtype, so that 2²⁴ + 1 stays 2²⁴ + 1 in a float32 call."""
    params = entry.params
    if not kwargs and len(args) == len(params):
        quick = _positional(args, dtype, counted)
        if quick is not None:
            return quick
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
    values = [to_array(name, p, bound[p], span) for p in params]
    target = dtype or call_dtype(values, [bound[p] for p in params])
    return tuple(cast(name, p, v, counted_dtype(target) if i in counted and
                      counted_number(bound[p]) else target, span)
                 for i, (p, v) in enumerate(zip(params, values, strict=True)))


def counted_number(value) -> bool:
    """Whether `value`, given for a parameter the program counts with, is bound in float64: a
    real Python number (weak: it would otherwise take the call's dtype)."""
    return _weak(value) and isinstance(value, numbers.Real)


def counted_dtype(dtype: str) -> str:
    """What a Python number counted with is bound in, in a call of `dtype`: float64 (every
    whole number to 2⁵³ exact) in a real call; a complex call binds every number as it is."""
    return dtypes.COUNTED if not dtypes.is_complex(dtype) else dtype


def call_dtype(values: list[np.ndarray], given: list) -> str:
    """The dtype a call computes in: NumPy's promotion of its arrays' dtypes, Python numbers
    weak (a Python float never widens float32; a Python complex makes the call complex of the
    arrays' precision). `values` are `given` as `to_array` made them."""
    strong = []
    weak_complex = False
    for v, g in zip(values, given, strict=True):
        if not _weak(g):
            natural = dtypes.natural(v.dtype)
            assert natural is not None, "to_array gives arrays of numbers only"
            strong.append(natural)
        elif type(g) is complex or (isinstance(g, numbers.Complex)
                                    and not isinstance(g, numbers.Real)):
            weak_complex = True
    return dtypes.promote(strong, weak_complex)


def _weak(value) -> bool:
    """A Python number (not a NumPy scalar or array): it takes the call's dtype."""
    return type(value) in _PLAIN_NUMBERS or (
        isinstance(value, (numbers.Number, decimal.Decimal)) and not isinstance(value, np.generic))


#: Python's own number types (the common weak arguments, recognised without an ABC check).
_PLAIN_NUMBERS = frozenset((float, int, bool, complex))


def cast(function: str, param: str, array: np.ndarray, dtype: str, span) -> np.ndarray:
    """`array` as a C-ordered array of `dtype` (a complex argument to a real call is E601)."""
    if array.dtype.kind == "c" and not dtypes.is_complex(dtype):
        raise ArgumentError("E601", f"argument {param} of {function} is complex, but the call "
                            f"computes in {dtype} (it was asked to: dtype={dtype})", span)
    if array.dtype is not dtypes.DTYPES[dtype] or not array.flags.c_contiguous:
        if array.ndim:  # (one number never goes over the limit)
            _check_copy(function, param, array, dtype, span)
        if dtypes.DTYPES[dtype] in _NARROW:  # (beyond float32's range: ±inf, IEEE's answer,
            with np.errstate(over="ignore"):  # without NumPy's overflow warning)
                array = np.asarray(array, dtype=dtype)
        else:
            array = np.asarray(array, dtype=dtype)
        if not array.flags.c_contiguous:
            array = np.array(array, order="C")
    return array


def _positional(args: tuple, dtype: str | None,
                counted: frozenset[int] = frozenset()) -> tuple[np.ndarray, ...] | None:
    """The fast path of `bind_arguments`: arguments that are C-ordered ndarrays (not
    subclasses) all of one dtype a call computes in, and Python floats and machine-sized
    ints (weak), bound as the checks below would bind them; None for anything else."""
    found = None  # (the arrays' one dtype object)
    numbers = False
    for value in args:
        kind = type(value)
        if kind is np.ndarray:
            if value.dtype is not found:
                if found is not None:
                    return None
                found = value.dtype
            if not value.flags.c_contiguous:
                return None
        elif kind is float or kind is int and -_INT64 <= value < _INT64:
            numbers = True
        else:
            return None
    strong = None if found is None else dtypes.BY_DTYPE.get(found)
    if found is not None and strong is None or dtype is not None and strong not in (None, dtype):
        return None
    if not numbers:
        return args
    name = dtype or strong or dtypes.DEFAULT
    wanted = dtypes.DTYPES[name]
    whole = dtypes.DTYPES[counted_dtype(name)]  # (a counted number's: bind_arguments)
    # (an int goes through int64, as the checked path reads it: straight to float32 it would
    # be rounded twice, through float64)
    return tuple([value if type(value) is np.ndarray else
                  _float(value, whole if i in counted else wanted) if type(value) is float
                  else np.asarray(np.asarray(value), whole if i in counted else wanted)
                  for i, value in enumerate(args)])


_INT64 = 2 ** 63
#: The dtypes whose range a float64 can leave (an int64 cannot: 2⁶³ < float32's 3.4·10³⁸).
_NARROW = frozenset((dtypes.DTYPES["float32"], dtypes.DTYPES["complex64"]))
_FLOAT32_MAX = float(np.finfo(np.float32).max)


def _float(value: float, wanted: np.dtype) -> np.ndarray:
    """The Python float `value` as a 0-d array of `wanted`: beyond float32's range, ±inf as
    IEEE rounds it, without NumPy's overflow warning (the check costs less than errstate)."""
    if wanted in _NARROW and not -_FLOAT32_MAX <= value <= _FLOAT32_MAX:
        with np.errstate(over="ignore"):
            return np.array(value, wanted)
    return np.array(value, wanted)


def to_array(function: str, param: str, value, span) -> np.ndarray:
    """`value` as an array of numbers (bool, integer, float or complex, in any layout: `cast`
    converts it); anything that is not numbers is an ArgumentError."""

    def bad(what: str) -> ArgumentError:
        return ArgumentError("E601", f"argument {param} of {function} must be a number or "
                             f"an array of numbers, but it is {what}", span)

    if value is None:
        return _raise(bad("None"))
    if isinstance(value, (str, bytes, bytearray, memoryview)):
        return _raise(bad(f"a string ({value!r:.40})"))
    if isinstance(value, np.ma.MaskedArray) and np.ma.is_masked(value):
        return _raise(bad("a masked array (its masked entries have no value)"))
    try:
        array = np.asarray(value)
    except (ValueError, TypeError) as err:
        ragged = isinstance(value, (list, tuple)) and "inhomogeneous" in str(err)
        return _raise(bad("a ragged list (its rows have different lengths)" if ragged
                          else f"not an array of numbers ({err})"))
    except RuntimeError:
        if getattr(value, "requires_grad", False):  # a torch tensor in autograd's graph
            return _raise(ArgumentError(
                "E600", f"argument {param} of {function} is a torch tensor that requires grad: "
                f"a plain hilbert call cannot carry its gradient; wrap the function with "
                f"hilbert.torch.function(f) to call it from autograd (docs/interop.md), or "
                f"pass {param}.detach()", span))
        raise
    if array.dtype.kind == "O":
        array = _from_objects(array, value, bad)
    if array.dtype.kind in "US":
        return _raise(bad("a list containing text" if isinstance(value, (list, tuple))
                          else "an array of text"))
    if dtypes.natural(array.dtype) is None:
        return _raise(bad(f"an array of {array.dtype}"))
    return array


def _check_copy(function: str, param: str, array: np.ndarray, dtype: str, span) -> None:
    """E700 before copying `array` into a C-ordered array of `dtype` too large for the memory
    limit (a broadcast view of a million by a million takes no memory until it is copied)."""
    needed = math.prod(array.shape) * dtypes.itemsize(dtype)
    limit = memory_limit()
    if needed > limit:
        raise RuntimeHilbertError(
            "E700", f"argument {param} of {function} is {describe_shape(array.shape)}, which as "
            f"the {dtype} array every executor reads would take {human_bytes(needed)}, over the "
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


def _dtype_of(values, forced: str | None) -> str:
    """The dtype of a call whose arguments were bound to `values` (None: shapes only): the
    one dtype they have, but for float64 numbers a call of another dtype counts with (bound
    so by bind_arguments: compiler/counting.py)."""
    if forced is not None:
        return forced
    if not values:
        return dtypes.DEFAULT
    first = next((v.dtype for v in values if v.dtype != np.float64), values[0].dtype)
    return dtypes.BY_DTYPE.get(first) or first.name
