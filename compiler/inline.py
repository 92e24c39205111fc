"""Inlines definitions into entry points and instantiates loops; shared work stays shared."""

from __future__ import annotations

from hilbert.grammar.errors import CheckError

from . import ir
from .recursion import LoopForm, loop_form
from .resolve import Definition

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
        return ir.rebuild(node, kids)

    def instantiate(self, call: ir.Call, args: tuple[ir.Node, ...]) -> ir.Node:
        d = self.definitions[call.key]
        if call.key in self.loops:
            form = self.form(call.key)
            loop = ir.Loop(args, form.until, form.step, form.counter, d.name, call.span)
            projections = {ir.State(i, call.span): ir.Project(loop, i, call.span)
                           for i in range(len(args))}
            return ir.substitute(form.result, projections)
        locals_ = {ir.Local(i, p, call.span): a for i, (p, a) in enumerate(zip(d.params, args, strict=True))}
        return ir.substitute(self.body(call.key), locals_)

    def body(self, key: str) -> ir.Node:
        """The definition's body with every call inside it expanded (still over Local)."""
        if key not in self._bodies:
            self._bodies[key] = self._bounded(key, self.expand(self.definitions[key].body))
        return self._bodies[key]

    def form(self, key: str) -> LoopForm:
        """The loop form of a self-recursive definition, every call inside it expanded."""
        if key not in self._forms:
            raw = loop_form(self.definitions[key])
            until, result = self.expand(raw.until), self.expand(raw.result)
            step = tuple(self.expand(s) for s in raw.step)
            self._bounded(key, ir.Prim("body", (until, result, *step), (), raw.until.span))
            self._forms[key] = LoopForm(until, step, result, raw.counter)
        return self._forms[key]

    def _bounded(self, key: str, body: ir.Node) -> ir.Node:
        """`body`, or E701 if writing out its calls made it larger than MAX_NODES."""
        if len(ir.topological(body)) > MAX_NODES:
            d = self.definitions[key]
            raise CheckError(
                "E701", f"{d.name} grows to more than {MAX_NODES} operations once the "
                "definitions it calls are written out (each call repeats its callee's body); "
                "pass a shared value in as a parameter, or use a loop", d.span)
        return body
