"""The public API's hilbert.Function: a compiled .hb function called from Python, with its
programs per signature, plans and builds (hilbert/module.py loads the modules that hold them)."""

from __future__ import annotations

import functools
import inspect
import keyword
import numbers
import threading
from collections import OrderedDict

import numpy as np

from hilbert.compiler import dtypes
from hilbert.compiler.arguments import _dtype_of, bind_arguments
from hilbert.compiler.driver import CompiledModule, Entry, annotate
from hilbert.compiler.plan import Plan, check_optimiser
from hilbert.compiler.results import to_python
from hilbert.compiler.settings import whole_number
from hilbert.executor import check_options, get_executor
from hilbert.grammar.errors import (
    ArgumentError,
    HilbertError,
    internal_error,
)
from hilbert.grammar.signature import named_shapes, print_signature

from .autodiff import Products
from .carried import ModuleSource, compiled_from, module_source
from .export import Exports

#: How many argument signatures (shape tuples) a function keeps a program for, per executor
#: and optimiser; past it the least recently used is dropped (and made again if called).
#: `HILBERT_MAX_PROGRAMS` overrides it for functions made afterwards.
MAX_PROGRAMS = 64


def _program_limit() -> int:
    """HILBERT_MAX_PROGRAMS, or MAX_PROGRAMS when unset; E600 unless a whole number ≥ 1."""
    limit = whole_number("HILBERT_MAX_PROGRAMS", "a whole number of signatures ≥ 1", smallest=1)
    return MAX_PROGRAMS if limit is None else limit


def _html(function: Function) -> str:
    """A Function as a notebook shows it (hilbert/display.py, imported when first asked)."""
    from .display import function_html

    return function_html(function)


class Function(Products, Exports):
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
        return (function_from, (module_source(self.module), self.entry.name, self.executor,
                                self.optimize, self.options))

    def _docstring(self) -> str:
        d = self.entry.definition
        head = f"{d.name}{print_signature(d.params, d.axes, bare=False)}  [{d.kind} at {d.span}]"
        return f"{head}\n\n{d.doc}" if d.doc else head

    def __repr__(self) -> str:
        d = self.entry.definition
        return f"<hilbert {d.kind} {d.name}{print_signature(d.params, d.axes, bare=False)} at {d.span}>"

    _repr_html_ = _html  # as a notebook shows it

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
        """`step(program, label, progress)` (a build, shown as hilbert.progress.compiling
        shows it), its errors coded."""
        from .progress import compiling  # (tqdm, imported when a build is waited for)

        self._coded(lambda: step(program, f"{self.entry.name} for {_sizes(shapes)}", compiling),
                    shapes, "building")

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
        named = named_shapes(self.entry.definition.axes, len(shapes)) or ("",) * len(shapes)
        parts = ", ".join(f"{p}: {n + ' = ' if n else ''}{'×'.join(map(str, s)) or 'scalar'}"
                          for p, n, s in zip(self.entry.params, named, shapes, strict=True))
        return f"while specialising {self.entry.name}({parts}) for a call from Python"

    def _call_note(self, values) -> str:
        return self._shape_note(tuple(v.shape for v in values)).replace("specialising", "running")


def function_from(source: ModuleSource, name: str, executor: str = "numba",
                  optimize: str = "auto", options: dict | None = None) -> Function:
    """Definition `name` of the module compiled from `source`, as a Function with these
    settings (what an unpickled hilbert.Function is)."""
    compiled = compiled_from(source)
    return Function(compiled.entries[name], compiled, executor, optimize, options=options)


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


def maths_options(math: str, dtype: str | None = None) -> dict:
    """A Function's options for the mode `math` (none for "exact", the default) and a forced
    `dtype` (none for None: each call's arguments choose)."""
    return ({} if math == "exact" else {"math": math}) | ({} if dtype is None else {"dtype": dtype})


def _sizes(shapes) -> str:
    return ", ".join("×".join(map(str, s)) or "scalar" for s in shapes)


def _nowhere(label: str):
    from hilbert.grammar.source import nowhere
    return nowhere(label)
