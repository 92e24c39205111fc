"""Checks and lowers a module's `model … : Learner` declarations into entries a class can run.

A model's state is its weights; everything a method or a train block computes is IR over
`(weights…, model parameters…, own parameters…)`, so the standard executors run it:

- a method is an Entry whose params are exactly that tuple;
- a train block is an Entry whose params are that tuple and then `steps`, and whose body is
  one counted ir.Loop over the state `(counter, weights…, model parameters…, own…)`: the
  executor answers the loop's final state, and the new weights are components 1…W of it.
  One step reads every weight as the step began (simultaneous assignment), so `steps = N`
  is N separate calls run as one loop.
- a weight's initialiser is IR over Param(i) = the model's parameters, with its draws
  (`gaussian`, `uniform`) left without a shape: the shape is known only at construction.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property

from ..grammar import syntax as s
from ..grammar.errors import ModelError, NameResolutionError
from ..grammar.source import Span
from . import groups, ir
from .entry import Entry, build_entry
from .kept import kept_entry
from .laws.scope import rules, simplified
from .modules import SourceModule
from .passes.inline import Inliner
from .passes.recursion import check_recursion
from .passes.resolve import (
    Definition,
    Lowering,
    ModuleScope,
    Resolved,
    _suggest,
    arity,
    declared_lets,
    named_contractions,
)

#: The base a model declares (`model Name(…) : Learner`) and the type its weights have.
BASE = "Learner"
WEIGHT_TYPE = "Tensor"
#: Names a model member cannot take: the Python class already uses them. Every public
#: attribute of hilbert.models.Learner is here (a test checks it); names starting with `_`
#: (PRIVATE) are the class's own and Python's (`__init__`, `__bool__`, …), so none may be taken.
RESERVED = frozenset({"save", "load", "weights", "arguments", "parameters", "tier", "dtype"})
PRIVATE = "_"
#: The keyword a train block's Python call takes its step count by.
STEPS = "steps"


@dataclass(frozen=True, slots=True)
class WeightDecl:
    """A weight: its dims (model parameter names or whole numbers) and its initialiser, IR
    over Param(i) = the model's i-th parameter, draws still without a shape."""

    name: str
    dims: tuple[str | int, ...]
    init: ir.Node
    span: Span = field(compare=False)


@dataclass(frozen=True)
class Member:
    """A method or a train block: its own parameters (what Python passes), where it is written,
    and its entry, inlined and optimised when first asked for (`build` makes it): a model's
    members cost as much to inline as the rest of its module to load, and a program may use
    one of them only."""

    name: str
    params: tuple[str, ...]
    kind: str  # "method" or "train"
    span: Span = field(compare=False)
    doc: str = field(compare=False)
    build: Callable[[], Entry] = field(compare=False, repr=False)
    assigned: tuple[str, ...] = ()  # the weights a train block updates; () for a method
    #: A method's declared named axes, its own parameters' (help(net.run) shows them), or None.
    axes: s.Declared | None = field(default=None, compare=False)

    @cached_property
    def entry(self) -> Entry:
        return self.build()


@dataclass(frozen=True, slots=True)
class CompiledModel:
    """What compile_models produces for one declaration; hilbert/models.py makes it a class."""

    name: str
    params: tuple[str, ...]
    weights: tuple[WeightDecl, ...]
    trains: dict[str, Member]
    methods: dict[str, Member]
    span: Span = field(compare=False)
    doc: str = field(default="", compare=False)
    #: Each state family (`state m like g`): the weights it holds a tensor for (`m.w`).
    families: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def state(self) -> tuple[str, ...]:
        """The leading parameters of every entry: the weights, then the model's parameters."""
        return tuple(w.name for w in self.weights) + self.params


def compile_models(resolved: Resolved, root: SourceModule) -> dict[str, CompiledModel]:
    """Compile the model declarations of `root` (resolved already) into CompiledModels.

    Requires `resolve` to have run on `root`; ensures every weight dim is a parameter or a
    whole number, train blocks assign only weights and each at most once, member names are
    unique, and every body lowers (names bound, arities right); raises ModelError (E800).

    >>> from hilbert.compiler.modules import Loader          # doctest: +SKIP
    >>> compile_models(resolve(loader, root), root)["Perceptron"].trains["train"].assigned
    ('first', 'second')
    """
    scope = resolved.scopes[root.key]
    models: dict[str, CompiledModel] = {}
    for decl in root.syntax.decls:
        if isinstance(decl, s.Model):
            _check_name(decl, scope, models)
            models[decl.name] = _ModelCompiler(decl, scope, resolved).compile()
    return models


def _check_name(decl: s.Model, scope: ModuleScope, models: dict[str, CompiledModel]) -> None:
    if decl.name in scope.own or decl.name in models:
        first = models[decl.name].span if decl.name in models else "this module"
        raise NameResolutionError("E205", f"{decl.name} is defined twice in this module (first "
                                  f"at {first})", decl.span)


class _ModelCompiler:
    """Checks one declaration, then lowers its weights, methods and train blocks."""

    def __init__(self, decl: s.Model, scope: ModuleScope, resolved: Resolved):
        self.decl, self.families = groups.expand(decl)
        self.scope = scope
        self.resolved = resolved
        self.state = tuple(w.name for w in self.decl.weights) + decl.params
        self.building = threading.Lock()  # members share one inliner: built one at a time

    def key(self, member: str) -> str:
        """The definition key of a method or train block."""
        return f"{self.scope.module.key}::{self.decl.name}.{member}"

    def compile(self) -> CompiledModel:
        self.check_declaration()
        definitions = dict(self.resolved.definitions)
        for method in self.decl.methods:
            definitions[self.key(method.name)] = self.method_definition(method)
        inliner = Inliner(definitions, check_recursion(definitions))
        weights = tuple(self.weight(w, inliner) for w in self.decl.weights)
        methods = {m.name: Member(m.name, m.params, "method", m.span, m.doc,
                                  self.method_entry(definitions[self.key(m.name)], inliner),
                                  axes=m.axes)
                   for m in self.decl.methods}
        trains = {t.name: Member(t.name, t.params, "train", t.span, t.doc,
                                 self.train_entry(t, inliner), tuple(a.name for a in t.assigns))
                  for t in self.decl.trains}
        d = self.decl
        return CompiledModel(d.name, d.params, weights, trains, methods, d.span, d.doc,
                             self.families)

    # -- checks --------------------------------------------------------------------------

    def check_declaration(self) -> None:
        d = self.decl
        if d.base == "Frame":  # (a Frame model is parsed as one only with its path)
            raise ModelError("E800", f"a Frame model names the parameter that is its file's "
                             f"path: write `model {d.name}(path) : Frame(path) {{ … }}`", d.span)
        if d.base != BASE:
            raise ModelError("E800", f"model {d.name} declares itself a {d.base}, but a model "
                             f"is a {BASE} (or a Frame(path) over a CSV file): write "
                             f"`model {d.name}(…) : {BASE}`", d.span)
        _unique(d.name, [(p, "parameter", d.span) for p in d.params]
                + [(w.name, "weight", w.span) for w in d.weights]
                + [(m.name, "method", m.span) for m in (*d.trains, *d.methods)])
        for name, kind, span in ([(p, "parameter", d.span) for p in d.params]
                                 + [(w.name, "weight", w.span) for w in d.weights]):
            if name == STEPS and d.trains:
                raise ModelError("E800", f"{d.name} cannot have a {kind} called {STEPS}: its "
                                 f"train blocks take the number of steps by that name "
                                 f"(train(…, {STEPS}=N)); rename the {kind}", span)
        for w in d.weights:
            self.check_weight(w)
        for member in (*d.trains, *d.methods):
            self.check_params(member)
        for train in d.trains:
            self.check_assignments(train)

    def check_weight(self, w: s.Weight) -> None:
        if w.type_name != WEIGHT_TYPE:
            raise ModelError("E800", f"weight {w.name} is declared a {w.type_name}; a weight "
                             f"is a {WEIGHT_TYPE}[d1, d2, …]", w.span)
        for dim in w.dims:
            if isinstance(dim, str) and dim not in self.decl.params:
                raise ModelError(
                    "E800", f"weight {w.name} has dimension {dim}, which is neither a parameter "
                    f"of {self.decl.name} ({', '.join(self.decl.params) or 'it has none'}) nor "
                    f"a number{_suggest(dim, self.decl.params)}", w.span)
            if isinstance(dim, float) and (not dim.is_integer() or dim < 0):
                raise ModelError("E800", f"weight {w.name} has dimension {dim:g}; a dimension "
                                 "is a whole number, at least 0", w.span)

    def check_params(self, member: s.Definition | s.Train) -> None:
        taken = {w.name: "a weight" for w in self.decl.weights}
        taken |= {p: "a parameter of the model" for p in self.decl.params}
        for p in member.params:
            if p in taken:
                raise ModelError("E800", f"{member.name}'s parameter {p} has the name of "
                                 f"{taken[p]}, which it would hide; rename one of them",
                                 member.span)
        if isinstance(member, s.Train) and STEPS in member.params:
            raise ModelError("E800", f"{member.name} cannot have a parameter called {STEPS}: "
                             f"{member.name}(…, {STEPS}=N) takes the number of steps by that "
                             "name", member.span)

    def check_assignments(self, train: s.Train) -> None:
        weights = [w.name for w in self.decl.weights]
        seen: dict[str, s.Assign] = {}
        for a in train.assigns:
            if a.name not in weights:
                what = ("a parameter of " + (train.name if a.name in train.params else
                                             self.decl.name)
                        if a.name in (*train.params, *self.decl.params) else "not a weight")
                raise ModelError(
                    "E800", f"{train.name} assigns to {a.name}, which is {what}; only weights "
                    f"can be assigned (weights of {self.decl.name}: "
                    f"{', '.join(weights) or 'none'}){_suggest(a.name, weights)}", a.span)
            if a.name in seen:
                raise ModelError(
                    "E800", f"{train.name} assigns {a.name} twice (first at {seen[a.name].span}); "
                    "the assignments are one simultaneous step, so each weight takes one value",
                    a.span)
            seen[a.name] = a

    # -- lowering ------------------------------------------------------------------------

    def lowering(self, own: tuple[str, ...]) -> _MemberLowering:
        methods = {m.name: (self.key(m.name), m.params) for m in self.decl.methods}
        return _MemberLowering(self.scope, self.resolved, self.state + own, methods,
                               len(self.state))

    def weight(self, w: s.Weight, inliner: Inliner) -> WeightDecl:
        lowered = Lowering(self.scope, self.resolved, self.decl.params, allow_draws=True)
        body = lowered.expr(w.init)
        params = {ir.Local(i, p, w.span): ir.Param(i, p, w.span)
                  for i, p in enumerate(self.decl.params)}
        dims = tuple(int(d) if isinstance(d, float) else d for d in w.dims)
        return WeightDecl(w.name, dims, ir.substitute(inliner.expand(body, f"{self.decl.name}.{w.name}"),
                                                      params), w.span)

    def state_axes(self) -> tuple[s.Axes | None, ...]:
        """The named axes of the state a method takes first: each weight's dims (a declared
        method's E is its weights' E, one size in a call: E331); a number dim is an axis of
        that many entries, named by the number (no axis a user names can be)."""
        weights = {w.name: w for w in self.decl.weights}
        return tuple(s.Axes(tuple(d if isinstance(d, str) else str(int(d)) for d in w.dims),
                            (w.span,) * len(w.dims))
                     if (w := weights.get(n)) is not None else None for n in self.state)

    def method_definition(self, m: s.Definition) -> Definition:
        written, fired = simplified(m.body, rules(self.scope.laws))  # the module's laws
        lowering = self.lowering(m.params)
        lowering.contractions = named_contractions(self.resolved, self.scope,
                                                   replace(m, body=written), self.decl)
        body = lowering.expr(written)
        axes = m.axes and replace(m.axes, params=self.state_axes() + m.axes.params)
        return Definition(self.key(m.name), f"{self.decl.name}.{m.name}", self.scope.module.key, "method",
                          self.state + m.params, body, m.span, m.doc, fired, axes,
                          declared_lets(written), tuple(lowering.let_values))

    @staticmethod
    def assigned(lowering: Lowering, a: s.Assign) -> ir.Node:
        """The value `a` gives its weight: the whole right-hand side, or one component of it
        for `(w, v) ≔ e` (the right-hand side is one node, computed once, however many)."""
        value = lowering.expr(a.value)
        return value if a.count == 1 else ir.Item(value, a.index, a.count, a.span)

    def train_entry(self, t: s.Train, inliner: Inliner) -> Callable[[], Entry]:
        """What builds a train block's entry: a definition of `(*state, *own, steps)` whose
        body is its loop. Its assignments are lowered now (names bound, arities right); they
        are inlined, and the loop built from the steps so expanded, when the entry is built."""
        full = self.state + t.params
        lowering = self.lowering(t.params)
        name = f"{self.decl.name}.{t.name}"
        laws, fired = rules(self.scope.laws), dict[str, None]()  # (as a method's body)
        written = []
        for a in t.assigns:
            value, steps = simplified(a.value, laws)
            fired |= dict.fromkeys(steps)
            written.append(replace(a, value=value))
        lowering.contractions = named_contractions(self.resolved, self.scope,
                                                   replace(t, assigns=tuple(written)), self.decl)
        lowered = {a.name: self.assigned(lowering, a) for a in written}

        def build() -> Entry:
            with self.building:
                new = dict(zip(lowered, inliner.expand_each(list(lowered.values()), name),
                               strict=True))
                d = Definition(self.key(t.name), name, self.scope.module.key, "train",
                               full + (STEPS,), _counted_loop(name, full, new, t.span), t.span,
                               t.doc, tuple(fired))
                inliner.definitions[d.key] = d  # (what build_entry reads it by)
                return build_entry(d, inliner)

        return lambda: kept_entry(self.resolved, self.key(t.name), build)

    def method_entry(self, d: Definition, inliner: Inliner) -> Callable[[], Entry]:
        """What builds a method's entry (its body is lowered already)."""

        def build() -> Entry:
            with self.building:
                return build_entry(d, inliner)

        return lambda: kept_entry(self.resolved, d.key, build)


def _counted_loop(name: str, full: tuple[str, ...], new: dict[str, ir.Node], span: Span) -> ir.Loop:
    """`steps` simultaneous updates of the state `(counter, *full)`: component 1 + i takes
    `new[full[i]]` (over the state as the step began) or keeps its value. The loop's init is
    over Local, like any definition's body: `(steps, *full)`."""
    states = {ir.Local(i, p, span): ir.State(i + 1, span, p) for i, p in enumerate(full)}
    counter = ir.State(0, span)
    step = (ir.Prim("sub", (counter, ir.Const(1.0, span)), (), span),
            *(ir.substitute(new[p], states) if p in new else ir.State(i + 1, span)
              for i, p in enumerate(full)))
    until = ir.Prim("eq", (counter, ir.Const(0.0, span)), (), span)
    init = (ir.Local(len(full), STEPS, span), *(ir.Local(i, p, span) for i, p in enumerate(full)))
    return ir.Loop(init, until, step, 0, name, span)


def _unique(model: str, names: list[tuple[str, str, Span]]) -> None:
    seen: dict[str, tuple[str, Span]] = {}
    for name, kind, span in names:
        if name in RESERVED:
            raise ModelError("E800", f"{model} cannot have a {kind} called {name}: the model's "
                             f"Python class uses that name ({', '.join(sorted(RESERVED))})", span)
        if name.startswith(PRIVATE):
            raise ModelError("E800", f"{model} cannot have a {kind} called {name}: names starting "
                             f"with {PRIVATE} belong to the model's Python class and to Python "
                             "itself (such as __init__ or __repr__); rename it", span)
        if name in seen:
            first_kind, first = seen[name]
            raise ModelError("E800", f"{model} has a {kind} and a {first_kind} both called "
                             f"{name} (the first at {first})", span)
        seen[name] = (kind, span)


class _MemberLowering(Lowering):
    """Lowers a method or train body: the first `hidden` params are the weights and model
    parameters, and a call of another method passes them on before its own arguments.
    `methods` maps each method's name to its definition key and its own parameters."""

    def __init__(self, scope: ModuleScope, resolved: Resolved, params: tuple[str, ...],
                 methods: dict[str, tuple[str, tuple[str, ...]]], hidden: int):
        super().__init__(scope, resolved, params)
        self.methods = methods
        self.hidden = hidden

    def name(self, name: str, module: str | None, span: Span) -> ir.Node:
        if self.is_method(name, module, span):
            return self.method_call(name, (), span)
        return super().name(name, module, span)

    def call(self, name: str, module: str | None, args: tuple[s.Expr, ...], span: Span) -> ir.Node:
        if self.is_method(name, module, span):
            return self.method_call(name, args, span)
        return super().call(name, module, args, span)

    def is_method(self, name: str, module: str | None, span: Span) -> bool:
        return module is None and name in self.methods and self.local(name, span) is None

    def method_call(self, name: str, args: tuple[s.Expr, ...], span: Span) -> ir.Node:
        key, own = self.methods[name]
        arity(name, len(own), len(args), span)
        passed = tuple(ir.Local(i, p, span) for i, p in enumerate(self.params[:self.hidden]))
        return ir.Call(key, passed + tuple(self.expr(a) for a in args), span)

    def unknown(self, name: str, module: str | None, span: Span) -> NameResolutionError:
        err = super().unknown(name, module, span)
        close = _suggest(name, self.methods)
        if close and "did you mean" not in err.message:
            return NameResolutionError(err.code, err.message + close, span)
        return err
