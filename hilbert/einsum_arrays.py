"""The operands' own array library for hilbert.einsum: NumPy arrays (and anything NumPy reads),
torch tensors, JAX arrays and dask arrays in, the same library's arrays out (docs/interop.md,
"hilbert.einsum on tensors"). A torch tensor that requires grad goes through the torch bridge
(hilbert/torch.py), so the gradient is hilbert's vjp; a JAX array being traced (jit, grad, vmap)
through the JAX bridge (hilbert/jax.py); dask arrays through the dask executor, lazily. Libraries
are recognised only once imported: nothing here imports torch, JAX or dask."""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass

import numpy as np

from hilbert.grammar.errors import ArgumentTypeError, ArgumentValueError
from hilbert.grammar.source import nowhere

WHERE = "hilbert.einsum"


@dataclass(frozen=True)
class Library:
    """The operands' library ("numpy", "torch", "jax" or "dask") and whether the call stays in
    it (`lazy`: a torch tensor that requires grad while grad is enabled, a JAX tracer, a dask
    array) rather than run on NumPy's views of the operands."""

    name: str
    lazy: bool = False


NUMPY = Library("numpy")


def library_of(values: list) -> Library:
    """The library of the operands `values` (NumPy's when none is a torch tensor, a JAX array
    or a dask array; a mix of those libraries is an E600)."""
    torch, jax, dask = (sys.modules.get(m) for m in ("torch", "jax", "dask.array"))
    names, lazy = set(), False
    for v in values:
        if torch is not None and isinstance(v, torch.Tensor):
            names.add("torch")
            lazy = lazy or (v.requires_grad and torch.is_grad_enabled())
        elif jax is not None and isinstance(v, jax.Array):
            names.add("jax")
            lazy = lazy or isinstance(v, jax.core.Tracer)
        elif dask is not None and isinstance(v, dask.Array):
            names.add("dask")
            lazy = True
    if len(names) > 1:
        raise ArgumentValueError("E600", f"the operands mix {' and '.join(sorted(names))} arrays: "
                                 "give one library's (beside NumPy's)", nowhere(WHERE))
    return Library(names.pop(), lazy) if names else NUMPY


def arrays(values: list, library: Library) -> list[np.ndarray]:
    """The operands as NumPy arrays (a tensor's own memory where it can be viewed); for a call
    that stays in its library, stand-ins of the lazy operands' shapes and dtypes (read-only
    views of one zero, never computed on). An ArgumentTypeError (E601) for an operand NumPy
    cannot read as an array."""
    found = []
    for k, v in enumerate(values):
        if library.lazy and _is_lazy(v):
            found.append(np.broadcast_to(np.zeros((), _numpy_dtype(v.dtype)), tuple(v.shape)))
        elif library.name == "torch" and isinstance(v, sys.modules["torch"].Tensor):
            from .torch import tensor_array

            found.append(tensor_array(v, f"operand {k}", nowhere(WHERE)))
        else:
            found.append(_read(k, v))
    return found


def materialised(values: list) -> list[np.ndarray]:
    """The operands as NumPy arrays, lazy ones computed now."""
    return [_read(k, v) for k, v in enumerate(values)]


def _read(k: int, value) -> np.ndarray:
    try:
        return np.asarray(value)
    except (TypeError, ValueError, RuntimeError) as err:
        raise ArgumentTypeError("E601", f"operand {k} ({type(value).__name__}) cannot be read as "
                                f"a NumPy array: {err}", nowhere(WHERE)) from None


def _is_lazy(value) -> bool:
    torch = sys.modules.get("torch")
    return not isinstance(value, np.ndarray) and hasattr(value, "shape") and hasattr(
        value, "dtype") and (torch is None or not isinstance(value, torch.Tensor))


def _numpy_dtype(dtype) -> np.dtype:
    return dtype if isinstance(dtype, np.dtype) else np.dtype(str(dtype).replace("torch.", ""))


def returned(value, library: Library):
    """A result computed on NumPy arrays as the operands' library's array (a 0-d one for a
    scalar); a NumPy result as it is."""
    if library.name == "torch":
        from .torch import as_tensors

        return as_tensors(value)
    if library.name == "jax":
        return sys.modules["jax"].numpy.asarray(value)
    if library.name == "dask":
        return sys.modules["dask.array"].from_array(np.asarray(value))
    return value


def bridged(function, values: list, shapes: tuple, library: Library, computed: str,
            result: np.dtype):
    """`function` (the contraction's hilbert Function) called on operands that stay in their
    library, each broadcast to its shape in `shapes`: torch's through the torch bridge,
    computed in `computed` and answered in `result` (autograd records the casts); JAX's
    through the JAX bridge, in its dtype (docs/interop.md); dask's on the dask executor,
    lazily, in `computed` and answered in `result`."""
    if library.name == "torch":
        torch = sys.modules["torch"]
        tensors = [_tensor(v, s, getattr(torch, computed)) for v, s in zip(values, shapes, strict=True)]
        answer = _bridge(function, "torch")(*tensors)
        wanted = _torch_dtype(result)
        return answer if wanted is None or answer.dtype == wanted else answer.to(wanted)
    if library.name == "jax":
        jnp = sys.modules["jax"].numpy
        return _bridge(function, "jax")(*[jnp.broadcast_to(v, s)
                                          for v, s in zip(values, shapes, strict=True)])
    da = sys.modules["dask.array"]
    answer = function.using("dask")(*[da.broadcast_to(da.asarray(v).astype(computed), s)
                                      for v, s in zip(values, shapes, strict=True)])
    answer = answer if isinstance(answer, da.Array) else da.from_array(np.asarray(answer))
    return answer if answer.dtype == result else answer.astype(result)


def _tensor(value, shape: tuple, dtype):
    torch = sys.modules["torch"]
    tensor = value if isinstance(value, torch.Tensor) else torch.as_tensor(np.asarray(value))
    tensor = tensor if tensor.dtype == dtype else tensor.to(dtype)
    return tensor if tuple(tensor.shape) == shape else tensor.expand(shape)


def _torch_dtype(dtype: np.dtype):
    torch = sys.modules["torch"]
    try:
        return torch.from_numpy(np.empty(0, dtype)).dtype
    except TypeError:
        return None


@functools.lru_cache(maxsize=256)
def _bridge(function, framework: str):
    """The bridge of `framework` around `function` (made once per contraction)."""
    if framework == "torch":
        from . import torch as bridge
    else:
        from . import jax as bridge  # type: ignore[no-redef]
    return bridge.function(function)
