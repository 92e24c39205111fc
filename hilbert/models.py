"""Model classes: a compiled `model … : Learner` as a Python class with weights, train and methods.

>>> mod = hilbert.load("examples/Perceptron.hb")          # doctest: +SKIP
>>> net = mod.Perceptron(2, 8, seed=7)                     # doctest: +SKIP
>>> net.train(x, y, 0.5, steps=500); net.loss(x, y)        # doctest: +SKIP
"""

from __future__ import annotations

import copy
import copyreg
import dataclasses
import difflib
import inspect
import math
import numbers
import os
import threading
import uuid
import weakref
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from hilbert.compiler import ir
from hilbert.compiler.driver import CompiledModule, annotate, compile_module
from hilbert.compiler.models import STEPS, CompiledModel, Member, WeightDecl
from hilbert.compiler.modules import PRELUDE, Loader, SourceModule
from hilbert.compiler.parsed import parse_module
from hilbert.compiler.plan import memory_limit
from hilbert.compiler.plan_text import human_bytes
from hilbert.compiler.primitives import BY_OP
from hilbert.compiler.shapes import describe_shape, infer_shapes
from hilbert.executor.reference import Reference
from hilbert.grammar.errors import HilbertError, ModelError, RuntimeHilbertError, internal_error
from hilbert.grammar.syntax import Open

from .api import Function, Module
from .arguments import bind_arguments
from .progress import run_in_chunks


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
        "_module": module,
        "_executor": executor,
        "_optimize": optimize,
        "_source": None,  # what a pickle carries, made at the first pickle (see ModelSource)
        "_functions": _Functions(members, module, executor, optimize),
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


class _Functions(dict):
    """A model class's Function per member, made when the member is first used (its entry is
    inlined and optimised then: compiler/models.py, Member)."""

    def __init__(self, members: dict[str, Member], module: CompiledModule, executor: str,
                 optimize: str):
        super().__init__()
        self._members = members
        self._made = (module, executor, optimize)
        self._lock = threading.Lock()

    def __missing__(self, name: str) -> Function:
        member = self._members[name]  # (a KeyError for a name that is no member)
        try:
            entry = member.entry
        except (HilbertError, MemoryError):
            raise
        except Exception as err:  # a bug of hilbert's: E900, never a bare traceback
            raise internal_error(err, member.span, f"compiling {member.name}") from err
        with self._lock:
            return self.setdefault(name, Function(entry, *self._made))


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
    copy = _private(array)
    copy.flags.writeable = False
    return copy


def _private(value) -> np.ndarray:
    """A fresh C-ordered float64 copy of `value`: what a model holds is its own (nothing the
    caller keeps can change it) and already in the layout compiled code takes."""
    return np.array(value, dtype=np.float64, order="C")


def _method(model: CompiledModel, member: Member):
    def method(self: Learner, *args, **kwargs):
        own = self._bind(member, args, kwargs)
        with self._lock:  # a snapshot: every weight as one train call left it
            state = self._state()
        return _answer(self._execute(member, state + own))

    return _dressed(method, model, member, [])


def _train_method(model: CompiledModel, member: Member):
    def train(self: Learner, *args, steps=1, **kwargs) -> None:
        own = self._bind(member, args, kwargs)
        count = _step_count(model, member, steps)
        with self._lock:  # read, step and write as one: calls from two threads both count
            state, weights = self._state(), len(model.weights)

            def run(chunk: int) -> None:  # `chunk` steps from `state`; its weights move on
                nonlocal state
                final = self._execute(member, state + own + (np.array(float(chunk)),))
                state = tuple(_private(w) for w in final[1:1 + weights]) + state[weights:]

            run_in_chunks(count, run, f"{model.name}.{member.name}")  # progress between chunks
            new = {w.name: state[position]
                   for position, w in enumerate(model.weights) if w.name in member.assigned}
            self._weights = self._weights | new  # replaced whole, never changed in place

    steps = inspect.Parameter(STEPS, inspect.Parameter.KEYWORD_ONLY, default=1)
    return _dressed(train, model, member, [steps])


def _dressed(function, model: CompiledModel, member: Member, extra: list[inspect.Parameter]):
    """`function` with the member's name, signature and `--` doc comment."""
    function.__name__ = member.name
    function.__qualname__ = f"{model.name}.{member.name}"
    kind = "train block" if member.kind == "train" else "method"
    head = f"{model.name}.{member.name}({', '.join(member.params)})  [{kind} at {member.span}]"
    if member.kind == "train":
        head += (f"\n\nUpdates {', '.join(member.assigned) or 'no weights'}; "
                 f"{STEPS}=N runs N steps as one compiled loop.")
    function.__doc__ = f"{head}\n\n{member.doc}" if member.doc else head
    positional = inspect.Parameter.POSITIONAL_OR_KEYWORD
    function.__signature__ = inspect.Signature(
        [inspect.Parameter("self", positional)]
        + [inspect.Parameter(p, positional) for p in member.params] + extra)
    return function


def _answer(result):
    """A method's result as the API gives it: a float for a scalar, else a fresh array; a
    tuple of those for a tuple."""
    if isinstance(result, tuple):
        return tuple(_answer(r) for r in result)
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
        f"it was given {steps!r}", member.span)


class _Load:
    """`Model.load(path)` makes a new model from a file `save` wrote; `model.load(path)` reads
    the file into that model (arguments and weights both) and returns it."""

    def __get__(self, instance: Learner | None, owner: type[Learner]):
        def load(path: str | os.PathLike) -> Learner:
            return _read(owner, path, instance)

        load.__doc__ = _Load.__doc__
        return load


class Learner:
    """The base of every model class. An instance holds its constructor arguments and its
    weights, as private C-ordered float64 arrays; train blocks replace the weights, methods
    read them. The dicts holding them are only ever replaced whole, never changed in place, so
    copies of a model may share arrays. One lock per instance makes each train call one
    read-step-write and gives each method a snapshot of the weights between train calls."""

    _model: ClassVar[CompiledModel]
    _module: ClassVar[CompiledModule]
    _executor: ClassVar[str]
    _optimize: ClassVar[str]
    _source: ClassVar[ModelSource | None]
    _functions: ClassVar[dict[str, Function]]
    _arguments: dict[str, np.ndarray]
    _weights: dict[str, np.ndarray]
    _lock: threading.RLock
    load = _Load()

    def __init__(self, *args, **kwargs):
        model = self._model
        bound = bind_arguments(_Signature(model.name, model.params, model), args, kwargs)
        values = tuple(_private(v) for v in bound)
        shapes = {w.name: _shape(model, w, values) for w in model.weights}
        _guard_memory(model, {f"weight {n}": s for n, s in shapes.items()},
                      f"{model.name}({_arguments_text(model, values)})")
        self._lock = threading.RLock()
        self._arguments = dict(zip(model.params, values, strict=True))
        self._weights = {w.name: _initial(model, w, shapes[w.name], values) for w in model.weights}

    def __getstate__(self) -> dict:
        """What copies and pickles keep: the arguments and the weights as one train call left
        them (never the lock: each copy gets its own, so copies train apart)."""
        with self._lock:
            return {k: v for k, v in self.__dict__.items() if k != "_lock"}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.RLock()

    def __copy__(self) -> Learner:
        return _restored(type(self), self.__getstate__())

    def __deepcopy__(self, memo: dict) -> Learner:
        return _restored(type(self), copy.deepcopy(self.__getstate__(), memo))

    def __reduce__(self):
        """A pickle carries the model's source (every module it was compiled from, as text),
        its executor and path optimiser, its arguments and its weights; unpickling compiles
        the source again (compiled code is never pickled). See docs/models.md, "Pickling"."""
        cls = type(self)
        if "_model" not in cls.__dict__:  # a subclass written in Python: by name, as usual
            return copyreg.__newobj__, (cls,), self.__getstate__()
        return _unpickled, (cls._carried(), self.__getstate__())

    @classmethod
    def _carried(cls) -> ModelSource:
        """What a pickle of this class's models carries, made once per class."""
        source = cls._source
        if source is None:
            source = ModelSource(module_source(cls._module), cls._model.name, cls._executor,
                                 cls._optimize, uuid.uuid4().hex)
            with _SOURCES_LOCK:  # unpickled in this process, it is of this very class
                _CLASSES.setdefault(source, cls)
                _TOKENS[source.token] = cls
            cls._source = source
        return source

    # -- running members ---------------------------------------------------------------

    def _state(self) -> tuple[np.ndarray, ...]:
        """The leading arguments of every entry: weights, then constructor arguments."""
        weights = tuple(self._weights[w.name] for w in self._model.weights)
        return weights + tuple(self._arguments[p] for p in self._model.params)

    def _bind(self, member: Member, args: tuple, kwargs: dict) -> tuple[np.ndarray, ...]:
        """The member's own arguments (what Python passed), converted."""
        name = f"{self._model.name}.{member.name}"
        return bind_arguments(_Signature(name, member.params, member), args, kwargs)

    def _execute(self, member: Member, values: tuple[np.ndarray, ...]):
        function = self._functions[member.name]
        shapes = tuple(v.shape for v in values)
        made = function.plans_made
        program = function.program(shapes)
        if function.plans_made != made:  # a new signature: build what its call waits for
            function._first_call(program, shapes)
        try:
            result = program(values)
            object.__setattr__(self, "_tier", getattr(program, "tier", None))
            return result
        except HilbertError as err:
            d = member.entry.definition
            raise annotate(err, function.module.resolved).with_note(
                f"while running {d.name}, defined at {d.span}, on {self!r}") from None
        except MemoryError:
            raise
        except Exception as err:  # a bug of hilbert's: E900, never a bare traceback
            d = member.entry.definition
            raise internal_error(err, d.span, f"running {d.name}") from err

    # -- Python conveniences -----------------------------------------------------------

    @property
    def tier(self) -> str | None:
        """The tier this model's latest call (a method, or a train call) ran on: on the numba
        executor "host" or "compiled", as `Function.tier` says; None before its first call and
        on other executors."""
        return getattr(self, "_tier", None)

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

    def save(self, path: str | os.PathLike) -> Path:
        """Write the constructor arguments and the weights to an `.npz` file (`.npz` is added
        to a name without it, as NumPy does); returns the path written.

        >>> net.save("net.npz"); same = Perceptron.load("net.npz")    # doctest: +SKIP
        """
        model = self._model
        target = _file_name(model, path, "save to")
        target = target if target.name.endswith(".npz") else Path(f"{target}.npz")  # as NumPy does
        with self._lock:
            data: dict[str, Any] = {"model": np.array(model.name)}
            data |= {f"argument.{p}": v for p, v in self._arguments.items()}
            data |= {f"weight.{n}": v for n, v in self._weights.items()}
        try:
            np.savez(target, **data)
        except OSError as err:
            raise ModelError("E801", f"cannot save {model.name} to {target}: "
                             f"{err.strerror or err}", model.span) from None
        return target

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

#: The array kinds a saved argument or weight may have: booleans, integers and floats, read as
#: float64 like arguments from Python. Complex numbers, text, dates and objects are refused.
_NUMBER_KINDS = "biuf"
#: How a message names the kinds refused (NumPy's dtype.kind letters).
_KIND_WORDS = {"c": "complex numbers", "U": "text", "S": "bytes", "O": "Python objects",
               "M": "dates", "m": "time spans", "V": "records"}


def _read(cls: type[Learner], path, into: Learner | None) -> Learner:
    """The model saved at `path`, read into `into` (or a new instance). Everything is checked
    (the archive, the model's name, which arrays there are, their kinds and shapes, the
    memory they need) before any weight is read, and before `into` changes."""
    model = cls._model
    where = _file_name(model, path, "load from")
    with _reading(model, where):
        with zipfile.ZipFile(where) as archive:
            saved = _SavedModel(model, where, archive)
            arguments = {p: _private(saved.read(f"argument.{p}")) for p in model.params}
            values = tuple(arguments[p] for p in model.params)
            shapes = {w.name: _shape(model, w, values) for w in model.weights}
            _guard_memory(model, {f"weight {n}": s for n, s in shapes.items()},
                          f"loading {model.name} from {where}")
            weights = {w.name: _private(saved.weight(w, shapes[w.name])) for w in model.weights}
    target = into if into is not None else cls.__new__(cls)
    if into is None:
        target._lock = threading.RLock()
    with target._lock:
        target._arguments, target._weights = arguments, weights
    return target


def _file_name(model: CompiledModel, path, doing: str) -> Path:
    if isinstance(path, (str, os.PathLike)):
        try:
            return Path(path)
        except TypeError:  # a PathLike that gives bytes
            pass
    raise ModelError("E801", f"cannot {doing} {path!r:.60}: give a file name (a str or a "
                     "pathlib.Path)", model.span)


@contextmanager
def _reading(model: CompiledModel, path: Path) -> Iterator[None]:
    """What can go wrong reading a file, as E801: it is missing, a directory, unreadable, not
    a zip archive, truncated or corrupt, or holds arrays NumPy cannot read without pickles."""
    try:
        yield
    except (OSError, EOFError, ValueError, zipfile.BadZipFile, zlib.error,
            NotImplementedError, RuntimeError) as err:
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        if isinstance(err, zipfile.BadZipFile):
            reason = f"it is not a complete .npz archive ({err})"
        raise ModelError("E801", f"cannot read a saved {model.name} from {path}: {reason}",
                         model.span) from None


class _SavedModel:
    """An archive `save` wrote, checked from its arrays' headers: it names `model`, holds
    exactly its arguments and weights, and every one of them is numbers (no data read yet)."""

    def __init__(self, model: CompiledModel, path: Path, archive: zipfile.ZipFile):
        self.model = model
        self.path = path
        self.archive = archive
        self.members = {n.removesuffix(".npy"): n for n in archive.namelist() if n.endswith(".npy")}
        self.headers = {key: _header(archive, member) for key, member in self.members.items()}
        self.check_name()
        self.check_section("argument", model.params)
        self.check_section("weight", [w.name for w in model.weights])
        _guard_memory(model, {f"argument {k.split('.', 1)[1]}": self.headers[k][0]
                              for k in self.headers if k.startswith("argument.")},
                      f"loading {model.name} from {path}")

    def error(self, message: str) -> ModelError:
        return ModelError("E801", f"{self.path} {message}", self.model.span)

    def check_name(self) -> None:
        shape, dtype = self.headers.get("model", (None, None))
        if shape != () or dtype is None or dtype.kind != "U":
            raise self.error("is not a saved model: it has no model name (save writes one)")
        saved = str(self.read("model")[()])
        if saved != self.model.name:
            raise self.error(f"holds a saved {saved:.60}, not a {self.model.name}")

    def check_section(self, prefix: str, names) -> None:
        found = [k.split(".", 1)[1] for k in self.headers if k.startswith(prefix + ".")]
        if set(found) != set(names):
            raise self.error(f"has the {prefix}s {', '.join(sorted(found)) or 'none'}, but a "
                             f"{self.model.name} has {', '.join(names) or 'none'}")
        for name in found:
            dtype = self.headers[f"{prefix}.{name}"][1]
            if dtype.kind not in _NUMBER_KINDS:
                raise self.error(f"has {prefix} {name} holding {_KIND_WORDS.get(dtype.kind, 'data')} "
                                 f"({dtype}), but arguments and weights are real numbers "
                                 "(booleans, integers or floats)")

    def weight(self, w: WeightDecl, shape: tuple[int, ...]) -> np.ndarray:
        """Weight `w`, once its saved shape is the one its declaration gives."""
        _check_shape(self.model, w, shape, self.headers[f"weight.{w.name}"][0], f"in {self.path}")
        return self.read(f"weight.{w.name}")

    def read(self, key: str) -> np.ndarray:
        with self.archive.open(self.members[key]) as stream:
            return np.lib.format.read_array(stream, allow_pickle=False)


def _header(archive: zipfile.ZipFile, member: str) -> tuple[tuple[int, ...], np.dtype]:
    with archive.open(member) as stream:
        return npy_header(stream)


def npy_header(stream) -> tuple[tuple[int, ...], np.dtype]:
    """The shape and type the .npy header at the start of `stream` declares, read without
    reading the data (so a file that claims a huge array costs nothing); ValueError if the
    stream is not .npy in a version NumPy writes for numbers (1.0 or 2.0).

    >>> with open("a.npy", "rb") as f: npy_header(f)     # doctest: +SKIP
    ((2, 3), dtype('float64'))
    """
    fmt = np.lib.format
    version = fmt.read_magic(stream)
    if version not in ((1, 0), (2, 0)):
        raise ValueError(f".npy format version {version[0]}.{version[1]} is not one for numbers")
    read = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
    shape, _, dtype = read(stream)
    return tuple(shape), dtype


# -- the memory limit -------------------------------------------------------------------------

def _guard_memory(model: CompiledModel, shapes: dict[str, tuple[int, ...]], doing: str) -> None:
    """E802 unless the arrays of `shapes` (labelled) fit the memory limit together; checked
    before anything is allocated, in Python integers (no overflow)."""
    sizes = {label: math.prod(shape) * np.dtype(np.float64).itemsize
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


# -- initial weights -----------------------------------------------------------------------

def _initial(model: CompiledModel, w: WeightDecl, shape: tuple[int, ...],
             arguments: tuple[np.ndarray, ...]) -> np.ndarray:
    """Evaluate `w`'s initialiser at its shape: draws take the shape, a scalar fills it. The
    weight is a private C-ordered copy, whatever layout or owner the initialiser's value has."""

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
    _check_shape(model, w, shape, value.shape, "from its initialiser")
    return _private(value)


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


# -- pickling: a model carries its source ----------------------------------------------------

@dataclass(frozen=True)
class CarriedText:
    """One module of a compiled module, as a pickle carries it: its key (a file's real path,
    or a text's name), the name it is qualified by, its label in messages (the name it was
    parsed under), its folder, its text, and the key of the module each of its `open`s gave,
    in order."""

    key: str
    name: str
    label: str
    directory: str | None
    text: str
    opens: tuple[str, ...]


@dataclass(frozen=True)
class ModuleSource:
    """Everything a compiled module was made from: how messages name it, its root module's
    key, and the text of every module it was compiled from (the Prelude's included), with the
    module each `open` gave. Compiling it again reads no file and searches no path, so it
    gives the same module in any process, wherever its files are."""

    key: str
    root: str
    texts: tuple[CarriedText, ...]
    exported: tuple[str, ...]


@dataclass(frozen=True)
class ModelSource:
    """What a pickled model carries besides its arguments and weights: its module's source,
    its name, and the executor and path optimiser its class runs on. `token` names the class
    it was pickled from (a class made from it takes the same token), so that a model that
    comes back to a process that has its class is of that class again; it takes no part in
    equality (two classes made from one source compile alike)."""

    module: ModuleSource
    model: str
    executor: str
    optimize: str
    token: str = field(default="", compare=False)


#: Compiled modules and model classes by the source they were made from, so that one process
#: compiles a source once however many models of it it unpickles, and model classes by token,
#: so that a model unpickled where its class is (the process that pickled it, or one it came
#: back to) is of that class. Weak: a class nothing uses any more is not kept.
_COMPILED: weakref.WeakValueDictionary[ModuleSource, CompiledModule] = weakref.WeakValueDictionary()
_CLASSES: weakref.WeakValueDictionary[ModelSource, type[Learner]] = weakref.WeakValueDictionary()
_TOKENS: weakref.WeakValueDictionary[str, type[Learner]] = weakref.WeakValueDictionary()
_SOURCES_LOCK = threading.Lock()


def module_source(compiled: CompiledModule) -> ModuleSource:
    """The source of `compiled`: the text of its root module and of every module it opened,
    however they were found (next to a file, on a search path, in the Prelude).

    >>> source = module_source(hilbert.load("examples/Perceptron.hb")._compiled)  # doctest: +SKIP
    >>> [t.label for t in source.texts]                                          # doctest: +SKIP
    ['examples/Perceptron.hb', 'prelude/Networks.hb']
    """
    scopes = list(compiled.resolved.scopes.values())  # the root first: resolve starts there
    texts = tuple(CarriedText(
        s.module.key, s.module.name, s.module.label,
        None if s.module.directory is None else str(s.module.directory),
        s.module.syntax.span.source.text, _opened(s.module, [o.module for o in s.opened]))
        for s in scopes)
    source = ModuleSource(compiled.key, scopes[0].module.key, texts, compiled.exported)
    with _SOURCES_LOCK:  # compiling it again in this process gives this module
        _COMPILED.setdefault(source, compiled)
    return source


def _opened(module: SourceModule, targets: list[SourceModule]) -> tuple[str, ...]:
    """The key of the module each `open` of `module` gave, in order. `targets` are those
    modules once each, in the order first opened (as resolve keeps them), so each open gave
    the next of them or, opening one again, one it gave before: the one whose path its own
    path ends with (the same path opens the same module)."""
    gave: dict[tuple[str, ...], SourceModule] = {}
    keys: list[str] = []
    fresh = 0
    for decl in (d for d in module.syntax.decls if isinstance(d, Open)):
        target = gave.get(decl.path)
        if target is None:
            new = targets[fresh] if fresh < len(targets) else None
            again = [t for t in targets[:fresh] if _could_open(decl, t)]
            if new is not None and (_could_open(decl, new) or not again):
                target, fresh = new, fresh + 1
            else:
                target = again[0] if again else targets[-1]
        gave[decl.path] = target
        keys.append(target.key)
    return tuple(keys)


def _could_open(decl: Open, module: SourceModule) -> bool:
    """Whether `module`'s file is where `decl`'s path leads (`open A.B` is …/A/B.hb, and
    `open Prelude` is the Prelude's _.hb)."""
    path = decl.path[1:] if decl.path[0] == PRELUDE else decl.path
    tail = path or ("_",)
    return any(Path(where).with_suffix("").parts[-len(tail):] == tail
               for where in (module.label, module.key))


class _CarriedLoader(Loader):
    """A Loader that reads no file: its modules are those a ModuleSource carries, and each
    `open` gives the module it gave when the source was first compiled."""

    def __init__(self, source: ModuleSource):
        super().__init__()
        self.opens: dict[str, tuple[str, ...]] = {}
        for t in source.texts:
            directory = None if t.directory is None else Path(t.directory)
            self.modules[t.key] = SourceModule(t.key, t.name, parse_module(t.text, t.label), directory,
                                               t.label)
            self.opens[t.key] = t.opens

    def open(self, decl: Open, opener: SourceModule) -> SourceModule:
        opens = [d for d in opener.syntax.decls if isinstance(d, Open)]
        position = next(i for i, d in enumerate(opens) if d is decl)
        return self.modules[self.opens[opener.key][position]]


def compiled_from(source: ModuleSource) -> CompiledModule:
    """`source` compiled (once per process: a source compiled already is given again)."""
    with _SOURCES_LOCK:
        compiled = _COMPILED.get(source)
        if compiled is None:
            loader = _CarriedLoader(source)
            compiled = dataclasses.replace(compile_module(loader, loader.modules[source.root]),
                                           key=source.key, exported=source.exported)
            _COMPILED[source] = compiled
    return compiled


def model_from(source: ModelSource) -> type[Learner]:
    """The class of the models `source` describes: the class it was pickled from when this
    process has it, else one made from the same source here, else one compiled from it."""
    with _SOURCES_LOCK:
        cls = _TOKENS.get(source.token) or _CLASSES.get(source)
    if cls is None:
        compiled = compiled_from(source.module)
        made = model_class(compiled.models[source.model], compiled, source.executor,
                           source.optimize)
        made._source = source  # pickled again, it names the class it came from
        with _SOURCES_LOCK:
            cls = _CLASSES.setdefault(source, made)
            _TOKENS.setdefault(source.token, cls)
    return cls


def module_from(source: ModuleSource, executor: str = "numba", optimize: str = "auto") -> Module:
    """A Module compiled from `source` (what an unpickled hilbert.Module is)."""
    return Module(compiled_from(source), executor, optimize)


def function_from(source: ModuleSource, name: str, executor: str = "numba",
                  optimize: str = "auto", options: dict | None = None) -> Function:
    """Definition `name` of the module compiled from `source`, as a Function with these
    settings (what an unpickled hilbert.Function is)."""
    compiled = compiled_from(source)
    return Function(compiled.entries[name], compiled, executor, optimize, options=options)


def _unpickled(source: ModelSource, state: dict) -> Learner:
    """A pickled model: its class compiled from its source, then its arguments and weights,
    checked against the declaration and held as private C-ordered float64 arrays (pickled
    bit for bit)."""
    cls = model_from(source)
    model = cls._model
    arguments, weights = state.get("_arguments", {}), state.get("_weights", {})
    names = [w.name for w in model.weights]
    if set(arguments) != set(model.params) or set(weights) != set(names):
        raise ModelError("E801", f"a pickled {model.name} holds the arguments "
                         f"{', '.join(sorted(arguments)) or 'none'} and the weights "
                         f"{', '.join(sorted(weights)) or 'none'}, but a {model.name} has "
                         f"{', '.join(model.params) or 'none'} and {', '.join(names) or 'none'}",
                         model.span)
    values = {p: _private(arguments[p]) for p in model.params}
    held = {}
    for w in model.weights:
        held[w.name] = _private(weights[w.name])
        shape = _shape(model, w, tuple(values[p] for p in model.params))
        _check_shape(model, w, shape, held[w.name].shape, "in the pickle")
    return _restored(cls, {"_arguments": values, "_weights": held})


def _restored(cls: type[Learner], state: dict) -> Learner:
    """A `cls` holding `state` (its arguments and weights), with a lock of its own."""
    net = cls.__new__(cls)
    net.__setstate__(state)
    return net
