"""Infers the named axes of a body's values from the declared ones (a parameter's `x : B×E`,
a let's, a model's weight's dims), refusing where two different axes meet (E330), and resolves
each named contraction (`contract(q, k, over F)`) to the einsum it stands for (E332).

compiler/passes/axes.py runs it over every definition that names axes; resolve runs it over a
definition that contracts by name, before lowering it, to know each contraction's einsum."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ...grammar import syntax as s
from ...grammar.errors import CheckError
from ...grammar.printer import print_expr
from ...grammar.source import Span
from ..ops.einsum_spec import ELLIPSIS, check_spec, letters, parse_spec
from ..ops.primitives import PRIMITIVES, having

if TYPE_CHECKING:  # (resolve imports this module to lower contractions)
    from .resolve import ModuleScope, Resolved

@dataclass(frozen=True, slots=True)
class Axis:
    """One axis of a value: the coordinate set it ranges over (None: not known), and where
    that name was written (a declaration, a weight, a rename)."""

    name: str | None
    span: Span | None = None


#: A value's axes, in order; None where not even its rank is known.
Value = tuple[Axis, ...] | None

_UNKNOWN = Axis(None)
_ENTRYWISE = having("entrywise") & set(PRIMITIVES)


def weight_axes(w: s.Weight) -> Value:
    return tuple(Axis(d, w.span) if isinstance(d, str) else _UNKNOWN for d in w.dims)


class Members:
    """A model's methods, callable from its methods and train blocks, and the axes its weights
    fix (a method's E is its weights' E: an argument's axis must be that one)."""

    def __init__(self, model: s.Model | None = None):
        self.name = model.name if model is not None else ""
        self.methods = {m.name: m for m in model.methods} if model is not None else {}
        self.fixed: dict[str, Axis] = {}
        for w in model.weights if model is not None else ():
            for d in w.dims:
                if isinstance(d, str):
                    self.fixed.setdefault(d, Axis(d, w.span))


def _declared(axes: s.Axes) -> tuple[Axis, ...]:
    return tuple(Axis(n, sp) for n, sp in zip(axes.names, axes.spans, strict=True))



def _shown(value: tuple[Axis, ...]) -> str:
    return "×".join(a.name or "?" for a in value) or "a scalar"


def _at(axis: Axis, span: Span) -> str:
    """Where `axis` was named, as line:column when in the same file as the error (`span`)."""
    if axis.span is None:
        return ""
    if axis.span.source.name == span.source.name:
        return f" (named at {axis.span.line}:{axis.span.column})"
    return f" (named at {axis.span})"


def _differ(what: str, a: Axis, b: Axis, span: Span) -> CheckError:
    """E330: `what` joins axis a with axis b."""
    return CheckError("E330", f"{what} joins axis {a.name}{_at(a, span)} with axis "
                      f"{b.name}{_at(b, span)}: they are different coordinate sets, even where "
                      "their sizes agree; if they are meant to be one, say so with "
                      f"rename(…, {a.name} → {b.name})", span)


def _conforms(declared: str, gives: str, got: Value, axes: s.Axes, span: Span) -> Value:
    """The declared axes, where `got` (a value's inferred axes) agrees with them; else E330."""
    return _agrees(declared, gives, got, _declared(axes), span)


def _agrees(declared: str, gives: str, got: Value, want: tuple[Axis, ...], span: Span) -> Value:
    """`want`, where `got` agrees with it (an axis not known agrees with any); else E330."""
    if got is None:
        return want
    if len(got) != len(want):
        raise CheckError("E330", f"{declared} {_shown(want)}, but {gives} {_shown(got)}", span)
    for g, w in zip(got, want, strict=True):
        if g.name is not None and w.name is not None and g.name != w.name:
            raise CheckError("E330", f"{declared} {_shown(want)}, but {gives} {_shown(got)}: "
                             f"axis {g.name}{_at(g, span)} where axis {w.name}{_at(w, span)} "
                             "is declared; they are different coordinate sets, even where "
                             "their sizes agree", span)
    return want


@dataclass
class Calls:
    """What the checkers of one module share: each undeclared callee's result by the axes it
    was called with, and the callees being walked (a loop calls itself: not known there)."""

    results: dict[tuple, Value] = field(default_factory=dict)
    walking: set[str] = field(default_factory=set)
    #: each named contraction's einsum, by the node's id (the bodies walked are alive)
    contractions: dict[int, str] = field(default_factory=dict)


class _Callees:
    """What a call names, for Checker: the definition (own, opened, or the model's method)."""

    resolved: Resolved
    scope: ModuleScope | None
    members: Members

    def target(self, name: str, module: str | None) -> tuple[str, s.Definition, bool] | None:
        """The definition a call names: its key, its syntax, and whether it is a method of
        the model being checked; None for a primitive or a name not known."""
        method = self.members.methods.get(name) if module is None else None
        if method is not None:
            return f"{self.members.name}.{name}", method, True
        key = self.callee(name, module)
        callee = self.resolved.syntax.get(key or "")
        return (key, callee, False) if key is not None and callee is not None else None

    def callee(self, name: str, module: str | None) -> str | None:
        """The key of the definition a plain call names, as resolve finds it (own, then opened
        modules)."""
        if module is not None or self.scope is None:
            return None
        for scope in (self.scope, *self.scope.opened):
            if name in scope.own:
                return scope.own[name]
        return None


class Checker(_Callees):
    """Infers the axes of one body's values (`env`: the names in scope and their axes)."""

    def __init__(self, resolved: Resolved, scope: ModuleScope | None, env: dict[str, Value],
                 calls: Calls, members: Members | None = None):
        self.resolved = resolved
        self.scope = scope
        self.env = env
        self.calls = calls
        self.members = members or Members()

    def train(self, train: s.Train) -> None:
        """A train block: each weight's new value has the weight's axes (`w ≔ …`, E330); its
        parameters declare none, so what follows from them is not known."""
        env = dict(self.env)
        env.update({name: None for name in train.params})
        for a in train.assigns:  # ((a, b) ≔ e: a's value is e's first, where known)
            parts = self.parts(a.value, env) if a.count != 1 else None
            value = (self.expr(a.value, env) if a.count == 1 else
                     parts[a.index] if parts is not None and len(parts) == a.count else None)
            want = self.env.get(a.name)
            if want is None or a.name in train.params:
                continue
            _agrees(f"{a.name} is a weight of axes", "its update gives", value, want,
                    a.value.span)

    def definition(self, d: s.Definition) -> None:
        env = dict(self.env)
        declared = d.axes.params if d.axes is not None else (None,) * len(d.params)
        for name, axes in zip(d.params, declared, strict=True):
            env[name] = _declared(axes) if axes is not None else None
        if d.axes is not None and d.axes.results:
            self.components(d, env)
            return
        got = self.expr(d.body, env)
        if d.axes is not None and d.axes.result is not None:
            _conforms(f"{d.name} is declared to give", "its body gives", got, d.axes.result,
                      d.body.span)

    def components(self, d: s.Definition, env: dict[str, Value]) -> None:
        """A body declared to give a tuple (`: (B×R, B×R)`): each component its declared
        axes, where the body's tuple is known here (E330)."""
        assert d.axes is not None
        want = d.axes.results
        got = self.parts(d.body, env)
        if got is None:
            return
        shown = ", ".join(_shown(_declared(w)) for w in want)
        tail = d.body  # (the tuple written last, a let's body: where each value is written)
        while isinstance(tail, s.Let):
            tail = tail.body
        if len(got) != len(want):
            raise CheckError("E330", f"{d.name} is declared to give {len(want)} values "
                             f"({shown}), but its body gives {len(got)}", tail.span)
        items = tail.items if isinstance(tail, s.Tuple) else (d.body,) * len(want)
        for place, (value, axes, item) in enumerate(zip(got, want, items, strict=True), 1):
            _conforms(f"{d.name}'s value {place} of ({shown}) is declared", "its body gives",
                      value, axes, item.span)

    def parts(self, e: s.Expr, env: dict[str, Value]) -> tuple[Value, ...] | None:
        """The values of a tuple `e` gives, one per component, where known here: a tuple
        written out, a let's or an if's, or a call of a definition declaring a tuple result
        (`: (B×R, B×R)`); else None (`e` walked all the same)."""
        match e:
            case s.Tuple(items=items):
                return tuple(self.expr(x, env) for x in items)
            case s.Let(bindings=bindings, body=body):
                return self.parts(body, self.bind(bindings, env))
            case s.If(cond=c, then=then, orelse=orelse):
                self.expr(c, env)
                a, b = self.parts(then, env), self.parts(orelse, env)
                if a is None or b is None or len(a) != len(b):
                    return None
                return tuple(self.join("if … then … else", x, y, e.span)
                             for x, y in zip(a, b, strict=True))
            case s.Call(name=n, module=m, args=args) if n != "einsum":
                found = self.target(n, m)
                if found is not None and found[1].axes is not None and found[1].axes.results:
                    key, callee, method = found
                    values = [self.expr(x, env) for x in args]
                    if len(values) == len(callee.params):
                        meaning = _meaning(callee, values, e.span,
                                           self.members.fixed if method else {})
                        return tuple(tuple(meaning.get(name, _UNKNOWN) for name in r.names)
                                     for r in callee.axes.results)
        self.expr(e, env)
        return None

    def bind(self, bindings: tuple[s.Binding, ...], env: dict[str, Value]) -> dict[str, Value]:
        """`env` with a let's names bound to their values' axes (`(a, b) ≔ e`: e's parts),
        each declared value checked against its declaration (E330)."""
        env = dict(env)
        for b in bindings:
            if b.pattern:
                parts = self.parts(b.value, env)
                known = parts is not None and len(parts) == len(b.names)
                env.update({n: parts[i] if parts is not None and known else None
                            for i, n in enumerate(b.names)})
                continue
            value = self.expr(b.value, env)
            if b.axes is not None:
                value = _conforms(f"{b.names[0]} is declared", "its value gives", value,
                                  b.axes, b.value.span)
            env[b.names[0]] = value
        return env

    def expr(self, e: s.Expr, env: dict[str, Value]) -> Value:
        match e:
            case s.Number():
                return ()
            case s.Name(name=n, module=None) if n in env:
                return env[n]
            case s.Binary() | s.Compare():
                return self.chain(e, env)
            case s.Negate(operand=o):
                return self.expr(o, env)
            case s.If(cond=c, then=t, orelse=o):
                self.expr(c, env)
                return self.join("if … then … else", self.expr(t, env), self.expr(o, env),
                                 e.span)
            case s.Let(bindings=bindings, body=body):
                return self.expr(body, self.bind(bindings, env))
            case s.Rename():
                return self.rename(e, self.expr(e.operand, env))
            case s.Contract(operands=operands):
                spec, value = contraction(e, [self.expr(x, env) for x in operands])
                self.calls.contractions[id(e)] = spec
                return value
            case s.Call(name="einsum", module=None, args=(s.String(text=spec), *operands)):
                return self.einsum(spec, [self.expr(x, env) for x in operands], e.span)
            case s.Call(name=n, module=m, args=args):
                return self.call(n, m, [self.expr(x, env) for x in args], e.span)
            case s.Index(target=x, index=i):  # x[t]: x without its first axis
                self.expr(i, env)
                value = self.expr(x, env)
                return value[1:] if value else None
            case s.Slice(target=x, start=a, stop=b):  # x[a : b]: some of its first axis's
                self.expr(a, env), self.expr(b, env)
                value = self.expr(x, env)
                return (_UNKNOWN, *value[1:]) if value else None
            case s.Derivative(of=of, wrt=(name,), many=False):
                self.expr(of, env)
                return env.get(name)
        for child in _children(e):
            self.expr(child, env)
        return None

    def chain(self, e: s.Binary | s.Compare, env: dict[str, Value]) -> Value:
        """A chain of operators, left operands walked in a loop (it may be thousands long)."""
        links: list[s.Binary | s.Compare] = []
        node: s.Expr = e
        while isinstance(node, (s.Binary, s.Compare)):
            links.append(node)
            node = node.left
        value = self.expr(node, env)
        for link in reversed(links):
            value = self.join(f"the operator {link.op}", value, self.expr(link.right, env),
                              link.span)
        return value

    def join(self, what: str, a: Value, b: Value, span: Span) -> Value:
        """The axes of an entrywise result: equal axes, or either a scalar."""
        if a is None or b is None:
            known = a if a is not None else b
            return known if known else None  # (one scalar: the other decides, not known)
        if not a or not b:
            return a or b
        if len(a) != len(b):  # (nothing broadcasts but a scalar: E310 at any call)
            raise CheckError("E330", f"{what} joins {_shown(a)} with {_shown(b)}: nothing "
                             "broadcasts but a scalar; to repeat a value along an axis, say "
                             "so with einsum", span)
        for x, y in zip(a, b, strict=True):
            if x.name is not None and y.name is not None and x.name != y.name:
                raise _differ(what, x, y, span)
        return tuple(x if x.name is not None else y for x, y in zip(a, b, strict=True))

    def rename(self, e: s.Rename, value: Value) -> Value:
        if value is None:
            return None
        axes = list(value)
        for (old, new), span in zip(e.pairs, e.spans, strict=True):
            where = [i for i, a in enumerate(axes) if a.name == old]
            if not where:
                if any(a.name is None for a in axes):
                    return None
                raise CheckError("E330", f"rename(…, {old} → {new}) names an axis {old}, but "
                                 f"the value's axes are {_shown(tuple(axes))}", span)
            for i in where:
                axes[i] = Axis(new, span)
        return tuple(axes)

    def einsum(self, spec: str, operands: list[Value], span: Span) -> Value:
        """An einsum's letters each stand for one axis: where a letter meets two, E330."""
        terms = parse_spec(check_spec(spec, len(operands), span))
        if ELLIPSIS in spec or "..." in spec:  # (axes no letter names: not known)
            return None
        bound: dict[str, Axis] = {}
        for term, value in zip(terms.inputs, operands, strict=True):
            if value is None or len(value) != len(term):
                continue
            for letter, axis in zip(term, value, strict=True):
                seen = bound.get(letter)
                if seen is not None and axis.name is not None and seen.name != axis.name:
                    raise _differ(f"einsum letter {letter}", seen, axis, span)
                if seen is None and axis.name is not None:
                    bound[letter] = axis
        return tuple(bound.get(letter, _UNKNOWN) for letter in terms.output)

    def call(self, name: str, module: str | None, args: list[Value], span: Span) -> Value:
        if module is None and name in _ENTRYWISE and len(args) == PRIMITIVES[name].arity:
            value = args[0]
            for other in args[1:]:
                value = self.join(f"{name}(…)", value, other, span)
            return value
        found = self.target(name, module)
        if found is None or len(args) != len(found[1].params):
            return None
        key, callee, method = found
        if callee.axes is not None:
            return _instantiate(callee, args, span, self.members.fixed if method else {})
        return self.through(key, callee, args, span, method)

    def through(self, key: str, callee: s.Definition, args: list[Value], span: Span,
                method: bool = False) -> Value:
        """An undeclared callee's result: its body walked with the arguments' axes, once per
        callee and axes (a callee already being walked, a loop, gives an unknown result); a
        model's method sees the model's weights and methods."""
        if all(a is None for a in args) and not method or key in self.calls.walking:
            return None
        memo = (key, tuple(a if a is None else tuple(x.name for x in a) for a in args))
        if memo not in self.calls.results:
            # (its module's scope by its key, module::name: resolve may be lowering that module)
            scope = self.resolved.scopes.get(key.rpartition("::")[0])
            checker = (Checker(self.resolved, self.scope, self.env, self.calls, self.members)
                       if method else Checker(self.resolved, scope, {}, self.calls))
            env = {**checker.env, **dict(zip(callee.params, args, strict=True))}
            self.calls.walking.add(key)
            try:
                value = checker.expr(callee.body, env)
            except CheckError as err:
                raise err.with_note(f"{callee.name} called with these axes at {span}") from None
            finally:
                self.calls.walking.discard(key)
            self.calls.results[memo] = value
        return self.calls.results[memo]


def _instantiate(callee: s.Definition, args: list[Value], span: Span,
                 fixed: dict[str, Axis]) -> Value:
    """A declared definition's result at a call: its axis names stand for the arguments'
    axes, one axis each (its E must be one axis in every argument that has an E); the names
    in `fixed` (a model's weights' axes, for its methods) stand for themselves."""
    assert callee.axes is not None
    meaning = _meaning(callee, args, span, fixed)
    if callee.axes.result is None:
        return None
    return tuple(meaning.get(n, _UNKNOWN) for n in callee.axes.result.names)


def _meaning(callee: s.Definition, args: list[Value], span: Span,
             fixed: dict[str, Axis]) -> dict[str, Axis]:
    """What each of a declared callee's axis names stands for at a call (E330 where one
    stands for two axes)."""
    assert callee.axes is not None
    meaning: dict[str, Axis] = dict(fixed)
    for declared, value in zip(callee.axes.params, args, strict=True):
        if declared is None or value is None or len(value) != len(declared.names):
            continue
        for name, axis in zip(declared.names, value, strict=True):
            seen = meaning.get(name)
            if seen is not None and axis.name is not None and seen.name != axis.name:
                raise _differ(f"{callee.name}'s axis {name}", seen, axis, span)
            if seen is None and axis.name is not None:
                meaning[name] = axis
    return meaning


def contractions(resolved: Resolved, scope: ModuleScope | None, owner: s.Definition | s.Train,
                 model: s.Model | None = None) -> dict[int, str]:
    """Each named contraction in `owner` (a definition, its body as it will be lowered, or a
    model's method or train block), by the node's id, as the einsum it stands for; E332 (or
    E330) where its operands' axes do not say.

    >>> contractions(resolved, scope, parse("fn s(q : T×F, k : S×F) ↦ contract(q, k, over F)"))
    {…: 'ab,cb->ac'}
    """
    weights = {w.name: weight_axes(w) for w in model.weights} if model is not None else {}
    checker = Checker(resolved, scope, weights, Calls(), Members(model))
    if isinstance(owner, s.Train):
        checker.train(owner)
    else:
        checker.definition(owner)
    return checker.calls.contractions


def contraction(e: s.Contract, operands: list[Value]) -> tuple[str, Value]:
    """The einsum `contract(q, k, over F)` stands for, and its result's axes: one letter per
    axis name (shared names are one axis, multiplied entrywise), the `over` axes summed, the
    others kept in the order they first appear (q's, then k's new ones). E332 where that is
    not known: an operand's axes not known, an axis in an operand twice, or an `over` axis
    that an operand lacks."""
    over = dict.fromkeys(e.over)
    if len(over) != len(e.over):
        raise CheckError("E332", f"contract(…, over {', '.join(e.over)}) names an axis twice",
                         e.span)
    letter: dict[str, str] = {}
    first: dict[str, Axis] = {}
    fresh, terms = letters(), []
    for place, (x, value) in enumerate(zip(e.operands, operands, strict=True), 1):
        _contractible(e, place, x, value)
        assert value is not None
        for axis in value:
            assert axis.name is not None
            if axis.name not in letter:
                first[axis.name], letter[axis.name] = axis, next(fresh)
        terms.append("".join(letter[a.name] for a in value if a.name is not None))
    kept = [name for name in letter if name not in over]
    spec = f"{','.join(terms)}->{''.join(letter[name] for name in kept)}"
    return spec, tuple(first[name] for name in kept)


def _contractible(e: s.Contract, place: int, operand: s.Expr, value: Value) -> None:
    """E332 unless operand `place` (1 for the first) has known, distinct axes and every axis
    the contraction is over."""
    text, span = print_expr(operand), operand.span
    shown = f" ({text})" if len(text) <= 30 else ""
    what = f"contract(…, over {', '.join(e.over)}): operand {place}{shown}"
    if value is None or any(a.name is None for a in value):
        shown = f"are {_shown(value)}" if value else "are not known"
        raise CheckError("E332", f"{what}'s axes {shown}; a contraction by name needs every "
                         "operand's named axes: declare them (a parameter's x : B×T×F, or "
                         "let q : B×T×F ≔ …), or write the einsum", span)
    names = [a.name for a in value]
    twice = next((n for n in names if names.count(n) > 1), None)
    if twice is not None:
        raise CheckError("E332", f"{what} has the axis {twice} twice ({_shown(value)}), so "
                         "which to contract is not known: rename one of them", span)
    for axis, axis_span in zip(e.over, e.spans or (e.span,) * len(e.over), strict=True):
        if axis not in names:
            has = f"its axes are {_shown(value)}" if value else "it is a scalar"
            raise CheckError("E332", f"{what} has no axis {axis} to contract over: {has}",
                             axis_span)


def _children(e: s.Expr) -> list[s.Expr]:
    match e:
        case s.Call(args=args) | s.Tuple(items=args):
            return list(args)
        case s.Derivative(of=of):
            return [of]
    return []
