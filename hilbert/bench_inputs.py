"""The arguments of `fn.benchmark(…)` made ready: the path optimisers and repeats checked, and
the inputs drawn for arguments given as shapes, after the shapes and memory guards."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from hilbert.compiler.arguments import bind_arguments
from hilbert.compiler.driver import annotate, plan_entry, specialise
from hilbert.compiler.passes.shapes import Shape
from hilbert.compiler.plan import ITEM_BYTES, OPTIMISERS, check_optimiser, memory_limit
from hilbert.compiler.plan.text import human_bytes
from hilbert.executor import get_executor
from hilbert.grammar.errors import ArgumentError, HilbertError, RuntimeHilbertError

from .bench_report import SEED

if TYPE_CHECKING:
    from .api import Function

#: No NumPy array holds this many bytes or more (sizes are signed 64-bit).
_MOST_BYTES = 2**63


def _optimisers(function: Function, optimize: str | Sequence[str]) -> tuple[str, ...]:
    """The optimisers as a tuple without repeats; each one known (E600 otherwise)."""
    names = (optimize,) if isinstance(optimize, str) else tuple(optimize)
    span = function.entry.definition.span
    if not names:
        raise ArgumentError("E600", "benchmark needs at least one path optimiser (choose from "
                            f"{', '.join(OPTIMISERS)})", span)
    for name in names:
        if not isinstance(name, str):
            raise ArgumentError("E600", f"a path optimiser is named by a string, not "
                                f"{type(name).__name__} {name!r}", span)
        check_optimiser(name, span)
    return tuple(dict.fromkeys(names))


def _repeat(function: Function, repeat) -> int:
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        raise ArgumentError("E600", f"benchmark's repeat must be a whole number ≥ 1, not "
                            f"{repeat!r}", function.entry.definition.span)
    return repeat


def _inputs(function: Function, args: tuple, kwargs: dict,
            optimisers: tuple[str, ...]) -> tuple[np.ndarray, ...]:
    """Arrays for the call: a shape (a tuple of ints, `()` a scalar) becomes a standard normal
    draw of that shape; anything else is a value, converted as a call converts it. Nothing is
    drawn before the arguments are bound (E600), the shapes checked (E3xx) and the memory
    guard passed (E700): the arrays to draw must fit the limit, and so must some optimiser's
    plan for these shapes."""
    entry = function.entry
    stand_in = np.zeros(())  # in a shape's place while binding: no memory, nothing drawn
    bound = bind_arguments(entry, tuple(stand_in if _is_shape(a) else a for a in args),
                           {k: stand_in if _is_shape(v) else v for k, v in kwargs.items()})
    given = dict(zip(entry.params, args, strict=False)) | kwargs  # bound: a valid binding
    drawn = {p: tuple(v) for p, v in given.items() if _is_shape(v)}  # in the order given
    shapes = tuple(drawn.get(p, b.shape) for p, b in zip(entry.params, bound, strict=True))
    _check_shapes(function, shapes)
    _guard_draws(function, drawn, shapes)
    _guard_plans(function, optimisers, shapes, tuple(
        _placeholder(drawn[p]) if p in drawn else b for p, b in zip(entry.params, bound, strict=True)))
    rng = np.random.default_rng(SEED)
    draws = {p: np.asarray(rng.standard_normal(s), dtype=np.float64) for p, s in drawn.items()}
    return tuple(draws.get(p, b) for p, b in zip(entry.params, bound, strict=True))


def _guard_draws(function: Function, drawn: dict[str, Shape], shapes) -> None:
    """E700 when the arrays to draw for arguments given as shapes would be over the memory
    limit together, before any is allocated."""
    needed = sum(math.prod(s) for s in drawn.values()) * ITEM_BYTES
    limit = memory_limit()
    if needed <= limit and needed < _MOST_BYTES:
        return
    over = (f"over the limit of {human_bytes(limit)} (set HILBERT_MEMORY_LIMIT to change it)"
            if needed > limit else "more than a NumPy array can hold")
    parts = ", ".join(f"{p} ({'×'.join(map(str, s))})" for p, s in drawn.items() if s)
    err = RuntimeHilbertError(
        "E700", f"benchmarking {function.entry.name} would draw the argument(s) given as shapes, "
        f"{parts}, from a standard normal: {human_bytes(needed)} of float64 in all, {over}",
        function.entry.definition.span)
    raise _annotated(function, err, shapes)


def _placeholder(shape: Shape) -> np.ndarray:
    """Zeros of `shape` that take no memory (a broadcast view), for planning only."""
    return np.broadcast_to(np.float64(0.0), shape)


def _as_written(function: Function) -> bool:
    """Whether the function's executor runs (and so plans) the IR as written."""
    return getattr(get_executor(function.executor), "AS_WRITTEN", False)


def _guard_plans(function: Function, optimisers: tuple[str, ...], shapes, values) -> None:
    """E700 before anything is drawn when every optimiser's plan for these shapes is over the
    memory limit (the first optimiser's plan that is not settles it: the work goes on)."""
    refused: HilbertError | None = None
    for optimize in optimisers:
        try:
            plan_entry(function.entry, shapes, optimize, function.executor, values,
                       as_written=_as_written(function))
        except HilbertError as err:
            if err.code != "E700":
                return  # another reason, which the timed runs report (values drawn may differ)
            refused = refused or err
        else:
            return
    if refused is not None:
        raise _annotated(function, refused, shapes)


def _is_shape(value) -> bool:
    return isinstance(value, tuple) and all(isinstance(d, int) and not isinstance(d, bool)
                                            and d >= 0 for d in value)


def _check_shapes(function: Function, shapes: tuple[Shape, ...]) -> None:
    """Shape errors (E3xx) are the user's, whatever the optimiser: raised here, annotated."""
    try:
        specialise(function.entry, shapes)
    except HilbertError as err:
        raise _annotated(function, err, shapes) from None


def _annotated(function: Function, err: HilbertError, shapes) -> HilbertError:
    parts = ", ".join(f"{p}: {'×'.join(map(str, s)) or 'scalar'}"
                      for p, s in zip(function.entry.params, shapes, strict=True))
    return annotate(err, function.module.resolved).with_note(
        f"while benchmarking {function.entry.name}({parts})")
