"""The IR: frozen expression nodes over parameters, shared as a DAG, each with its span. Beside
them: the layers of the pipeline and their verifier (verify.py), and the printer (printer.py).

Grammar of the IR (what resolve builds and every later pass keeps):

    Node    ::= Param(index, name)                 an entry point's parameter
              | Local(index, name)                 a definition's parameter (before inlining)
              | Const(value)                       a real number (float64)
              | Prim(op, args: Node*, attrs)       a primitive from compiler/ops/primitives.py
              | Einsum(spec, args: Node*)          the contraction
              | Cond(cond, then, orelse)           evaluates one branch
              | Call(key, args: Node*)             a call of a definition (gone after inline)
              | Loop(init: Node*, until, step: Node*, counter, name)
              | Project(loop, index)               component `index` of a loop's final state
              | State(index, name)                 the innermost loop's state component
              | LoopGrad(loop, seeds, carried, vjp) adjoints of a loop's starting state
              | Tuple(items: Node*)                several values (gone after inline, but at
                                                   an entry's root)
              | Item(of, index, count)             component of a `count`-tuple (gone after
                                                   inline)
              | Grad(of, wrt)                      ∂ of / ∂ wrt, wrt a Local or State leaf
                                                   (gone after inline: compiler/passes/derivative.py)

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

from ...grammar.source import Span, quickly_unpickled


class _Node:
    """Shared behaviour: a hash computed once, and equality and hashing by explicit stacks.

    The IR is a DAG that inlining can make thousands of nodes deep, so nothing here recurses
    in Python: hashing fills in the cached hashes below a node bottom-up, and equality walks
    pairs of nodes with a stack (identity first, then hashes, then fields)."""

    __slots__ = ()
    _h: int | None
    _plain_fields: tuple[str, ...]  # compared fields that hold no nodes
    _node_fields: tuple[tuple[str, bool], ...]  # (field, holds a tuple of nodes)

    def __hash__(self) -> int:
        cached = self._h
        if cached is None:
            _fill_hashes(self)
            cached = self._h
        assert cached is not None
        return cached

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if type(self) is not type(other):
            return False if isinstance(other, _Node) else NotImplemented
        mine, theirs = self._h, other._h  # type: ignore[attr-defined]
        if mine is None or theirs is None:
            mine, theirs = hash(self), hash(other)
        if mine != theirs:
            return False  # the common case, settled without walking
        return _same(self, other)

    def __repr__(self) -> str:
        """The node's own fields; the nodes it holds only by kind (a deep DAG stays one line)."""
        fields = [f"{n}={getattr(self, n)!r}" for n in self._plain_fields]
        kids = ", ".join(type(k).__name__ for k in self._kids())
        return f"{type(self).__name__}({', '.join(fields + [f'reads=({kids})'] if kids else fields)})"

    def _key(self) -> tuple:
        """The compared fields, in order (nodes hashed by their cached hashes)."""
        raise NotImplementedError

    def _plain(self) -> tuple:
        """The compared fields that hold no nodes."""
        return tuple(getattr(self, n) for n in self._plain_fields)

    def _kids(self) -> tuple[_Node, ...]:
        """Every node a compared field holds, a Loop's body included (not only its scope)."""
        kids: list[_Node] = []
        for name, many in self._node_fields:
            value = getattr(self, name)
            kids.extend(value if many else (value,))
        return tuple(kids)


def _fill_hashes(root: _Node) -> None:
    """Compute and cache the hash of `root` and of every node below it that has none yet,
    children before parents, so hashing a node never hashes an uncached child."""
    stack: list[tuple[_Node, bool]] = [(root, False)]
    while stack:
        node, ready = stack.pop()
        if node._h is not None:
            continue
        if ready:
            object.__setattr__(node, "_h", hash((type(node).__name__,) + node._key()))
            continue
        stack.append((node, True))
        stack.extend((k, False) for k in node._kids() if k._h is None)


def _same(a: _Node, b: _Node) -> bool:
    """Structural equality of two nodes (spans and names aside). Each pair of nodes is
    compared once however often the DAG reaches it, so shared work is not walked again."""
    stack = [(a, b)]
    proven: set[tuple[int, int]] = set()  # pairs already compared (or being compared)
    while stack:
        x, y = stack.pop()
        if x is y:
            continue
        pair = (id(x), id(y))
        if pair in proven:
            continue
        proven.add(pair)
        if type(x) is not type(y) or hash(x) != hash(y) or x._plain() != y._plain():
            return False
        xs, ys = x._kids(), y._kids()
        if len(xs) != len(ys):
            return False
        stack.extend(zip(xs, ys, strict=True))
    return True


_T = TypeVar("_T")

#: How a field holding children is annotated (annotations are strings here).
_NODE_TYPES = frozenset({"Node", "Loop", "tuple[Node, ...]"})


def _node(cls: type[_T]) -> type[_T]:
    """Give a dataclass node the iterative hash, equality and repr of _Node (dataclass would
    generate recursive ones). A field typed as a node or a tuple of nodes holds children."""
    compared = [f for f in cls.__dataclass_fields__.values() if f.compare]  # type: ignore[attr-defined]
    names = [f.name for f in compared]
    kinds = {f.name: str(f.type) for f in compared}
    cls._node_fields = tuple((n, kinds[n].startswith("tuple")) for n in names  # type: ignore[attr-defined]
                             if kinds[n] in _NODE_TYPES)
    cls._plain_fields = tuple(n for n in names if kinds[n] not in _NODE_TYPES)  # type: ignore[attr-defined]

    def _key(self, names=names):
        return tuple(getattr(self, n) for n in names)

    cls._key = _key  # type: ignore[attr-defined]
    fields = list(cls.__dataclass_fields__)  # type: ignore[attr-defined]
    assert fields[-1] == "_h" and hasattr(cls, "__getstate__")
    state = cls.__getstate__  # (dataclass's, for frozen slotted classes)

    def __getstate__(self, state=state):
        """The fields as pickled: the cached hash left out (None), since it depends on the
        process's hash seed and another process computes its own."""
        kept = state(self)
        kept[-1] = None
        return kept

    cls.__getstate__ = __getstate__  # type: ignore[attr-defined,method-assign]
    quickly_unpickled(cls)
    cls.__hash__ = _Node.__hash__  # type: ignore[assignment]
    cls.__eq__ = _Node.__eq__  # type: ignore[method-assign,assignment]
    cls.__repr__ = _Node.__repr__  # type: ignore[method-assign,assignment]
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
    name: str | None = field(default=None, compare=False)  # what the source calls it, if known
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


def region(root: Node, inside, kids=children) -> tuple[list[Node], list[Node]]:
    """A region grown depth-first from `root`, each node met once: the nodes `inside` accepts
    are in it and their `kids` (in that order, the last visited first) are visited; every other
    node met is one of its inputs. Returns (the nodes inside, the inputs), in the order met."""
    within: list[Node] = []
    inputs: list[Node] = []
    seen: set[Node] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        if inside(node):
            within.append(node)
            stack.extend(kids(node))
        else:
            inputs.append(node)
    return within, inputs


def rewrite_scopes(root: Node, rewrite, owners: bool = False) -> Node:
    """Rewrite `root`'s scope and every loop body in it, innermost bodies first, without
    recursion however deep loops nest. `rewrite(roots, bodies)` returns the rewritten roots of
    one scope; `bodies[id(loop)]` holds the rewritten (until, *step) of each loop of the
    original IR, ready when the scope holding that loop is rewritten. `owners`: rewrite is
    called as `rewrite(roots, bodies, owner)`, owner being the Loop (or LoopGrad, for its vjp
    terms) whose scope it is, None for `root`'s."""
    bodies: dict[int, tuple[Node, ...]] = {}
    for node in everything(root):  # children, bodies included, before parents
        if id(node) not in bodies:
            if isinstance(node, Loop):
                roots = (node.until, *node.step)
            elif isinstance(node, LoopGrad):
                roots = node.vjp
            else:
                continue
            bodies[id(node)] = rewrite(roots, bodies, node) if owners else rewrite(roots, bodies)
    return (rewrite((root,), bodies, None) if owners else rewrite((root,), bodies))[0]


def is_loop(node: Node) -> bool:
    """True for a node with scopes of its own (a Loop, or a LoopGrad)."""
    return isinstance(node, (Loop, LoopGrad))


def with_scopes(node: Node, kids: tuple[Node, ...], bodies: dict) -> Node:
    """`node` rebuilt over its in-scope `kids`; a loop (or a loop run backwards) takes its
    rewritten scopes from `bodies`, as `rewrite_scopes` made them."""
    match node:
        case Loop():
            return with_bodies(node, kids, (bodies[id(node)],))
        case LoopGrad():
            return with_bodies(node, kids, (bodies[id(node.loop)], bodies[id(node)]))
    return rebuild(node, kids)


def everything(root: Node) -> list[Node]:
    """Every node reachable from `root`, loop bodies included, children before parents."""
    seen: set[int] = set()
    order: list[Node] = []
    stack: list[tuple[_Node, bool]] = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)  # type: ignore[arg-type]  # every _Node is a Node
        elif id(node) not in seen:
            seen.add(id(node))
            stack.append((node, True))
            stack.extend((k, False) for k in node._kids() if id(k) not in seen)
    return order


def substitute(root: Node, mapping: Mapping[Any, Node]) -> Node:
    """Replace leaves (Local, State or Param nodes) by `mapping` throughout `root`'s scope."""
    if not mapping:
        return root

    def visit(node: Node, kids: tuple[Node, ...]) -> Node:
        return rebuild(node, kids) if kids else mapping.get(node, node)

    return transform(root, visit)
