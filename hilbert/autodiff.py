"""Vector-Jacobian and Jacobian-vector products of a compiled function, from Python.

`f.vjp(*args)` gives f's results and a `Pullback`: cotangents of the results → the gradient
of each argument (what a framework's backward pass asks of a layer). `f.jvp(args, tangents)`
gives f's results and their tangents. Both run entries of their own, compiled and planned
like any `∂` (compiler/products.py): the vjp is one reverse sweep, the jvp one forward sweep.
A pullback computes f's forward work again with the cotangents (hilbert keeps no tape
between calls), so f(x) and a pullback cost about what one call of `∂` does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import numpy as np

from hilbert.compiler import dtypes
from hilbert.compiler.arguments import _dtype_of, bind_arguments
from hilbert.compiler.driver import annotate
from hilbert.compiler.products import cotangent_names
from hilbert.grammar.errors import ArgumentError, CheckError, HilbertError, internal_error

if TYPE_CHECKING:
    from hilbert.compiler.driver import CompiledModule, Entry
    from hilbert.compiler.plan import Plan

    from .api import Function


class Products:
    """A Function's derivative products, `f.vjp`, `f.jvp` and `f.product` (hilbert.api.Function
    takes them from here, so that this module needs nothing of it but its type)."""

    entry: Entry
    module: CompiledModule
    executor: str
    optimize: str
    options: dict
    _products: dict[str, Function]

    def vjp(self, /, *args, **kwargs):
        """(this function's result for these arguments, its pullback): `pullback(cotangent)`
        (shaped like the result; a tuple for a tuple of results) gives the tuple of gradients
        of Σ ⟨cotangent, result⟩, one per argument. Compiled and planned like any ∂
        (`pullback.plan`); docs/interop.md.

        >>> y, pullback = f.vjp(x, w); (dx, dw) = pullback(np.ones_like(y))   # doctest: +SKIP
        """
        return vjp(self, args, kwargs)

    def jvp(self, args, tangents):
        """(this function's result at `args`, its tangent along `tangents`): `args` and
        `tangents` are tuples with one entry per parameter (tangents shaped like the
        arguments); a tuple of results gives a tuple of tangents. One forward sweep."""
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
            made = cast("type[Function]", type(self))  # (Products is only ever a Function)
            self._products[kind] = made(entry, self.module, self.executor, self.optimize,
                                        options=self.options)
        return self._products[kind]


class Pullback:
    """The pullback of a function at its arguments: `pullback(cotangent)` (one array shaped
    like the result, or a tuple of arrays for a tuple of results) returns a tuple with the
    gradient of Σ ⟨cotangent, result⟩ for each argument, in the call's dtype. `plan` is the
    plan of the vjp's program."""

    def __init__(self, vjp: Function, primals: tuple, dtype: np.dtype, shapes: tuple,
                 single: bool):
        self.function = vjp
        self.primals = primals  # (as _primals passes them on)
        self.dtype = dtype  # the call's
        self.shapes = shapes  # of the results, one per cotangent
        self.single = single

    def __repr__(self) -> str:
        return f"<pullback of {self.function.entry.definition.name}>"

    def __call__(self, cotangent) -> tuple:
        given = (cotangent,) if self.single else _as_tuple(cotangent, len(self.shapes),
                                                          self.function)
        names = cotangent_names(len(self.shapes))
        values = tuple(_fitted(self.function, name, c, shape, self.dtype)
                       for name, c, shape in zip(names, given, self.shapes, strict=True))
        return self.function(*self.primals, *values)

    @property
    def plan(self) -> Plan:
        """The plan of the vjp's program for these arguments."""
        return self.function.plan(*self.primals, *(np.zeros(s, self.dtype) for s in self.shapes))


def vjp(function: Function, args: tuple, kwargs: dict) -> tuple:
    """(f's results for these arguments, their Pullback)."""
    primals, dtype = _primals(function, args, kwargs)
    product = function.product("vjp")
    outputs = function(*primals)
    single = not isinstance(outputs, tuple)
    results = (outputs,) if single else outputs
    shapes = tuple(np.shape(r) for r in results)
    return outputs, Pullback(product, primals, dtype, shapes, single)


def jvp(function: Function, args, tangents) -> tuple:
    """(f's results at `args`, their tangents along `tangents`): both in one call of the jvp's
    program."""
    args = _as_tuple(args, len(function.entry.params), function, "arguments")
    primals, dtype = _primals(function, args, {})
    given = _as_tuple(tangents, len(primals), function, "tangents")
    product = function.product("jvp")
    names = product.entry.params[len(primals):]
    values = tuple(_fitted(function, name, t, np.shape(p), dtype)
                   for name, t, p in zip(names, given, primals, strict=True))
    answer = product(*primals, *values)
    half = len(answer) // 2
    if half == 1:
        return answer[0], answer[1]
    return answer[:half], answer[half:]


def _primals(function: Function, args: tuple, kwargs: dict) -> tuple[tuple, np.dtype]:
    """(the arguments bound and converted as a call would, the call's dtype); E325 for a
    complex call (hilbert differentiates real functions only). A Python number given for a
    parameter the function counts with (a position, a step count: compiler/counting.py),
    bound in float64 in a float32 call, is passed on as a Python float, which the function
    and its products bind in float64 again: 2²⁴ + 1 stays 2²⁴ + 1."""
    values = bind_arguments(function.entry, args, kwargs, function.dtype,
                            function.counted_params)
    dtype = _dtype_of(values, function.dtype)
    if dtypes.is_complex(dtype):
        raise CheckError("E325", f"vjp and jvp differentiate real functions only, but this "
                         f"call of {function.entry.name} computes in {dtype}",
                         function.entry.definition.span)
    kind = np.dtype(dtype)
    return tuple(float(v) if v.dtype != kind and not v.ndim else
                 np.ascontiguousarray(v) if v.ndim else np.asarray(v) for v in values), kind


def _fitted(function: Function, name: str, value, shape: tuple, dtype) -> np.ndarray:
    """A cotangent or tangent as an array of the call's dtype shaped `shape` (E600
    otherwise). None is zeros of that shape, as JAX's symbolic zeros and the None torch hands
    a backward pass for a result that was not used mean; NumPy would make it NaN."""
    if value is None:
        return np.zeros(shape, dtype)
    try:
        holes = not isinstance(value, np.ndarray) and np.asarray(value).dtype == object
        array = np.asarray(value, dtype=dtype)
    except (TypeError, ValueError):
        holes = True
    if holes:  # (None inside a list, ragged lists, objects: NumPy makes NaN of some)
        raise ArgumentError("E600", f"{name} of {function.entry.name} must be an array of "
                            f"numbers (or None for zeros), not {type(value).__name__}",
                            function.entry.definition.span) from None
    if array.shape != tuple(shape):
        size = "×".join(map(str, shape)) or "a scalar"
        got = "×".join(map(str, array.shape)) or "a scalar"
        raise ArgumentError("E600", f"{name} of {function.entry.name} must be shaped like what "
                            f"it pairs with ({size}), but it is {got}",
                            function.entry.definition.span)
    return np.ascontiguousarray(array) if array.ndim else array


def _as_tuple(value, count: int, function: Function, what: str = "cotangents") -> tuple:
    """`value` as a tuple of `count` items (E600 otherwise)."""
    if not isinstance(value, (tuple, list)) or len(value) != count:
        d = function.entry.definition
        raise ArgumentError("E600", f"{what} of {d.name} must be a tuple of {count} "
                            f"(one per {'result' if what == 'cotangents' else 'parameter'})",
                            d.span)
    return tuple(value)
