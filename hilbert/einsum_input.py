"""An einsum call's arguments read as NumPy and opt_einsum write them: the subscripts (explicit,
implicit, `...`, the interleaved form) in .hb's explicit form, the operands or shapes (with the
constants of contract_expression), axes of length 1 stretched as NumPy broadcasts them, and
NumPy's and opt_einsum's ways of writing `optimize` and `memory_limit` (docs/networks.md)."""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np
import opt_einsum
from opt_einsum.parser import parse_einsum_input

from hilbert.compiler.ops.einsum_spec import lettered
from hilbert.compiler.plan import is_path
from hilbert.compiler.plan.hyper import Hyper
from hilbert.compiler.plan.paths import HYPER_NAMES, OPTIMISERS
from hilbert.grammar.errors import ArgumentValueError, EinsumTypeError, EinsumValueError
from hilbert.grammar.source import nowhere

WHERE = "hilbert.einsum"


@dataclass(frozen=True)
class Read:
    """Subscripts read: `spec` in .hb's explicit form, `theirs` the same in the caller's
    symbols, the operands (or shapes) given, and the positions of those kept as constants."""

    spec: str
    theirs: str
    given: list
    constants: tuple[int, ...] = ()

    @property
    def symbols(self) -> dict[str, str]:
        """Each letter of `spec` → the caller's symbol."""
        return dict(zip(self.spec, self.theirs, strict=True))

    @property
    def terms(self) -> tuple[list[str], str]:
        """The caller's input terms and output."""
        inputs, output = self.theirs.split("->")
        return inputs.split(","), output


def read(operands: tuple, shapes: bool, constants=None) -> Read:
    """The contraction's subscripts in .hb's explicit form, axes renamed a, b, …, z, A, …, Z
    and further letters (any number of them: einsum_spec.letters), and its operands (or
    shapes; with `constants`, the operands at those positions are arrays, kept as given).
    Subscripts that cannot be read are E300, a TypeError or ValueError as NumPy's would be."""
    if not operands:
        raise ArgumentValueError("E600", "einsum needs subscripts and operands", nowhere(WHERE))
    interleaved = not isinstance(operands[0], str)
    kept = _constants(constants, len(operands) // 2 if interleaved else len(operands) - 1)
    parsed = list(operands)
    for k in kept:  # (a constant is read by its shape, as the other shapes are)
        parsed[2 * k if interleaved else k + 1] = np.shape(parsed[2 * k if interleaved else k + 1])
    try:
        inputs, output, given = parse_einsum_input(parsed, shapes=shapes)
    except TypeError as err:
        raise EinsumTypeError("E300", f"these einsum subscripts cannot be read: {err}",
                              nowhere(WHERE)) from None
    except (ValueError, IndexError, KeyError) as err:
        raise EinsumValueError("E300", f"these einsum subscripts cannot be read: {err}",
                               nowhere(WHERE)) from None
    given = list(given)
    for k in kept:
        given[k] = operands[2 * k if interleaved else k + 1]
    theirs = f"{inputs}->{output}"
    return Read(lettered(theirs), theirs, given, kept)


def _constants(constants, count: int) -> tuple[int, ...]:
    """contract_expression's `constants` as sorted operand positions (E600 where one is not
    the position of one of the `count` operands)."""
    if constants is None:
        return ()
    try:
        kept = sorted({int(k) for k in constants})
    except (TypeError, ValueError):
        kept = [-1]
    if any(k < 0 or k >= count for k in kept):
        raise ArgumentValueError("E600", f"constants={constants!r:.60} must be positions of the "
                                 f"operands (0 to {count - 1})", nowhere(WHERE))
    return tuple(kept)


def shapes_of(given: list) -> tuple[tuple[int, ...], ...]:
    """The shapes given to contract_path(shapes=True) or contract_expression (a constant's
    own shape), as tuples of whole numbers (E600 otherwise)."""
    found = []
    for k, shape in enumerate(given):
        shape = np.shape(shape) if isinstance(shape, np.ndarray) or hasattr(shape, "dtype") \
            else shape
        try:
            dims = tuple(int(n) for n in shape)
        except (TypeError, ValueError):
            dims = (-1,)
        if any(n < 0 for n in dims) or not all(isinstance(n, numbers.Integral) for n in shape):
            raise ArgumentValueError("E600", f"shape {k} ({shape!r:.40}) is not a tuple of "
                                     "whole numbers", nowhere(WHERE))
        found.append(dims)
    return tuple(found)


def stretched(spec: str, shapes: tuple) -> tuple[tuple[int, ...], ...]:
    """`shapes` with each axis of length 1 stretched to its letter's length in the other
    operands, as numpy.einsum broadcasts them; lengths that differ otherwise are left for the
    compiler to refuse (E305), as are counts and ranks that do not fit the subscripts."""
    terms = spec.split("->")[0].split(",")
    if len(terms) != len(shapes) or any(len(t) != len(s) for t, s in zip(terms, shapes, strict=True)):
        return tuple(shapes)
    size: dict[str, int] = {}
    for term, shape in zip(terms, shapes, strict=True):
        for ch, n in zip(term, shape, strict=True):
            size[ch] = n if size.get(ch, 1) == 1 else size[ch]
    return tuple(tuple(n if n != 1 else size[ch] for ch, n in zip(term, shape, strict=True))
                 for term, shape in zip(terms, shapes, strict=True))


def broadcast(spec: str, arrays: list) -> list:
    """The operands stretched as `stretched` says (views: nothing copied)."""
    if all(1 not in a.shape for a in arrays):  # (the common case: nothing to stretch)
        return arrays
    wanted = stretched(spec, tuple(a.shape for a in arrays))
    return [a if a.shape == s else np.broadcast_to(a, s)
            for a, s in zip(arrays, wanted, strict=True)]


def theirs(optimize, memory_limit, spec: str, sizes: tuple):
    """`(optimize, memory_limit)` with NumPy's and opt_einsum's ways of writing them put in
    hilbert's: NumPy's path `["einsum_path", (0, 1), …]` as that path; NumPy's `(optimiser,
    limit)` and opt_einsum's `memory_limit="max_input"` as the path opt_einsum's search finds
    with no intermediate over `limit` entries (over the largest operand's), which bounds the
    path and slices nothing; opt_einsum's -1 as no limit."""
    if isinstance(optimize, list) and optimize and optimize[0] == "einsum_path":
        optimize = optimize[1:]
    if isinstance(optimize, tuple) and len(optimize) == 2 and isinstance(optimize[0], str) \
            and isinstance(optimize[1], numbers.Real) and not isinstance(optimize[1], bool):
        return bounded(optimize[0], optimize[1], spec, sizes), None
    if isinstance(memory_limit, numbers.Real) and memory_limit == -1:
        return optimize, None
    if isinstance(memory_limit, str) and memory_limit == "max_input":
        return bounded(optimize, "max_input", spec, sizes), None
    return optimize, memory_limit


def bounded(optimize, limit, spec: str, sizes: tuple):
    """The path opt_einsum's search `optimize` finds for `spec` with no intermediate over
    `limit` entries ("max_input": the largest operand's; below 1: one step over every
    operand); an explicit path as it is, as opt_einsum takes it; a name opt_einsum does not
    know as it is (hilbert's checks say what is wrong with it)."""
    if optimize is True or optimize is None:
        optimize = "auto"
    if optimize is False or (limit != "max_input" and limit < 1):
        return (tuple(range(len(sizes))),)
    if isinstance(optimize, Hyper) or optimize in HYPER_NAMES:
        raise ArgumentValueError(
            "E600", f"memory_limit={limit!r} bounds the intermediates opt_einsum's searches "
            "may make, not a hyper-optimised search's: give a memory_limit in bytes to slice "
            "this contraction, or another optimiser", nowhere(WHERE))
    if not (isinstance(optimize, opt_einsum.paths.PathOptimizer)
            or isinstance(optimize, str) and optimize in OPTIMISERS):
        return optimize
    path, _ = opt_einsum.contract_path(spec, *sizes, shapes=True, optimize=optimize,
                                       memory_limit=limit if limit == "max_input" else int(limit))
    return tuple(tuple(step) for step in path)


def explicit_path(optimize) -> bool:
    """Whether `optimize` is written as an explicit path (opt_einsum's list of position
    tuples, or hilbert's tuple of them)."""
    if isinstance(optimize, list):
        try:
            optimize = tuple(tuple(step) for step in optimize)
        except TypeError:
            return False
    return bool(optimize) and is_path(optimize)
