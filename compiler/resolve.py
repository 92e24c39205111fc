"""Resolves names and lowers syntax to IR: opens modules, binds every name, checks arity."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from hilbert.grammar import syntax as s
from hilbert.grammar.errors import CheckError, NameResolutionError
from hilbert.grammar.source import Span

from . import ir
from .einsum_spec import check_spec
from .modules import Loader, SourceModule
from .primitives import OPERATORS, PRIMITIVES, arg_extreme


@dataclass(frozen=True, slots=True)
class Definition:
    """A resolved definition: its body is IR over Local(i) parameters, with Calls by key."""

    key: str
    name: str
    module: str
    kind: str
    params: tuple[str, ...]
    body: ir.Node
    span: Span = field(compare=False)
    doc: str = field(default="", compare=False)


@dataclass
class ModuleScope:
    """The names one module sees: its own definitions, and the modules it opens."""

    module: SourceModule
    own: dict[str, str] = field(default_factory=dict)  # name -> definition key
    opened: list[ModuleScope] = field(default_factory=list)


@dataclass
class Resolved:
    """Everything resolve produces: definitions by key, and each module's scope by key."""

    definitions: dict[str, Definition] = field(default_factory=dict)
    scopes: dict[str, ModuleScope] = field(default_factory=dict)
    syntax: dict[str, s.Definition] = field(default_factory=dict)


def definition_key(module: SourceModule, name: str) -> str:
    return f"{module.key}::{name}"


def resolve(loader: Loader, root: SourceModule, resolved: Resolved | None = None) -> Resolved:
    """Resolve `root` and every module it opens (each once).

    Requires parsed modules; ensures every name is bound, every call has the right arity,
    every einsum spec is well-formed, and definitions are IR with Calls between them.
    """
    resolved = resolved or Resolved()
    _scope(loader, root, resolved)
    return resolved


def _scope(loader: Loader, module: SourceModule, resolved: Resolved) -> ModuleScope:
    if module.key in resolved.scopes:
        return resolved.scopes[module.key]
    scope = ModuleScope(module)
    resolved.scopes[module.key] = scope
    for decl in module.syntax.decls:
        if isinstance(decl, s.Open):
            scope.opened.append(_scope(loader, loader.open(decl, module), resolved))
        elif isinstance(decl, s.Definition):
            if decl.name in scope.own:
                first = resolved.syntax[scope.own[decl.name]]
                raise NameResolutionError(
                    "E205", f"{decl.name} is defined twice in this module (first at {first.span})",
                    decl.span)
            _distinct_params(decl)
            key = definition_key(module, decl.name)
            scope.own[decl.name] = key
            resolved.syntax[key] = decl
    for decl in module.syntax.decls:
        if isinstance(decl, s.Definition):
            key = scope.own[decl.name]
            body = Lowering(scope, resolved, decl.params).expr(decl.body)
            resolved.definitions[key] = Definition(key, decl.name, module.key, decl.kind,
                                                   decl.params, body, decl.span, decl.doc)
    return scope


def _distinct_params(decl: s.Definition) -> None:
    """E205 if a parameter is named twice: the second would silently never be read."""
    for index, param in enumerate(decl.params):
        if param in decl.params[:index]:
            raise NameResolutionError(
                "E205", f"{decl.name} names its parameter {param} twice; give each parameter "
                "its own name", decl.span)


def _suggest(name: str, candidates) -> str:
    close = difflib.get_close_matches(name, list(candidates), n=3)
    return f"; did you mean {' or '.join(close)}?" if close else ""


class Lowering:
    """Lowers one body: `locals_` are the names bound to Local(i) (parameters, weights)."""

    def __init__(self, scope: ModuleScope, resolved: Resolved, params: tuple[str, ...],
                 extra: dict[str, ir.Node] | None = None, allow_draws: bool = False):
        self.scope = scope
        self.resolved = resolved
        self.params = params
        self.extra = extra or {}
        self.allow_draws = allow_draws
        self.bound: list[dict[str, ir.Node]] = []  # names `let` binds, innermost last

    def local(self, name: str, span: Span) -> ir.Node | None:
        for names in reversed(self.bound):
            if name in names:
                return names[name]
        if name in self.params:
            return ir.Local(self.params.index(name), name, span)
        return self.extra.get(name)

    def expr(self, e: s.Expr) -> ir.Node:
        match e:
            case s.Number(value=v):
                return ir.Const(v, e.span)
            case s.String():
                raise CheckError("E316", "a string can only be the first argument of einsum",
                                 e.span)
            case s.Name(name=n, module=m):
                return self.name(n, m, e.span)
            case s.Call(name=n, module=m, args=args):
                return self.call(n, m, args, e.span)
            case s.Binary(op=op, left=l, right=r):
                return ir.Prim(OPERATORS[op].name, (self.expr(l), self.expr(r)), (), e.span)
            case s.Negate(operand=o):
                return ir.Prim("neg", (self.expr(o),), (), e.span)
            case s.Compare(op=op, left=l, right=r):
                return ir.Prim(OPERATORS[op].name, (self.expr(l), self.expr(r)), (), e.span)
            case s.If(cond=c, then=t, orelse=o):
                return ir.Cond(self.expr(c), self.expr(t), self.expr(o), e.span)
            case s.Let():
                return self.let(e)
            case s.Tuple(items=items):
                return ir.Tuple(tuple(self.expr(i) for i in items), e.span)
            case s.Index(target=x, index=i):
                return ir.Prim("index", (self.expr(x), self.expr(i)), (), e.span)
            case s.Slice(target=x, start=a, stop=b):
                return ir.Prim("slice", (self.expr(x), self.expr(a), self.expr(b)), (), e.span)
            case s.Derivative(of=of, wrt=wrt, many=many):
                return self.derivative(of, tuple((n, e.span) for n in wrt), many, e.span)
        raise AssertionError(f"unknown syntax node {e!r}")

    def let(self, e: s.Let) -> ir.Node:
        """`let a ≔ v, (b, c) ≔ w in body`: each name stands for its value's node, so a value
        used twice is one node (computed once), never written out again."""
        self.bound.append({})
        try:
            for b in e.bindings:
                value = self.expr(b.value)
                if b.pattern:
                    self.bound[-1].update({n: ir.Item(value, i, len(b.names), b.span)
                                           for i, n in enumerate(b.names)})
                else:
                    self.bound[-1][b.names[0]] = value
            return self.expr(e.body)
        finally:
            self.bound.pop()

    def derivative(self, of: s.Expr, wrt: tuple[tuple[str, Span], ...], many: bool,
                   span: Span) -> ir.Node:
        """∂ of / ∂ x: x must name a parameter (or a model's weight); ∂ of / ∂ (x, y) is the
        tuple of the derivatives, which share their forward work."""
        value = self.expr(of)
        variables = []
        for name, where in wrt:
            let_bound = any(name in names for names in self.bound)
            variable = None if let_bound else self.local(name, where)
            if not isinstance(variable, ir.Local):
                what = ("a name bound by let" if let_bound else
                        "not a parameter here" + _suggest(name, self.params))
                raise CheckError("E322", f"∂ … / ∂ {name}: a derivative is taken with respect to "
                                 f"a parameter of the definition (or a weight of the model), but "
                                 f"{name} is {what}", where)
            variables.append(variable)
        grads = tuple(ir.Grad(value, v, span) for v in variables)
        return ir.Tuple(grads, span) if many else grads[0]

    def grad(self, args: tuple[s.Expr, ...], span: Span) -> ir.Node:
        """grad(e, x) and grad(e, (x, y)): the ASCII spelling of ∂ e / ∂ x."""
        self.arity("grad", 2, len(args), span)
        of, wrt = args
        names = wrt.items if isinstance(wrt, s.Tuple) else (wrt,)
        if not all(isinstance(n, s.Name) and n.module is None for n in names):
            raise CheckError("E322", "grad(e, x) takes the derivative with respect to a "
                             "parameter: its second argument must be a parameter's name, or "
                             "names in parentheses, as grad(e, (x, y))", wrt.span)
        return self.derivative(of, tuple((n.name, n.span) for n in names),  # type: ignore[union-attr]
                               isinstance(wrt, s.Tuple), span)

    def name(self, name: str, module: str | None, span: Span) -> ir.Node:
        if module is None:
            bound = self.local(name, span)
            if bound is not None:
                return bound
        key = self.definition(name, module, span)
        if key is None:
            if name in PRIMITIVES or name == "einsum":
                raise NameResolutionError("E201", f"{name} is a primitive; call it with arguments, "
                                          f"as {name}(…)", span)
            raise self.unknown(name, module, span)
        target = self.resolved.syntax[key]
        if target.params:
            raise NameResolutionError(
                "E201", f"{name} takes {len(target.params)} argument(s) "
                f"({', '.join(target.params)}); call it as {name}(…)", span)
        return ir.Call(key, (), span)

    def call(self, name: str, module: str | None, args: tuple[s.Expr, ...], span: Span) -> ir.Node:
        if module is None and self.local(name, span) is not None:
            raise NameResolutionError("E206", f"{name} is a value, not a definition, so it "
                                      "cannot be called", span)
        key = self.definition(name, module, span)
        if key is not None:
            target = self.resolved.syntax[key]
            self.arity(name, len(target.params), len(args), span)
            return ir.Call(key, tuple(self.expr(a) for a in args), span)
        if module is None and name == "einsum":
            return self.einsum(args, span)
        if module is None and name == "grad":
            return self.grad(args, span)
        if module is None and name in PRIMITIVES:
            return self.primitive(name, args, span)
        raise self.unknown(name, module, span)

    def arity(self, name: str, expected: int, got: int, span: Span) -> None:
        if expected != got:
            raise NameResolutionError(
                "E201", f"{name} takes {expected} argument(s) but is given {got}", span)

    def einsum(self, args: tuple[s.Expr, ...], span: Span) -> ir.Node:
        if not args or not isinstance(args[0], s.String):
            raise CheckError("E307", "einsum's first argument must be a string literal such as "
                             '"ij,jk->ik"', args[0].span if args else span)
        spec = check_spec(args[0].text, len(args) - 1, args[0].span)
        return ir.Einsum(spec, tuple(self.expr(a) for a in args[1:]), span)

    def primitive(self, name: str, args: tuple[s.Expr, ...], span: Span) -> ir.Node:
        prim = PRIMITIVES[name]
        self.arity(name, prim.arity, len(args), span)
        if prim.kind == "draw" and not self.allow_draws:
            raise NameResolutionError(
                "E207", f"{name} draws random numbers, which only a model's `weight … from` "
                "may do; pass draws in as an argument instead", span)
        lowered = tuple(self.expr(a) for a in args)
        if prim.axis_arg is None:
            return ir.Prim(name, lowered, (), span)
        axis = lowered[prim.axis_arg]
        if not isinstance(axis, ir.Const) or not float(axis.value).is_integer() or axis.value < 0:
            raise CheckError("E314", f"{name}'s axis must be a whole-number literal such as 0 "
                             "or 1", args[prim.axis_arg].span)
        operands = lowered[:prim.axis_arg] + lowered[prim.axis_arg + 1:]
        if prim.kind == "argreduce":
            return arg_extreme(name, operands[0], int(axis.value), span)
        return ir.Prim(name, operands, (int(axis.value),), span)

    def definition(self, name: str, module: str | None, span: Span) -> str | None:
        """The key `name` refers to (qualified by `module`, if given), or None if no definition."""
        scope = self.scope
        if module is not None:
            for opened in [scope, *scope.opened]:
                if opened.module.name == module:
                    if name in opened.own:
                        return opened.own[name]
                    raise NameResolutionError(
                        "E200", f"module {module} has no definition {name}"
                        f"{_suggest(name, opened.own)}", span)
            names = ", ".join(o.module.name for o in scope.opened) or "none"
            raise NameResolutionError("E200", f"no opened module is called {module} (opened: "
                                      f"{names})", span)
        if name in scope.own:
            return scope.own[name]
        found = [(o.module.key, o.own[name]) for o in scope.opened if name in o.own]
        if len(found) > 1:
            where = " and ".join(m for m, _ in found)
            raise NameResolutionError(
                "E202", f"{name} is defined in both {where}; qualify it, as "
                f"{found[0][0].split('.')[-1]}.{name}", span)
        return found[0][1] if found else None

    def unknown(self, name: str, module: str | None, span: Span) -> NameResolutionError:
        known = set(self.params) | set(self.extra) | set(self.scope.own) | set(PRIMITIVES)
        for o in self.scope.opened:
            known |= set(o.own)
        return NameResolutionError("E200", f"unknown name {name}{_suggest(name, known)}", span)
