"""Inlines definitions into entry points and instantiates loops; shared work stays shared.

Calls are written out top-down, from what is being built towards the definitions it calls:
each definition's body is walked once per call, with its parameters bound to the call's
arguments, so the work is the size of the result (a chain of N definitions costs N steps, not
N²). The walk keeps its frames on a list, never on Python's stack, so a chain may be long.
Every node written out inside a callee carries its call chain on its span (`Span.via`), which
lets an error inside `total` say it was called from `mean`, called from what the user called.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from ...grammar.errors import CheckError
from ...grammar.source import CallSite, Span
from .. import ir
from .derivative import differentiate
from .recursion import LoopForm, loop_form
from .resolve import Definition
from .tuples import check_tensor, settle, substitute

#: The most IR nodes one definition may grow to once its calls are written out. Each call
#: repeats its callee's body, so ten lines of `f(f(x))` can ask for a billion nodes; real
#: definitions (the whole Prelude) stay under a hundred.
MAX_NODES = 10_000


@dataclass
class _Frame:
    """One definition being written out: its body's nodes in order, how far the walk is, and
    what each node became. `env` binds its parameters (Locals) to the call's arguments."""

    name: str
    span: Span
    order: list[ir.Node]
    env: dict[ir.Node, ir.Node]
    site: CallSite | None
    start: int
    done: dict[int, ir.Node] = field(default_factory=dict)
    position: int = 0


def _place(span: Span) -> tuple:
    """Where `span` stands, whole (equal IR nodes compare without their spans, so a key that
    must give back what expanding again would make, spans included, holds the place too)."""
    return (span.source.name, span.source.text, span.line, span.column, span.end_line,
            span.end_column, span.via)


class Inliner:
    """Expands every Call: non-recursive bodies are written out at each call, self-recursive
    ones become Loop nodes whose `until` and `step` are closed over State (formed once per
    loop). Bodies asked for by key are memoised."""

    def __init__(self, definitions: dict[str, Definition], loops: set[str]):
        self.definitions = definitions
        self.loops = loops
        self._bodies: dict[str, ir.Node] = {}
        self._forms: dict[str, LoopForm] = {}
        self._result_sizes: dict[str, int] = {}
        self._orders: dict[str, list[ir.Node]] = {}
        self._ready: set[str] = set()  # keys whose reachable loops are all formed
        self._derivatives: dict[ir.Grad, ir.Node] = {}
        self._root_derivatives: dict[tuple, ir.Node] = {}
        self._root_operands: dict[ir.Node, ir.Node] = {}

    def expand(self, node: ir.Node, owner: str = "this expression") -> ir.Node:
        """Requires resolved IR; ensures no Call remains in `node`'s scope. `owner` names what
        `node` belongs to (in E701 and in call chains)."""
        self._form_loops_below(self._callees(ir.topological(node)))
        return self._write_out(owner, node.span, ir.topological(node))

    def expand_each(self, values: list[ir.Node], owner: str) -> list[ir.Node]:
        """`[self.expand(v, owner) for v in values]`, the right-hand side of components
        (`Item`s) expanded once for equal right-hand sides written at the same place: the
        transformer block's `(weights, m, v) ≔ adam(…)` is 45 assignments, three components
        of each weight's Adam step, and each was written out whole (15 now). A component of
        an expanded right-hand side is what its own expansion makes: its tuple taken apart
        (`settle`), at no call site."""
        wholes: dict[tuple, ir.Node] = {}
        made = []
        for value in values:
            if not isinstance(value, ir.Item):
                made.append(self.expand(value, owner))
                continue
            key = (value.of, _place(value.of.span))
            if key not in wholes:
                wholes[key] = self.expand(value.of, owner)
            made.append(settle(value, (wholes[key],)))
        return made

    def body(self, key: str) -> ir.Node:
        """The definition's body with every call inside it expanded (still over Local)."""
        if key not in self._bodies:
            d = self.definitions[key]
            self._form_loops_below({key})
            root = d.body
            if key in self.loops:  # called on its own, a loop runs as one loop from its start
                root = ir.Call(key, tuple(ir.Local(i, p, d.span) for i, p in enumerate(d.params)),
                               d.span)
            self._bodies[key] = self._write_out(d.name, d.span, ir.topological(root))
        return self._bodies[key]

    def form(self, key: str) -> LoopForm:
        """The loop form of a self-recursive definition, every call inside it expanded."""
        self._form_loops_below({key})
        return self._forms[key]

    # -- loops -----------------------------------------------------------------------------

    def _form_loops_below(self, keys: set[str]) -> None:
        """Form every loop reachable from `keys`, callees first, so that writing out one loop's
        body finds every loop it calls formed already."""
        order: list[str] = []
        seen: set[str] = set()
        pending = [(k, False) for k in sorted(keys)]
        while pending:
            k, finished = pending.pop()
            if finished:
                order.append(k)
            elif k not in seen and k not in self._ready:
                seen.add(k)
                pending.append((k, True))
                pending += [(c, False) for c in sorted(self._callees(self._order(k)) - {k})]
        for k in order:
            if k in self.loops and k not in self._forms:
                self._forms[k] = self._expand_form(k)
            self._ready.add(k)

    def _expand_form(self, key: str) -> LoopForm:
        d = self.definitions[key]
        raw = loop_form(d)
        holder = ir.Tuple((raw.until, raw.result, *raw.step), raw.until.span)
        until, result, *step = self._write_out(d.name, d.span, ir.topological(holder)).items  # type: ignore[union-attr]
        self._result_sizes[key] = len(ir.topological(result))
        return LoopForm(until, tuple(step), result, raw.counter)

    def derivative(self, grad: ir.Grad, owner: str) -> ir.Node:
        """∂ of / ∂ wrt of a `∂` term of some definition's own body, over that definition's own
        parameters (so a call's arguments are put in only afterwards, and ∂ f(x) / ∂ x
        inside a callee never confuses the callee's x with whatever its caller passed)."""
        if grad not in self._derivatives:
            self._derivatives[grad] = differentiate(self.expand(grad.of, owner), grad.wrt,
                                                    grad.span)
        return self._derivatives[grad]

    def root_derivative(self, of: ir.Node, wrt: ir.Node, span: Span) -> ir.Node:
        """`differentiate(of, wrt, span)` for a `∂` term of what is being expanded (its operands
        written out already), once for equal operands written at the same place: a model's
        train block expands each assignment on its own, and an Adam step's fifteen weights
        and their two moments read one `∂ loss / ∂ weights` (the block's 675 sweeps were 15).
        The place is part of the key (equality leaves spans out), so what is given back is
        what differentiating again would make, spans included."""
        # (each operand taken as the first equal one met: a new object is compared with it
        # once, walking its graph, and then found by identity)
        of = self._root_operands.setdefault(of, of)
        wrt = self._root_operands.setdefault(wrt, wrt)
        key = (id(of), id(wrt), _place(span))  # (the ids of objects `_root_operands` holds)
        if key not in self._root_derivatives:
            self._root_derivatives[key] = differentiate(of, wrt, span)
        return self._root_derivatives[key]

    def _loop(self, key: str, args: tuple[ir.Node, ...], span: Span) -> ir.Node:
        """A call of a loop: the Loop from these arguments, and the component it answers."""
        for arg in args:
            check_tensor(arg, ir.Call(key, args, span), f"the state of {self.definitions[key].name}")
        form = self._forms[key]
        loop = ir.Loop(args, form.until, form.step, form.counter, self.definitions[key].name, span)
        projections = {ir.State(i, span): ir.Project(loop, i, span) for i in range(len(args))}
        return ir.substitute(form.result, projections)

    # -- writing calls out -----------------------------------------------------------------

    def _order(self, key: str) -> list[ir.Node]:
        """The nodes of a definition's own body, children first (computed once)."""
        if key not in self._orders:
            self._orders[key] = ir.topological(self.definitions[key].body)
        return self._orders[key]

    @staticmethod
    def _callees(order: list[ir.Node]) -> set[str]:
        return {n.key for n in order if isinstance(n, ir.Call)}

    def _write_out(self, name: str, span: Span, order: list[ir.Node]) -> ir.Node:
        """The last node of `order` with every call written out, or E701 once more than
        MAX_NODES nodes were written out at calls (the text itself costs its own size)."""
        return _Writer(self, _Frame(name, span, order, {}, None, 0)).run()


class _Writer:
    """One walk of `_write_out`: a stack of frames (the definitions being written out, the
    innermost last), the calls done so far (an equal call is written out once), and how many
    nodes the calls have added."""

    def __init__(self, inliner: Inliner, root: _Frame):
        self.inliner = inliner
        self.frames = [root]
        self.calls: dict[tuple, tuple[tuple[ir.Node, ...], ir.Node]] = {}
        self.made = 0

    def run(self) -> ir.Node:
        while True:
            frame = self.frames[-1]
            if frame.position == len(frame.order):  # this definition is written out
                result = frame.done[id(frame.order[-1])]
                self.frames.pop()
                if not self.frames:
                    return result
                self.answer(result)
                continue
            node = frame.order[frame.position]
            kids = tuple(frame.done[id(k)] for k in ir.children(node))
            new = self.call(node, kids, frame) if isinstance(node, ir.Call) else self.node(
                node, kids, frame)
            if new is not None:
                frame.done[id(node)] = new
                frame.position += 1

    def answer(self, result: ir.Node) -> None:
        """The callee just written out answers the call its caller is at."""
        caller = self.frames[-1]
        call = caller.order[caller.position]
        kids = tuple(caller.done[id(k)] for k in ir.children(call))
        self.calls[(call.key, tuple(map(id, kids)))] = (kids, result)  # type: ignore[union-attr]
        caller.done[id(call)] = result
        caller.position += 1

    def call(self, call: ir.Call, args: tuple[ir.Node, ...], frame: _Frame) -> ir.Node | None:
        """What `call` becomes, or None when its callee's frame is pushed (it answers later)."""
        known = self.calls.get((call.key, tuple(map(id, args))))
        if known is not None:
            return known[1]
        inliner = self.inliner
        if call.key in inliner.loops:
            self.grow(1 + inliner._result_sizes[call.key])
            return inliner._loop(call.key, args, call.span.at(frame.site))
        d = inliner.definitions[call.key]
        env: dict[ir.Node, ir.Node] = {ir.Local(i, p, d.span): a
                                      for i, (p, a) in enumerate(zip(d.params, args, strict=True))}
        site = CallSite(frame.name, call.span.at(frame.site))
        self.frames.append(_Frame(d.name, d.span, inliner._order(call.key), env, site, self.made))
        return None

    def node(self, node: ir.Node, kids: tuple[ir.Node, ...], frame: _Frame) -> ir.Node:
        """What a node other than a call becomes in `frame`: tuples are taken apart where
        they are read (tuples.settle), and a `∂` term is differentiated (compiler/passes/derivative.py)."""
        if isinstance(node, ir.Local):
            # A root's parameters stay, each one object (so equal calls are seen equal).
            return frame.env[node] if frame.site else frame.env.setdefault(node, node)
        if isinstance(node, ir.Grad):
            if frame.site is None:  # its value is written out over this body's own variables
                return self.inliner.root_derivative(kids[0], kids[1], node.span)
            own = self.inliner.derivative(node, frame.name)
            return substitute(own, frame.env)
        new = settle(node, kids)
        if new is node or frame.site is None:
            return new
        self.grow(1)  # written out at a call
        return _placed(new, frame.site)

    def grow(self, nodes: int) -> None:
        """Count nodes the calls add; E701, naming the innermost definition that grew past
        the limit by itself, once they are more than MAX_NODES."""
        self.made += nodes
        if self.made > MAX_NODES:
            frame = next(f for f in reversed(self.frames) if self.made - f.start > MAX_NODES)
            raise CheckError(
                "E701", f"{frame.name} grows to more than {MAX_NODES} operations once the "
                "definitions it calls are written out (each call repeats its callee's body); "
                "pass a shared value in as a parameter, or use a loop", frame.span)


def _placed(node: ir.Node, site: CallSite | None) -> ir.Node:
    """`node`, its span marked as reached through `site` (a node written out at a call)."""
    if site is None:
        return node
    return dataclasses.replace(node, span=node.span.at(site))  # type: ignore[type-var]
