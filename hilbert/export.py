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
           dtype: str = "float64", dynamic: dict | None = None) -> str | bytes:
    """`function`'s program for argument `shapes` (one tuple of ints per parameter, `()` for
    a scalar) computing in `dtype`, in the format `to` (one of FORMATS): StableHLO text, or
    an ONNX model's bytes (`dynamic`: its axes written as named sizes, `onnx` below)."""
    if to not in FORMATS:
        raise ArgumentError("E600", f"export to={to!r:.40}: the formats are "
                            f"{', '.join(FORMATS)}", function.entry.definition.span)
    if to == "onnx":
        return onnx(function, *shapes, dtype=dtype, dynamic=dynamic).SerializeToString()
    if dynamic:
        raise ArgumentError("E600", "dynamic axes are written in ONNX exports (to=\"onnx\"); "
                            "a StableHLO export has the sizes it was given",
                            function.entry.definition.span)
    return stablehlo(function, *shapes, dtype=dtype)


def onnx(function: Function, *shapes: tuple[int, ...], dtype: str = "float64",
         fixed: tuple = (), dynamic: dict | None = None):
    """The ONNX model (an onnx.ModelProto: a graph named after the function, one input per
    parameter, its output `result`) of `function` for argument `shapes` and `dtype`: what the
    onnx executor runs; the first parameters' values `fixed` (a model's weights) written in
    it as initializers instead of inputs; `dynamic` ({parameter: {axis: name}}) the axes
    written as named sizes, where the graph does not depend on them (E600 where it does).
    What ONNX cannot carry yet (draws, `cumprod`, complex numbers) is E600 naming it; without
    the onnx extra, E600."""
    span = function.entry.definition.span
    dtype = dtypes.check_dtype(dtype, span)
    on_onnx = function if function.executor == "onnx" else function.using("onnx")
    if dynamic:
        from .executor.onnx.dynamic import dynamic_model

        sizes = _dynamic_sizes(function, shapes, dynamic, len(fixed))
        varied = [_model(on_onnx, _resized(shapes, function.entry.params, dynamic, each),
                         dtype, fixed)
                  for each in sizes]
        return on_onnx._coded(lambda: dynamic_model(varied, sizes, span), tuple(shapes),
                              "exporting")
    return _model(on_onnx, shapes, dtype, fixed)


def _model(on_onnx: Function, shapes, dtype: str, fixed: tuple):
    program = on_onnx.program(tuple(shapes), dtype)
    if not fixed:
        return program.model
    return on_onnx._coded(lambda: program.written(fixed), program.plan.signature, "exporting")


def _dynamic_sizes(function: Function, shapes, dynamic, fixed: int) -> list[dict[str, int]]:
    """The sizes of `dynamic`'s named axes at `shapes`, then at two other sizes each (n + 1
    and 2n + 3) that the graph is written again at; E600 for an axis that is not one."""
    params = function.entry.params
    span = function.entry.definition.span
    base: dict[str, int] = {}
    if not isinstance(dynamic, dict):
        raise ArgumentError("E600", "dynamic= takes {parameter: {axis: name}}, such as "
                            "{'x': {0: 'batch'}}", span)
    for param, axes in dynamic.items():
        if param not in params[fixed:] or not isinstance(axes, dict):
            raise ArgumentError("E600", f"dynamic={{{param!r:.40}: …}}: the parameters are "
                                f"{', '.join(params[fixed:])}, each given {{axis: name}}", span)
        shape = tuple(shapes[params.index(param)])
        for axis, name in axes.items():
            if not (isinstance(axis, int) and 0 <= axis < len(shape) and isinstance(name, str)
                    and name):
                raise ArgumentError("E600", f"dynamic axis {axis!r:.20} of {param} (shaped "
                                    f"{shape}): an axis is a number from 0 to {len(shape) - 1}"
                                    ", its name a string", span)
            if base.setdefault(name, shape[axis]) != shape[axis]:
                raise ArgumentError("E600", f"dynamic axis {name!r:.40} is {base[name]} long "
                                    f"in one parameter and {shape[axis]} in {param}: one name "
                                    "is one size", span)
    return [base, {n: v + 1 for n, v in base.items()}, {n: 2 * v + 3 for n, v in base.items()}]


def _resized(shapes, names, dynamic: dict, sizes: dict[str, int]) -> tuple:
    """`shapes` (of the parameters `names`) with the named axes `sizes` long."""
    return tuple(tuple(sizes.get(dynamic.get(p, {}).get(k), n) for k, n in enumerate(shape))
                 for p, shape in zip(names, shapes, strict=True))


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

    def export(self, /, *shapes, to: str = "stablehlo", dtype: str = "float64",
               dynamic: dict | None = None) -> str | bytes:
        """The program for these argument shapes (tuples of ints) lowered through JAX, as
        StableHLO text (`to="stablehlo"`) any XLA runtime can serve (docs/jax-executor.md),
        or as an ONNX model's bytes (`to="onnx"`, docs/onnx.md; `dynamic` as `onnx`)."""
        return export(self, *shapes, to=to, dtype=dtype, dynamic=dynamic)

    def onnx(self, /, *shapes, dtype: str = "float64", dynamic: dict | None = None):
        """The program for these argument shapes (tuples of ints) as an onnx.ModelProto
        (docs/onnx.md): `f.onnx((8, 4), (4, 2)).graph.node` lists its nodes;
        `dynamic={"x": {0: "batch"}}` writes x's first axis as the size `batch`, where the
        graph does not depend on it."""
        return onnx(self, *shapes, dtype=dtype, dynamic=dynamic)

    def graph(self, /, *shapes, dtype: str = "float64"):
        """The ONNX graph (an onnx.GraphProto named after the function: `.name`, `.node`) of
        the program for these argument shapes, every parameter a scalar when none are given
        (docs/onnx.md)."""
        return self.onnx(*(shapes or ((),) * self._arity), dtype=dtype).graph
