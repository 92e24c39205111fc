"""What each op means in ONNX: compiler/ops/meanings.py's NumPy meanings, op by op, as ONNX
nodes (`MEANINGS`), and the ops not written in ONNX yet with the reason (`REFUSED`); both are
keyed by the op table's names (compiler/ops/primitives.py), and tests/test_onnx_export.py
checks that every op reaching an executor is in one of them. `MEANINGS[op](node, args, run)`
gives the value of an op node from its arguments' values (graph tensors, or host numbers the
trace knows from shapes and constants); `run` is the trace (executor/onnx/tracing.py), whose
`graph` the nodes go to.

An exported program has no host to raise on: x[t] at a computed position, oneHot's labels
and take's positions are read as they are (onnxruntime refuses a position outside the axis),
as the StableHLO export leaves them unchecked (hilbert/export.py)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...compiler import ir
from ...compiler.ops import meanings as host
from ...compiler.ops.primitives import BY_OP
from .graph import Graph, Tensor

#: An ONNX meaning: the value of an op node from its arguments' values and the trace.
Meaning = Callable[[ir.Prim, list, object], object]
_I64 = np.dtype(np.int64)


def _kind(args: list) -> np.dtype:
    """The dtype an op of these arguments computes in: its tensors' (a host number takes
    theirs, as a Python number does in NumPy)."""
    kinds = [a.dtype for a in args if isinstance(a, Tensor)]
    return np.result_type(*kinds) if kinds else np.result_type(*map(np.asarray, args))


def _tensors(g: Graph, args: list) -> list[Tensor]:
    kind = _kind(args)
    return [g.tensor(a, kind) for a in args]


def _shape(*values) -> tuple[int, ...]:
    return tuple(np.broadcast_shapes(*(np.shape(v) for v in values)))


def _op(g: Graph, name: str, args: list, **attributes) -> Tensor:
    """An entrywise node `name` over `args` (broadcast), in their common dtype."""
    tensors = _tensors(g, args)
    return g.emit(name, tensors, _shape(*tensors), tensors[0].dtype, **attributes)


def _test(g: Graph, name: str, args: list) -> Tensor:
    """A comparison as ONNX makes it: a bool tensor."""
    tensors = _tensors(g, args)
    return g.emit(name, tensors, _shape(*tensors), np.bool_)


def _where(g: Graph, test: Tensor, yes, no) -> Tensor:
    kind = _kind([yes, no])
    yes, no = g.tensor(yes, kind), g.tensor(no, kind)
    return g.emit("Where", [test, yes, no], _shape(test, yes, no), kind)


# ---------------------------------------------------------------- arithmetic

def _entrywise(name: str) -> Meaning:
    return lambda node, args, run: _op(run.graph, name, args)


def _as_it_is(node, args, run):
    return args[0]  # (conj and re of a real value: the value)


def imaginary(node, args, run):
    return np.zeros(np.shape(args[0]), _kind(args))


def raised(node, args, run):
    """x ^ y as meanings.power: NumPy's np.power of each pair of scalars, whose exponents −1,
    ½ and 2 are 1/x, √x and x·x (C's pow otherwise)."""
    g, (x, y) = run.graph, args
    if not isinstance(y, Tensor) and np.ndim(y) == 0:  # a constant exponent: one way
        if float(y) == 0.0 and isinstance(x, Tensor):
            return g.ones_like(x, _kind(args))  # (x ^ 0 is 1 for every x, NaN included)
        ways = {2.0: lambda: _op(g, "Mul", [x, x]), 0.5: lambda: _op(g, "Sqrt", [x]),
                -1.0: lambda: _op(g, "Div", [np.ones((), _kind(args)), x])}
        return ways.get(float(y), lambda: _op(g, "Pow", [x, y]))()
    x, y = _tensors(g, [x, y])
    value = _op(g, "Pow", [x, y])
    for exponent, way in ((-1.0, lambda: _op(g, "Div", [np.ones((), x.dtype), x])),
                          (0.5, lambda: _op(g, "Sqrt", [x])), (2.0, lambda: _op(g, "Mul", [x, x]))):
        value = _where(g, _test(g, "Equal", [y, np.asarray(exponent, x.dtype)]), way(), value)
    return value


def _divmod(g: Graph, a, b) -> tuple[Tensor, Tensor]:
    """NumPy's divmod of real a, b (the floor quotient, the remainder with the sign of b;
    a / b and C's fmod where b is 0), from C's fmod as NumPy computes it."""
    a, b = _tensors(g, [a, b])
    zero = np.zeros((), a.dtype)
    mod = _op(g, "Mod", [a, b], fmod=1)
    fix = g.emit("And", [g.emit("Not", [_test(g, "Equal", [mod, zero])], mod.shape, np.bool_),
                         _test(g, "Xor", [_test(g, "Less", [b, zero]),
                                          _test(g, "Less", [mod, zero])])], mod.shape, np.bool_)
    div = _op(g, "Div", [_op(g, "Sub", [a, mod]), b])
    div = _where(g, fix, _op(g, "Sub", [div, np.ones((), a.dtype)]), div)
    floor = _op(g, "Floor", [div])
    up = _test(g, "Greater", [_op(g, "Sub", [div, floor]), np.asarray(0.5, a.dtype)])
    floor = _where(g, up, _op(g, "Add", [floor, np.ones((), a.dtype)]), floor)
    by_zero = _test(g, "Equal", [b, zero])
    quotient = _where(g, by_zero, _op(g, "Div", [a, b]), floor)
    return quotient, _where(g, fix, _op(g, "Add", [mod, b]), mod)


def remainder(node, args, run):
    return _divmod(run.graph, *args)[1]


def floor_quotient(node, args, run):
    return _divmod(run.graph, *args)[0]


def _compared(name: str, negated: bool = False) -> Meaning:
    def meaning(node, args, run):
        g = run.graph
        test = _test(g, name, args)
        if negated:
            test = g.emit("Not", [test], test.shape, np.bool_)
        return g.cast(test, np.dtype(host.real_type(args[0])))
    return meaning


def _reduced(name: str) -> Meaning:
    """A reduction along the op's axis; ReduceMax and ReduceMin give NaN where the values
    reduced hold one, as NumPy's maximum and minimum do (onnxruntime's skip it)."""
    def meaning(node, args, run):
        g = run.graph
        x, axis = g.tensor(args[0]), node.attrs[0]
        shape = x.shape[:axis] + x.shape[axis + 1:]
        axes = g.tensor([axis], _I64)
        value = g.emit(name, [x, axes], shape, x.dtype, keepdims=0)
        if name not in ("ReduceMax", "ReduceMin"):
            return value
        holes = g.emit("ReduceMax", [g.cast(g.emit("IsNaN", [x], x.shape, np.bool_), x.dtype),
                                     axes], shape, x.dtype, keepdims=0)
        return _where(g, _test(g, "Greater", [holes, np.zeros((), x.dtype)]),
                      np.asarray(np.nan, x.dtype), value)
    return meaning


def running_sum(node, args, run):
    x = run.graph.tensor(args[0])
    return run.graph.emit("CumSum", [x, run.graph.tensor(node.attrs[0], _I64)], x.shape, x.dtype)


def _on_the_host(node, args, run):
    """An op that reads its argument's shape only (rows, positions, coordinate): its NumPy
    meaning, a constant of the graph."""
    return np.asarray(BY_OP[node.op].meaning(node, args))


# ---------------------------------------------------------------- reads by position

def _position(g: Graph, value, where: ir.Prim, size: int):
    """A position read from `value`: a host number checked as a call checks it (E510), or a
    computed one made int64."""
    if isinstance(value, Tensor):
        return g.cast(value, _I64)
    return np.asarray(host.position(where, value, size), _I64)


def indexed(node, args, run):
    g, x = run.graph, run.graph.tensor(args[0])
    at = _position(g, args[1], node, x.shape[0])
    return g.emit("Gather", [x, at], x.shape[1:], x.dtype, axis=0)


def _slice(g: Graph, x: Tensor, axis: int, start: int, stop: int) -> Tensor:
    shape = list(x.shape)
    shape[axis] = len(range(*slice(start, stop).indices(x.shape[axis])))
    return g.emit("Slice", [x, g.tensor([start], _I64), g.tensor([stop], _I64),
                            g.tensor([axis], _I64)], shape, x.dtype)


def sliced(node, args, run):
    x, start, stop = args
    if isinstance(start, Tensor) or isinstance(stop, Tensor):
        run.refuse(node, "a slice whose bounds are computed from values (ONNX's shapes are "
                   "fixed when the graph is written)")
    return _slice(run.graph, run.graph.tensor(x), 0, int(start), int(stop))


def joined(node, args, run):
    tensors = _tensors(run.graph, args)
    axis = node.attrs[0]
    shape = list(tensors[0].shape)
    shape[axis] += tensors[1].shape[axis]
    return run.graph.emit("Concat", tensors, shape, tensors[0].dtype, axis=axis)


def encoded(node, args, run):
    """oneHot(labels, k): 1 where a label equals the position along the new last axis."""
    g, labels, classes = run.graph, run.graph.tensor(args[0]), int(args[1])
    column = g.emit("Unsqueeze", [labels, g.tensor([-1], _I64)], labels.shape + (1,),
                    labels.dtype)
    test = _test(g, "Equal", [column, np.arange(classes, dtype=labels.dtype)])
    return g.cast(test, np.dtype(host.real_type(labels)))


def taken(node, args, run):
    """take(x, at)[axis, coef, const]: x at the s along `axis` with coef·s + const = at,
    zeros where there is none (meanings.take)."""
    g, (axis, coef, const) = run.graph, node.attrs
    x, at = g.tensor(args[0]), args[1]
    shape = x.shape[:axis] + x.shape[axis + 1:]
    if x.shape[axis] == 0:
        return np.zeros(shape, x.dtype)
    if not isinstance(at, Tensor):  # (known from shapes: the read, or zeros, chosen now)
        s = (float(at) - const) * coef
        if 0 <= s < x.shape[axis] and s == np.floor(s) and coef * s + const == float(at):
            return g.emit("Gather", [x, np.asarray(int(s), _I64)], shape, x.dtype, axis=axis)
        return np.zeros(shape, x.dtype)
    value = g.cast(at, np.dtype(np.float64))
    s = _op(g, "Mul", [_op(g, "Sub", [value, np.float64(const)]), np.float64(coef)])
    tests = [_test(g, "GreaterOrEqual", [s, np.float64(0)]),
             _test(g, "Less", [s, np.float64(x.shape[axis])]),
             _test(g, "Equal", [_op(g, "Floor", [s]), s]),
             _test(g, "Equal", [_op(g, "Add", [_op(g, "Mul", [s, np.float64(coef)]),
                                               np.float64(const)]), value])]
    found = tests[0]
    for test in tests[1:]:
        found = g.emit("And", [found, test], found.shape, np.bool_)
    where = g.cast(_where(g, found, s, np.float64(0)), _I64)
    read = g.emit("Gather", [x, where], shape, x.dtype, axis=axis)
    return _where(g, found, read, np.zeros((), x.dtype))


def shifted(node, args, run):
    """shift(x, w1, …)[axis, coefs, const]: x read along `axis` at const + Σ coefs·(new
    indices, appended last), zero outside x: the positions known from shapes, one Gather."""
    g, x = run.graph, run.graph.tensor(args[0])
    sizes = [np.shape(w)[0] for w in args[1:]]
    axis, coefs, const = node.attrs
    index, valid = host.shift_positions(sizes, x.shape[axis], coefs, const)
    read_shape = x.shape[:axis] + tuple(sizes) + x.shape[axis + 1:]
    read = g.emit("Gather", [x, index.astype(_I64)], read_shape, x.dtype, axis=axis)
    news = list(range(axis, axis + len(sizes)))
    order = [d for d in range(len(read_shape)) if d not in news] + news
    if order != sorted(order):
        read = g.emit("Transpose", [read], [read_shape[d] for d in order], x.dtype, perm=order)
    if valid.all():  # (every position inside x: nothing to zero)
        return read
    mask = valid.reshape((1,) * (read.ndim - len(sizes)) + valid.shape)
    return _where(g, g.tensor(mask), read, np.zeros((), x.dtype))


# ---------------------------------------------------------------- what derivatives are made of

def summed_to(node, args, run):
    g, like = run.graph.tensor(args[0]), args[1]
    if g.shape == tuple(np.shape(like)):
        return g
    return run.graph.emit("ReduceSum", [g], (), g.dtype, keepdims=0)


def spread(node, args, run):
    g, shape = run.graph, tuple(np.shape(args[1]))
    x, axis = g.tensor(args[0]), node.attrs[0]
    wide = g.emit("Unsqueeze", [x, g.tensor([axis], _I64)],
                  x.shape[:axis] + (1,) + x.shape[axis:], x.dtype)
    return g.expand(wide, shape)


def placed(node, args, run):
    """place(g, like, t): zeros shaped like `like` with g at row t (or from row t on, a
    block): g padded with zeros, t rows before it (a computed t: the pads computed)."""
    graph, like, start = run.graph, args[1], args[2]
    kind = _kind([args[0], like])
    x = graph.tensor(args[0], kind)
    if not node.attrs[0]:
        x = graph.emit("Unsqueeze", [x, graph.tensor([0], _I64)], (1,) + x.shape, kind)
    shape = tuple(np.shape(like))
    rest = [0] * (len(shape) - 1)
    if isinstance(start, Tensor):
        at = graph.emit("Reshape", [graph.cast(start, _I64), graph.tensor([1], _I64)], (1,),
                        _I64)
        after = _op(graph, "Sub", [np.asarray([shape[0] - x.shape[0]], _I64), at])
        pads = graph.emit("Concat", [at, np.asarray(rest, _I64), after, np.asarray(rest, _I64)],
                          (2 * len(shape),), _I64, axis=0)
    else:
        at = int(start)
        pads = graph.tensor([at, *rest, shape[0] - at - x.shape[0], *rest], _I64)
    return graph.emit("Pad", [x, pads], shape, kind)


def cut(node, args, run):
    g, a = run.graph.tensor(args[0]), args[1]
    axis, which = node.attrs
    split = np.shape(a)[axis]
    start, stop = (0, split) if which == 0 else (split, g.shape[axis])
    return _slice(run.graph, g, axis, start, stop)


def adjoint(node, args, run):
    return args[1]


#: Every op's ONNX meaning, by the op table's names.
MEANINGS: dict[str, Meaning] = {
    **{op: _entrywise(name) for op, name in [
        ("exp", "Exp"), ("ln", "Log"), ("sqrt", "Sqrt"), ("tanh", "Tanh"), ("sin", "Sin"),
        ("cos", "Cos"), ("tan", "Tan"), ("abs", "Abs"), ("floor", "Floor"), ("erf", "Erf"),
        ("neg", "Neg"), ("max", "Max"), ("min", "Min"), ("add", "Add"), ("sub", "Sub"),
        ("mul", "Mul"), ("div", "Div")]},
    "conj": _as_it_is, "re": _as_it_is, "im": imaginary, "pow": raised,
    "mod": remainder, "floordiv": floor_quotient,
    **{op: _compared(name, op == "ne") for op, name in [
        ("eq", "Equal"), ("ne", "Equal"), ("lt", "Less"), ("gt", "Greater"),
        ("le", "LessOrEqual"), ("ge", "GreaterOrEqual")]},
    **{op: _reduced(name) for op, name in [
        ("maximum", "ReduceMax"), ("minimum", "ReduceMin"), ("product", "ReduceProd"),
        ("sumalong", "ReduceSum")]},
    "cumsum": running_sum,
    "rows": _on_the_host, "columns": _on_the_host, "positions": _on_the_host,
    "coordinate": _on_the_host,
    "oneHot": encoded, "concat": joined, "index": indexed, "slice": sliced, "take": taken,
    "shift": shifted, "sumto": summed_to, "spread": spread, "place": placed, "cut": cut,
    "gradient": adjoint,
}

_DRAWS = ("a counter-based draw: ONNX's RandomUniform and RandomNormal are not hilbert's "
          "draws bit for bit, and its integers have no 64-bit counter arithmetic written yet")
#: The ops not written in ONNX yet, and why: a program reading one is E600, naming it.
REFUSED: dict[str, str] = {
    "keyeduniform": _DRAWS, "keyedgaussian": _DRAWS, "permutation": _DRAWS,
    "cumprod": "a running product: ONNX has a running sum (CumSum) but no running product",
    "productadjoint": "the adjoint of a running product (a scan backwards): ONNX has no "
                      "running product",
}
