"""A function's program written out for another runtime: StableHLO text, through JAX
(docs/jax-executor.md, "Export"). The program is the one the jax executor runs for those
shapes and dtype (the plan's IR, its einsums along the plan's paths), lowered by `jax.jit(…)
.lower(…)` and printed by MLIR: the same program gives the same text in every process.

An exported program has no host to raise on: the runtime checks a call makes (E500, E510,
E511, E512) are left out, gaussian draws are computed on the device (within an ulp of the
host's), and a loop run backwards needs its step count written in the program (its tape's
length is fixed in the text; E600 otherwise)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hilbert.compiler import dtypes
from hilbert.grammar.errors import ArgumentError

if TYPE_CHECKING:
    from .api import Function

#: The formats `export` writes.
FORMATS = ("stablehlo",)


def export(function: Function, *shapes: tuple[int, ...], to: str = "stablehlo",
           dtype: str = "float64") -> str:
    """`function`'s program for argument `shapes` (one tuple of ints per parameter, `()` for
    a scalar) computing in `dtype`, as text in the format `to` (one of FORMATS)."""
    if to not in FORMATS:
        raise ArgumentError("E600", f"export to={to!r:.40}: the formats are "
                            f"{', '.join(FORMATS)}", function.entry.definition.span)
    return stablehlo(function, *shapes, dtype=dtype)


def stablehlo(function: Function, *shapes: tuple[int, ...], dtype: str = "float64") -> str:
    """The StableHLO text (an MLIR module whose `main` takes one tensor per parameter) of
    `function` for argument `shapes` and `dtype`: shapes that do not fit the function are the
    errors a call of those shapes raises (E600, E3xx); a function the export cannot write
    (above) is E600; the jax executor without jax is E600."""
    span = function.entry.definition.span
    dtype = dtypes.check_dtype(dtype, span)
    on_jax = function if function.executor == "jax" else function.using("jax")
    program = on_jax.program(tuple(shapes), dtype)
    return on_jax._coded(lambda: program.stablehlo(span), program.plan.signature, "exporting")
