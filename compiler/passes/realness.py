"""Before a complex call is planned: which values are complex, and an error (E325) where one
reaches what needs real numbers (docs/semantics.md, "Number types").

In a complex call every argument is complex. Constants, sizes and positions are real, so are
re(z), im(z) and abs(z), and = and ≠ give 0 or 1; everything else is complex when it reads a
complex value. Orderings (< > ≤ ≥), max and min, maximum and minimum (so argmax and argmin),
floor and erf have no complex meaning; an `if` cannot test a complex value, and ∂ is not
taken through complex values (no complex derivative is defined in the language)."""

from __future__ import annotations

from ...grammar.errors import CheckError
from .. import ir
from ..ops.primitives import spoken

#: Ops whose value is real whatever they read.
_REAL = frozenset({"re", "im", "abs", "eq", "ne", "rows", "columns", "positions",
                   "coordinate", "oneHot"})
#: Ops that need real arguments, and what a message says they do.
_NEEDS_REAL = {
    **{op: "orders numbers" for op in ("lt", "gt", "le", "ge")},
    **{op: "picks the larger or smaller number" for op in ("max", "min", "maximum", "minimum")},
    "floor": "rounds a real number down",
    "mod": "is the remainder of real numbers",
    "floordiv": "rounds a real quotient down",
    "erf": "is defined here for real numbers",
}


def check_complex(root: ir.Node) -> None:
    """E325 at the first place a complex value reaches what needs a real one in `root` (the
    IR as the source wrote it, derivatives taken), derivatives looked at first."""
    complex_ = _complex_values(root)
    order = list(ir.everything(root))
    for node in order:
        if isinstance(node, ir.Prim) and node.op == "gradient" and node.args[0] in complex_:
            raise CheckError("E325", "∂ is taken here through complex values, and hilbert "
                             "defines no complex derivative", node.span)
    for node in order:
        if isinstance(node, ir.Prim) and node.op in _NEEDS_REAL:
            bad = next((a for a in node.args if a in complex_), None)
            if bad is not None:
                raise CheckError("E325", f"{spoken(node.op)} {_NEEDS_REAL[node.op]}, but it is "
                                 "given a complex value (take re, im or abs of it first)",
                                 node.span)
        if isinstance(node, ir.Cond) and node.cond in complex_:
            raise CheckError("E325", "an if tests a complex value, which is neither true nor "
                             "false (test abs, re or im of it, or compare it with =)",
                             node.span)


def _complex_values(root: ir.Node) -> set[ir.Node]:
    """The nodes of `root` whose values are complex in a complex call (a loop's state, and
    what a loop answers, are taken to be complex: a real counter reads as complex)."""
    complex_: set[ir.Node] = set()
    for node in ir.everything(root):  # (children before parents)
        if _is_complex(node, complex_):
            complex_.add(node)
    return complex_


def _is_complex(node: ir.Node, complex_: set) -> bool:
    match node:
        case ir.Param() | ir.State():
            return True
        case ir.Const():
            return False
        case ir.Prim(op=op) if op in _REAL:
            return False
        case ir.Cond():
            return node.then in complex_ or node.orelse in complex_
    return any(k in complex_ for k in ir.children(node))


def real_results(root: ir.Node) -> bool | tuple:
    """Whether the value of `root` is real in a complex call (re, im, abs and what only they
    make: compiled code computes it in a complex array, whose real part the call answers, as
    the host answers NumPy's real array); a tuple's, item by item."""
    if isinstance(root, ir.Tuple):
        return tuple(real_results(item) for item in root.items)
    return root not in _complex_values(root)

