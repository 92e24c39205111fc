"""Checks named axes before anything runs: every value's axes, inferred through a body from
the declared ones, agree wherever two values meet (E330).

Requires `resolve` to have run (names bound, einsum specifications valid). Ensures, for every
definition that declares named axes (`def f(x : B×E, w : E×R) : B×R ≔ …`, or a let's,
`let y : B×R ≔ …`), uses `rename`, or is a model's method (whose weights' dims name their
axes, `weight w : Tensor[E, R]`): no entrywise operation, if-branch or einsum letter joins two
different axes (D with R, T with T′), no call gives a declared definition's axis two different
axes, and every value declared (a body, a let) has its declared axes. An axis is a coordinate
set, not a size: equal sizes do not make two axes one; `rename(x, D → R)` does, explicitly.
Sizes are checked at calls (`check_sizes`, E331). A call of an undeclared definition is
followed through its body with the arguments' axes. What is not known (an undeclared
parameter, a loop's result) agrees with everything, so undeclared code is checked as before,
which is to say not here."""

from __future__ import annotations

from dataclasses import dataclass

from ...grammar import syntax as s
from ...grammar.errors import CheckError
from ...grammar.signature import print_shape
from ...grammar.source import Span
from .. import ir
from ..modules import SourceModule
from .infer_axes import Calls, Checker, Members, weight_axes
from .inline import Inliner
from .resolve import Definition, Resolved, syntax_nodes
from .shapes import ShapeTable


def check_axes(resolved: Resolved, root: SourceModule) -> None:
    """Check every definition of every module resolved, and root's models, as above.

    >>> check_axes(resolve(loader, root), root)  # or CheckError E330
    """
    models = [d for d in root.syntax.decls if isinstance(d, s.Model)]
    calls = Calls()
    for key, d in sorted(resolved.syntax.items()):
        scope = resolved.scopes.get(resolved.definitions[key].module) if (
            key in resolved.definitions) else None
        if d.axes is not None or _names_axes(d.body):
            Checker(resolved, scope, {}, calls).definition(d)
    scope = resolved.scopes.get(root.key)
    for model in models:
        weights = {w.name: weight_axes(w) for w in model.weights}
        checker = Checker(resolved, scope, weights, calls, Members(model))
        for method in model.methods:
            checker.definition(method)
        for train in model.trains:
            checker.train(train)


def _names_axes(e: object) -> bool:
    """Whether `e` renames an axis, contracts by name or declares a let's."""
    return any(isinstance(n, (s.Rename, s.Contract)) or isinstance(n, s.Binding) and n.axes is not None
               for n in syntax_nodes(e))


#: Each axis's size in a call, and the parameter (or let) that bound it first.
Sizes = dict[str, tuple[int, str]]


def check_sizes(definition: Definition, shapes: tuple[tuple[int, ...], ...]) -> Sizes:
    """E331 where a call's arguments do not fit `definition`'s declared axes: an argument of
    another rank, or one axis name given two sizes (an axis's size is bound once per call).
    Gives the sizes bound.

    >>> check_sizes(step, ((4, 3), (3, 2)))  # x : B×E, w : E×R: B=4, E=3, R=2
    """
    sizes: Sizes = {}
    if definition.axes is None:
        return sizes
    # (zip stops at the declared parameters: a vjp's or jvp's entry has more after them)
    for name, axes, shape in zip(definition.params, definition.axes.params, shapes, strict=False):
        if axes is None:
            continue
        if len(shape) != len(axes.names):
            raise _rank(name, axes, shape, definition.span)
        _bind(sizes, name, axes, shape)
    return sizes


def _bind(sizes: Sizes, name: str, axes: s.Axes, shape: tuple[int, ...]) -> None:
    """Each of `name`'s axes bound to its size in `shape`: E331 where bound to another."""
    for axis, size, span in zip(axes.names, shape, axes.spans, strict=True):
        first = sizes.setdefault(axis, (size, name))
        if first[0] != size:
            raise CheckError("E331", f"axis {axis} has {first[0]} entries in {first[1]} "
                             f"but {size} in {name}: an axis has one size in a call", span)


def _rank(name: str, axes: s.Axes, shape: tuple[int, ...], span: Span) -> CheckError:
    """E331: `name`, declared `axes`, given a value of another rank."""
    whole = (Span(axes.spans[0].source, axes.spans[0].line, axes.spans[0].column,
                  axes.spans[-1].end_line, axes.spans[-1].end_column) if axes.spans else span)
    return CheckError("E331", f"{name} is declared {print_shape(axes)}, "
                      f"{_count(len(axes.names))}, but this call gives it "
                      f"{_count(len(shape))} (shape {_sized(shape)})", whole)


@dataclass(frozen=True, slots=True)
class DeclaredValue:
    """A value of declared axes as an entry computes it (IR over Param): a declared let's
    value, the entry's own or an inlined callee's, or an argument of an inlined call of a
    declared definition. `site` numbers the call whose sizes it binds (0: the entry's own);
    `call` is that call's span."""

    name: str
    axes: s.Axes
    node: ir.Node
    site: int
    call: Span | None = None


#: How many inlined calls of declared definitions an entry's sizes are checked in.
MAX_SITES = 256


def declared_values(d: Definition, inliner: Inliner) -> tuple[DeclaredValue, ...]:
    """Every value whose axes `d`'s entry must check at a call (check_let_sizes): its
    declared lets, and, for each call of a declared definition written out into it (not
    inside a loop), that call's arguments and the callee's declared lets, written out as
    the inliner writes them (so equal to the entry's nodes, whatever rewrote their spans).

    >>> declared_values(resolved.definitions[key], inliner)[0].name
    'y'
    """
    if d.key in inliner.loops:  # (its body runs as a loop: its lets are found by span)
        return ()
    found: list[DeclaredValue] = []
    pending: list[tuple[Definition, dict[ir.Node, ir.Node], int, Span | None]] = [
        (d, {}, 0, None)]
    sites = 0
    while pending:
        owner, env, site, at = pending.pop()
        found += [DeclaredValue(name, axes, inliner.expand(ir.substitute(node, env), d.name),
                                site, at) for name, axes, node in owner.let_values]
        for call in ir.topological(owner.body):
            if not isinstance(call, ir.Call) or call.key in inliner.loops or sites == MAX_SITES:
                continue
            callee = inliner.definitions.get(call.key)
            if callee is None or callee.axes is None and not callee.let_values:
                continue
            sites += 1
            args = tuple(inliner.expand(ir.substitute(a, env), d.name) for a in call.args)
            declared = callee.axes.params if callee.axes is not None else ()
            found += [DeclaredValue(p, axes, arg, sites, call.span)
                      for p, axes, arg in zip(callee.params, declared, args, strict=False)
                      if axes is not None]
            locals_: dict[ir.Node, ir.Node] = {
                ir.Local(i, p, callee.span): a
                for i, (p, a) in enumerate(zip(callee.params, args, strict=True))}
            pending.append((callee, locals_, sites, call.span))
    return tuple(found)


def check_let_sizes(definition: Definition, sizes: Sizes, table: ShapeTable,
                    declared: tuple[DeclaredValue, ...] = ()) -> None:
    """E331 where a declared let's value (`let y : B×R ≔ v`, its shape in this call from
    `table`) gives an axis another size than the call's parameters or an earlier let did,
    and where an inlined call of a declared definition (its arguments, its lets: `declared`)
    binds one of its axes to two sizes or gives a declared value another rank. A let's value
    is found by its span, and each of `declared` by its node; one found with several shapes
    (in loops, a derivative's) is not checked."""
    by_span: dict[Span, set[tuple[int, ...]]] = {}
    by_node: dict[ir.Node, set[tuple[int, ...]]] = {}
    for scope in table.scopes.values():
        for node, shape in scope.items():
            if isinstance(shape, tuple) and all(isinstance(size, int) for size in shape):
                by_node.setdefault(node, set()).add(shape)  # (not a tuple's shapes)
                if getattr(node, "span", None) is not None:
                    by_span.setdefault(node.span, set()).add(shape)
    for name, axes, span in definition.lets:
        found = by_span.get(span, set())
        if len(found) == 1 and len(shape := next(iter(found))) == len(axes.names):
            _bind(sizes, name, axes, shape)
    bound: dict[int, Sizes] = {0: sizes}
    for value in declared:
        found = by_node.get(value.node, set())
        if len(found) != 1:
            continue
        shape = next(iter(found))
        try:
            if len(shape) != len(value.axes.names):
                raise _rank(value.name, value.axes, shape, definition.span)
            _bind(bound.setdefault(value.site, {}), value.name, value.axes, shape)
        except CheckError as err:
            raise (err.with_note(f"called at {value.call}") if value.call else err) from None


def _count(axes: int) -> str:
    return f"{axes} axis" if axes == 1 else f"{axes} axes"


def _sized(shape: tuple[int, ...]) -> str:
    return "×".join(map(str, shape)) or "() (a scalar)"
