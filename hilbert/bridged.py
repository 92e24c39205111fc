"""What the PyTorch and JAX bridges share (hilbert/torch.py, hilbert/jax.py): the hilbert
Function a bridge wraps, whose name, docstring and signature it takes, and its vjp."""

from __future__ import annotations

from hilbert.grammar.errors import ArgumentError
from hilbert.grammar.source import nowhere

from .api import Function


def wrapped(f, framework: str) -> Function:
    """`f`, checked to be a hilbert Function (E600 otherwise) for hilbert.<framework>.function."""
    if not isinstance(f, Function):
        raise ArgumentError("E600", f"hilbert.{framework}.function takes a hilbert Function (a "
                            f"module's attribute, e.g. module.dense), not {type(f).__name__}",
                            nowhere(f"hilbert.{framework}.function"))
    return f


class Bridged:
    """A hilbert Function called from a framework (`FRAMEWORK`); `function` is the Function
    itself."""

    FRAMEWORK = ""

    def __init__(self, f: Function):
        self.function = f
        self.__name__ = f.__name__
        self.__doc__ = f.__doc__
        if hasattr(f, "__signature__"):
            self.__signature__ = f.__signature__

    def __repr__(self) -> str:
        return f"<hilbert.{self.FRAMEWORK} {self.function!r}>"

    @property
    def vjp(self) -> Function:
        """f's vjp (Function.product makes it once): what the backward pass calls."""
        return self.function.product("vjp")
