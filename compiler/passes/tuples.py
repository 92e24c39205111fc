"""Tuples while inlining: `(a, b)` values are taken apart where they are used, so that after
inlining a tuple survives only as an entry's result (what Python receives as a tuple).

`settle` is the rebuild step the inliner uses: a component of a tuple literal is that
literal's item; an `if` choosing between two tuples is a tuple of `if`s; a tuple where a
tensor is needed (an operand, a condition, a loop's state) is E321.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...grammar.errors import CheckError
from .. import ir


def settle(node: ir.Node, kids: tuple[ir.Node, ...]) -> ir.Node:
    """`node` rebuilt over `kids` (its in-scope children, already settled), tuples taken apart."""
    match node:
        case ir.Item(index=i, count=count):
            return _item(node, kids[0], i, count)
        case ir.Cond():
            c, then, orelse = kids
            check_tensor(c, node, "the condition of an if")
            if isinstance(then, ir.Tuple) or isinstance(orelse, ir.Tuple):
                return _choose(node, c, then, orelse)
        case ir.Tuple():
            pass  # a tuple holds tuples (and a pass's holder of a scope's roots, a loop's result)
        case ir.Grad():
            pass  # the derivative itself says what it needs (compiler/passes/derivative.py)
        case ir.Loop():
            for k in kids:
                check_tensor(k, node, f"the state of {node.name}")
        case _:
            for k in kids:
                check_tensor(k, node, "an operand")
    return ir.rebuild(node, kids)


def substitute(root: ir.Node, mapping: Mapping[Any, ir.Node]) -> ir.Node:
    """ir.substitute, settling tuples the new values bring in (a tuple passed as an argument)."""
    if not any(isinstance(v, ir.Tuple) for v in mapping.values()):
        return ir.substitute(root, mapping)

    def visit(node: ir.Node, kids: tuple[ir.Node, ...]) -> ir.Node:
        return settle(node, kids) if kids else mapping.get(node, node)

    return ir.transform(root, visit)


def check_settled(root: ir.Node) -> None:
    """E321 for a component taken of something that is not a tuple (all are known by now).
    `settle` has already refused tuples anywhere but in tuples at the top."""
    for node in ir.topological(root):
        if isinstance(node, ir.Item):
            raise CheckError("E321", f"({_pattern(node.count)}) ≔ … takes apart a tuple of "
                             f"{node.count} values, but this value is a single tensor",
                             node.span)


def _item(node: ir.Node, of: ir.Node, index: int, count: int) -> ir.Node:
    if isinstance(of, ir.Tuple):
        if len(of.items) != count:
            raise CheckError("E321", f"({_pattern(count)}) ≔ … names {count} values, but the "
                             f"value is a tuple of {len(of.items)}", node.span)
        return of.items[index]
    if not isinstance(of, (ir.Local, ir.Item, ir.Call)):  # those may still turn out tuples
        raise CheckError("E321", f"({_pattern(count)}) ≔ … takes apart a tuple of {count} "
                         "values, but this value is a single tensor", node.span)
    return ir.Item(of, index, count, node.span)


def _choose(node: ir.Node, c: ir.Node, then: ir.Node, orelse: ir.Node) -> ir.Node:
    if not (isinstance(then, ir.Tuple) and isinstance(orelse, ir.Tuple)
            and len(then.items) == len(orelse.items)):
        raise CheckError("E321", f"the branches of this if answer {_count(then)} and "
                         f"{_count(orelse)}; both must answer the same number of values",
                         node.span)
    items = tuple(settle(ir.Cond(c, a, b, node.span), (c, a, b))
                  for a, b in zip(then.items, orelse.items, strict=True))
    return ir.Tuple(items, node.span)


def check_tensor(kid: ir.Node, node: ir.Node, role: str) -> None:
    """E321 if `kid`, read by `node` as `role`, is a tuple."""
    if isinstance(kid, ir.Tuple):
        raise CheckError("E321", f"{role} must be one tensor, but this is a tuple of "
                         f"{len(kid.items)} values; take it apart with let ({_pattern(len(kid.items))}) "
                         "≔ … in …", kid.span)


def _count(node: ir.Node) -> str:
    return f"a tuple of {len(node.items)} values" if isinstance(node, ir.Tuple) else "one value"


def _pattern(count: int) -> str:
    return ", ".join("abcdefghij"[i % 10] for i in range(count))
