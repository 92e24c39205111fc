"""The public API: load, open and compile .hb modules; call their functions from Python."""

from __future__ import annotations

import inspect
import threading
from pathlib import Path

import numpy as np

from hilbert.compiler.driver import CompiledModule, Entry, annotate, compile_module
from hilbert.compiler.modules import Loader
from hilbert.executor import get_executor
from hilbert.grammar.errors import ArgumentError, HilbertError
from hilbert.grammar.syntax import Open

from .arguments import bind_arguments


class Function:
    """A compiled .hb function. Call it with arrays, nested lists or numbers (keywords by
    parameter name); it returns an ndarray, or a Python float for a scalar result."""

    def __init__(self, entry: Entry, module: CompiledModule, executor: str):
        self.entry = entry
        self.module = module
        self.executor = executor
        self._programs: dict[tuple, object] = {}
        self._lock = threading.Lock()
        self.__name__ = entry.name
        self.__qualname__ = entry.name
        self.__doc__ = self._docstring()
        self.__signature__ = inspect.Signature(
            [inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in entry.params])

    def _docstring(self) -> str:
        d = self.entry.definition
        head = f"{d.name}({', '.join(d.params)})  [{d.kind} at {d.span}]"
        return f"{head}\n\n{d.doc}" if d.doc else head

    def __repr__(self) -> str:
        d = self.entry.definition
        return f"<hilbert {d.kind} {d.name}({', '.join(d.params)}) at {d.span}>"

    def __call__(self, *args, executor: str | None = None, **kwargs):
        values = bind_arguments(self.entry, args, kwargs)
        program = self.program(tuple(v.shape for v in values), executor)
        try:
            result = program(values)
        except HilbertError as err:
            raise annotate(err, self.module.resolved).with_note(self._call_note(values)) from None
        return _to_python(result, values)

    def program(self, shapes: tuple[tuple[int, ...], ...], executor: str | None = None):
        """The executable for these argument shapes, specialised and planned once per signature."""
        key = (shapes, executor or self.executor)
        program = self._programs.get(key)
        if program is None:
            with self._lock:
                program = self._programs.get(key)
                if program is None:
                    try:
                        program = get_executor(key[1]).prepare(self.entry, shapes)
                    except HilbertError as err:
                        raise annotate(err, self.module.resolved).with_note(
                            self._shape_note(shapes)) from None
                    self._programs[key] = program
        return program

    def _shape_note(self, shapes) -> str:
        parts = ", ".join(f"{p}: {'×'.join(map(str, s)) or 'scalar'}"
                          for p, s in zip(self.entry.params, shapes, strict=True))
        return f"while specialising {self.entry.name}({parts}) for a call from Python"

    def _call_note(self, values) -> str:
        return self._shape_note(tuple(v.shape for v in values)).replace("specialising", "running")


def _to_python(result, inputs):
    array = np.asarray(result, dtype=np.float64)
    if array.ndim == 0:
        return float(array)
    if any(array is v or np.shares_memory(array, v) for v in inputs):
        array = array.copy()
    return array


class Module:
    """A compiled module: its exported functions are attributes; `function(name)` reaches
    any definition of the module."""

    def __init__(self, compiled: CompiledModule, executor: str = "numba"):
        self._compiled = compiled
        self._executor = executor
        self._functions: dict[str, Function] = {}

    def function(self, name: str) -> Function:
        """Any definition of the module (def or fn) as a callable Function."""
        if name not in self._compiled.entries:
            raise AttributeError(f"module {self._compiled.key} has no definition {name!r}")
        if name not in self._functions:
            self._functions[name] = Function(self._compiled.entries[name], self._compiled,
                                             self._executor)
        return self._functions[name]

    def __getattr__(self, name: str) -> Function:
        if name.startswith("_") or name not in self._compiled.exported:
            raise AttributeError(f"module {self._compiled.key} exports no function {name!r}")
        return self.function(name)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._compiled.exported))

    @property
    def names(self) -> tuple[str, ...]:
        """The names this module exports."""
        return self._compiled.exported

    def __repr__(self) -> str:
        return f"<hilbert module {self._compiled.key}: {', '.join(self.names)}>"


def load(path: str | Path, search_path: list[str | Path] | None = None,
         executor: str = "numba", export_all: bool = False) -> Module:
    """Compile a .hb file (and what it opens); its `fn`s become the module's functions.

    >>> mod = load("examples/Layers.hb")          # doctest: +SKIP
    >>> mod.layerThrough([[1, 2]], [[1], [1]])     # doctest: +SKIP
    array([[3.]])
    """
    loader = Loader([Path(p) for p in search_path or []])
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ArgumentError("E600", f"cannot read {path}: {err}", _nowhere(str(path))) from None
    root = loader.from_text(text, str(path), Path(path).parent)
    return Module(compile_module(loader, root, export_all), executor)


def open(name: str, executor: str = "numba") -> Module:  # noqa: A001 - the API's word
    """A Prelude (or search-path) module by its dotted name, with every definition callable.

    >>> nets = open("Prelude.Networks")             # doctest: +SKIP
    """
    loader = Loader()
    parts = tuple(name.split("."))
    if not all(p.isidentifier() for p in parts):
        raise ArgumentError("E204", f"{name!r} is not a module name (names joined by dots)",
                            _nowhere(name))
    holder = loader.from_text("", "<open>", None)
    root = loader.open(Open(parts, _nowhere(name)), holder)
    return Module(compile_module(loader, root, export_all=True), executor)


def compile_source(text: str, name: str = "<string>",
                   search_path: list[str | Path] | None = None,
                   executor: str = "numba", export_all: bool = False) -> Module:
    """Compile .hb source text into a module.

    >>> compile_source("fn twice(x) ↦ 2 · x").twice(3)
    6.0
    """
    loader = Loader([Path(p) for p in search_path or []])
    root = loader.from_text(text, name, None)
    return Module(compile_module(loader, root, export_all), executor)


def _nowhere(label: str):
    from hilbert.grammar.source import nowhere
    return nowhere(label)
