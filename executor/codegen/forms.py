"""The code generator's lowering of each form of compiled op, keyed by the op table's `form`.

A row with the `compiled` trait names its form (compiler/ops/primitives.py, FORMS); the module
that writes a form registers its lowering here with `@lowers(form, part)`, once, so that the
generator dispatches on the row's form and never on an op's name, and an op of a form already
registered is one row of the table. Which part a form needs follows from its role: a member's
or generator's value at an index of a loop nest, a tail's fold, or the code of a unit alone.
tests/test_op_table.py checks that every compiled row's form has the part its role needs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ...compiler import ir
from ...compiler.ops.primitives import BY_OP, FORMS


@dataclass
class Lowering:
    """How compiled code writes one form. `value(em, node, index, temps)`: its value at `index`
    of a loop nest, an expression (members, generators, scalars); `fold(node)`: a tail's
    combining code and start; `alone(em, node)`: the code of a unit of its own (sizes, views,
    oneHot, draws), which binds the node. (A value's sizes are the plan's rule:
    compiler/plan/sizes.py.)"""

    value: Callable | None = None
    fold: Callable | None = None
    alone: Callable | None = None


#: Each form's lowering, as the modules that write them register it.
LOWERINGS: dict[str, Lowering] = {}
#: The part each role reads (a role not here: `alone`).
PARTS = {"member": "value", "generator": "value", "tail": "fold"}


def lowers(form: str, part: str) -> Callable[[Callable], Callable]:
    """Register the decorated function as `part` of `form`'s lowering.

    >>> @lowers("size", "alone")  # doctest: +SKIP
    ... def measured(em, node): ...
    """
    assert form in FORMS and part in Lowering.__dataclass_fields__, (form, part)

    def register(function: Callable) -> Callable:
        lowering = LOWERINGS.setdefault(form, Lowering())
        assert getattr(lowering, part) is None, f"{form}: {part} registered twice"
        setattr(lowering, part, function)
        return function

    return register


def part_for(role: str) -> str:
    """The part of a lowering a node of `role` is written by."""
    return PARTS.get(role, "alone")


def lowering(node: ir.Prim, part: str) -> Callable:
    """`part` of the lowering of `node`'s form (an AssertionError where it has none)."""
    form = BY_OP[node.op].form
    found = getattr(LOWERINGS.get(form) or Lowering(), part)
    assert found is not None, f"code generation: no {part} for {node!r} (form {form})"
    return found
