"""Which values of a program count: sizes, positions, loop counters and whole arithmetic on
them, computed in float64 whatever the call's dtype (docs/semantics.md, "Counting").

A float32 call that counted in float32 would read `q[rows(q) − 1]` of a vector of 2²⁴ + 2
entries at the wrong position (2²⁴ + 1 is no float32) and run a loop of 2²⁴ + 1 steps 2²⁴
times. So every executor computes a *counted* value in float64, where every whole number up to
2⁵³ is exact, and converts it to the call's dtype only where it meets data: an operand of an
op whose value is data (a product with a tensor, a division, an `exp`). In a float64 call
nothing changes: the two are one type.

Counted values, by their node (the op table's `whole` column, compiler/ops/primitives.py):

- sizes and positions: `rows`, `columns`, `positions`, `coordinate` (whole always);
- whole arithmetic (`+ − ·`, `mod`, `div`, `floor`, `abs`, `max`, `min`, `maximum`, …), a
  read of a counted tensor (`x[t]` of `positions(…)`), an `if` both of whose branches count,
  an einsum that sums no letter of counted operands, `x ^ 0` (1), `n ^ k` for a whole k ≥ 0:
  counted when what they read counts;
- a comparison (0 or 1, whatever it compares: its operands are compared as they are, a
  counted number with a float32 entry exactly), which makes argmax's marks and the positions
  it pushes past them count too;
- a constant that is a whole number of at most 2⁵³ (written into data, it is converted);
- a loop's state component that starts counted and that each step keeps counted (the
  counter of a counted loop that starts from a size or a counted parameter): the largest set
  of components with that property, found by iterating from all of them;
- a parameter the program reads as a whole number (a counted loop's step count, the position
  of `x[t]`, a slice's bounds, a draw's key and step: the op table's `counts` column),
  directly or through whole arithmetic: `bind_arguments` keeps a Python number given for it
  in float64 (`Counting.params`), so `f(2**24 + 1, x32)` counts 2²⁴ + 1 steps.

The analysis is per scope (the call's, each loop body, each backward sweep's terms): one
`State(0)` is a counter in one loop and data in another. A loop reached from several scopes
counts a component only where it counts in all of them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeAlias

from . import dtypes, ir
from .ops.einsum_spec import parse_spec
from .ops.primitives import BY_OP

COUNTED = dtypes.COUNTED  # (float64: every whole number up to 2⁵³ is exact in it)
#: The largest whole number every counted value holds exactly (step counts are refused above).
EXACT = 2.0 ** 53

#: A scope's owner: None for the call, a Loop for its body, a LoopGrad for its vjp terms.
Owner: TypeAlias = "ir.Loop | ir.LoopGrad | None"


@dataclass(frozen=True)
class Counting:
    """The counted nodes of every scope of one program, and the parameters it counts with."""

    scopes: dict = field(default_factory=dict)  # owner -> frozenset of counted nodes
    components: dict = field(default_factory=dict)  # Loop -> frozenset of counted components
    params: frozenset[int] = frozenset()  # parameters read as whole numbers (by index)
    meets: dict = field(default_factory=dict)  # owner -> frozenset of nodes (`meeting`)
    result: ir.Node | None = None  # the call's result (its root), handed back as data

    def at(self, owner: Owner = None) -> frozenset[ir.Node]:
        """The counted nodes of the scope `owner` owns (None: the call's own)."""
        return self.scopes.get(owner, frozenset())

    def meeting(self, owner: Owner = None) -> frozenset[ir.Node]:
        """The nodes of the scope `owner` owns whose value is data and that read a counted
        value (or, a parameter, may be given one): where a runtime converts. Every other
        node of data reads data only, and a runtime need not look."""
        return self.meets.get(owner, frozenset())


#: A program that counts nothing in float64 (a float64 call's: nothing to convert).
NOTHING = Counting()


def counting_in(root: ir.Node, dtype: str) -> Counting:
    """`counting(root)` for a call of `dtype`; nothing in a float64 or complex128 call, where
    counted values and data are of one type."""
    return NOTHING if dtypes.real(dtype) == COUNTED else counting(root)


def whole_constant(value: float) -> bool:
    """Whether a constant counts: a whole number of at most 2⁵³, exact in float64."""
    return float(value).is_integer() and abs(value) <= EXACT


def counting(root: ir.Node) -> Counting:
    """The counted nodes of `root`'s program, scope by scope, and the parameters it counts
    with (module docstring). Example: for `fn last(q) ↦ q[rows(q) − 1]`, `rows(q)`, the
    constant 1 and their difference count; the read `q[…]` does not (its value is data)."""
    scopes = _scopes(root)
    params = _demanded(scopes)
    # every component of every loop counts until a scope shows it cannot (a greatest fixpoint)
    kept: dict[ir.Loop, frozenset[int]] = {}
    for _, roots, _ in scopes.values():
        for node in ir.topological(*roots):
            loop = node.loop if isinstance(node, ir.LoopGrad) else node
            if isinstance(loop, ir.Loop):
                kept[loop] = frozenset(range(len(loop.init)))
    while True:
        found = {owner: _counted(roots, _states(owner, kept), kept, params)
                 for owner, (_, roots, _) in scopes.items()}
        narrowed = _narrowed(kept, scopes, found)
        if narrowed == kept:
            found = {owner: _trimmed(roots, found[owner], kept)
                     for owner, (_, roots, _) in scopes.items()}
            meets = {owner: _meeting(roots, found[owner])
                     for owner, (_, roots, _) in scopes.items()}
            return Counting(found, kept, frozenset(params), meets, root)
        kept = narrowed


def _trimmed(roots: tuple, counted: frozenset, kept: dict) -> frozenset[ir.Node]:
    """`counted` without the constants only data reads: a whole constant is the same number
    made data, so a runtime computes it as data where nothing counts with it (the `2` of
    `x · 2` is no conversion a call)."""
    needed: set[ir.Node] = {r for r in roots if isinstance(r, ir.Const)}
    for node in ir.topological(*roots):
        if node in counted and not isinstance(node, ir.Const):
            needed.update(ir.children(node))
        elif isinstance(node, (ir.Loop, ir.LoopGrad)):
            loop = node.loop if isinstance(node, ir.LoopGrad) else node
            needed.update(loop.init[i] for i in kept[loop])
    return frozenset(n for n in counted if not isinstance(n, ir.Const) or n in needed)


def _meeting(roots: tuple, counted: frozenset) -> frozenset[ir.Node]:
    """The nodes of one scope whose value is data and that read a counted one, and its
    parameters of data (a runtime may be given them in float64: bind_arguments reads
    another layer of the program)."""
    return frozenset(node for node in ir.topological(*roots) if node not in counted and (
        isinstance(node, ir.Param) or any(k in counted for k in ir.children(node))))


def counted_params(root: ir.Node) -> frozenset[int]:
    """The parameters `root`'s program reads as whole numbers (`counting(root).params`): a
    Python number given for one is bound in float64 (compiler/arguments.py)."""
    return frozenset(_demanded(_scopes(root)))


def _scopes(root: ir.Node) -> dict:
    """Every scope of the program: owner -> (the owner's enclosing owners, its roots, the
    loops and backward sweeps it holds), from the call's own scope inwards."""
    found: dict = {None: ([], (root,), [])}
    pending: list[Owner] = [None]
    while pending:
        owner = pending.pop()
        _, roots, inner = found[owner]
        for node in ir.topological(*roots):
            if not isinstance(node, (ir.Loop, ir.LoopGrad)):
                continue
            inner.append(node)
            bodies: list[tuple[Owner, tuple]] = [(node, (node.until, *node.step))] if \
                isinstance(node, ir.Loop) else [(node.loop, (node.loop.until, *node.loop.step)),
                                                 (node, node.vjp)]
            for body, body_roots in bodies:
                if body not in found:
                    found[body] = ([], body_roots, [])
                    pending.append(body)
                found[body][0].append(owner)
    return found


def _states(owner: Owner, kept: dict) -> frozenset[int]:
    """The counted state components of `owner`'s scope (a backward sweep's adjoints never
    count: they are derivatives of data)."""
    match owner:
        case ir.Loop():
            return kept[owner]
        case ir.LoopGrad():
            return kept[owner.loop]
    return frozenset()


def _counted(roots: tuple, states: frozenset[int], kept: dict,
             params: set[int]) -> frozenset[ir.Node]:
    """The counted nodes of one scope whose counted state components are `states`."""
    found: set[ir.Node] = set()
    for node in ir.topological(*roots):
        if _counts(node, found, states, kept, params):
            found.add(node)
    return frozenset(found)


def _counts(node: ir.Node, found: set, states: frozenset[int], kept: dict,
            params: set[int]) -> bool:
    match node:
        case ir.Const(value=v):
            return whole_constant(v)
        case ir.Param(index=i):
            return i in params
        case ir.State(index=i):
            return i in states
        case ir.Project(loop=ir.Loop() as loop, index=i):
            return i in kept[loop]
        case ir.Cond(then=a, orelse=b):
            return a in found and b in found
        case ir.Einsum(spec=spec, args=args):
            parsed = parse_spec(spec)
            summed = set("".join(parsed.inputs)) - set(parsed.output)
            return not summed and all(a in found for a in args)
        case ir.Prim(op="pow", args=(base, ir.Const(value=k))) if float(k).is_integer() and k >= 0:
            return k == 0 or base in found  # (x ^ 0 is 1 for every x, NaN included)
        case ir.Prim(op=op, args=args):
            whole = BY_OP[op].whole
            return whole is not None and all(args[i] in found for i in whole)
    return False


def _narrowed(kept: dict, scopes: dict, found: dict) -> dict:
    """Each loop's components still counted: those that start counted in every scope the
    loop is met in and that its step keeps counted."""
    narrowed = {}
    for loop, components in kept.items():
        body = found[loop]
        meets = [found[o] for o in scopes[loop][0]]
        narrowed[loop] = frozenset(
            i for i in components
            if loop.step[i] in body and all(loop.init[i] in outer for outer in meets))
    return narrowed


def _demanded(scopes: dict) -> set[int]:
    """The parameters the program reads as whole numbers: what an op's `counts` arguments or
    a counted loop's step count read, through whole arithmetic, `if`s and loop state."""
    params: set[int] = set()
    stack: list[tuple[ir.Node, Owner]] = []
    for owner, (_, roots, _) in scopes.items():
        for node in ir.topological(*roots):
            if isinstance(node, ir.Prim):
                stack.extend((node.args[i], owner) for i in BY_OP[node.op].counts)
            elif isinstance(node, ir.Loop) and node.counter is not None:
                stack.append((node.init[node.counter], owner))
    seen: set[tuple[ir.Node, Owner]] = set()
    while stack:
        node, owner = stack.pop()
        if (node, owner) in seen:
            continue
        seen.add((node, owner))
        match node:
            case ir.Param(index=i):
                params.add(i)
            case ir.State(index=i) if isinstance(owner, (ir.Loop, ir.LoopGrad)):
                loop = owner.loop if isinstance(owner, ir.LoopGrad) else owner
                if i < len(loop.init):
                    stack.append((loop.step[i], loop))
                    stack.extend((loop.init[i], outer) for outer in scopes[loop][0])
            case ir.Project(loop=ir.Loop() as loop, index=i):
                stack.append((loop.step[i], loop))
                stack.append((loop.init[i], owner))
            case ir.Cond(then=a, orelse=b):
                stack.extend([(a, owner), (b, owner)])
            case ir.Prim(op=op, args=args) if BY_OP[op].whole:
                stack.extend((args[i], owner) for i in BY_OP[op].whole)  # type: ignore[union-attr]
    return params
