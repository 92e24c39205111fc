"""The public API: load, open and compile .hb modules; call their functions from Python."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import keyword
import numbers
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np

from hilbert.compiler import dtypes, settings
from hilbert.compiler.driver import CompiledModule, Entry, annotate, compile_module
from hilbert.compiler.modules import Loader
from hilbert.compiler.plan import Plan, check_optimiser
from hilbert.compiler.settings import whole_number
from hilbert.executor import check_math, check_options, get_executor
from hilbert.grammar.errors import (
    ArgumentError,
    HilbertError,
    MissingNameError,
    internal_error,
)
from hilbert.grammar.syntax import Open

from .arguments import bind_arguments
from .results import to_python

#: How many argument signatures (shape tuples) a function keeps a program for, per executor
#: and optimiser; past it the least recently used is dropped (and made again if called).
#: `HILBERT_MAX_PROGRAMS` overrides it for functions made afterwards.
MAX_PROGRAMS = 64


def _program_limit() -> int:
    """HILBERT_MAX_PROGRAMS, or MAX_PROGRAMS when unset; E600 unless a whole number ≥ 1."""
    limit = whole_number("HILBERT_MAX_PROGRAMS", "a whole number of signatures ≥ 1", smallest=1)
    return MAX_PROGRAMS if limit is None else limit


class Function:
    """A compiled .hb function. Call it with arrays, nested lists or numbers (keywords by
    parameter name); it returns an ndarray, or a number for a scalar result. A call computes
    in its arguments' dtype (float32, float64, complex64 or complex128, promoted as NumPy
    does; Python numbers never widen it), or in the `dtype` option's when one is given."""

    def __init__(self, entry: Entry, module: CompiledModule, executor: str,
                 optimize: str = "auto", programs: dict | None = None,
                 options: dict | None = None):
        self.entry = entry
        self.module = module
        self.executor = executor
        self.optimize = optimize
        self.options = dict(options or {})  # the executor's own (dask: chunks, compute)
        self.dtype: str | None = self.options.get("dtype")  # forced, or None: the arguments'
        self.plans_made = 0  # specialisations so far (a second call of a signature makes none)
        # Programs by executor, optimiser and options, then by signature (argument shapes and
        # dtype; shared with `using`), least recently used first.
        self._programs: dict[tuple, OrderedDict] = {} if programs is None else programs
        self._by_shapes: OrderedDict[tuple, object] = self._programs.setdefault(
            (executor, optimize, repr(sorted(self.options.items()))), OrderedDict())
        self._limit = _program_limit()
        # an executor that binds the arguments itself (dask keeps dask arrays lazy), or None
        self._call = getattr(get_executor(executor), "call", None)
        self._arity = len(entry.params)
        self._lock = threading.Lock()
        self._products: dict[str, Function] = {}  # vjp and jvp, made on first use
        self._last = (None, None)  # (signature, program) of the latest call: one object, so a
        # thread never sees one call's signature with another's program
        self.__name__ = entry.name
        self.__qualname__ = entry.name
        self.__doc__ = self._docstring()
        if all(p.isidentifier() and not keyword.iskeyword(p) for p in entry.params):
            # (a .hb name may be a Python keyword such as `lambda`: no signature for those)
            self.__signature__ = inspect.Signature(
                [inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in entry.params])

    def using(self, executor: str | None = None, optimize: str | None = None,
              **options) -> Function:
        """This function with another executor, path optimiser or options, e.g.
        `f.using("reference")(x)`, `f.using("dask", chunks=1000)(x)` (docs/dask.md) or
        `f.using(dtype="float32")` (every call computes in float32: docs/semantics.md)."""
        if optimize is not None:
            check_optimiser(optimize, self.entry.definition.span)
        if "dtype" in options:
            options["dtype"] = dtypes.check_dtype(options["dtype"], self.entry.definition.span)
        if executor in (None, self.executor):
            options = self.options | options  # the same executor keeps the options it had
        else:  # every executor takes math and dtype
            options = {k: v for k, v in self.options.items() if k in EVERY_EXECUTOR} | options
        # unknown names and options fail here, not at the call
        check_options(executor or self.executor, options, self.entry.definition.span)
        return Function(self.entry, self.module, executor or self.executor,
                        optimize or self.optimize, self._programs, options)

    def __reduce__(self):
        """Pickled as its module's source, its name, executor, optimiser and options; compiled
        again where it is unpickled (compiled code is never pickled)."""
        from .models import function_from, module_source

        return (function_from, (module_source(self.module), self.entry.name, self.executor,
                                self.optimize, self.options))

    def _docstring(self) -> str:
        d = self.entry.definition
        head = f"{d.name}({', '.join(d.params)})  [{d.kind} at {d.span}]"
        return f"{head}\n\n{d.doc}" if d.doc else head

    def __repr__(self) -> str:
        d = self.entry.definition
        return f"<hilbert {d.kind} {d.name}({', '.join(d.params)}) at {d.span}>"

    def __call__(self, /, *args, **kwargs):
        if self._call is not None:
            return self._call(self, args, kwargs)
        signature = None if kwargs or len(args) != self._arity else \
            _ready_signature(args, self.dtype)
        if signature is None:
            args = bind_arguments(self.entry, args, kwargs, self.dtype, self.counted_params)
            signature = (tuple([a.shape for a in args]), _dtype_of(args, self.dtype))
        last_signature, program = self._last
        if signature != last_signature:  # the same signature again needs no look-up
            try:
                self._by_shapes.move_to_end(signature)  # the most recently used is dropped last
                program = self._by_shapes[signature]
            except KeyError:  # never made, or dropped (by another thread, even in between)
                program = self._program(*signature)
                self._first_call(program, signature[0])
            self._last = (signature, program)
        try:
            result = program(args)
        except HilbertError as err:
            raise annotate(err, self.module.resolved).with_note(self._call_note(args)) from None
        except MemoryError:
            raise
        except Exception as err:
            raise internal_error(err, self.entry.definition.span,
                              f"running {self.entry.name}") from err
        if type(result) is np.ndarray and result.ndim:
            if result.base is None:
                for a in args:
                    if result is a:
                        return result.copy()
                return result
            if getattr(program, "detaches", False) and result.flags.writeable:
                return result  # (a fresh array of compiled code: its base is Numba's)
        # (a detaching program's tuple shares nothing with the arguments: only its own
        # components are checked against each other)
        return to_python(result, () if getattr(program, "detaches", False) else args,
                         dtype=signature[1])

    @functools.cached_property
    def counted_params(self) -> frozenset[int]:
        """The parameters its program reads as whole numbers (a step count, a position): a
        Python number given for one is bound in float64 in every call (compiler/counting.py)."""
        from hilbert.compiler.counting import counted_params

        return counted_params(self.entry.masked)

    @property
    def tier(self) -> str | None:
        """The tier the latest call ran on: on the numba executor "host" (the planned path as
        NumPy/BLAS steps, while the generated code is not yet built) or "compiled" (the
        generated code); None before the first call and on other executors
        (docs/architecture.md, "Tiers")."""
        return getattr(self._last[1], "tier", None)

    def program(self, shapes: tuple[tuple[int, ...], ...], dtype: str | None = None):
        """The executable for these argument shapes and `dtype` (by default the forced one, or
        float64), specialised and planned once per signature (a second call with the same
        shapes is a dictionary look-up). The last MAX_PROGRAMS signatures used are kept."""
        dtype = dtype or self.dtype or dtypes.DEFAULT
        program = self._by_shapes.get((shapes, dtype))
        if program is None:
            if not (isinstance(shapes, tuple) and all(_is_shape(s) for s in shapes)):
                raise ArgumentError("E600", f"program of {self.entry.name} needs a tuple of "
                                    f"shapes, one tuple of ints per parameter "
                                    f"({', '.join(self.entry.params)}), not {shapes!r}",
                                    self.entry.definition.span)
            program = self._program(_bound_shapes(self.entry, shapes, {}),
                                    dtypes.check_dtype(dtype, self.entry.definition.span))
        return program

    def _program(self, shapes: tuple[tuple[int, ...], ...], dtype: str):
        """`program` for a signature already checked (a call's own, or `plan`'s)."""
        signature = (shapes, dtype)
        program = self._by_shapes.get(signature)
        if program is None:
            with self._lock:
                program = self._by_shapes.get(signature)
                if program is None:
                    program = self._prepare(shapes, dtype)
                    self._by_shapes[signature] = program
                    while len(self._by_shapes) > self._limit:
                        self._by_shapes.popitem(last=False)
        return program

    def _prepare(self, shapes, dtype: str, values=None):
        executor = get_executor(self.executor)
        options = {k: v for k, v in self.options.items() if k != "dtype"}
        program = self._coded(lambda: executor.prepare(self.entry, shapes, self.optimize, values,
                                                       dtype=dtype, **options),
                              shapes, "preparing")
        self.plans_made += 1
        return program

    def _coded(self, work, shapes, doing: str):
        """`work()`, done for these argument shapes: a HilbertError noted with them, any
        unexpected exception an InternalError (E900) saying what was being done."""
        try:
            return work()
        except HilbertError as err:
            raise annotate(err, self.module.resolved).with_note(self._shape_note(shapes)) from None
        except MemoryError:
            raise
        except Exception as err:
            raise internal_error(err, self.entry.definition.span,
                                 f"{doing} {self.entry.name} for {_sizes(shapes)}") from err

    def plan(self, /, *args, **kwargs) -> Plan:
        """The Plan for these arguments: arrays, lists or numbers, or shapes as tuples of ints
        (`f.plan((4, 2), (2, 3))`; `()` is a scalar). Trip counts are known from values."""
        shapes, values = _shapes_or_values(self.entry, args, kwargs, self.dtype)
        dtype = _dtype_of(values, self.dtype)
        if values is not None:
            return self._prepare(shapes, dtype, values).plan
        return self._program(shapes, dtype).plan

    def _first_call(self, program, shapes) -> None:
        """What the first call of a new signature would wait for (compiling), done now under a
        progress line (on the numba executor; nothing on the others)."""
        first_call = getattr(get_executor(self.executor), "first_call", None)
        if first_call is not None:
            self._building(first_call, program, shapes)

    def _building(self, step, program, shapes) -> None:
        """`step(program, label)` (a build), its errors coded."""
        self._coded(lambda: step(program, f"{self.entry.name} for {_sizes(shapes)}"), shapes,
                    "building")

    def build(self, /, *args, **kwargs) -> Plan:
        """Compile the program for these arguments (shapes or values, as for `plan`) now, not
        at or after its first call, and return its plan: a build that fails fails here. On
        the numba executor the next call of those shapes (and dtype) runs compiled code at
        once, whatever HILBERT_COMPILE says; other executors compile nothing. Values give
        only their shapes and dtype: the program built is the one calls run, planned without
        values (so trip counts it cannot know from shapes are not in its plan). The plan is
        the one `plan` gives (its schedule is what the build ran).

        >>> f.build((64, 32), (32, 128)).schedule.regions[0].compiled       # doctest: +SKIP
        True
        """
        shapes, values = _shapes_or_values(self.entry, args, kwargs, self.dtype)
        program = self._program(shapes, _dtype_of(values, self.dtype))  # (the calls' own)
        build = getattr(get_executor(self.executor), "build", None)
        if build is not None:
            self._building(build, program, shapes)
        return program.plan

    def vjp(self, /, *args, **kwargs):
        """(this function's result for these arguments, its pullback): `pullback(cotangent)`
        (shaped like the result; a tuple for a tuple of results) gives the tuple of gradients
        of Σ ⟨cotangent, result⟩, one per argument. Compiled and planned like any ∂
        (`pullback.plan`); docs/interop.md.

        >>> y, pullback = f.vjp(x, w); (dx, dw) = pullback(np.ones_like(y))   # doctest: +SKIP
        """
        from .autodiff import vjp

        return vjp(self, args, kwargs)

    def jvp(self, args, tangents):
        """(this function's result at `args`, its tangent along `tangents`): `args` and
        `tangents` are tuples with one entry per parameter (tangents shaped like the
        arguments); a tuple of results gives a tuple of tangents. One forward sweep."""
        from .autodiff import jvp

        return jvp(self, args, tangents)

    def product(self, kind: str) -> Function:
        """The Function computing this one's vjp (parameters: this one's, then a cotangent per
        result; answers the tuple of gradients) or jvp (parameters: this one's, then a tangent
        per parameter; answers the results, then their tangents), on the same executor."""
        if kind not in self._products:
            entries = self.module.entries
            name = self.entry.name
            if kind not in ("vjp", "jvp") or entries.get(name) is not self.entry:
                raise ArgumentError("E600", f"{kind!r} of {name}: products are vjp and jvp of "
                                    "a module's definitions", self.entry.definition.span)
            try:
                entry = entries.product(name, kind)
            except HilbertError as err:
                raise annotate(err, self.module.resolved) from None
            except MemoryError:
                raise
            except Exception as err:
                raise internal_error(err, self.entry.definition.span,
                                     f"making the {kind} of {name}") from err
            self._products[kind] = Function(entry, self.module, self.executor, self.optimize,
                                            options=self.options)
        return self._products[kind]

    def export(self, /, *shapes, to: str = "stablehlo", dtype: str = "float64") -> str:
        """The program for these argument shapes (tuples of ints) lowered through JAX, as
        StableHLO text (`to="stablehlo"`) any XLA runtime can serve (docs/jax-executor.md)."""
        from .export import export

        return export(self, *shapes, to=to, dtype=dtype)

    def benchmark(self, /, *args, optimize=None, repeat: int = 5, **kwargs):
        """Time this function for each path optimiser in `optimize` (by default auto, greedy,
        dp and auto-hq): planning, first call and warm call, beside numpy.einsum(optimize=True)
        and opt_einsum.contract_expression on the same einsums. Arguments as for `plan`:
        shapes (tuples of ints, drawn from a standard normal) or values. Returns a
        hilbert.bench.BenchResult: print it for the table, or call its `to_dict()`.

        >>> f.benchmark((64, 32), (32, 128), optimize=["greedy", "dp"])   # doctest: +SKIP
        """
        from .bench import benchmark

        return benchmark(self, args, kwargs, optimize, repeat)

    def _shape_note(self, shapes) -> str:
        parts = ", ".join(f"{p}: {'×'.join(map(str, s)) or 'scalar'}"
                          for p, s in zip(self.entry.params, shapes, strict=True))
        return f"while specialising {self.entry.name}({parts}) for a call from Python"

    def _call_note(self, values) -> str:
        return self._shape_note(tuple(v.shape for v in values)).replace("specialising", "running")


#: Every executor takes these options (`using` keeps them when it changes the executor).
EVERY_EXECUTOR = ("math", "dtype")


def _ready_signature(args: tuple, forced: str | None, ndarray=np.ndarray,
                     names=dtypes.BY_DTYPE) -> tuple | None:
    """The call's signature (shapes, dtype name) when every argument is already a C-contiguous
    array of one dtype a call computes in (the forced one, if any): the fast path. Else None.
    (Names bound as defaults are local: a call's checks cost 0.3 µs, not 0.45.)"""
    shapes = []
    first = None
    for a in args:
        if type(a) is not ndarray or not a.flags.c_contiguous:
            return None
        if a.dtype is not first:
            if first is not None:
                return None
            first = a.dtype
        shapes.append(a.shape)
    name = names.get(first) if first is not None else (forced or dtypes.DEFAULT)
    if name is None or (forced is not None and name != forced):
        return None
    return tuple(shapes), name


def _dtype_of(values, forced: str | None) -> str:
    """The dtype of a call whose arguments were bound to `values` (None: shapes only): the
    one dtype they have, but for float64 numbers a call of another dtype counts with (bound
    so by bind_arguments: compiler/counting.py)."""
    if forced is not None:
        return forced
    if not values:
        return dtypes.DEFAULT
    first = next((v.dtype for v in values if v.dtype != np.float64), values[0].dtype)
    return dtypes.BY_DTYPE.get(first) or first.name


def _is_shape(value) -> bool:
    """A tuple of whole numbers ≥ 0: Python ints or NumPy integers (`x.shape`, `np.int64(3)`)."""
    return isinstance(value, tuple) and all(isinstance(d, numbers.Integral) and int(d) >= 0
                                            for d in value)


def _shape(value: tuple) -> tuple[int, ...]:
    return tuple(int(d) for d in value)


def _bound_shapes(entry: Entry, args: tuple, kwargs: dict) -> tuple[tuple[int, ...], ...]:
    """Shapes (tuples of ints, already checked) bound to `entry`'s parameters, one each."""
    bound = dict(zip(entry.params, args, strict=False)) | kwargs
    missing = [p for p in entry.params if p not in bound]
    if missing or len(args) > len(entry.params) or set(bound) - set(entry.params):
        raise ArgumentError("E600", f"{entry.name} needs one shape per parameter "
                            f"({', '.join(entry.params)})", entry.definition.span)
    return tuple(_shape(bound[p]) for p in entry.params)


def _shapes_or_values(entry: Entry, args: tuple, kwargs: dict, dtype: str | None = None):
    """Arguments of `plan`: all shapes (tuples of ints) or values; values let trips be known."""
    if all(_is_shape(a) for a in (*args, *kwargs.values())):
        return _bound_shapes(entry, args, kwargs), None
    values = bind_arguments(entry, tuple(np.zeros(a) if _is_shape(a) else a for a in args),
                            {k: np.zeros(v) if _is_shape(v) else v for k, v in kwargs.items()},
                            dtype)
    return tuple(v.shape for v in values), values


def maths(math: str | None, span=None) -> str:
    """The mode `math` ("exact" or "fast"), or HILBERT_MATH's when None (default "exact"); an
    ArgumentError (E600) for anything else."""
    mode = (settings.text("HILBERT_MATH") or "exact") if math is None else math
    return check_math(mode, span or _nowhere("math"))


def maths_options(math: str, dtype: str | None = None) -> dict:
    """A Function's options for the mode `math` (none for "exact", the default) and a forced
    `dtype` (none for None: each call's arguments choose)."""
    return ({} if math == "exact" else {"math": math}) | ({} if dtype is None else {"dtype": dtype})


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
        from .models import module_from, module_source

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
        from .models import model_class  # hilbert.models builds on Function, defined here

        if name not in self._compiled.models:
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
        if name in self._compiled.models:
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
        """The model declarations of the module."""
        return tuple(self._compiled.models)

    @property
    def names(self) -> tuple[str, ...]:
        """The names this module exports: its functions, then its models."""
        return self._compiled.exported + tuple(self._compiled.models)

    def __repr__(self) -> str:
        return f"<hilbert module {self._compiled.key}: {', '.join(self.names)}>"


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
    loader = Loader(search_path)
    root = loader.from_text(text, name, None)
    return Module(_compiled(loader, root, export_all), executor, optimize, math, dtype)


def _compiled(loader: Loader, root, export_all: bool) -> CompiledModule:
    """compile_module, any unexpected exception inside it an InternalError (E900)."""
    try:
        return compile_module(loader, root, export_all)
    except (HilbertError, MemoryError):
        raise
    except Exception as err:
        raise internal_error(err, _nowhere(str(root)), f"compiling {root}") from err



def _sizes(shapes) -> str:
    return ", ".join("×".join(map(str, s)) or "scalar" for s in shapes)


def _nowhere(label: str):
    from hilbert.grammar.source import nowhere
    return nowhere(label)
