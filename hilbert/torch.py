"""A hilbert function called from PyTorch: tensors in, tensors out, and a backward pass that is
hilbert's pullback (docs/interop.md).

`hilbert.torch.function(f)` wraps a compiled `Function` as a `torch.autograd.Function`: its
forward calls f on the tensors' memory (CPU tensors are read through `.numpy()`, no copy
where the layout allows; results come back with `torch.from_numpy`, no copy either), its
backward calls f's vjp (`f.product("vjp")`, one reverse sweep that recomputes the forward
work). Under `torch.no_grad`, or when no argument requires grad, a call is one plain call of
f with no graph recorded.

>>> import hilbert.torch                                        # doctest: +SKIP
>>> dense = hilbert.torch.function(hilbert.open("Prelude.Networks").dense)  # doctest: +SKIP
>>> dense(x, w).sum().backward()                               # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from hilbert.grammar.errors import ArgumentError

from .api import Function
from .bridged import Bridged, wrapped

__all__ = ["TorchFunction", "function", "as_tensors", "tensor_array"]


def function(f: Function) -> TorchFunction:
    """`f` as a callable on torch tensors (CPU), differentiable by torch's autograd: arguments
    by position, one per parameter of f (tensors, or numbers and arrays that need no
    gradient); results as tensors (0-d for a scalar, a tuple for a tuple of results)."""
    return TorchFunction(wrapped(f, "torch"))


class TorchFunction(Bridged):
    """A hilbert Function called with torch tensors; see `function`. `function` is the
    hilbert Function itself."""

    FRAMEWORK = "torch"

    def __init__(self, f: Function):
        super().__init__(f)
        self._apply = _node_class(self).apply

    def __call__(self, *args):
        if torch.is_grad_enabled():
            for a in args:
                if isinstance(a, torch.Tensor) and a.requires_grad:
                    return self._apply(*args)
        f = self.function
        return as_tensors(f(*[_array(f, a) for a in args]))


def _node_class(bridge: TorchFunction) -> Any:
    """The autograd node of `bridge`'s calls (a class of its own, so the bridge is not an
    argument of each call): forward is f, backward f's vjp at the same arguments (saved as
    tensors, so an argument changed in place before backward is an error of torch's, not a
    wrong gradient)."""
    f = bridge.function

    def forward(ctx, *args):
        arrays = []
        for a in args:  # (the common case, CPU tensors only, in one loop: a third of the cost)
            if not (isinstance(a, torch.Tensor) and a.is_cpu):
                break
            try:
                arrays.append(a.numpy(force=True))  # (on the CPU: a copy only for conj/neg bits)
            except TypeError:
                break  # (a dtype NumPy has no type for: _array says so)
        else:
            ctx.others = None  # nothing to keep but the tensors
            ctx.save_for_backward(*args)
            return as_tensors(f(*arrays))
        tensors = [isinstance(a, torch.Tensor) for a in args]
        ctx.others = [(t, None if t else a) for a, t in zip(args, tensors, strict=True)]
        ctx.save_for_backward(*[a for a, t in zip(args, tensors, strict=True) if t])
        return as_tensors(f(*[_array(f, a) for a in args]))

    def backward(ctx, *cotangents):
        needs = ctx.needs_input_grad
        if not any(needs):
            return (None,) * len(needs)
        tensors = ctx.saved_tensors
        if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
            raise _twice_error(f)
        if ctx.others is None:
            args = tensors
        else:
            saved = iter(tensors)
            args = [next(saved) if t else other for t, other in ctx.others]
        gradients = bridge.vjp(*[_array(f, a) for a in args],
                               *[_array(f, c) for c in cotangents])
        return tuple(_gradient(g, a) if need else None
                     for g, a, need in zip(gradients, args, needs, strict=True))

    return type(f"{f.__name__}_node", (torch.autograd.Function,),
                {"forward": staticmethod(forward), "backward": staticmethod(backward)})


def _array(f: Function, value):
    """A CPU tensor as a NumPy array on its memory (a copy only for a layout NumPy cannot
    view: conjugate or negative bits); anything else as it is (f converts it)."""
    if not isinstance(value, torch.Tensor):
        return value
    return tensor_array(value, f"an argument of {f.__name__}", f.entry.definition.span)


def tensor_array(tensor: torch.Tensor, what: str, span) -> np.ndarray:
    """`tensor` (on the CPU) as a NumPy array on its memory, detached; `what` ("an argument of
    f", "operand 2") names it in the E600/E601 for a tensor on another device or of a dtype
    NumPy cannot hold."""
    if not tensor.is_cpu:
        raise _device_error(what, tensor, span)
    try:
        return tensor.detach().numpy()
    except TypeError:  # a dtype NumPy has no type for (bfloat16)
        raise ArgumentError("E601", f"{what} is a tensor of {tensor.dtype}, which NumPy cannot "
                            "hold: convert it with .float() or .double()", span) from None
    except RuntimeError:  # a conjugate or negative view: resolved into a copy
        return tensor.detach().resolve_conj().resolve_neg().numpy()


def as_tensors(result):
    """A result of f as tensors on its memory: an array, a number (a 0-d tensor of the
    call's dtype) or a tuple of those."""
    if isinstance(result, tuple):
        return tuple(_tensor(r) for r in result)
    return _tensor(result)


def _tensor(value) -> torch.Tensor:
    if type(value) is not np.ndarray:  # (a Python float is a float64 call's scalar, np.float32
        value = np.asarray(value)       # a float32's)
    if not value.flags.writeable:  # (torch.from_numpy would warn: never the case for f's results)
        value = value.copy()
    return torch.from_numpy(value)


def _gradient(value, argument) -> torch.Tensor:
    """A gradient from f's vjp as a tensor of its argument's dtype (a call promoted past it,
    e.g. float32 beside float64, computed it wider)."""
    gradient = _tensor(value)
    return gradient if gradient.dtype == argument.dtype else gradient.to(argument.dtype)


def _device_error(what: str, tensor: torch.Tensor, span) -> ArgumentError:
    return ArgumentError(
        "E600", f"{what} is a tensor on {tensor.device}, but hilbert runs on the CPU: move it "
        f"there with .cpu() (and the results back with .to(device)), or run on an accelerator "
        f"with executor=\"jax\" (docs/interop.md)", span)


def _twice_error(f: Function) -> ArgumentError:
    return ArgumentError(
        "E600", f"{f.__name__} through hilbert.torch is differentiable once: its gradient is "
        f"computed by hilbert's vjp, which torch cannot differentiate again, so a backward "
        f"with create_graph=True (a derivative of the gradient) is not available; write the "
        f"second derivative in .hb with ∂, or call backward without create_graph",
        f.entry.definition.span)
