"""Weight groups and optimiser state: `group`, `state … like`, and assignments over a group,
rewritten into the plain model they stand for before the model is checked and lowered.

A model may name groups of its weights (`group attention ≔ wq, wk, wv`); `weights` is the
group of every `weight` it declares (a `state` is held and assigned like a weight, but is not
in `weights`). `state m, v like g from e` declares, for every member w of g, the tensors `m.w`
and `v.w`, shaped like w and starting from `e` at that shape.

An assignment whose targets name a group or a state family is one assignment per member of
the group, written once:

    (weights, m, v) ≔ adam(weights, m, v, ∂ loss(x, y) / ∂ weights, t, 1e-3, 0.9, 0.999, 1e-8)

stands, for each member w, for `(w, m.w, v.w) ≔ adam(w, m.w, v.w, g_w, …)`, where g_w is
w's component of the one derivative `∂ loss(x, y) / ∂ (w1, w2, …)`. That is what a user
would write by hand, so both forms lower to the same IR (the derivative is one node, computed
once in the step, as a hand-written `let (g1, g2, …) ≔ ∂ loss / ∂ (w1, w2, …)` is).
`globalNorm(e)` of a group's value e is √(Σ_w Σ e_w²) over the whole group, for clipping.

The rewrite is purely syntactic: expand(model) returns a model with no groups or state
families, in which state tensors are weights of kind "state" named `m.w` (a name no source can
write, so it never clashes).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, replace

from ..grammar import syntax as s
from ..grammar.errors import ModelError

#: The group every model has: all the weights it declares with `weight`.
ALL = "weights"
#: The reduction over a group's value: √(sum of the squares of every member's entries).
NORM = "globalNorm"
#: What joins a state family's name to its weight's: `m.emb`.
JOIN = "."
_LETTERS = "abcdefghijklmnopqrstuvwxyz"


@dataclass(frozen=True)
class _Scope:
    """A model's groups (name → members) and state families (name → the group it is like)."""

    model: s.Model
    groups: dict[str, tuple[str, ...]]
    families: dict[str, str]
    ranks: dict[str, int]

    def group_of(self, name: str) -> str | None:
        """The group a name ranges over: a group's own, a state family's; else None."""
        return name if name in self.groups else self.families.get(name)


def expand(model: s.Model) -> tuple[s.Model, dict[str, tuple[str, ...]]]:
    """`model` with its groups, state families and group assignments written out (module
    docstring; a model without them is returned as it is), and each state family with the
    weights it holds a tensor for. Misuses are E803."""
    if not (model.groups or model.states or _mentions(model, ALL)):
        return model, {}
    scope = _scope(model)
    states = tuple(s.Weight(joined(m, w.name), w.type_name, w.dims,
                            _Rewriter(scope, None).expr(st.init, frozenset()), st.span, "state")
                   for st in model.states for m in st.names
                   for w in _weights_of(model, scope.groups[st.group]))
    trains = tuple(replace(t, assigns=_assigns(scope, t)) for t in model.trains)
    methods = tuple(replace(d, body=_Rewriter(scope, None).expr(d.body, frozenset(d.params)))
                    for d in model.methods)
    families = {m: scope.groups[st.group] for st in model.states for m in st.names}
    return replace(model, weights=model.weights + states, trains=trains, methods=methods,
                   groups=(), states=()), families


def joined(family: str, weight: str) -> str:
    """The name of state family `family`'s tensor for `weight`: `m.emb`."""
    return f"{family}{JOIN}{weight}"


def _mentions(model: s.Model, name: str) -> bool:
    """Whether any train block or method names `name` (as a value, a target or a variable)."""
    roots = (*(a.value for t in model.trains for a in t.assigns), *(d.body for d in model.methods))
    return (any(a.name == name for t in model.trains for a in t.assigns)
            or any(isinstance(x, s.Name) and x.name == name and x.module is None
                   or isinstance(x, s.Derivative) and name in x.wrt for x in _nodes(roots)))


def _nodes(e: object):
    """Every syntax node in `e` (a node or a tuple of them), `e`'s own first."""
    if isinstance(e, tuple):
        for x in e:
            yield from _nodes(x)
    elif dataclasses.is_dataclass(e):
        yield e
        for f in dataclasses.fields(e):
            yield from _nodes(getattr(e, f.name))


def _weights_of(model: s.Model, members: tuple[str, ...]) -> list[s.Weight]:
    held = {w.name: w for w in model.weights}
    return [held[m] for m in members]


def _scope(model: s.Model) -> _Scope:
    held = {w.name: w for w in model.weights}
    taken = set(held) | set(model.params) | {d.name for d in (*model.methods, *model.trains)}
    groups: dict[str, tuple[str, ...]] = {ALL: tuple(w.name for w in model.weights
                                                     if w.kind == "weight")}
    for g in model.groups:
        if g.name in taken or g.name in groups:
            raise ModelError("E803", f"group {g.name} has the name of another member of "
                             f"{model.name}{' (every model has the group weights)' if g.name == ALL else ''}; "
                             "rename the group", g.span)
        for member in g.members:
            if member not in held:
                raise ModelError("E803", f"group {g.name} lists {member}, which is not a weight "
                                 f"or state of {model.name} (a group holds weights declared with "
                                 "`weight` or `state`)", g.span)
        if len(set(g.members)) != len(g.members):
            raise ModelError("E803", f"group {g.name} lists a weight twice", g.span)
        groups[g.name] = g.members
    families: dict[str, str] = {}
    for st in model.states:
        if st.group not in groups:
            raise ModelError("E803", f"state {', '.join(st.names)} is declared like {st.group}, "
                             f"which is not a group of {model.name} (its groups: "
                             f"{', '.join(groups)})", st.span)
        for name in st.names:
            if name in taken or name in groups or name in families:
                raise ModelError("E803", f"state {name} has the name of another member of "
                                 f"{model.name}; rename it", st.span)
            families[name] = st.group
    ranks = {w.name: len(w.dims) for w in model.weights}
    for d in (*model.methods, *model.trains):
        for p in d.params:
            if p in groups or p in families:
                raise ModelError("E803", f"{d.name}'s parameter {p} has the name of a "
                                 f"{'group' if p in groups else 'state family'} of {model.name}, "
                                 "which it would hide; rename it", d.span)
    return _Scope(model, groups, families, ranks)


def _assigns(scope: _Scope, train: s.Train) -> tuple[s.Assign, ...]:
    out: list[s.Assign] = []
    bound = frozenset(train.params)
    for statement in s.statements(train.assigns):
        groups = {scope.group_of(a.name) for a in statement} - {None}
        if not groups:
            out += [replace(a, value=_Rewriter(scope, None).expr(a.value, bound)) for a in statement]
            continue
        first = statement[0]
        plain = [a.name for a in statement if scope.group_of(a.name) is None]
        if plain:
            raise ModelError("E803", f"{train.name} assigns a group's members and "
                             f"{', '.join(plain)} in one assignment; a weight on its own takes "
                             "an assignment of its own", first.span)
        group = _the_group(scope, statement, first.span)
        for i, member in enumerate(scope.groups[group]):
            value = _Rewriter(scope, (group, i)).expr(first.value, bound)
            for a in statement:
                name = member if a.name in scope.groups else joined(a.name, member)
                out.append(replace(a, name=name, value=value))
    return tuple(out)


def _the_group(scope: _Scope, statement: list[s.Assign], span) -> str:
    """The group a grouped assignment runs over: the one its targets name (a state family's
    targets alone: the group it is like)."""
    named = {a.name for a in statement if a.name in scope.groups}
    like = {scope.families[a.name] for a in statement if a.name in scope.families}
    group = next(iter(named)) if len(named) == 1 else (next(iter(like)) if not named and
                                                       len(like) == 1 else None)
    if group is None:
        raise ModelError("E803", "one assignment updates the groups "
                         f"{', '.join(sorted(named or like))}; an assignment runs over one group",
                         span)
    for a in statement:
        if a.name in scope.families:
            _covers(scope, a.name, group, span)
    return group


def _covers(scope: _Scope, family: str, group: str, span) -> None:
    missing = [w for w in scope.groups[group] if w not in scope.groups[scope.families[family]]]
    if missing:
        raise ModelError("E803", f"state {family} is kept for the members of "
                         f"{scope.families[family]}, but {group} also holds "
                         f"{', '.join(missing)}; declare the state like {group}", span)


class _Rewriter:
    """Writes an expression out for one member of a group (`at` = (group, index)), or, with
    `at` None, checks that nothing but globalNorm takes a group's value."""

    def __init__(self, scope: _Scope, at: tuple[str, int] | None):
        self.scope = scope
        self.at = at

    def expr(self, e: s.Expr, bound: frozenset[str]) -> s.Expr:
        match e:
            case s.Name(name=n, module=None) if n not in bound and self.scope.group_of(n):
                return s.Name(self.member_name(n, e.span), None, e.span)
            case s.Derivative(wrt=wrt) if any(self.scope.group_of(v) for v in wrt
                                               if v not in bound):
                return self.derivative(e, bound)
            case s.Call(name=n, module=None, args=(arg,)) if n == NORM and self.ranges(arg, bound):
                return self.norm(arg, bound, e.span)
            case s.Let(bindings=bindings, body=body):
                done = []
                for b in bindings:
                    done.append(replace(b, value=self.expr(b.value, bound)))
                    bound = bound | set(b.names)
                return replace(e, bindings=tuple(done), body=self.expr(body, bound))
        return self.children(e, bound)

    def children(self, e: s.Expr, bound: frozenset[str]) -> s.Expr:
        changes = {}
        for f in dataclasses.fields(e):
            value = getattr(e, f.name)
            if isinstance(value, tuple) and value and all(_is_expr(v) for v in value):
                changes[f.name] = tuple(self.expr(v, bound) for v in value)
            elif _is_expr(value):
                changes[f.name] = self.expr(value, bound)
        return replace(e, **changes) if changes else e

    def ranges(self, e: s.Expr, bound: frozenset[str]) -> bool:
        """Whether `e` takes a group's value (names a group, a state family or ∂ over one)."""
        return bool(self.groups_in(e, bound, families=True))

    def groups_in(self, e: s.Expr, bound: frozenset[str], families: bool) -> set[str]:
        """The groups `e` names, as values or as ∂'s variables (and, with `families`, the
        groups of the state families it names)."""
        found: set[str] = set()
        for x in _nodes(e):
            if isinstance(x, s.Name) and x.module is None and x.name not in bound:
                if x.name in self.scope.groups or families and x.name in self.scope.families:
                    found.add(self.scope.group_of(x.name))  # type: ignore[arg-type]
            elif isinstance(x, s.Derivative):
                found.update(v for v in x.wrt if v in self.scope.groups and v not in bound)
        return found

    def member_name(self, name: str, span) -> str:
        group = self.scope.group_of(name)
        if self.at is None:
            raise self.whole(name, group, span)  # type: ignore[arg-type]
        on, i = self.at
        member = self.scope.groups[on][i]
        if name in self.scope.groups:
            if name != on:
                raise ModelError("E803", f"an assignment over {on} reads the group {name}; an "
                                 "assignment runs over one group", span)
            return member
        _covers(self.scope, name, on, span)
        return joined(name, member)

    def whole(self, what: str, group: str, span) -> ModelError:
        """E803 for a group's value where one tensor is wanted."""
        members = ", ".join(self.scope.groups[group])
        return ModelError("E803", f"{what} is one value per member of {group} ({members}): use "
                          f"it in an assignment to the group (`{group} ≔ …`), or reduce it with "
                          f"{NORM}(…)", span)

    def derivative(self, e: s.Derivative, bound: frozenset[str]) -> s.Expr:
        if len(e.wrt) != 1 or e.many:
            raise ModelError("E803", "∂ with respect to a group takes the group alone "
                             f"(∂ … / ∂ {self.scope.group_of(e.wrt[0]) or e.wrt[0]}), not "
                             "inside a tuple of variables", e.span)
        name = e.wrt[0]
        if name not in self.scope.groups:
            raise ModelError("E803", f"∂ … / ∂ {name}: {name} is a state family; derivatives are "
                             "taken with respect to weights or a group of them", e.span)
        of = _Rewriter(self.scope, None).expr(e.of, bound)
        members = self.scope.groups[name]
        if self.at is None:
            raise self.whole(f"∂ … / ∂ {name}", name, e.span)
        on, i = self.at
        if name != on:
            raise ModelError("E803", f"an assignment over {on} takes ∂ … / ∂ {name}; an "
                             "assignment runs over one group", e.span)
        if len(members) == 1:
            return s.Derivative(of, members, False, e.span)
        names = tuple(f"∂{name}{JOIN}{k}" for k in range(len(members)))
        whole = s.Derivative(of, members, True, e.span)
        return s.Let((s.Binding(names, True, whole, e.span),), s.Name(names[i], None, e.span),
                     e.span)

    def norm(self, arg: s.Expr, bound: frozenset[str], span) -> s.Expr:
        """√(Σ over the group's members w of the sum of arg_w's squared entries)."""
        group = self.group_in(arg, bound, span)
        total: s.Expr | None = None
        for i, member in enumerate(self.scope.groups[group]):
            item = _Rewriter(self.scope, (group, i)).expr(arg, bound)
            letters = _LETTERS[:self.scope.ranks[member]]
            term = (s.Call("einsum", None, (s.String(f"{letters},{letters}->", span), item, item),
                           span) if letters else s.Binary("*", item, item, span))
            total = term if total is None else s.Binary("+", total, term, span)
        return s.Call("sqrt", None, (total,), span)  # type: ignore[arg-type]

    def group_in(self, arg: s.Expr, bound: frozenset[str], span) -> str:
        """The one group `arg` ranges over (a state family's: the group it is like)."""
        found = self.groups_in(arg, bound, families=False) or self.groups_in(arg, bound, True)
        if len(found) != 1:
            raise ModelError("E803", f"{NORM}(…) reads the groups {', '.join(sorted(found))}; "
                             "it reduces the value of one group", span)
        return next(iter(found))


def _is_expr(value: object) -> bool:
    return isinstance(value, (s.Number, s.String, s.Name, s.Call, s.Binary, s.Negate, s.Compare,
                              s.If, s.Let, s.Tuple, s.Index, s.Slice, s.Derivative, s.Rename,
                              s.Contract))
