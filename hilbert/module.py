"""hilbert.Module and the front doors that make one: load, open and compile_source."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from hilbert.compiler import dtypes, settings
from hilbert.compiler.driver import CompiledModule, compile_module
from hilbert.compiler.modules import Loader
from hilbert.compiler.plan import check_optimiser
from hilbert.executor import check_math, get_executor
from hilbert.grammar.errors import ArgumentError, HilbertError, MissingNameError, internal_error
from hilbert.grammar.syntax import Open

from .api import Function, _nowhere, maths_options
from .carried import ModuleSource, compiled_from, module_source


def maths(math: str | None, span=None) -> str:
    """The mode `math` ("exact" or "fast"), or HILBERT_MATH's when None (default "exact"); an
    ArgumentError (E600) for anything else."""
    mode = (settings.text("HILBERT_MATH") or "exact") if math is None else math
    return check_math(mode, span or _nowhere("math"))



class Module:
    """A compiled module: its exported functions are attributes; `function(name)` reaches
    any definition of the module. `math`: "exact" (NumPy's results) or "fast" (compiled exp and
    tanh within 4 ulp, division by a reciprocal: docs/semantics.md); None: HILBERT_MATH's.
    `dtype`: every call computes in it (float32, float64, complex64 or complex128); None: in
    its arguments' dtype."""

    def __init__(self, compiled: CompiledModule, executor: str = "numba", optimize: str = "auto",
                 math: str | None = None, dtype=None):
        get_executor(executor)  # unknown executors and optimisers fail at load, not at a call
        check_optimiser(optimize, _nowhere(compiled.key))
        self._compiled = compiled
        self._executor = executor
        self._optimize = optimize
        self._math = maths(math, _nowhere(compiled.key))
        self._dtype = None if dtype is None else dtypes.check_dtype(dtype, _nowhere(compiled.key))
        self._functions: dict[str, Function] = {}
        self._models: dict[str, type] = {}

    def __reduce__(self):
        """Pickled as its source (every module's text), executor, optimiser, maths and dtype."""
        return (module_from, (module_source(self._compiled), self._executor, self._optimize,
                              self._math, self._dtype))

    def function(self, name: str) -> Function:
        """Any definition of the module (def or fn) as a callable Function."""
        if name not in self._compiled.entries:
            raise self._missing("definition", name, self.definitions)
        if name not in self._functions:
            try:
                entry = self._compiled.entries[name]  # (inlined and optimised when first asked)
            except (HilbertError, MemoryError):
                raise
            except Exception as err:
                raise internal_error(err, _nowhere(self._compiled.key), f"compiling {name}") from err
            self._functions[name] = self._bound(name, Function(
                entry, self._compiled, self._executor, self._optimize,
                options=maths_options(self._math, self._dtype)))
        return self._functions[name]

    def model(self, name: str) -> Any:
        """The Python class of model `name`, made once per module (so isinstance works)."""
        from .models import model_class  # (hilbert.models is imported when a model is used)

        if name in self._compiled.frames and name not in self._models:
            from .frames import frame_class

            self._models[name] = self._bound(name, frame_class(self._compiled.frames[name]))
        if name not in self._compiled.models and name not in self._compiled.frames:
            raise self._missing("model", name, self.models)
        if name not in self._models:
            self._models[name] = self._bound(name, model_class(
                self._compiled.models[name], self._compiled, self._executor, self._optimize,
                self._math))
        return self._models[name]

    def check(self) -> None:
        """Inline and optimise every definition and model member now, raising the first error
        any of them has (loading leaves each to its first use)."""
        for name in self.definitions:
            self.function(name)
        for name, model in self._compiled.models.items():
            functions = self.model(name)._functions
            for member in (*model.trains, *model.methods):
                functions[member]  # noqa: B018 (made, and so checked, by being read)

    def __getattr__(self, name: str) -> Function | type:
        if name.startswith("_"):  # (pickle and copy ask for __getstate__ and the like)
            raise AttributeError(name)
        if name in self._compiled.models or name in self._compiled.frames:
            return self.model(name)
        if name not in self._compiled.exported:
            raise self._missing("function or model", name, self.names)
        return self.function(name)

    def _bound(self, name: str, value):
        """`value`, kept as the attribute `name` when the module exports it under that name, so
        that `module.name` is a plain attribute read from then on (not __getattr__ and a
        look-up: a third of a small call's cost)."""
        if name in self.names and not hasattr(type(self), name):
            self.__dict__[name] = value
        return value

    def _missing(self, what: str, name: str, known: tuple[str, ...]) -> MissingNameError:
        has = ", ".join(known) if known else "none"
        return MissingNameError("E200", f"module {self._compiled.key} has no {what} {name!r} "
                                f"(it has: {has})", _nowhere(self._compiled.key))

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self.names))

    @property
    def definitions(self) -> tuple[str, ...]:
        """Every definition of the module (reachable with `function(name)`)."""
        return tuple(self._compiled.entries)

    @property
    def models(self) -> tuple[str, ...]:
        """The model declarations of the module (Learners, then Frames)."""
        return tuple(self._compiled.models) + tuple(self._compiled.frames)

    @property
    def names(self) -> tuple[str, ...]:
        """The names this module exports: its functions, then its models."""
        return self._compiled.exported + self.models

    def __repr__(self) -> str:
        return f"<hilbert module {self._compiled.key}: {', '.join(self.names)}>"

    def _repr_html_(self) -> str:
        """The module as a notebook shows it: its functions and models (hilbert/display.py)."""
        from .display import module_html

        return module_html(self)


def load(path: str | Path, search_path: str | Path | list[str | Path] | None = None,
         executor: str = "numba", export_all: bool = False, optimize: str = "auto",
         math: str | None = None, dtype=None) -> Module:
    """Compile a .hb file (and what it opens); its `fn`s become the module's functions.
    `math="fast"` trades NumPy's last bits for speed; `dtype` (e.g. "float32") makes every call
    compute in it, whatever its arguments' dtype (docs/semantics.md).

    >>> mod = load("examples/Layers.hb")          # doctest: +SKIP
    >>> mod.layerThrough([[1, 2]], [[1], [1]])     # doctest: +SKIP
    array([[3.]])
    """
    _begin_kernels(executor, dtype)
    loader = Loader(search_path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ArgumentError("E600", f"cannot read {path}: {err}", _nowhere(str(path))) from None
    root = loader.from_text(text, str(path), Path(path).parent, file=Path(path))
    return Module(_compiled(loader, root, export_all), executor, optimize, math, dtype)


def open(name: str, executor: str = "numba", optimize: str = "auto",  # noqa: A001
         math: str | None = None, dtype=None) -> Module:
    """A Prelude (or search-path) module by its dotted name, with every definition callable.

    >>> nets = open("Prelude.Networks")             # doctest: +SKIP
    """
    _begin_kernels(executor, dtype)
    loader = Loader()
    parts = tuple(name.split("."))
    if not all(p.isidentifier() for p in parts):
        raise ArgumentError("E204", f"{name!r} is not a module name (names joined by dots)",
                            _nowhere(name))
    holder = loader.from_text("", "<open>", None)
    root = loader.open(Open(parts, _nowhere(name)), holder)
    compiled = _compiled(loader, root, export_all=True)
    return Module(dataclasses.replace(compiled, key=name), executor, optimize,  # named as asked
                  math, dtype)


def compile_source(text: str, name: str = "<string>",
                   search_path: str | Path | list[str | Path] | None = None,
                   executor: str = "numba", export_all: bool = False,
                   optimize: str = "auto", math: str | None = None, dtype=None) -> Module:
    """Compile .hb source text into a module.

    >>> compile_source("fn twice(x) ↦ 2 · x").twice(3)
    6.0
    """
    _begin_kernels(executor, dtype)
    loader = Loader(search_path)
    root = loader.from_text(text, name, None)
    return Module(_compiled(loader, root, export_all), executor, optimize, math, dtype)


def _begin_kernels(executor: str, dtype) -> None:
    """The compiled executor's shared product kernel begun while the module's front half runs
    (executor/llvm.begin_kernels); nothing for other executors or dtypes."""
    if executor == "numba" and (dtype is None or isinstance(dtype, str)):
        from hilbert.executor import llvm

        llvm.begin_kernels(dtype)


def _compiled(loader: Loader, root, export_all: bool) -> CompiledModule:
    """compile_module, any unexpected exception inside it an InternalError (E900)."""
    try:
        return compile_module(loader, root, export_all)
    except (HilbertError, MemoryError):
        raise
    except Exception as err:
        raise internal_error(err, _nowhere(str(root)), f"compiling {root}") from err


def module_from(source: ModuleSource, executor: str = "numba", optimize: str = "auto",
                math: str = "exact", dtype: str | None = None) -> Module:
    """A Module compiled from `source` (what an unpickled hilbert.Module is)."""
    return Module(compiled_from(source), executor, optimize, math, dtype)
