"""NumPy's and opt_einsum's keywords of an einsum call (`out`, `dtype`, `order`, `casting`,
`use_blas`, `backend`) checked, and applied to the call's operands and result, with the meaning
numpy.einsum gives them (docs/networks.md, "NumPy's and opt_einsum's keywords")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from hilbert.grammar.errors import ArgumentTypeError, ArgumentValueError
from hilbert.grammar.source import nowhere

from .einsum_dtypes import Kind

WHERE = "hilbert.einsum"
ORDERS = ("K", "A", "C", "F")
CASTINGS = ("no", "equiv", "safe", "same_kind", "unsafe")
#: opt_einsum's `backend=` values hilbert takes: the result is of the operands' own type (NumPy
#: arrays, torch tensors, JAX arrays), computed by hilbert, as opt_einsum converts back.
BACKENDS = (None, "auto", "numpy", "torch", "jax")


@dataclass(frozen=True)
class Options:
    """The keywords of one call, checked: `dtype` as a NumPy dtype or None, `order` one of
    ORDERS, `casting` one of CASTINGS, `out` a writeable NumPy array or None."""

    out: np.ndarray | None = None
    dtype: np.dtype | None = None
    order: str = "K"
    casting: Any = "safe"  # (one of CASTINGS: NumPy types it as their Literal)


#: The keywords of a call that gives none of them.
DEFAULTS = Options()


def checked(out=None, dtype=None, order="K", casting="safe", backend="auto") -> Options:
    """The keywords as Options, or the coded error NumPy's mistake would be (a TypeError for
    `out` that is no array and a `dtype` that is no dtype, a ValueError for the rest).
    `use_blas` needs no check: hilbert chooses each step's kernel itself.

    >>> checked(order="f", dtype="float32")
    Options(out=None, dtype=dtype('float32'), order='F', casting='safe')
    """
    if out is None and dtype is None and order == "K" and casting == "safe" and (
            backend == "auto" or backend is None):
        return DEFAULTS  # (the common call: nothing to check)
    if out is not None and not isinstance(out, np.ndarray):
        raise ArgumentTypeError("E600", f"out= must be a NumPy array to write the result into, "
                                f"not {type(out).__name__}", nowhere(WHERE))
    if out is not None and not out.flags.writeable:
        raise ArgumentValueError("E600", "out= is a read-only array: give one the result can "
                                 "be written into", nowhere(WHERE))
    wanted = None
    if dtype is not None:
        try:
            wanted = np.dtype(dtype)
        except TypeError:
            raise ArgumentTypeError("E600", f"dtype={dtype!r:.40} is not a NumPy dtype (write "
                                    "e.g. float64, float32, int64 or complex128)",
                                    nowhere(WHERE)) from None
    layout = "K" if order is None else order.upper() if isinstance(order, str) else None
    if layout not in ORDERS:
        raise ArgumentValueError("E600", f"order={order!r:.40} is not a layout: write 'K' (as "
                                 "computed), 'A', 'C' or 'F'", nowhere(WHERE))
    if casting not in CASTINGS:
        raise ArgumentValueError("E600", f"casting={casting!r:.40} is not one of NumPy's "
                                 f"rules: {', '.join(CASTINGS)}", nowhere(WHERE))
    if backend not in BACKENDS:
        raise ArgumentValueError(
            "E600", f"backend={backend!r:.40}: hilbert computes the contraction itself, on the "
            "CPU, and answers in the operands' own type (NumPy arrays, torch tensors or JAX "
            "arrays); leave backend out, or convert the operands to one of those",
            nowhere(WHERE))
    return Options(out, wanted, layout, casting)


def cast(arrays: list[np.ndarray], options: Options) -> list[np.ndarray]:
    """The operands in `dtype=`, each cast as `casting` allows (a coded TypeError where it does
    not, as NumPy raises); as they are without `dtype=`."""
    if options.dtype is None:
        return arrays
    for k, a in enumerate(arrays):
        if not np.can_cast(a.dtype, options.dtype, options.casting):
            raise ArgumentTypeError(
                "E601", f"operand {k} ({a.dtype}) cannot be cast to dtype={options.dtype} by "
                f"the rule casting={options.casting!r}: give casting='same_kind' or 'unsafe' "
                "to allow it", nowhere(WHERE))
    return [a.astype(options.dtype, copy=False) for a in arrays]


def finished(value, kind: Kind, options: Options, arrays: list[np.ndarray]):
    """The call's answer: `value` in `kind.result`, laid out as `order` asks (`arrays`' layout
    for 'A'), written into `out` (and `out` returned) where one is given; a result with no
    axes as a NumPy scalar, as numpy.einsum gives it."""
    value = np.asarray(value)
    if value.dtype != kind.result:
        value = value.astype(kind.result)
    if options.out is not None:
        return _written(value, options)
    if not value.ndim:
        return value[()]
    return _laid_out(value, options.order, arrays)


def _laid_out(value: np.ndarray, order: str, arrays: list[np.ndarray]) -> np.ndarray:
    if order == "A":
        fortran = all(a.flags.f_contiguous and not a.flags.c_contiguous for a in arrays if a.ndim > 1)
        order = "F" if fortran and any(a.ndim > 1 for a in arrays) else "C"
    if order == "C":
        return np.ascontiguousarray(value)
    if order == "F":
        return np.asfortranarray(value)
    return value


def _written(value: np.ndarray, options: Options) -> np.ndarray:
    out = options.out
    assert out is not None
    if out.shape != value.shape:
        raise ArgumentValueError("E600", f"out= has shape {out.shape}, but the result's is "
                                 f"{value.shape}", nowhere(WHERE))
    if not np.can_cast(value.dtype, out.dtype, options.casting):
        raise ArgumentTypeError(
            "E601", f"the result ({value.dtype}) cannot be written into out= ({out.dtype}) by "
            f"the rule casting={options.casting!r}: give casting='same_kind' or 'unsafe' to "
            "allow it", nowhere(WHERE))
    np.copyto(out, value, casting="unsafe")
    return out
