"""The dtype a hilbert.einsum call answers in (docs/networks.md, "Dtypes"), and the contractions
NumPy computes for it along hilbert's path: integers and booleans exactly, long double in long
double, which no compiled call computes in.

Operands of hilbert's dtypes (float32, float64, complex64, complex128), alone or beside others,
follow hilbert's rule (compiler/dtypes.py, docs/semantics.md): booleans and integers widen to
float64, float16 to float32, and the call computes in NumPy's promotion of those, as the same
einsum in `.hb` does. Operands that are all integers or booleans answer in NumPy's integer type
for them, exactly (int64 above 2⁵³ included), as numpy.einsum does; operands that are all
float16 answer in float16, computed in float32 and rounded once; any long double operand makes
the call NumPy's, in long double. `dtype=` chooses the dtype itself, as in numpy.einsum.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import opt_einsum

from hilbert.compiler import dtypes
from hilbert.grammar.errors import ArgumentTypeError
from hilbert.grammar.source import nowhere

WHERE = "hilbert.einsum"
#: The dtypes only NumPy computes in: integers, booleans and long double (kinds and types).
_EXACT_KINDS = "biu"
_LONG = (np.dtype(np.longdouble), np.dtype(np.clongdouble))
_HALF = np.dtype(np.float16)


@dataclass(frozen=True)
class Kind:
    """What a call answers in (`result`) and what hilbert computes it in (`computed`, one of
    compiler/dtypes.NAMES), or None where NumPy computes it along hilbert's path (`exact`)."""

    result: np.dtype
    computed: str | None

    @property
    def itemsize(self) -> int:
        """Bytes per entry of the intermediates (what memory is counted in)."""
        return (dtypes.itemsize(self.computed) if self.computed is not None
                else self.result.itemsize)


#: What a contraction given by shapes alone is counted in.
SHAPES_ONLY = Kind(np.dtype(dtypes.DEFAULT), dtypes.DEFAULT)
#: The Kind of operands all of one of hilbert's dtypes, by NumPy dtype.
_OWN = {dtype: Kind(dtype, name) for dtype, name in dtypes.BY_DTYPE.items()}


def chosen(arrays: list[np.ndarray], dtype: np.dtype | None = None) -> Kind:
    """The Kind of a call on `arrays` (the module's docstring), or of `dtype` where it is given;
    an ArgumentTypeError (E601) for an operand that holds no numbers.

    >>> chosen([np.arange(3, dtype=np.int8), np.ones(3, np.float32)])
    Kind(result=dtype('float64'), computed='float64')
    """
    for k, a in enumerate(arrays):
        if a.dtype.kind not in "biufc":
            raise ArgumentTypeError(
                "E601", f"operand {k} is an array of {a.dtype} ({_held(a.dtype)}); "
                "hilbert.einsum computes numbers: convert it, e.g. with .astype(float)",
                nowhere(WHERE))
    if dtype is not None:
        return _of(dtype)
    if not arrays:
        return SHAPES_ONLY
    first = arrays[0].dtype
    if first in _OWN and all(a.dtype is first for a in arrays):  # (the common case)
        return _OWN[first]
    if all(a.dtype.kind in _EXACT_KINDS for a in arrays) or any(a.dtype in _LONG for a in arrays):
        return Kind(np.result_type(*arrays), None)
    if all(a.dtype == _HALF for a in arrays):
        return Kind(_HALF, "float32")
    name = dtypes.promote([dtypes.natural(a.dtype) or dtypes.DEFAULT for a in arrays])
    return Kind(np.dtype(name), name)


def _of(dtype: np.dtype) -> Kind:
    """The Kind `dtype=` asks for: computed by hilbert in it (float16 in float32), or by NumPy
    (integers, booleans, long double)."""
    if dtype.name in dtypes.NAMES:
        return Kind(dtype, dtype.name)
    if dtype == _HALF:
        return Kind(dtype, "float32")
    if dtype.kind in _EXACT_KINDS or dtype in _LONG:
        return Kind(dtype, None)
    raise ArgumentTypeError("E600", f"dtype={dtype} holds no numbers hilbert.einsum computes: "
                            "give a boolean, integer, float or complex dtype", nowhere(WHERE))


def _held(dtype: np.dtype) -> str:
    return {"O": "Python objects", "U": "text", "S": "bytes", "M": "dates",
            "m": "time spans", "V": "records"}.get(dtype.kind, "no numbers")


def exact(spec: str, arrays: list[np.ndarray], path: tuple, kind: Kind) -> np.ndarray:
    """The contraction `spec` of `arrays` computed by NumPy in `kind.result` along `path`
    (one step over every operand when there is none): integer products and sums exact, as
    numpy.einsum's (wrapping past the integer type's range, as NumPy's do); a fresh array."""
    arrays = [a.astype(kind.result, copy=False) for a in arrays]
    steps = [tuple(step) for step in path] or [tuple(range(len(arrays)))]
    value = np.asarray(opt_einsum.contract(spec, *arrays, optimize=steps), dtype=kind.result)
    # (a transpose or diagonal comes back as a view: a result never shares an operand's memory)
    return value.copy() if any(np.may_share_memory(value, a) for a in arrays) else value
