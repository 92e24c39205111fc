"""Model classes: a compiled `model … : Learner` as a Python class with weights, train and methods.

>>> mod = hilbert.load("examples/Perceptron.hb")          # doctest: +SKIP
>>> net = mod.Perceptron(2, 8, seed=7)                     # doctest: +SKIP
>>> net.train(x, y, 0.5, steps=500); net.loss(x, y)        # doctest: +SKIP
"""

from __future__ import annotations

import difflib
import inspect
import math
import numbers
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from hilbert.compiler import ir
from hilbert.compiler.driver import CompiledModule, annotate
from hilbert.compiler.models import STEPS, CompiledModel, Member, WeightDecl
from hilbert.compiler.primitives import BY_OP
from hilbert.compiler.shapes import describe_shape, infer_shapes
from hilbert.executor.reference import Reference
from hilbert.grammar.errors import HilbertError, ModelError, RuntimeHilbertError

from .api import Function
from .arguments import bind_arguments


class ModelUseError(ModelError, AttributeError):
    """E801 for a member a model does not have, or an attempt to set one from Python. It is
    also an AttributeError, so `hasattr(net, "nope")` is False and `getattr(…, default)` works."""


@dataclass(frozen=True, slots=True)
class _Signature:
    """What bind_arguments reads of an Entry: a name, parameter names, and a span holder."""

    name: str
    params: tuple[str, ...]
    definition: Any  # anything with a `.span`


def model_class(model: CompiledModel, module: CompiledModule, executor: str = "numba",
                optimize: str = "auto") -> type[Learner]:
    """The Python class of `model`: a Learner subclass with a property per weight and a
    method per train block and method. Call it once per module and keep it (the compiled
    programs are cached on the class, so every instance shares them).

    >>> Perceptron = model_class(compiled.models["Perceptron"], compiled)   # doctest: +SKIP
    >>> Perceptron(2, 8, seed=7).first.shape                                # doctest: +SKIP
    (2, 8)
    """
    members = {**model.trains, **model.methods}
    namespace: dict[str, Any] = {
        "_model": model,
        "_functions": {n: Function(m.entry, module, executor, optimize) for n, m in members.items()},
        "__doc__": _class_doc(model),
        "__qualname__": model.name,
        "__signature__": inspect.Signature(
            [inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in model.params]),
    }
    for w in model.weights:
        namespace[w.name] = _weight_property(w)
    for member in model.trains.values():
        namespace[member.name] = _train_method(model, member)
    for member in model.methods.values():
        namespace[member.name] = _method(model, member)
    return type(model.name, (Learner,), namespace)


def _class_doc(model: CompiledModel) -> str:
    head = f"model {model.name}({', '.join(model.params)}) : Learner  [at {model.span}]"
    return f"{head}\n\n{model.doc}" if model.doc else head


def _weight_property(w: WeightDecl) -> property:
    def get(self: Learner) -> np.ndarray:
        return _read_only(self._weights[w.name])

    def set_(self: Learner, value) -> None:
        raise ModelUseError("E801", f"weight {w.name} of {self._model.name} is read-only from "
                            "Python: train changes it, and load reads it from a file", w.span)

    dims = ", ".join(str(d) for d in w.dims)
    return property(get, set_, doc=f"weight {w.name} : Tensor[{dims}] (a read-only copy)")


def _read_only(array: np.ndarray) -> np.ndarray:
    copy = np.array(array, dtype=np.float64)
    copy.flags.writeable = False
    return copy


def _method(model: CompiledModel, member: Member):
    def method(self: Learner, *args, **kwargs):
        return _answer(self._execute(member, self._bind(member, args, kwargs)))

    return _dressed(method, model, member, [])


def _train_method(model: CompiledModel, member: Member):
    def train(self: Learner, *args, steps=1, **kwargs) -> None:
        values = self._bind(member, args, kwargs)
        count = _step_count(model, member, steps)
        state = self._execute(member, values + (np.array(float(count)),))
        for position, w in enumerate(model.weights, start=1):
            if w.name in member.assigned:
                self._weights[w.name] = np.array(state[position], dtype=np.float64)

    steps = inspect.Parameter(STEPS, inspect.Parameter.KEYWORD_ONLY, default=1)
    return _dressed(train, model, member, [steps])


def _dressed(function, model: CompiledModel, member: Member, extra: list[inspect.Parameter]):
    """`function` with the member's name, signature and `--` doc comment."""
    d = member.entry.definition
    function.__name__ = member.name
    function.__qualname__ = f"{model.name}.{member.name}"
    kind = "train block" if d.kind == "train" else "method"
    head = f"{model.name}.{member.name}({', '.join(member.params)})  [{kind} at {d.span}]"
    if d.kind == "train":
        head += (f"\n\nUpdates {', '.join(member.assigned) or 'no weights'}; "
                 f"{STEPS}=N runs N steps as one compiled loop.")
    function.__doc__ = f"{head}\n\n{d.doc}" if d.doc else head
    positional = inspect.Parameter.POSITIONAL_OR_KEYWORD
    function.__signature__ = inspect.Signature(
        [inspect.Parameter("self", positional)]
        + [inspect.Parameter(p, positional) for p in member.params] + extra)
    return function


def _answer(result):
    """A method's result as the API gives it: a float for a scalar, else a fresh array."""
    array = np.array(result, dtype=np.float64)
    return float(array) if array.ndim == 0 else array


def _step_count(model: CompiledModel, member: Member, steps) -> int:
    """`steps` as a whole number ≥ 0, or E500 naming the train block and the value."""
    number = float("nan")
    if isinstance(steps, numbers.Real) and not isinstance(steps, bool):
        number = float(steps)
    if math.isfinite(number) and number >= 0 and number.is_integer():
        return int(number)
    raise RuntimeHilbertError(
        "E500", f"{model.name}.{member.name}'s {STEPS} must be a whole number, at least 0, but "
        f"it was given {steps!r}", member.entry.definition.span)


class _Load:
    """`Model.load(path)` makes a new model from a file `save` wrote; `model.load(path)` reads
    the file into that model (arguments and weights both) and returns it."""

    def __get__(self, instance: Learner | None, owner: type[Learner]):
        def load(path: str | Path) -> Learner:
            return _read(owner, Path(path), instance)

        load.__doc__ = _Load.__doc__
        return load


class Learner:
    """The base of every model class. An instance holds its constructor arguments and its
    weights; train blocks replace the weights, methods read them. Weights and arguments are
    only ever replaced, never changed in place, so copies of a model may share arrays."""

    _model: ClassVar[CompiledModel]
    _functions: ClassVar[dict[str, Function]]
    _arguments: dict[str, np.ndarray]
    _weights: dict[str, np.ndarray]
    load = _Load()

    def __init__(self, *args, **kwargs):
        model = self._model
        values = bind_arguments(_Signature(model.name, model.params, model), args, kwargs)
        self._arguments = dict(zip(model.params, values, strict=True))
        self._weights = {w.name: _initial(model, w, values) for w in model.weights}

    # -- running members ---------------------------------------------------------------

    def _state(self) -> tuple[np.ndarray, ...]:
        """The leading arguments of every entry: weights, then constructor arguments."""
        weights = tuple(self._weights[w.name] for w in self._model.weights)
        return weights + tuple(self._arguments[p] for p in self._model.params)

    def _bind(self, member: Member, args: tuple, kwargs: dict) -> tuple[np.ndarray, ...]:
        name = f"{self._model.name}.{member.name}"
        own = bind_arguments(_Signature(name, member.params, member.entry.definition), args, kwargs)
        return self._state() + own

    def _execute(self, member: Member, values: tuple[np.ndarray, ...]):
        function = self._functions[member.name]
        program = function.program(tuple(v.shape for v in values))
        try:
            return program(values)
        except HilbertError as err:
            d = member.entry.definition
            raise annotate(err, function.module.resolved).with_note(
                f"while running {d.name}, defined at {d.span}, on {self!r}") from None

    # -- Python conveniences -----------------------------------------------------------

    @property
    def weights(self) -> dict[str, np.ndarray]:
        """Every weight by name, as read-only copies."""
        return {name: _read_only(value) for name, value in self._weights.items()}

    def parameters(self) -> int:
        """How many numbers the weights hold together (the model's parameter count)."""
        return sum(int(w.size) for w in self._weights.values())

    @property
    def arguments(self) -> dict[str, float | np.ndarray]:
        """The constructor's arguments by name (floats for numbers)."""
        return {p: _answer(v) for p, v in self._arguments.items()}

    def save(self, path: str | Path) -> Path:
        """Write the constructor arguments and the weights to an `.npz` file (`.npz` is added
        to a name without it, as NumPy does); returns the path written.

        >>> net.save("net.npz"); same = Perceptron.load("net.npz")    # doctest: +SKIP
        """
        data: dict[str, Any] = {"model": np.array(self._model.name)}
        data |= {f"argument.{p}": v for p, v in self._arguments.items()}
        data |= {f"weight.{n}": v for n, v in self._weights.items()}
        np.savez(path, **data)
        return Path(path) if str(path).endswith(".npz") else Path(f"{path}.npz")

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        model = self._model
        members = [w.name for w in model.weights] + list(model.trains) + list(model.methods)
        close = difflib.get_close_matches(name, members, n=3)
        hint = f"; did you mean {' or '.join(close)}?" if close else ""
        raise ModelUseError("E801", f"{model.name} has no method or weight called {name}{hint} "
                            f"(its members: {', '.join(members) or 'none'})", model.span)

    def __setattr__(self, name: str, value) -> None:
        if name.startswith("_") or isinstance(getattr(type(self), name, None), property):
            object.__setattr__(self, name, value)  # a weight's property refuses by itself
            return
        raise ModelUseError("E801", f"cannot set {name} on a {self._model.name}: a model's "
                            "state is its weights, changed by its train blocks",
                            self._model.span)

    def __repr__(self) -> str:
        arguments = ", ".join(f"{p}={_show(v)}" for p, v in self._arguments.items())
        weights = ", ".join(f"{n} {'×'.join(map(str, v.shape)) or 'scalar'}"
                            for n, v in self._weights.items())
        return f"<{self._model.name}({arguments}): {weights or 'no weights'}>"


def _show(value: np.ndarray) -> str:
    if value.ndim:
        return f"array {'×'.join(map(str, value.shape))}"
    number = float(value)
    return str(int(number)) if number.is_integer() and abs(number) < 1e15 else f"{number:g}"


# -- reading a saved model ---------------------------------------------------------------

def _read(cls: type[Learner], path: Path, into: Learner | None) -> Learner:
    model = cls._model
    try:
        with np.load(path, allow_pickle=False) as data:
            content = {key: np.array(data[key]) for key in data.files}
    except (OSError, ValueError, EOFError) as err:
        raise ModelError("E801", f"cannot read a saved {model.name} from {path}: {err}",
                         model.span) from None
    saved = str(content.pop("model", "nothing"))
    if saved != model.name:
        raise ModelError("E801", f"{path} holds a saved {saved}, not a {model.name}", model.span)
    arguments = _section(content, "argument", model.params, path, model)
    weights = _section(content, "weight", [w.name for w in model.weights], path, model)
    values = tuple(arguments[p] for p in model.params)
    for w in model.weights:
        _check_shape(model, w, _shape(model, w, values), weights[w.name], f"in {path}")
    target = into if into is not None else cls.__new__(cls)
    target._arguments = {p: np.asarray(v, dtype=np.float64) for p, v in arguments.items()}
    target._weights = {n: np.asarray(v, dtype=np.float64) for n, v in weights.items()}
    return target


def _section(content: dict, prefix: str, names, path: Path, model: CompiledModel) -> dict:
    found = {k.split(".", 1)[1]: v for k, v in content.items() if k.startswith(prefix + ".")}
    if set(found) != set(names):
        raise ModelError("E801", f"{path} has the {prefix}s {', '.join(sorted(found)) or 'none'}, "
                         f"but a {model.name} has {', '.join(names) or 'none'}", model.span)
    return found


# -- initial weights -----------------------------------------------------------------------

def _initial(model: CompiledModel, w: WeightDecl, arguments: tuple[np.ndarray, ...]) -> np.ndarray:
    """Evaluate `w`'s initialiser at its shape: draws take the shape, a scalar fills it."""
    shape = _shape(model, w, arguments)

    def give_shape(node: ir.Node, kids: tuple[ir.Node, ...]) -> ir.Node:
        node = ir.rebuild(node, kids)
        if isinstance(node, ir.Prim) and BY_OP[node.op].kind == "draw":
            return ir.Prim(node.op, node.args, (shape,), node.span)
        return node

    body = ir.transform(w.init, give_shape)
    infer_shapes(body, tuple(a.shape for a in arguments))
    value = np.asarray(_Drawing(w.name).run(body, arguments), dtype=np.float64)
    if value.ndim == 0:
        return np.full(shape, float(value))
    _check_shape(model, w, shape, value, "from its initialiser")
    return value


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


def _check_shape(model: CompiledModel, w: WeightDecl, shape, value: np.ndarray, where: str) -> None:
    if value.shape != tuple(shape):
        raise ModelError("E801", f"weight {w.name} of {model.name} is declared "
                         f"{describe_shape(tuple(shape))}, but {where} it is "
                         f"{describe_shape(value.shape)}", w.span)


class _Drawing(Reference):
    """The reference interpreter with draws: `gaussian(s)` and `uniform(s)` in the initialiser
    of weight `name` are NumPy's `default_rng([s, crc32(name)])`'s standard_normal and random
    at the weight's shape. The same seed gives the same weights in every process; two weights
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
