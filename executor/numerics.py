"""Host numerics every executor shares: NumPy's floating-point warnings kept quiet around
host work, and results detached from the inputs (x ^ y's host meaning is
compiler/ops/meanings.py's `power`)."""

from __future__ import annotations

import datetime

import numpy as np

try:  # NumPy ≥ 2 keeps its error state in a context variable: setting it costs 0.1 µs
    from numpy._core._ufunc_config import _extobj_contextvar as _ERROR_STATE
    from numpy._core._ufunc_config import _make_extobj

    _IGNORE = _make_extobj(all="ignore")
except (ImportError, AttributeError, TypeError):  # pragma: no cover (older NumPy)
    _ERROR_STATE = None


def quietly(function, *args):
    """function(*args) with NumPy's floating-point warnings off, the caller's settings restored
    after: inf and NaN are values (docs/semantics.md), not events. `np.errstate` does the same
    but costs 0.9 µs, half of a small product's whole call."""
    if _ERROR_STATE is None:  # pragma: no cover (older NumPy)
        with np.errstate(all="ignore"):
            return function(*args)
    token = _ERROR_STATE.set(_IGNORE)
    try:
        return function(*args)
    finally:
        _ERROR_STATE.reset(token)


def fresh_first(function, args):
    """detached(quietly(function, *args)[0], args) in one Python call: the fast path of a call
    that is NumPy calls alone (a small product's whole call costs 2 µs; each call in Python
    costs 0.1)."""
    if _ERROR_STATE is None:  # pragma: no cover (older NumPy)
        return detached(quietly(function, *args)[0], args)
    token = _ERROR_STATE.set(_IGNORE)
    try:
        result = function(*args)[0]
    finally:
        _ERROR_STATE.reset(token)
    if type(result) is np.ndarray and result.base is None:
        for a in args:
            if a is result:
                return result.copy()
        return result
    return detached(result, args)


def detached(result, inputs):
    """`result` with every array in it that shares memory with one of `inputs` copied: the
    caller owns what an executor returns, and writing to it must not change an argument (a
    transpose of an argument that is itself a view is still a view of the caller's data).
    Loop states (tuples) are detached component by component.

    >>> x = np.arange(6.0).reshape(2, 3)
    >>> np.shares_memory(detached(x.T, (x,)), x)
    False
    """
    return _detached(result, inputs, None)


def _detached(result, inputs, owners: set[int] | None):
    """`detached`, with `owners` the ids of the inputs' owners (`_owner`), once worked out."""
    if type(result) is np.ndarray:
        if result.base is None:  # it owns its buffer: fresh, unless it is an argument itself
            for a in inputs:
                if a is result:
                    return result.copy()
            return result
        owner = _owner(result)
        if type(owner) is _CAPSULE:  # (memory compiled code made: the module's doc)
            if owners is None:
                owners = {id(_owner(a)) for a in inputs if type(a) is np.ndarray}
            if id(owner) not in owners:
                return result
        for a in inputs:  # (a view of a scalar argument is a scalar)
            if type(a) is np.ndarray and (a.ndim or not result.ndim) and _shares(result, a):
                return result.copy()
        return result
    if type(result) is tuple:
        if owners is None:
            owners = {id(_owner(a)) for a in inputs if type(a) is np.ndarray}
        return tuple(_detached(r, inputs, owners) for r in result)
    return result


#: The type of the capsules that own the memory of the arrays compiled code makes
#: (executor/llvm/cpython.py: PyCapsule_New, freed by the capsule's destructor).
_CAPSULE = type(datetime.datetime_CAPI)


def _owner(array: np.ndarray):
    """What owns `array`'s memory: the end of its chain of bases (the array itself when it
    owns its buffer). An array compiled code returns is either an argument (the same object)
    or memory that code made in the call, owned by a capsule of its own (a view is returned
    as a copy): so a result owned by a capsule that owns no argument shares nothing with the
    arguments, which settles the step of a model of 47 weights without 2 115 comparisons."""
    while type(array.base) is np.ndarray:
        array = array.base
    return array if array.base is None else array.base


#: np.may_share_memory without NumPy's __array_function__ dispatch (half its cost; only
#: ndarrays come here).
_may_share_memory = getattr(np.may_share_memory, "_implementation", np.may_share_memory)


def _shares(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether a and b share memory: their bounds first (cheap, and apart for nearly every
    result), then exactly; when that is too hard to decide, assume they do (a copy too many
    is harmless)."""
    if not _may_share_memory(a, b):
        return False
    try:
        return bool(np.shares_memory(a, b, max_work=10_000))
    except np.exceptions.TooHardError:
        return True
