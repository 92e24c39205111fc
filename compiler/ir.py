"""The IR: frozen expression nodes over parameters, shared as a DAG, each with its span.

Grammar of the IR (what resolve builds and every later pass keeps):

    Node    ::= Param(index, name)                 an entry point's parameter
              | Local(index, name)                 a definition's parameter (before inlining)
              | Const(value)                       a real number (float64)
              | Prim(op, args: Node*, attrs)       a primitive from compiler/primitives.py
              | Einsum(spec, args: Node*)          the contraction
              | Cond(cond, then, orelse)           evaluates one branch
              | Call(key, args: Node*)             a call of a definition (gone after inline)
              | Loop(init: Node*, until, step: Node*, counter, name)
              | Project(loop, index)               component `index` of a loop's final state
              | State(index)                       the innermost loop's state component
              | LoopGrad(loop, seeds, carried, vjp) adjoints of a loop's starting state
              | Tuple(items: Node*)                several values (gone after inline, but at
                                                   an entry's root)
              | Item(of, index, count)             component of a `count`-tuple (gone after
                                                   inline)
              | Grad(of, wrt)                      ∂ of / ∂ wrt, wrt a Local or State leaf
                                                   (gone after inline: compiler/derivative.py)

A Loop's `until` and `step` are closed terms over State: everything from outside reaches them
through `init`. A LoopGrad runs `loop` forward from its init, keeping the moving state of
every step, then backward: its `vjp` terms are closed over State(0…n−1), the state before a
step, and State(n + j), the adjoint of component `carried[j]` after it; they give that
component's adjoint before the step. It starts from `seeds` (the adjoints of the final state's
carried components) and answers the adjoints of the starting state, one per carried component. `counter` is the index of a state component that counts down by one to zero
(a counted loop), or None. Spans never take part in equality, and hashes are cached, so
structurally equal work is one dictionary key: evaluating through a memo computes it once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from hilbert.grammar.source import Span


class _Node:
    """Shared behaviour: a hash computed once (the IR is a DAG and hashing must not re-walk it)."""

    __slots__ = ()
    _h: int | None

    def __hash__(self) -> int:
        cached = self._h
        if cached is None:
            cached = hash((type(self).__name__,) + self._key())
            object.__setattr__(self, "_h", cached)
        return cached

    def _key(self) -> tuple:
        raise NotImplementedError


_T = TypeVar("_T")


def _node(cls: type[_T]) -> type[_T]:
    """Give a dataclass node a cached structural hash (dataclass would regenerate __hash__)."""
    names = [f.name for f in cls.__dataclass_fields__.values() if f.compare]  # type: ignore[attr-defined]

    def _key(self, names=names):
        return tuple(getattr(self, n) for n in names)

    cls._key = _key  # type: ignore[attr-defined]
    cls.__hash__ = _Node.__hash__  # type: ignore[assignment]
    return cls


@_node
@dataclass(frozen=True, slots=True)
class Param(_Node):
    index: int
    name: str
    span: Span = field(compare=False, repr=False)
    _h: int | None = field(default=None, init=False, compare=False, repr=False)


@_node
@dataclass(frozen=True, slots=True)
class Local(_Node):
    index: int
    name: str
    span: Span = field(compare=False, repr=False)
    _h: int | None = field(default=None, init=False, compare=False, repr=False)


@_node
@dataclass(frozen=True, slots=True)
class Const(_Node):
    value: float
    span: Span = field(compare=False, repr=False)
    _h: int | None = field(default=None, init=False, compare=False, repr=False)


@_node
@dataclass(frozen=True, slots=True)
class Prim(_Node):
    op: str
    args: tuple[Node, ...]
    attrs: tuple = ()
    span: Span = field(default=None, compare=False, repr=False)  # type: ignore[assignment]
    _h: int | None = field(default=None, init=False, compare=False, repr=False)


@_node
@dataclass(frozen=True, slots=True)
class Einsum(_Node):
    spec: str
    args: tuple[Node, ...]
    span: Span = field(compare=False, repr=False)
    _h: int | None = field(default=None, init=False, compare=False, repr=False)


@_node
@dataclass(frozen=True, slots=True)
class Cond(_Node):
    cond: Node
    then: Node
    orelse: Node
    span: Span = field(compare=False, repr=False)
    _h: int | None = field(default=None, init=False, compare=False, repr=False)


@_node
@dataclass(frozen=True, slots=True)
class Call(_Node):
    key: str
    args: tuple[Node, ...]
    span: Span = field(compare=False, repr=False)
    _h: int | None = field(default=None, init=False, compare=False, repr=False)


@_node
@dataclass(frozen=True, slots=True)
class Loop(_Node):
    init: tuple[Node, ...]
    until: Node
    step: tuple[Node, ...]
    counter: int | None
    name: str = field(compare=False)
    span: Span = field(compare=False, repr=False)
    _h: int | None = field(default=None, init=False, compare=False, repr=False)


@_node
@dataclass(frozen=True, slots=True)
class Project(_Node):
    loop: Loop
    index: int
    span: Span = field(compare=False, repr=False)
    _h: int | None = field(default=None, init=False, compare=False, repr=False)


@_node
@dataclass(frozen=True, slots=True)
class State(_Node):
    index: int
    span: Span = field(compare=False, repr=False)
    _h: int | None = field(default=None, init=False, compare=False, repr=False)


@_node
@dataclass(frozen=True, slots=True)
class LoopGrad(_Node):
    loop: Loop
    seeds: tuple[Node, ...]
    carried: tuple[int, ...]
    vjp: tuple[Node, ...]
    span: Span = field(compare=False, repr=False)
    _h: int | None = field(default=None, init=False, compare=False, repr=False)


@_node
@dataclass(frozen=True, slots=True)
class Tuple(_Node):
    items: tuple[Node, ...]
    span: Span = field(compare=False, repr=False)
    _h: int | None = field(default=None, init=False, compare=False, repr=False)


@_node
@dataclass(frozen=True, slots=True)
class Item(_Node):
    of: Node
    index: int
    count: int
    span: Span = field(compare=False, repr=False)
    _h: int | None = field(default=None, init=False, compare=False, repr=False)


@_node
@dataclass(frozen=True, slots=True)
class Grad(_Node):
    of: Node
    wrt: Node
    span: Span = field(compare=False, repr=False)
    _h: int | None = field(default=None, init=False, compare=False, repr=False)


Node = (Param | Local | Const | Prim | Einsum | Cond | Call | Loop | Project | State | LoopGrad
        | Tuple | Item | Grad)


def children(node: Node) -> tuple[Node, ...]:
    """The nodes `node` reads in its own scope (a Loop's body is a scope of its own)."""
    match node:
        case Prim(args=a) | Einsum(args=a) | Call(args=a):
            return a
        case Cond(cond=c, then=t, orelse=o):
            return (c, t, o)
        case Loop(init=i):
            return i
        case Project(loop=l):
            return (l,)
        case LoopGrad(loop=l, seeds=s):
            return (*l.init, *s)
        case Tuple(items=i):
            return i
        case Item(of=o):
            return (o,)
        case Grad(of=o, wrt=w):
            return (o, w)
    return ()


def rebuild(node: Node, kids: tuple[Node, ...]) -> Node:
    """`node` with its in-scope children replaced by `kids` (same order as `children`)."""
    if all(k is o for k, o in zip(kids, children(node), strict=True)):
        return node
    match node:
        case Prim():
            return Prim(node.op, kids, node.attrs, node.span)
        case Einsum():
            return Einsum(node.spec, kids, node.span)
        case Call():
            return Call(node.key, kids, node.span)
        case Cond():
            return Cond(kids[0], kids[1], kids[2], node.span)
        case Loop():
            return Loop(kids, node.until, node.step, node.counter, node.name, node.span)
        case Project():
            return Project(kids[0], node.index, node.span)  # type: ignore[arg-type]
        case LoopGrad():
            n = len(node.loop.init)
            loop = rebuild(node.loop, kids[:n])
            return LoopGrad(loop, kids[n:], node.carried, node.vjp, node.span)  # type: ignore[arg-type]
        case Tuple():
            return Tuple(kids, node.span)
        case Item():
            return Item(kids[0], node.index, node.count, node.span)
        case Grad():
            return Grad(kids[0], kids[1], node.span)
    return node


def bodies(node: Node) -> tuple[tuple[Node, ...], ...]:
    """The closed scopes inside `node`, each as its roots: a Loop's (until, *step); a
    LoopGrad's forward loop's and its vjp terms. Other nodes have none."""
    match node:
        case Loop():
            return ((node.until, *node.step),)
        case LoopGrad():
            return ((node.loop.until, *node.loop.step), node.vjp)
    return ()


def with_bodies(node: Node, kids: tuple[Node, ...], new: tuple[tuple[Node, ...], ...]) -> Node:
    """`node` over its in-scope `kids` and the scopes `new` (in the order `bodies` gives)."""
    match node:
        case Loop():
            until, *step = new[0]
            return Loop(kids, until, tuple(step), node.counter, node.name, node.span)
        case LoopGrad():
            n = len(node.loop.init)
            loop = with_bodies(node.loop, kids[:n], new[:1])
            return LoopGrad(loop, kids[n:], node.carried, new[1], node.span)  # type: ignore[arg-type]
    return rebuild(node, kids)


def transform(root: Node, visit) -> Node:
    """Rebuild `root` bottom-up within its scope: `visit(node, new_kids)` returns the new node.

    Shared nodes are visited once, so a DAG stays a DAG. Loop bodies are not entered.
    """
    memo: dict[int, Node] = {}
    order = topological(root)
    for node in order:
        kids = tuple(memo[id(k)] for k in children(node))
        memo[id(node)] = visit(node, kids)
    return memo[id(root)]


def topological(*roots: Node) -> list[Node]:
    """Every node reachable from `roots` within their scope, children before parents, once each."""
    seen: set[int] = set()
    order: list[Node] = []
    stack: list[tuple[Node, bool]] = [(r, False) for r in reversed(roots)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        stack.extend((k, False) for k in reversed(children(node)) if id(k) not in seen)
    return order


def substitute(root: Node, mapping: Mapping[Any, Node]) -> Node:
    """Replace leaves (Local, State or Param nodes) by `mapping` throughout `root`'s scope."""
    if not mapping:
        return root

    def visit(node: Node, kids: tuple[Node, ...]) -> Node:
        return rebuild(node, kids) if kids else mapping.get(node, node)

    return transform(root, visit)
