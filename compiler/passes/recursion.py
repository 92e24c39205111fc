"""Checks recursion (tail self-calls only, no mutual recursion) and puts loops in loop form."""

from __future__ import annotations

from dataclasses import dataclass

from ...grammar.errors import CheckError
from .. import ir
from .resolve import Definition


@dataclass(frozen=True, slots=True)
class LoopForm:
    """A self-recursive definition as a loop over State: run `step` until `until` is non-zero,
    then answer `result`. `counter` is the state index that counts down to zero, if any."""

    until: ir.Node
    step: tuple[ir.Node, ...]
    result: ir.Node
    counter: int | None


def _calls(node: ir.Node) -> list[ir.Call]:
    return [n for n in ir.topological(node) if isinstance(n, ir.Call)]


def check_recursion(definitions: dict[str, Definition]) -> set[str]:
    """Requires resolved definitions; ensures no mutual recursion and only tail self-calls.

    Returns the keys of the self-recursive definitions (the loops).
    """
    graph = {key: {c.key for c in _calls(d.body)} for key, d in definitions.items()}
    for component in _strongly_connected(graph):
        if len(component) > 1:
            names = sorted(definitions[k].name for k in component)
            first = definitions[sorted(component)[0]]
            call = next(c for c in _calls(first.body) if c.key in component)
            raise CheckError(
                "E401", f"{', '.join(names)} call each other (mutual recursion); only a "
                "definition that calls itself in tail position can repeat", call.span)
    loops = {key for key, callees in graph.items() if key in callees}
    for key in loops:
        _check_tail(definitions[key])
    return loops


def _check_tail(d: Definition) -> None:
    tail: set[int] = set()
    pending = [d.body]
    while pending:
        node = pending.pop()
        tail.add(id(node))
        if isinstance(node, ir.Cond):
            pending += [node.then, node.orelse]
    for call in _calls(d.body):
        if call.key == d.key and id(call) not in tail:
            raise CheckError(
                "E400", f"{d.name} calls itself here, but not in tail position: a self-call "
                "must be the whole value of an if branch, so the definition runs as a loop",
                call.span)
        if call.key == d.key:
            for arg in call.args:
                inner = next((c for c in _calls(arg) if c.key == d.key), None)
                if inner is not None:
                    raise CheckError("E400", f"{d.name} calls itself inside its own arguments",
                                     inner.span)


def _strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's algorithm, iterative (deep call chains must not hit Python's stack limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    result: list[set[str]] = []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            advanced = False
            for succ in successors:
                if succ not in graph:
                    continue
                if succ not in index:
                    index[succ] = low[succ] = counter
                    counter += 1
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(graph[succ]))))
                    advanced = True
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                result.append(component)
    return result


_NEVER = 0.0
_ALWAYS = 1.0


def _is(node: ir.Node, value: float) -> bool:
    return isinstance(node, ir.Const) and node.value == value


def loop_form(d: Definition) -> LoopForm:
    """Requires a self-recursive definition with tail self-calls only; ensures its loop form."""
    states = {ir.Local(i, p, d.span): ir.State(i, d.span, p) for i, p in enumerate(d.params)}
    until, result, step = _normalise(ir.substitute(d.body, states), d)
    if _is(until, _NEVER) or step is None:
        raise CheckError("E402", f"{d.name} always calls itself, so it would never finish; give "
                         "it a branch that answers a value", d.span)
    return LoopForm(until, step, result, _counter(until, step))


def _normalise(node: ir.Node, d: Definition):
    """(until, result, step) of a body: exit where `until` is non-zero, else take `step`."""
    span = node.span
    if isinstance(node, ir.Call) and node.key == d.key:
        return ir.Const(_NEVER, span), None, node.args
    if not isinstance(node, ir.Cond):
        return ir.Const(_ALWAYS, span), node, None
    ua, ra, sa = _normalise(node.then, d)
    ub, rb, sb = _normalise(node.orelse, d)
    c = node.cond
    if _is(ua, _ALWAYS) and _is(ub, _ALWAYS):
        return ua, node, None
    until: ir.Node
    if _is(ua, _NEVER) and _is(ub, _NEVER):  # both branches call again: it never stops
        until = ir.Const(_NEVER, span)
    elif _is(ua, _ALWAYS) and _is(ub, _NEVER):
        until = c
    elif _is(ua, _NEVER) and _is(ub, _ALWAYS):
        until = ir.Prim("eq", (c, ir.Const(0.0, span)), (), span)
    else:
        until = ir.Cond(c, ua, ub, span)
    if ra is None or _is(ua, _NEVER):
        result = rb
    elif rb is None or _is(ub, _NEVER):
        result = ra
    else:
        result = ir.Cond(c, ra, rb, span)
    if sa is None:
        step = sb
    elif sb is None:
        step = sa
    else:
        step = tuple(ir.Cond(c, a, b, span) for a, b in zip(sa, sb, strict=True))
    return until, result, step


def _counter(until: ir.Node, step: tuple[ir.Node, ...]) -> int | None:
    """The state index `k` if the loop reads `until k = 0` and steps `k − 1`."""
    if not (isinstance(until, ir.Prim) and until.op == "eq"):
        return None
    a, b = until.args
    state = a if isinstance(a, ir.State) and _is(b, 0.0) else b if isinstance(b, ir.State) and _is(a, 0.0) else None
    if state is None:
        return None
    k = state.index
    s = step[k]
    if isinstance(s, ir.Prim) and s.op == "sub" and s.args[0] == state and _is(s.args[1], 1.0):
        return k
    return None
