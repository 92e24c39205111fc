"""Inlines definitions into entry points and instantiates loops; shared work stays shared."""

from __future__ import annotations

from hilbert.grammar.errors import CheckError

from . import ir
from .derivative import differentiate
from .recursion import LoopForm, loop_form
from .resolve import Definition
from .tuples import check_tensor, settle, substitute

#: The most IR nodes one definition may grow to once its calls are written out. Each call
#: repeats its callee's body, so ten lines of `f(f(x))` can ask for a billion nodes; real
#: definitions (the whole Prelude) stay under a hundred.
MAX_NODES = 10_000


class Inliner:
    """Expands every Call: non-recursive bodies are substituted, self-recursive ones become
    Loop nodes whose `until` and `step` are closed over State. Results are memoised per key."""

    def __init__(self, definitions: dict[str, Definition], loops: set[str]):
        self.definitions = definitions
        self.loops = loops
        self._bodies: dict[str, ir.Node] = {}
        self._forms: dict[str, LoopForm] = {}

    def expand(self, node: ir.Node) -> ir.Node:
        """Requires resolved IR; ensures no Call remains in `node`'s scope."""
        return ir.transform(node, self._visit)

    def _visit(self, node: ir.Node, kids: tuple[ir.Node, ...]) -> ir.Node:
        if isinstance(node, ir.Call):
            return self.instantiate(node, kids)
        if isinstance(node, ir.Grad):  # its value is expanded: differentiate it now
            return differentiate(kids[0], kids[1], node.span)
        return settle(node, kids)

    def instantiate(self, call: ir.Call, args: tuple[ir.Node, ...]) -> ir.Node:
        d = self.definitions[call.key]
        if call.key in self.loops:
            for arg in args:
                check_tensor(arg, call, f"the state of {d.name}")
            form = self.form(call.key)
            loop = ir.Loop(args, form.until, form.step, form.counter, d.name, call.span)
            projections = {ir.State(i, call.span): ir.Project(loop, i, call.span)
                           for i in range(len(args))}
            return ir.substitute(form.result, projections)
        locals_ = {ir.Local(i, p, call.span): a for i, (p, a) in enumerate(zip(d.params, args, strict=True))}
        return substitute(self.body(call.key), locals_)

    def body(self, key: str) -> ir.Node:
        """The definition's body with every call inside it expanded (still over Local)."""
        if key not in self._bodies:
            self._prepare(key)
        return self._bodies[key]

    def form(self, key: str) -> LoopForm:
        """The loop form of a self-recursive definition, every call inside it expanded."""
        if key not in self._forms:
            self._prepare(key)
        return self._forms[key]

    def _prepare(self, key: str) -> None:
        """Expand `key` and everything it calls, callees first, so that expanding one body
        finds its callees done and never recurses: a chain of definitions may be long."""
        for k in self._callees_first(key):
            if k in self.loops and k not in self._forms:
                self._forms[k] = self._expand_form(k)
            if k not in self._bodies:
                self._bodies[k] = self._bounded(k, self._expand_body(k))

    def _callees_first(self, key: str) -> list[str]:
        """`key` and the definitions it reaches through calls, each after all it calls."""
        order: list[str] = []
        seen: set[str] = set()
        pending = [(key, False)]
        while pending:
            k, finished = pending.pop()
            if finished:
                order.append(k)
            elif k not in seen and (k not in self._bodies or k not in self._forms and k in self.loops):
                seen.add(k)
                pending.append((k, True))
                calls = {n.key for n in ir.topological(self.definitions[k].body) if isinstance(n, ir.Call)}
                pending += [(c, False) for c in sorted(calls - {k} - seen)]
        return order

    def _expand_body(self, key: str) -> ir.Node:
        d = self.definitions[key]
        if key in self.loops:  # called on its own, a loop runs as one loop from its start
            params = tuple(ir.Local(i, p, d.span) for i, p in enumerate(d.params))
            return self.instantiate(ir.Call(key, params, d.span), params)
        return self.expand(d.body)

    def _expand_form(self, key: str) -> LoopForm:
        raw = loop_form(self.definitions[key])
        until, result = self.expand(raw.until), self.expand(raw.result)
        step = tuple(self.expand(s) for s in raw.step)
        self._bounded(key, ir.Prim("body", (until, result, *step), (), raw.until.span))
        return LoopForm(until, step, result, raw.counter)

    def _bounded(self, key: str, body: ir.Node) -> ir.Node:
        """`body`, or E701 if writing out its calls made it larger than MAX_NODES."""
        if len(ir.topological(body)) > MAX_NODES:
            d = self.definitions[key]
            raise CheckError(
                "E701", f"{d.name} grows to more than {MAX_NODES} operations once the "
                "definitions it calls are written out (each call repeats its callee's body); "
                "pass a shared value in as a parameter, or use a loop", d.span)
        return body
