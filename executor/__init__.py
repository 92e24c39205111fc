"""Executors: turn a specialised entry into a callable. `reference` is the oracle.

An executor is a module with the `Executor` protocol's `prepare`, which gives a `Program` for
one signature; hilbert/api.py reaches executors only through `get_executor` and these two
protocols (and the optional hooks `Executor` lists)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from ..compiler.entry import Entry
    from ..compiler.plan import Plan

#: Every executor by name (`dask`, `jax` and `onnx` need their optional extras: pip install
#: 'hilbert[dask]', 'hilbert[jax]', 'hilbert[onnx]').
NAMES = ("numba", "reference", "dask", "jax", "onnx")


@runtime_checkable
class Program(Protocol):
    """One entry made ready for one signature (argument shapes): `plan` says how it runs,
    calling it with the arguments' values (a tuple of arrays of the signature's dtype) runs it, and
    `loop_steps` counts the loop iterations its calls ran (an instrument for tests). A
    program whose `detaches` is true (optional) promises that no array it returns shares
    memory with its arguments, so a call hands a writeable array result back unchecked."""

    @property
    def plan(self) -> Plan: ...

    @property
    def loop_steps(self) -> int: ...

    def __call__(self, values: tuple) -> Any: ...


@runtime_checkable
class Executor(Protocol):
    """An executor: `prepare` specialises and plans an entry for argument shapes (trip counts
    known from `values`, when given) and returns its Program. Optional hooks an executor may
    have: `OPTIONS` and `check_options` (options it takes), `first_call` and `build` (compiling
    before a call, told to the `progress` they are given), `call` (a call it binds itself, as dask's lazy arguments), `AS_WRITTEN`
    (it runs the IR as written: compiler/driver.plan_entry plans that)."""

    def prepare(self, entry: Entry, shapes: tuple, optimize: str = "auto",
                values: tuple | None = None, dtype: str = "float64") -> Program: ...


def get_executor(name: str) -> Executor:
    """The executor module called `name` ('reference', 'numba', 'dask', 'jax' or 'onnx')."""
    from ..grammar.errors import ArgumentError
    from ..grammar.source import nowhere

    if name == "reference":
        from . import reference
        return reference
    if name == "numba":
        from .numba import executor as numba_exec
        return numba_exec
    if name in ("dask", "jax", "onnx"):  # (each needs its packages: an extra of hilbert's)
        from .numba.loading import load  # (dask's kernels import Numba)

        try:
            return load(f"hilbert.executor.{name}.executor")
        except ImportError as err:
            if not (err.name or "").startswith(name):  # (onnx's: onnx and onnxruntime)
                raise
            needs = "onnx and onnxruntime, which are" if name == "onnx" else f"{name}, which is"
            raise ArgumentError("E600", f"the {name} executor needs {needs} not installed "
                                f"(pip install 'hilbert[{name}]')", nowhere("executor")) from None
    raise ArgumentError("E600", f"unknown executor {name!r} (choose 'numba', 'reference', "
                        "'dask', 'jax' or 'onnx')", nowhere("executor"))


#: The modes of `math` (hilbert.load, compile_source, Function.using): every executor takes it.
MATHS = ("exact", "fast")


def check_math(mode, span) -> str:
    """`mode` if it is one of MATHS, else an ArgumentError (E600)."""
    from ..grammar.errors import ArgumentError

    if mode not in MATHS:
        raise ArgumentError("E600", f"math={mode!r:.40} is not a mode: write \"exact\" (NumPy's "
                            "results, the default) or \"fast\" (exp and tanh within 4 ulp, "
                            "division by a reciprocal)", span)
    return mode


def check_options(name: str, options: dict, span) -> None:
    """An ArgumentError unless executor `name` takes every one of `options` as given (`math`
    and `dtype` every executor takes)."""
    from ..compiler.dtypes import check_dtype
    from ..grammar.errors import ArgumentError

    executor = get_executor(name)
    check_math(options.get("math", "exact"), span)
    if "dtype" in options:
        check_dtype(options["dtype"], span)
    own = {k: v for k, v in options.items() if k not in ("math", "dtype")}
    known = getattr(executor, "OPTIONS", ())
    unknown = sorted(set(own) - set(known))
    if unknown:
        takes = (f"its options: {', '.join(known)}, math and dtype" if known
                 else "it takes none but math and dtype")
        raise ArgumentError("E600", f"the {name} executor has no option(s) {', '.join(unknown)} "
                            f"({takes})", span)
    if own:
        executor.check_options(own, span)
