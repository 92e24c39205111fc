"""The op table's `axes` column (compiler/ops/primitives.py): a value's axes from its
arguments' axes and the node's attributes, whatever an axis is (a size, or the expression
generated code names it by: compiler/plan/sizes.py, whose rule the emitter writes sizes with).
Shape rules (compiler/ops/shape_rules.py) check and explain; these only carry axes through."""

from __future__ import annotations

from collections.abc import Callable

#: An axes rule: the node's axes from its arguments' axes (each a tuple) and its attributes.
AxesRule = Callable[[tuple[tuple, ...], tuple], tuple]


def first_shaped(args: tuple[tuple, ...], attrs: tuple) -> tuple:
    """The axes of the first argument that has any (entrywise ops broadcast scalars to it).

    >>> first_shaped(((), ("n",), ("m",)), ())
    ('n',)
    """
    return next((axes for axes in args if axes), ())


def without_axis(args: tuple[tuple, ...], attrs: tuple) -> tuple:
    """x's axes less axis attrs[0] (a reduction along it; a read at one position of it).

    >>> without_axis((("n", "m"),), (0,))
    ('m',)
    """
    x, axis = args[0], attrs[0]
    return x[:axis] + x[axis + 1:]


def after_first(args: tuple[tuple, ...], attrs: tuple) -> tuple:
    """x's axes after its first (x[t], one slice along the first axis).

    >>> after_first((("n", "m"), ()), ())
    ('m',)
    """
    return args[0][1:]


def axis_alone(args: tuple[tuple, ...], attrs: tuple) -> tuple:
    """Axis attrs[0] of x alone (positions along it)."""
    return (args[0][attrs[0]],)


def no_axes(args: tuple[tuple, ...], attrs: tuple) -> tuple:
    """A scalar (a size)."""
    return ()


def shifted(args: tuple[tuple, ...], attrs: tuple) -> tuple:
    """shift(x, w1, …)[axis, …]: x's axes less `axis`, then the first axis of each w."""
    return without_axis(args, attrs) + tuple(w[0] for w in args[1:])
