"""Model classes: a compiled `model … : Learner` as a Python class with weights, train and methods.

>>> mod = hilbert.load("examples/Perceptron.hb")          # doctest: +SKIP
>>> net = mod.Perceptron(2, 8, seed=7)                     # doctest: +SKIP
>>> net.train(x, y, 0.5, steps=500); net.loss(x, y)        # doctest: +SKIP
"""

from __future__ import annotations

import copy
import copyreg
import difflib
import inspect
import os
import threading
import uuid
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from hilbert.compiler.arguments import bind_arguments
from hilbert.compiler.driver import CompiledModule, annotate
from hilbert.compiler.groups import joined
from hilbert.compiler.models import CompiledModel, Member, WeightDecl
from hilbert.grammar.errors import HilbertError, ModelError, internal_error

from .api import Function
from .api import function_from as function_from  # (pickles made before name it here)
from .carried import _SOURCES_LOCK, ModuleSource, compiled_from, module_source
from .carried import (
    CarriedText as CarriedText,  # (pickles made before name it and ModuleSource here)
)
from .members import _answer, _class_doc, _Functions, _method, _train_method
from .saved import _file_name, _Load
from .saved import npy_header as npy_header  # hilbert.cli reads .npy headers with it
from .weights import (
    _arguments_text,
    _check_shape,
    _guard_memory,
    _initial,
    _private,
    _read_only,
    _shape,
    _show,
    model_dtype,
)


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
                optimize: str = "auto", math: str = "exact") -> type[Learner]:
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
        "_math": math,
        "_source": None,  # what a pickle carries, made at the first pickle (see ModelSource)
        "_functions": _Functions(members, module, executor, optimize, math),
        "__doc__": _class_doc(model),
        "__qualname__": model.name,
        "__signature__": inspect.Signature(
            [inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in model.params]),
    }
    for w in model.weights:
        namespace[w.name] = _weight_property(w)
    for family, members in model.families.items():
        namespace[family] = _family_property(model, family, members)
    for member in model.trains.values():
        namespace[member.name] = _train_method(model, member)
    for member in model.methods.values():
        namespace[member.name] = _method(model, member)
    return type(model.name, (Learner,), namespace)


def _weight_property(w: WeightDecl) -> property:
    def get(self: Learner) -> np.ndarray:
        return _read_only(self._weights[w.name])

    def set_(self: Learner, value) -> None:
        raise ModelUseError("E801", f"weight {w.name} of {self._model.name} is read-only from "
                            "Python: train changes it, and load reads it from a file", w.span)

    dims = ", ".join(str(d) for d in w.dims)
    return property(get, set_, doc=f"weight {w.name} : Tensor[{dims}] (a read-only copy)")


def _family_property(model: CompiledModel, family: str, members: tuple[str, ...]) -> property:
    """`net.m` of `state m like g`: the state tensors `m.w` by weight name w, read-only copies."""
    def get(self: Learner) -> dict[str, np.ndarray]:
        held = self._weights
        return {w: _read_only(held[joined(family, w)]) for w in members}

    def set_(self: Learner, value) -> None:
        raise ModelUseError("E801", f"state {family} of {model.name} is read-only from Python: "
                            "train changes it, and load reads it from a file", model.span)

    return property(get, set_, doc=f"state {family}: one tensor per weight of its group, by "
                                   "weight name (read-only copies)")


class Learner:
    """The base of every model class. An instance holds its constructor arguments and its
    weights, as private C-ordered arrays of its dtype (float64 unless made with
    `dtype=np.float32`); train blocks replace the weights, methods
    read them. The dicts holding them are only ever replaced whole, never changed in place, so
    copies of a model may share arrays. One lock per instance makes each train call one
    read-step-write and gives each method a snapshot of the weights between train calls."""

    _model: ClassVar[CompiledModel]
    _module: ClassVar[CompiledModule]
    _executor: ClassVar[str]
    _optimize: ClassVar[str]
    _math: ClassVar[str]
    _source: ClassVar[ModelSource | None]
    _functions: ClassVar[dict[str, Function]]
    _arguments: dict[str, np.ndarray]
    _weights: dict[str, np.ndarray]
    _lock: threading.RLock
    load = _Load()

    def __init__(self, *args, **kwargs):
        model = self._model
        dtype = "float64"
        if "dtype" in kwargs and "dtype" not in model.params:  # (a parameter's name wins)
            dtype = model_dtype(model, kwargs.pop("dtype"))
        bound = bind_arguments(_Signature(model.name, model.params, model), args, kwargs, dtype)
        values = tuple(_private(v, dtype) for v in bound)
        shapes = {w.name: _shape(model, w, values) for w in model.weights}
        _guard_memory(model, {f"weight {n}": s for n, s in shapes.items()},
                      f"{model.name}({_arguments_text(model, values)})", dtype)
        self._lock = threading.RLock()
        self._dtype = dtype
        self._arguments = dict(zip(model.params, values, strict=True))
        self._weights = {w.name: _initial(model, w, shapes[w.name], values, dtype)
                         for w in model.weights}

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
                                 cls._optimize, uuid.uuid4().hex, cls._math)
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
        """The member's own arguments (what Python passed), converted (a Python number the
        member counts with in float64: compiler/counting.py)."""
        name = f"{self._model.name}.{member.name}"
        first = len(self._model.weights) + len(self._model.params)  # (its entry's own, after)
        counted = frozenset(i - first for i in self._functions[member.name].counted_params
                            if i >= first)
        return bind_arguments(_Signature(name, member.params, member), args, kwargs, self.dtype,
                              counted)

    def _execute(self, member: Member, values: tuple[np.ndarray, ...]):
        function = self._functions[member.name]
        shapes = tuple(v.shape for v in values)
        made = function.plans_made
        program = function.program(shapes, self.dtype)
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

    @property
    def dtype(self) -> str:
        """What the weights are and every member computes in: "float64" (the default) or
        "float32" (`Model(…, dtype=np.float32)`; kept by save, load and pickles)."""
        return self.__dict__.get("_dtype", "float64")

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
        members = ([w.name for w in model.weights if w.name.isidentifier()] + list(model.families)
                   + list(model.trains) + list(model.methods))
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

    def _repr_html_(self) -> str:
        """The model as a notebook shows it: its weights' names, shapes and dtypes, its tier
        (hilbert/display.py)."""
        from .display import model_html

        return model_html(self)


# -- pickling: a model carries its source ----------------------------------------------------

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
    math: str = "exact"


#: Model classes by the source they were made from (the modules compiled from a source are
#: carried.py's), and by token, so that a model unpickled where its class is (the process that
#: pickled it, or one it came back to) is of that class. Weak: a class nothing uses any more is
#: not kept.
_CLASSES: weakref.WeakValueDictionary[ModelSource, type[Learner]] = weakref.WeakValueDictionary()
_TOKENS: weakref.WeakValueDictionary[str, type[Learner]] = weakref.WeakValueDictionary()


def model_from(source: ModelSource) -> type[Learner]:
    """The class of the models `source` describes: the class it was pickled from when this
    process has it, else one made from the same source here, else one compiled from it."""
    with _SOURCES_LOCK:
        cls = _TOKENS.get(source.token) or _CLASSES.get(source)
    if cls is None:
        compiled = compiled_from(source.module)
        made = model_class(compiled.models[source.model], compiled, source.executor,
                           source.optimize, source.math)
        made._source = source  # pickled again, it names the class it came from
        with _SOURCES_LOCK:
            cls = _CLASSES.setdefault(source, made)
            _TOKENS.setdefault(source.token, cls)
    return cls


def _unpickled(source: ModelSource, state: dict) -> Learner:
    """A pickled model: its class compiled from its source, then its arguments and weights,
    checked against the declaration and held as private C-ordered arrays of the model's dtype
    (pickled bit for bit)."""
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
    dtype = model_dtype(model, state.get("_dtype", "float64"))
    values = {p: _private(arguments[p], dtype) for p in model.params}
    held = {}
    for w in model.weights:
        held[w.name] = _private(weights[w.name], dtype)
        shape = _shape(model, w, tuple(values[p] for p in model.params))
        _check_shape(model, w, shape, held[w.name].shape, "in the pickle")
    return _restored(cls, {"_arguments": values, "_weights": held, "_dtype": dtype})


def _restored(cls: type[Learner], state: dict) -> Learner:
    """A `cls` holding `state` (its arguments and weights), with a lock of its own."""
    net = cls.__new__(cls)
    net.__setstate__(state)
    return net
