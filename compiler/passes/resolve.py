"""Resolves names and lowers syntax to IR: opens modules, binds every name, checks arity."""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

from ...grammar import syntax as s
from ...grammar.confusables import skeleton, spelled
from ...grammar.errors import CheckError, NameResolutionError
from ...grammar.foreign import ATTRIBUTES, FOREIGN_WORDS, PYTHON_MODULES
from ...grammar.source import Span
from .. import ir
from ..laws.scope import own_laws, rules, simplified, visible
from ..modules import Loader, SourceModule, prelude_index
from ..ops.einsum_spec import check_spec
from ..ops.primitives import KEYED, OPERATORS, PRIMITIVES, arg_extreme
from .infer_axes import contractions

#: The precedence group of each binary operator: a chain continues within a group.
_GROUPS = {"+": "sum", "-": "sum", "*": "product", "/": "product", "mod": "product",
           "div": "product", "^": "power"}


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
    laws: tuple[str, ...] = ()  # the laws that rewrote its body, as they first fired
    axes: s.Declared | None = field(default=None, compare=False)  # named axes, where declared
    #: each declared `let y : B×R ≔ v` of the body: y, its axes and v's span (sizes: E331)
    lets: tuple[tuple[str, s.Axes, Span], ...] = field(default=(), compare=False)
    #: the same lets' values as lowered (IR over Local), in the order lowered (sizes: E331)
    let_values: tuple[tuple[str, s.Axes, ir.Node], ...] = field(default=(), compare=False)


def declared_lets(body: s.Expr) -> tuple[tuple[str, s.Axes, Span], ...]:
    """Each `let y : B×R ≔ v` in `body`: y, its axes and v's span, in the order written."""
    return tuple((n.names[0], n.axes, n.value.span) for n in syntax_nodes(body)
                 if isinstance(n, s.Binding) and n.axes is not None)


def syntax_nodes(e: object) -> Iterator[object]:
    """Every node under `e` (itself first), in the order written, walked without recursion
    (chains may be long)."""
    pending = [e]
    while pending:
        node = pending.pop()
        yield node
        if isinstance(node, tuple):
            pending.extend(reversed(node))
        elif hasattr(node, "__dataclass_fields__") and not isinstance(node, (s.Axes, Span)):
            pending.extend(getattr(node, f) for f in reversed(node.__dataclass_fields__))


@dataclass
class ModuleScope:
    """The names one module sees: its own definitions, and the modules it opens; the laws it
    sees (its own, then those of the modules it opens)."""

    module: SourceModule
    own: dict[str, str] = field(default_factory=dict)  # name -> definition key
    opened: list[ModuleScope] = field(default_factory=list)
    laws: tuple[s.Law, ...] = ()


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
    _scope(loader, root, resolved, [])
    return resolved


def _scope(loader: Loader, module: SourceModule, resolved: Resolved,
           opening: list[SourceModule]) -> ModuleScope:
    """The scope of `module`, resolved once; `opening` are the modules whose opens led here."""
    if module.key in resolved.scopes:
        return resolved.scopes[module.key]
    scope = ModuleScope(module)
    resolved.scopes[module.key] = scope
    opening.append(module)
    for decl in module.syntax.decls:
        if isinstance(decl, s.Open):
            target = loader.open(decl, module)
            _no_cycle(target, opening, decl)
            opened = _scope(loader, target, resolved, opening)
            if all(o is not opened for o in scope.opened):  # opening twice is opening once
                scope.opened.append(opened)
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
    scope.laws = visible(own_laws(module.syntax), [o.laws for o in scope.opened])
    laws = rules(scope.laws)
    for decl in module.syntax.decls:
        if isinstance(decl, s.Definition):
            key = scope.own[decl.name]
            written, fired = simplified(decl.body, laws)     # the open laws, before lowering
            named = named_contractions(resolved, scope, replace(decl, body=written))
            lowering = Lowering(scope, resolved, decl.params, contractions=named)
            body = lowering.expr(written)
            resolved.definitions[key] = Definition(key, decl.name, module.key, decl.kind,
                                                   decl.params, body, decl.span, decl.doc, fired,
                                                   decl.axes, declared_lets(written),
                                                   tuple(lowering.let_values))
    opening.pop()
    return scope


def named_contractions(resolved: Resolved, scope: ModuleScope, owner: s.Definition | s.Train,
                       model: s.Model | None = None) -> dict[int, str]:
    """The einsum of each `contract(…, over F)` in `owner`, by the node's id (none: no
    walk), from its operands' named axes (compiler/passes/infer_axes.py)."""
    if not any(isinstance(n, s.Contract) for n in syntax_nodes(owner)):
        return {}
    return contractions(resolved, scope, owner, model)


def _no_cycle(target: SourceModule, opening: list[SourceModule], decl: s.Open) -> None:
    """E209 if `target` is being resolved already: modules that open each other would each
    need the other's definitions first."""
    keys = [m.key for m in opening]
    if target.key not in keys:
        return
    cycle = opening[keys.index(target.key):]
    if len(cycle) == 1:
        story = f"{target.name} opens itself"
    else:
        story = f"{cycle[0].name} opens " + ", which opens ".join(m.name for m in cycle[1:])
        story += f", which opens {target.name} again"
    raise NameResolutionError(
        "E209", f"modules open each other: {story}; move what they share into a module "
        "that both open", decl.span)


def _distinct_params(decl: s.Definition) -> None:
    """E205 if a parameter is named twice: the second would silently never be read."""
    for index, param in enumerate(decl.params):
        if param in decl.params[:index]:
            raise NameResolutionError(
                "E205", f"{decl.name} names its parameter {param} twice; give each parameter "
                "its own name", decl.span)


def _modules(scopes: list[ModuleScope]) -> str:
    """Modules named for a message: by name, or by file where two share a name."""
    names = [o.module.name for o in scopes]
    shown = [f"{o.module.name} ({o.module})" if names.count(o.module.name) > 1 else o.module.name
             for o in scopes]
    return " and ".join(shown)


def _suggest(name: str, candidates) -> str:
    alike = [spelled(c) for c in candidates if c != name and skeleton(c) == skeleton(name)]
    close = alike or difflib.get_close_matches(name, list(candidates), n=3)
    return f"; did you mean {' or '.join(close)}?" if close else ""


def _elsewhere(name: str, known: set[str]) -> str:
    """Where an unknown name can be found: a Prelude module that defines it (to open), a
    construct of another language, or the names in scope it is close to."""
    modules = prelude_index().get(name)
    if modules:
        return (f"; {name} is defined in {' and '.join(modules)}: add `open {modules[0]}` "
                "at the top of the file")
    if name in FOREIGN_WORDS:
        return f"; .hb has no {name}: {FOREIGN_WORDS[name]}"
    return _suggest(name, known)


def arity(name: str, expected: int, got: int, span: Span) -> None:
    """E201 unless a call of `name` gives the `expected` number of arguments."""
    if expected != got:
        raise NameResolutionError(
            "E201", f"{name} takes {expected} argument(s) but is given {got}", span)


class Lowering:
    """Lowers one body: `locals_` are the names bound to Local(i) (parameters, weights)."""

    def __init__(self, scope: ModuleScope, resolved: Resolved, params: tuple[str, ...],
                 extra: dict[str, ir.Node] | None = None, allow_draws: bool = False,
                 contractions: dict[int, str] | None = None):
        self.scope = scope
        self.contractions = contractions or {}  # each contract(…, over F)'s einsum, by id
        self.resolved = resolved
        self.params = params
        self.extra = extra or {}
        self.allow_draws = allow_draws
        self.bound: list[dict[str, ir.Node]] = []  # names `let` binds, innermost last
        self.let_values: list[tuple[str, s.Axes, ir.Node]] = []  # declared lets' values

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
            case s.Compare(right=s.String(text=text) as string):
                raise CheckError("E316", f'a text such as "{text}" is compared (or matched) '
                                 "only with a Text column of a Frame model; here it meets a "
                                 "number: compare numbers with numbers", string.span)
            case s.String():
                raise CheckError("E316", "a string can only be the first argument of einsum",
                                 e.span)
            case s.Name(name=n, module=m):
                return self.name(n, m, e.span)
            case s.Call(name=n, module=m, args=args):
                return self.call(n, m, args, e.span)
            case s.Binary():
                return self.chain(e)
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
            case s.Rename(operand=o):  # names only: compiler/passes/axes.py checks them
                return self.expr(o)
            case s.Contract(operands=operands):  # an einsum, its letters from the axes' names
                return self.contract(e, operands)
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
                if b.axes is not None:
                    self.let_values.append((b.names[0], b.axes, value))
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

    def chain(self, e: s.Binary) -> ir.Node:
        """A chain of operators of one precedence (`a + b − c + …`, or `a ^ b ^ c` to the
        right), lowered in a loop: the parser bounds nesting (E101) but not a chain's length."""
        group = _GROUPS[e.op]
        links: list[s.Binary] = []  # outermost first
        end: s.Expr = e
        while isinstance(end, s.Binary) and _GROUPS[end.op] == group:
            links.append(end)
            end = end.right if group == "power" else end.left
        if group == "power":  # operands lowered left to right, as errors should be found
            lefts = [self.expr(link.left) for link in links]
            value = self.expr(end)
            for link, left in zip(reversed(links), reversed(lefts), strict=True):
                value = ir.Prim(OPERATORS[link.op].name, (left, value), (), link.span)
            return value
        value = self.expr(end)
        for link in reversed(links):
            value = ir.Prim(OPERATORS[link.op].name, (value, self.expr(link.right)), (), link.span)
        return value

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
            arity(name, len(target.params), len(args), span)
            return ir.Call(key, tuple(self.expr(a) for a in args), span)
        if module is None and name == "einsum":
            return self.einsum(args, span)
        if module is None and name in PRIMITIVES:
            return self.primitive(name, args, span)
        raise self.unknown(name, module, span)

    def einsum(self, args: tuple[s.Expr, ...], span: Span) -> ir.Node:
        if not args or not isinstance(args[0], s.String):
            raise CheckError("E307", "einsum's first argument must be a string literal such as "
                             '"ij,jk->ik"', args[0].span if args else span)
        spec = check_spec(args[0].text, len(args) - 1, args[0].span)
        return ir.Einsum(spec, tuple(self.expr(a) for a in args[1:]), span)

    def contract(self, e: s.Contract, operands: tuple[s.Expr, ...]) -> ir.Node:
        spec = self.contractions.get(id(e))
        if spec is None:  # (a body lowered without its axes: a weight's initialiser, a column)
            raise CheckError("E332", "contract(…, over …) is resolved by its operands' named "
                             "axes, which are not declared here: write the einsum", e.span)
        return ir.Einsum(check_spec(spec, len(operands), e.span),
                         tuple(self.expr(x) for x in operands), e.span)

    def primitive(self, name: str, args: tuple[s.Expr, ...], span: Span) -> ir.Node:
        prim = PRIMITIVES[name]
        if name in KEYED and len(args) == 3:  # uniform(key, step, x): a draw anywhere
            return ir.Prim(KEYED[name], tuple(self.expr(a) for a in args), (), span)
        if name in KEYED and len(args) != 1:
            raise NameResolutionError(
                "E201", f"{name} takes 3 arguments, (key, step, x), or 1 in a weight's "
                f"initialiser, (seed), but is given {len(args)}", span)
        if name == "bernoulli":
            arity(name, prim.arity, len(args), span)
            p, *keyed = (self.expr(a) for a in args)
            return ir.Prim("lt", (ir.Prim(KEYED["uniform"], tuple(keyed), (), span), p), (), span)
        arity(name, prim.arity, len(args), span)
        if prim.kind == "draw" and not self.allow_draws:
            raise NameResolutionError(
                "E207", f"{name}(seed) draws random numbers by the weight's name, which "
                "only a model's `weight … from` may do; anywhere else, draw by key and step: "
                f"{name}(key, step, x) is shaped like x", span)
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
            named = [o for o in [scope, *scope.opened] if o.module.name == module]
            if not named:
                raise self.no_module(module, name, span)
            found = [o for o in named if name in o.own]
            if not found:
                raise NameResolutionError(
                    "E200", f"module {module} has no definition {name}"
                    f"{_suggest(name, named[0].own)}", span)
            if len(found) > 1:
                raise NameResolutionError(
                    "E202", f"{module}.{name} is defined in both {_modules(found)}, which are "
                    f"both called {module}; define {name} once, or open one of them", span)
            return found[0].own[name]
        if name in scope.own:
            return scope.own[name]
        found = [o for o in scope.opened if name in o.own]
        if len(found) > 1:
            raise NameResolutionError(
                "E202", f"{name} is defined in both {_modules(found)}; qualify it, as "
                f"{found[0].module.name}.{name}", span)
        return found[0].own[name] if found else None

    def no_module(self, module: str, name: str, span: Span) -> NameResolutionError:
        """E200 for `module.name` where no opened module is called `module`: said plainly when
        `module` is a value (`x.sum()`, `x.T`: .hb has no attributes or methods) or a Python
        library (`np.sum(x)`)."""
        if self.local(module, span) is not None:
            advice = ATTRIBUTES.get(name, "pass {x} to a definition instead, as f({x})")
            return NameResolutionError(
                "E200", f"{module} is a value, and .hb values have no attributes or methods "
                f"({module}.{name}): {advice.format(x=module)}", span)
        if module in PYTHON_MODULES:
            return NameResolutionError(
                "E200", f".hb is not Python and has no module {module}: einsum and the "
                "primitives (exp, ln, sqrt, tanh, maximum, …) need no module, and the "
                "Prelude's modules are opened with open, as open Prelude.Statistics", span)
        names = ", ".join(o.module.name for o in self.scope.opened) or "none"
        return NameResolutionError("E200", f"no opened module is called {module} "
                                   f"(opened: {names})", span)

    def unknown(self, name: str, module: str | None, span: Span) -> NameResolutionError:
        known = set(self.params) | set(self.extra) | set(self.scope.own) | set(PRIMITIVES)
        for o in self.scope.opened:
            known |= set(o.own)
        return NameResolutionError("E200", f"unknown name {spelled(name)}"
                                   f"{_elsewhere(name, known)}", span)
