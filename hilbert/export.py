"""A function's program written out for another runtime: StableHLO text, through JAX
(docs/jax-executor.md, "Export"), or an ONNX model (docs/onnx.md). The program is the one the
jax (onnx) executor runs for those shapes and dtype (the plan's IR, its einsums along the
plan's paths), lowered by `jax.jit(…).lower(…)` and printed by MLIR (written as ONNX nodes,
executor/onnx/tracing.py): the same program gives the same text (bytes) in every process.

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
FORMATS = ("stablehlo", "onnx")


def export(function: Function, *shapes: tuple[int, ...], to: str = "stablehlo",
           dtype: str = "float64") -> str | bytes:
    """`function`'s program for argument `shapes` (one tuple of ints per parameter, `()` for
    a scalar) computing in `dtype`, in the format `to` (one of FORMATS): StableHLO text, or
    an ONNX model's bytes."""
    if to not in FORMATS:
        raise ArgumentError("E600", f"export to={to!r:.40}: the formats are "
                            f"{', '.join(FORMATS)}", function.entry.definition.span)
    if to == "onnx":
        return onnx(function, *shapes, dtype=dtype).SerializeToString()
    return stablehlo(function, *shapes, dtype=dtype)


def onnx(function: Function, *shapes: tuple[int, ...], dtype: str = "float64",
         fixed: tuple = ()):
    """The ONNX model (an onnx.ModelProto: a graph named after the function, one input per
    parameter, its output `result`) of `function` for argument `shapes` and `dtype`: what the
    onnx executor runs; the first parameters' values `fixed` (a model's weights) written in
    it as initializers instead of inputs. What ONNX cannot carry yet (draws, `cumprod`,
    complex numbers) is E600 naming it; without the onnx extra, E600."""
    span = function.entry.definition.span
    dtype = dtypes.check_dtype(dtype, span)
    on_onnx = function if function.executor == "onnx" else function.using("onnx")
    program = on_onnx.program(tuple(shapes), dtype)
    if not fixed:
        return program.model
    return on_onnx._coded(lambda: program.written(fixed), program.plan.signature, "exporting")


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


class Exports:
    """What a hilbert.Function writes out for another runtime (hilbert/api.py)."""

    _arity: int

    def export(self, /, *shapes, to: str = "stablehlo", dtype: str = "float64") -> str | bytes:
        """The program for these argument shapes (tuples of ints) lowered through JAX, as
        StableHLO text (`to="stablehlo"`) any XLA runtime can serve (docs/jax-executor.md),
        or as an ONNX model's bytes (`to="onnx"`, docs/onnx.md)."""
        return export(self, *shapes, to=to, dtype=dtype)

    def onnx(self, /, *shapes, dtype: str = "float64"):
        """The program for these argument shapes (tuples of ints) as an onnx.ModelProto
        (docs/onnx.md): `f.onnx((8, 4), (4, 2)).graph.node` lists its nodes."""
        return onnx(self, *shapes, dtype=dtype)

    def graph(self, /, *shapes, dtype: str = "float64"):
        """The ONNX graph (an onnx.GraphProto named after the function: `.name`, `.node`) of
        the program for these argument shapes, every parameter a scalar when none are given
        (docs/onnx.md)."""
        return self.onnx(*(shapes or ((),) * self._arity), dtype=dtype).graph
