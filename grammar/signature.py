"""Prints a definition's signature with its named axes, `(x : B×E, w : E×R) : B×R`, for the
printer, `help(f)` and plans (without Lark: a warm process never imports the parser)."""

from __future__ import annotations

from .syntax import Axes, Declared

#: The shape with no axes, as a declaration writes it.
SCALAR = "Scalar"


def print_shape(axes: Axes, unicode: bool = True) -> str:
    """`B×T′`, `B*T'` in ASCII, or `Scalar` for no axes."""
    if not axes.names:
        return SCALAR
    shown = "×".join(axes.names)
    return shown if unicode else shown.replace("×", "*").replace("′", "'")


def print_signature(params: tuple[str, ...], declared: Declared | None,
                    unicode: bool = True, bare: bool = True) -> str:
    """`(x : B×E, w) : B×R`, as the definition declares them (`(x, w)` where it does not);
    no parentheses for no parameters where `bare` (as source writes `def two ≔ 2`)."""
    shown = list(params)
    result = ""
    if declared is not None:
        shown = [p if a is None else f"{p} : {print_shape(a, unicode)}"
                 for p, a in zip(params, declared.params, strict=True)]
        if declared.result is not None:
            result = f" : {print_shape(declared.result, unicode)}"
        elif declared.results:
            result = f" : ({', '.join(print_shape(r, unicode) for r in declared.results)})"
    return ("" if bare and not params else f"({', '.join(shown)})") + result


def named_shapes(declared: Declared | None, count: int) -> tuple[str, ...]:
    """Each of `count` parameters' declared shape (`B×E`), "" where undeclared; () for none."""
    if declared is None:
        return ()
    padded = declared.params + (None,) * count  # (a vjp's cotangents follow the parameters)
    return tuple("" if a is None else print_shape(a) for a in padded[:count])
