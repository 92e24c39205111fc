"""A hilbert function called from JAX, inside `jax.jit`, `jax.grad` and `jax.vmap`
(docs/interop.md).

`hilbert.jax.function(f)` wraps a compiled `Function` as a `jax.custom_vjp` whose forward is a
host callback (`jax.pure_callback`) calling f, and whose VJP rule is a second callback calling
f's vjp (`f.product("vjp")`, one reverse sweep that recomputes the forward work). The shapes of
the results, which a callback must declare when it is traced, come from specialising f to the
arguments' shapes (compiler/driver.specialise): shape inference only, nothing is computed.

A call computes in one dtype: the promotion (JAX's) of its floating arguments, float32 unless
the user enabled 64-bit types (`jax.config.update("jax_enable_x64", True)` or `with
jax.enable_x64(True):`) and passes float64 arrays; the bridge never changes that setting.
Integer arguments (loop counts, labels) are converted to it and get no gradient, but a number
the function counts with (a step count, a position: compiler/counting.py), which keeps its
exact value (JAX's int32 holds every position to 2³¹; the function counts in float64).

On the jax executor (`hilbert.jax.function(f.using("jax"))`) there is no callback: f's lowered
program (executor/jax) is traced into the caller's own, forward and VJP alike, so it runs on
the caller's device at no cost per call; its runtime checks (step counts, draw keys) are not
made there (no host runs after it). A program whose loop run backwards takes its step count
from the call's values keeps the callbacks (its tape's length must be fixed when traced).

Under `jax.vmap` each callback runs once per batch element (`vmap_method="sequential"`): a
hilbert function does not broadcast an extra leading axis through its einsums, so the other
methods JAX offers ("expand_dims", "broadcast_all", which hand the callback the whole batch)
would be wrong for almost every function.

>>> import hilbert.jax                                         # doctest: +SKIP
>>> dense = hilbert.jax.function(hilbert.open("Prelude.Networks").dense)  # doctest: +SKIP
>>> jax.grad(lambda w: dense(x, w).sum())(w)                   # doctest: +SKIP
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from hilbert.compiler import ir
from hilbert.compiler.driver import specialise
from hilbert.compiler.products import results
from hilbert.grammar.errors import ArgumentError

from .api import Function
from .bridged import Bridged, wrapped

__all__ = ["JaxFunction", "function"]

#: The dtypes a call from JAX computes in.
_REAL = (np.dtype(np.float32), np.dtype(np.float64))
#: How each callback is batched under jax.vmap (see the module's docstring).
VMAP_METHOD = "sequential"


def function(f: Function) -> JaxFunction:
    """`f` as a JAX-traceable function (jit, grad, vmap; on the CPU): arguments by position,
    one per parameter of f (arrays or numbers); results as JAX arrays (0-d for a scalar, a
    tuple for a tuple of results)."""
    return JaxFunction(wrapped(f, "jax"))


class JaxFunction(Bridged):
    """A hilbert Function called from JAX; see `function`. `function` is the hilbert Function
    itself."""

    FRAMEWORK = "jax"

    def __init__(self, f: Function):
        super().__init__(f)
        self._outputs: dict[tuple, object] = {}  # (shapes, dtype) → the results' ShapeDtypeStructs
        call = jax.custom_vjp(self._forward)
        call.defvjp(self._forward_saving, self._backward)
        self._call = call

    def __call__(self, *args):
        params = self.function.entry.params
        if len(args) != len(params):
            raise ArgumentError("E600", f"{self.function.__name__} takes {len(params)} "
                                f"argument(s) ({', '.join(params)}), by position, but was "
                                f"given {len(args)}", self.function.entry.definition.span)
        if any(isinstance(a, jax.core.Tracer) for a in args):
            return self._call(*args)
        # concrete arguments (no jit, grad or vmap around the call): f called at once
        answer = _host(self.function, self._dtype(args), *args)
        return tuple(map(jnp.asarray, answer)) if isinstance(answer, tuple) else \
            jnp.asarray(answer)

    def _forward(self, *args):
        dtype = self._dtype(args)
        inline = _inline(self.function, args, dtype)  # (shape errors raised here or below)
        if inline is not None:
            with jax.enable_x64(True):  # (its step counters are 64-bit, whatever the dtype)
                return inline(*_traced(self.function, args, dtype))
        return jax.pure_callback(partial(_host, self.function, dtype),
                                 self._results(args, dtype), *args, vmap_method=VMAP_METHOD)

    def _forward_saving(self, *args):
        return self._forward(*args), args

    def _backward(self, args, cotangents):
        dtype = self._dtype(args)
        given = cotangents if isinstance(cotangents, tuple) else (cotangents,)
        shapes = tuple(jax.ShapeDtypeStruct(np.shape(a), dtype) for a in args)
        inline = _inline(self.vjp, (*args, *given), dtype)
        if inline is not None:
            with jax.enable_x64(True):
                gradients = inline(*_traced(self.vjp, (*args, *given), dtype))
        else:
            gradients = jax.pure_callback(partial(_host, self.vjp, dtype), shapes, *args,
                                          *given, vmap_method=VMAP_METHOD)
        return tuple(g.astype(jnp.result_type(a)) if _inexact(a) else None
                     for g, a in zip(gradients, args, strict=True))

    def _dtype(self, args) -> np.dtype:
        """The dtype this call computes in: f's forced one, else JAX's promotion of the floating
        arguments (its default float when there are none); a complex argument is E601."""
        if self.function.dtype is not None:
            return np.dtype(self.function.dtype)
        kinds = {getattr(a, "dtype", None) for a in args}
        if len(kinds) == 1 and (kind := kinds.pop()) in _REAL:  # one dtype: the common case
            return kind
        floating = [a for a in args if _inexact(a)]
        for a in floating:
            if jnp.issubdtype(jnp.result_type(a), jnp.complexfloating):
                raise ArgumentError("E601", f"{self.function.__name__} from JAX takes real "
                                    f"arrays, but an argument is {jnp.result_type(a)}",
                                    self.function.entry.definition.span)
        return np.dtype(jnp.result_type(*floating) if floating else jnp.result_type(float))

    def _results(self, args, dtype: np.dtype):
        """What a call with these arguments answers, as ShapeDtypeStructs (one, or a tuple),
        from shapes alone; errors of shapes are raised here, as a hilbert call raises them."""
        shapes = tuple(tuple(np.shape(a)) for a in args)
        key = (shapes, dtype)
        if key not in self._outputs:
            f = self.function
            f.program(shapes, dtype.name)  # (specialised and planned, with f's coded errors)
            table = specialise(f.entry, shapes)
            found = tuple(jax.ShapeDtypeStruct(table.of(r), dtype)
                          for r in results(f.entry.body, f.entry.definition.span))
            self._outputs[key] = found if isinstance(f.entry.body, ir.Tuple) else found[0]
        return self._outputs[key]


def _inline(f: Function, args, dtype: np.dtype):
    """On the jax executor, f's lowered program as a function traced into the caller's own
    program (no callback: it runs on whatever device the caller's does); None on the other
    executors, and for a program whose loop run backwards takes its step count from the
    call's values (its tape's length must be fixed when traced: a callback runs it)."""
    if f.executor != "jax":
        return None
    return f.program(tuple(tuple(np.shape(a)) for a in args), dtype.name).traceable()


def _whole(f: Function, index: int, array, dtype: np.dtype) -> np.ndarray:
    """An array of whole numbers f counts with (oneHot's labels), given to the callback, in
    the call's dtype: E601 where that dtype does not hold one of them (past 2²⁴ in float32),
    rather than another whole number."""
    given = np.asarray(array)
    converted = given.astype(dtype)
    if given.dtype.kind in "iu" and not np.array_equal(converted, given):
        name = f.entry.params[index]
        raise ArgumentError("E601", f"argument {name} of {f.__name__} holds whole numbers "
                            f"{dtype} does not hold exactly (past 2²⁴ in float32), and an array "
                            f"argument is converted to the call's dtype; call it on the jax "
                            f"executor (f.using(\"jax\")), which reads them exactly",
                            f.entry.definition.span)
    return converted


def _inexact(value) -> bool:
    return jnp.issubdtype(jnp.result_type(value), jnp.inexact)


def _traced(f: Function, args, dtype: np.dtype) -> list:
    """The arguments f's traced program takes: each converted to the call's dtype, but what
    f counts with (a position, a step count, oneHot's labels: compiler/counting.py), which
    its program converts to float64 itself, exactly (JAX's int32 holds every whole number to
    2³¹ without 64-bit types)."""
    counted = f.counted_params
    return [jnp.asarray(a) if i in counted else jnp.asarray(a, dtype)
            for i, a in enumerate(args)]


def _host(f: Function, dtype: np.dtype, *arrays):
    """The callback: f on the arguments converted to the call's dtype (but a number f counts
    with, passed as a Python number, which f binds in float64: compiler/counting.py), its
    results as arrays of that dtype (a scalar result as a 0-d array)."""
    counted = f.counted_params
    answer = f(*[np.asarray(a).item() if i in counted and not np.ndim(a) else
                 _whole(f, i, a, dtype) if i in counted else np.asarray(a, dtype=dtype)
                 for i, a in enumerate(arrays)])
    if isinstance(answer, tuple):
        return tuple(np.asarray(r, dtype=dtype) for r in answer)
    return np.asarray(answer, dtype=dtype)
