"""A model's weights: private copies in the model's dtype (float64 or float32), shapes from the constructor's arguments, initial
values from the declarations' initialisers (draws seeded per weight), and the memory check made
before any array is allocated."""

from __future__ import annotations

import math
import zlib

import numpy as np

from hilbert.compiler import ir
from hilbert.compiler.evaluate import Host
from hilbert.compiler.models import CompiledModel, WeightDecl
from hilbert.compiler.ops.primitives import BY_OP
from hilbert.compiler.passes.shapes import describe_shape, infer_shapes
from hilbert.compiler.plan import memory_limit
from hilbert.compiler.plan.text import human_bytes
from hilbert.executor.numerics import quietly
from hilbert.grammar.errors import ModelError

#: The dtypes a model's weights may have (its train blocks take derivatives: real numbers).
MODEL_DTYPES = ("float32", "float64")


def _read_only(array: np.ndarray) -> np.ndarray:
    copy = _private(array, array.dtype)
    copy.flags.writeable = False
    return copy


def _private(value, dtype="float64") -> np.ndarray:
    """A fresh C-ordered copy of `value` in `dtype`: what a model holds is its own (nothing the
    caller keeps can change it) and already in the layout and dtype its programs take."""
    return np.array(value, dtype=dtype, order="C")


def model_dtype(model: CompiledModel, value) -> str:
    """`value` (a name, NumPy type or dtype) as a model's dtype, float32 or float64, or E801."""
    from hilbert.compiler.dtypes import check_dtype

    name = check_dtype(value, model.span)
    if name not in MODEL_DTYPES:
        raise ModelError("E801", f"a {model.name}'s weights are real numbers that train blocks "
                         f"differentiate: its dtype is float32 or float64, not {name}", model.span)
    return name


def _show(value: np.ndarray) -> str:
    if value.ndim:
        return f"array {'×'.join(map(str, value.shape))}"
    number = float(value)
    return str(int(number)) if number.is_integer() and abs(number) < 1e15 else f"{number:g}"


# -- initial weights -----------------------------------------------------------------------

def _initial(model: CompiledModel, w: WeightDecl, shape: tuple[int, ...],
             arguments: tuple[np.ndarray, ...], dtype: str = "float64") -> np.ndarray:
    """Evaluate `w`'s initialiser at its shape: draws take the shape, a scalar fills it. The
    weight is a private C-ordered copy in `dtype` (draws are made in float64 and rounded, so a
    float32 model starts from its float64 twin's weights), whatever layout or owner the
    initialiser's value has."""

    def give_shape(node: ir.Node, kids: tuple[ir.Node, ...]) -> ir.Node:
        node = ir.rebuild(node, kids)
        if isinstance(node, ir.Prim) and BY_OP[node.op].kind == "draw":
            return ir.Prim(node.op, node.args, (shape,), node.span)
        return node

    body = ir.transform(w.init, give_shape)
    infer_shapes(body, tuple(a.shape for a in arguments))
    wide = tuple(np.asarray(a, dtype=np.float64) for a in arguments)
    value = np.asarray(quietly(_Drawing(w.name).eval, body, {}, wide), dtype=np.float64)
    if value.ndim == 0:
        return np.full(shape, float(value), dtype=dtype)
    _check_shape(model, w, shape, value.shape, "from its initialiser")
    return _private(value, dtype)


def _shape(model: CompiledModel, w: WeightDecl, arguments: tuple[np.ndarray, ...]) -> tuple[int, ...]:
    return tuple(d if isinstance(d, int) else _dimension(model, w, d, arguments)
                 for d in w.dims)


def _dimension(model: CompiledModel, w: WeightDecl, name: str, arguments) -> int:
    value = arguments[model.params.index(name)]
    number = float(value) if value.ndim == 0 else math.nan
    if math.isfinite(number) and number >= 0 and number.is_integer():
        return int(number)
    got = _show(value) if value.ndim == 0 else describe_shape(value.shape)
    raise ModelError("E801", f"{model.name}'s {name} is a dimension of weight {w.name}, so it "
                     f"must be a whole number, at least 0, but it is {got}", w.span)


def _check_shape(model: CompiledModel, w: WeightDecl, shape, found: tuple[int, ...],
                 where: str) -> None:
    if tuple(found) != tuple(shape):
        raise ModelError("E801", f"weight {w.name} of {model.name} is declared "
                         f"{describe_shape(tuple(shape))}, but {where} it is "
                         f"{describe_shape(tuple(found))}", w.span)


class _Drawing(Host):
    """The host runtime (compiler/evaluate.py, as the reference executor runs it) with draws:
    `gaussian(s)` and `uniform(s)` in the initialiser of weight `name` are NumPy's
    `default_rng([s, crc32(name)])`'s standard_normal and random at the weight's shape. The same seed gives the same weights in every process; two weights
    drawn from one seed get different draws."""

    def __init__(self, name: str):
        super().__init__()
        self.name = name

    def prim(self, node: ir.Prim, args: list):
        if BY_OP[node.op].kind != "draw":
            return super().prim(node, args)
        rng = np.random.default_rng([_seed(node, args[0]), zlib.crc32(self.name.encode())])
        shape = node.attrs[0]
        return rng.standard_normal(shape) if node.op == "gaussian" else rng.random(shape)


def _seed(node: ir.Prim, value) -> int:
    number = float(value)
    if math.isfinite(number) and number >= 0 and number.is_integer():
        return int(number)
    raise ModelError("E801", f"{node.op}'s seed must be a whole number, at least 0, but it is "
                     f"{number:g}", node.span)


# -- the memory limit -------------------------------------------------------------------------

def _guard_memory(model: CompiledModel, shapes: dict[str, tuple[int, ...]], doing: str,
                  dtype: str = "float64") -> None:
    """E802 unless the arrays of `shapes` (labelled) in `dtype` fit the memory limit together;
    checked before anything is allocated, in Python integers (no overflow)."""
    sizes = {label: math.prod(shape) * np.dtype(dtype).itemsize
             for label, shape in shapes.items()}
    limit = memory_limit()
    if sum(sizes.values()) <= limit:
        return
    largest = max(sizes, key=sizes.__getitem__)
    shape = "×".join(map(str, shapes[largest])) or "scalar"
    raise ModelError("E802", f"{doing} would need {human_bytes(sum(sizes.values()))} of memory "
                     f"({largest} alone is {shape}, {human_bytes(sizes[largest])}), over the "
                     f"limit of {human_bytes(limit)} (set HILBERT_MEMORY_LIMIT to change it)",
                     _span_of(model, largest))


def _span_of(model: CompiledModel, label: str):
    """The span of the weight a label names, else the model's declaration."""
    kind, _, name = label.partition(" ")
    spans = {w.name: w.span for w in model.weights}
    return spans[name] if kind == "weight" and name in spans else model.span


def _arguments_text(model: CompiledModel, values: tuple[np.ndarray, ...]) -> str:
    return ", ".join(f"{p}={_show(v)}" for p, v in zip(model.params, values, strict=True))
