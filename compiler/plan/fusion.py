"""Kernel fusion for code generation: the nodes of one block grouped into loop nests.

A *group* is one loop nest over one index space. Its *members* are entrywise values of that
shape (operators, comparisons, broadcasting einsums such as "ij,i->ij", shifted reads), each
computed once per index into a local; its *tails* are reductions of a member or of an input
(`maximum`, row sums) accumulated in the same pass. A member is stored to memory only when
something outside its group reads it, unless it is cheap arithmetic on stored values that the
reading kernels can recompute. Two rules keep a group one pass: a member reads another member
only at its own index, and nothing a group needs may depend on the group itself.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from .. import ir
from ..ops.einsum_spec import parse_spec
from ..ops.primitives import BY_OP


def is_ones(node: ir.Node) -> bool:
    """`x ^ 0`: all ones in the shape of x, whatever x holds (NumPy: nan^0 = 1)."""
    return (isinstance(node, ir.Prim) and node.op == "pow" and isinstance(node.args[1], ir.Const)
            and node.args[1].value == 0.0)


def is_square(node: ir.Node) -> bool:
    """`x ^ 2`: written as x · x, one multiplication (so cheap to recompute where read)."""
    return (isinstance(node, ir.Prim) and node.op == "pow" and isinstance(node.args[1], ir.Const)
            and node.args[1].value == 2.0)


def is_generator(node: ir.Node, shapes: dict) -> bool:
    """A value computed from its index alone (positions, ones): inlined wherever it is read."""
    if not shapes[node]:
        return False
    return is_ones(node) or (isinstance(node, ir.Prim) and BY_OP[node.op].role == "generator")


def broadcasting(spec: str) -> bool:
    """An einsum that only multiplies and rearranges: nothing summed, no diagonal."""
    parsed = parse_spec(spec)
    letters = "".join(parsed.inputs)
    return (set(letters) <= set(parsed.output)
            and all(len(set(t)) == len(t) for t in parsed.inputs))


def summing(spec: str) -> bool:
    """A one-operand einsum that sums some axes away (no diagonal): a reduction."""
    parsed = parse_spec(spec)
    return (len(parsed.inputs) == 1 and len(set(parsed.inputs[0])) == len(parsed.inputs[0])
            and not set(parsed.inputs[0]) <= set(parsed.output))


def role(node: ir.Node, shapes: dict) -> str:
    """What code a node becomes: leaf, const, scalar, member, generator, tail, contraction,
    cond, loop, project or size."""
    match node:
        case ir.Param() | ir.State():
            return "leaf"
        case ir.Const():
            return "const"
        case ir.Cond():
            return "cond"
        case ir.Loop():
            return "loop"
        case ir.Project():
            return "project"
        case ir.Einsum(spec=spec):
            if summing(spec):
                return "tail"
            if shapes[node] and broadcasting(spec):
                return "member"
            return "contraction"
        case ir.Tuple():
            return "tuple"
        case ir.Prim(op=op) if BY_OP[op].role is not None:
            if is_generator(node, shapes):  # (x ^ 0 is a member's op, positions one itself)
                return "generator"
            given = BY_OP[op].role  # (its form's: executor/codegen/forms.py writes each)
            assert given is not None
            if given == "member":  # a scalar one (a read of a vector, say) is one statement
                return "member" if shapes[node] else "scalar"
            return given
    raise AssertionError(f"no compiled role for {node!r}")


def value_kids(node: ir.Node) -> tuple[ir.Node, ...]:
    """The nodes whose *values* `node` reads (an op's leading arguments its row's `values`
    counts: sizes and positions read only shapes, a draw its key and step; ones read only
    shapes too; an `if` reads its condition first and one branch later)."""
    match node:
        case ir.Cond():
            return (node.cond,)
        case ir.Prim(op=op):
            if is_ones(node):
                return ()
            return node.args[:BY_OP[op].values]
    return ir.children(node)


def reads(node: ir.Node, shapes: dict) -> list[tuple[ir.Node, bool]]:
    """Each value a member or tail reads, with whether it reads it at its own index (an
    entrywise op reads its arguments there; a shift or take reads x elsewhere)."""
    match node:
        case ir.Prim(op=op) if BY_OP[op].role == "tail":
            return [(node.args[0], True)]
        case ir.Prim(op=op):
            row = BY_OP[op]
            return [(a, "entrywise" in row.traits) for a in node.args[:row.values] if shapes[a]]
        case ir.Einsum(spec=spec):
            parsed = parse_spec(spec)
            if summing(spec):
                return [(node.args[0], True)]
            return [(a, t == parsed.output) for a, t in zip(node.args, parsed.inputs, strict=True)
                    if shapes[a]]
    return []


def identity_kids(node: ir.Node, shapes: dict) -> list[ir.Node]:
    """The array inputs a member or tail reads only at its own index (those it can fuse with)."""
    pairs = reads(node, shapes)
    elsewhere = {a for a, same in pairs if not same}
    return [a for a, same in pairs if same and a not in elsewhere]


@dataclass(eq=False)
class Group:
    """One loop nest: `members` computed at every index of `space` (a node of that shape),
    `tails` reducing over it."""

    space: ir.Node
    members: list[ir.Node] = field(default_factory=list)
    tails: list[ir.Node] = field(default_factory=list)
    stored: set[ir.Node] = field(default_factory=set)  # members something outside reads


@dataclass(eq=False)
class Unit:
    """One step of a block's schedule: a group, or a single node of another role."""

    node: ir.Node | None = None
    group: Group | None = None


@dataclass
class Schedule:
    """A block's units in order; `recomputed`: members a reading kernel recomputes from their
    inputs rather than having them stored (cheap arithmetic on stored values); `reads[i]`:
    the stored values unit i reads."""

    units: list[Unit]
    recomputed: set[ir.Node]
    reads: list[set[ir.Node]]


#: Ops cheap enough to compute twice rather than store once and read back. Not division: a
#: vector division takes about 2 cycles an entry on its own (attention's scores / √d,
#: recomputed by the row maximum's pass and the exp pass, cost 1.5 ms of 24 over 2048×2048
#: scores); stored, it is computed once and read back from cache.
CHEAP = {"add", "sub", "mul", "neg", "abs", "max", "min", "eq", "ne", "lt", "gt", "le", "ge"}


def schedule(order: list[ir.Node], shapes: dict, roots: list[ir.Node],
             after: dict[ir.Node, list[ir.Node]] | None = None) -> Schedule:
    """Group the nodes of `order` (topological, all to be computed in one block) into loop
    nests and order the result so every unit comes after what it reads. `roots` are the
    nodes read from outside the block; `after[n]` are more nodes `n` must come after (what an
    `if`'s branches read)."""
    after = after or {}
    of = _form_groups(order, shapes, lambda n: (*value_kids(n), *after.get(n, ())))
    readers: dict[ir.Node, list[ir.Node]] = {}
    for node in order:
        for kid in value_kids(node):
            readers.setdefault(kid, []).append(node)
    _mark_stored(of, readers, set(roots))
    recomputed = _recomputed(order, shapes, of, readers, set(roots))
    generators = {n for n in order if role(n, shapes) == "generator"
                  and (n in roots or any(r not in of for r in readers.get(n, [])))}
    units = _ordered_units(order, shapes, of, generators, after, recomputed)
    return Schedule(units, recomputed, [_unit_reads(u, after, recomputed) for u in units])


def _recomputed(order: list[ir.Node], shapes: dict, of: dict[ir.Node, Group], readers: dict,
                roots: set[ir.Node]) -> set[ir.Node]:
    """Stored members worth recomputing where they are read: cheap, read only by other
    kernels at their own index or as one slice along an axis before the last (an LSTM's
    gates, z[:, k, :], each read once: contiguous along the last axis, which nests run
    innermost), and made only of values that are stored anyway."""
    chosen: set[ir.Node] = set()
    for node in order:
        group = of.get(node)
        if group is None or node not in group.stored or node in roots or not _cheap(node):
            continue
        outside = [r for r in readers.get(node, []) if of.get(r) is not group]
        if not all(r in of and ((node, False) not in reads(r, shapes)
                                or _middle_slice(r, node, shapes)) for r in outside):
            continue
        inner = _inlinable(node, group, shapes, of, readers, chosen)
        if inner is not None:
            chosen |= {node, *inner}
            group.stored.discard(node)
    return chosen


def _inlinable(node: ir.Node, group: Group, shapes: dict, of: dict[ir.Node, Group],
               readers: dict, chosen: set[ir.Node]) -> set[ir.Node] | None:
    """The members `node` is computed from that a reader recomputes with it (cheap members of
    its own group that nothing else reads: a + u + b is two additions), when everything else
    it reads is stored anyway; None when it reads a member that is neither."""
    inner: set[ir.Node] = set()
    for kid in value_kids(node):
        # (a kid in no group is an input, perhaps a host value with no compiled role)
        if not shapes[kid] or kid not in of or role(kid, shapes) == "generator":
            continue
        if kid in of[kid].stored and kid not in chosen:
            continue
        if (of[kid] is not group or kid in group.stored or not _cheap(kid)
                or any(r is not node for r in readers.get(kid, []))):
            return None
        deeper = _inlinable(kid, group, shapes, of, readers, chosen)
        if deeper is None:
            return None
        inner |= {kid, *deeper}
    return inner


def stored_kids(node: ir.Node, recomputed: set[ir.Node]) -> list[ir.Node]:
    """What reading `node` reads: its kids, through those recomputed where they are read."""
    found = []
    for kid in value_kids(node):
        found += stored_kids(kid, recomputed) if kid in recomputed else [kid]
    return found


def slice_axis(reader: ir.Node, node: ir.Node) -> int | None:
    """The axis along which `reader` takes one constant slice of `node` (a `take` at a number,
    a `shift` with no new axes: what masks.py makes of `gate(z, k)`), or None."""
    if not (isinstance(reader, ir.Prim) and reader.args[0] == node):
        return None
    form = BY_OP[reader.op].form  # (of these forms' attributes: their reads of x)
    constant = ((form == "taken" and isinstance(reader.args[1], ir.Const))
                or (form == "shifted" and not reader.attrs[1]))
    return reader.attrs[0] if constant else None


def _middle_slice(reader: ir.Node, node: ir.Node, shapes: dict) -> bool:
    """`reader` takes one constant slice of `node` along an axis before its last."""
    axis = slice_axis(reader, node)
    return axis is not None and axis < len(shapes[node]) - 1


def _cheap(node: ir.Node) -> bool:
    match node:
        case ir.Prim(op=op):
            return is_square(node) or op in CHEAP
        case ir.Einsum():
            return True  # a broadcasting product
    return False


def _unit_reads(unit: Unit, after: dict, recomputed: set[ir.Node]) -> set[ir.Node]:
    found: set[ir.Node] = set()
    for node in unit_nodes(unit):
        for kid in (*value_kids(node), *after.get(node, ())):
            found.update(stored_kids(kid, recomputed) if kid in recomputed else (kid,))
    return found


def _form_groups(order: list[ir.Node], shapes: dict, needs) -> dict[ir.Node, Group]:
    """Each member and tail joins the group of an input it reads at its own index, when that
    makes no cycle (merging the groups of its other such inputs when that is safe too);
    otherwise it starts a group of its own. `needs(n)`: what n must come after."""
    of: dict[ir.Node, Group] = {}
    sources: dict[ir.Node, Group] = {}  # an input that is the index space of a tail-only group
    inside = set(order)
    for node in order:
        kind = role(node, shapes)
        if kind not in ("member", "tail"):
            continue
        candidates = list(dict.fromkeys(of[k] for k in identity_kids(node, shapes)
                                        if k in of and k in of[k].members))
        if kind == "tail" and _reduced(node) in sources:
            candidates.append(sources[_reduced(node)])
        joinable = [g for g in candidates if not _cycle(node, g, of, shapes, inside, needs)]
        if joinable:
            group = joinable[0]
            for other in joinable[1:]:
                if _mergeable(group, other, of, inside, needs):
                    _merge(group, other, of, sources)
        else:
            space = _reduced(node) if kind == "tail" else node
            group = Group(space)
            if kind == "tail" and space not in of:
                sources[space] = group
        (group.tails if kind == "tail" else group.members).append(node)
        of[node] = group
    return of


def _mergeable(a: Group, b: Group, of: dict[ir.Node, Group], inside: set[ir.Node], needs) -> bool:
    """Two groups of one shape can be one loop nest if neither needs the other's results."""
    return not _reaches(a, b, of, inside, needs) and not _reaches(b, a, of, inside, needs)


def _merge(into: Group, other: Group, of: dict[ir.Node, Group], sources: dict) -> None:
    into.members[:0] = other.members  # independent of `into`, so either order is topological
    into.tails += other.tails
    for node in other.members + other.tails:
        of[node] = into
    for key, group in list(sources.items()):
        if group is other:
            sources[key] = into


def _reaches(start: Group, target: Group, of: dict[ir.Node, Group], inside: set[ir.Node],
             needs) -> bool:
    """Does anything `start` reads (outside itself) depend on `target`?"""
    stack = [k for n in start.members + start.tails for k in needs(n) if of.get(k) is not start]
    return _search(stack, target, of, inside, needs)


def _cycle(node: ir.Node, group: Group, of: dict[ir.Node, Group], shapes: dict,
           inside: set[ir.Node], needs) -> bool:
    """Would `node` joining `group` make the group depend on itself? True if any input it does
    not read at its own index from a member (a tail of the group included) reaches the group."""
    fused = {k for k in identity_kids(node, shapes) if k in group.members}
    return _search([k for k in needs(node) if k not in fused], group, of, inside, needs)


def _search(stack: list[ir.Node], target: Group, of: dict[ir.Node, Group],
            inside: set[ir.Node], needs) -> bool:
    """Is `target` among what `stack` depends on, a group's inputs counting as its members'?"""
    seen: set[int] = set()
    while stack:
        current = stack.pop()
        if id(current) in seen or current not in inside:
            continue  # what the block does not compute cannot depend on its groups
        seen.add(id(current))
        owner = of.get(current)
        if owner is target:
            return True
        if owner is not None:
            for other in owner.members + owner.tails:
                stack.extend(needs(other))
        stack.extend(needs(current))
    return False


def _mark_stored(of: dict[ir.Node, Group], readers: dict, roots: set) -> None:
    """A member is stored if it is a root or anything outside its group reads it."""
    for node, group in of.items():
        if node not in group.members:
            continue
        if node in roots or any(of.get(r) is not group for r in readers.get(node, [])):
            group.stored.add(node)


def _ordered_units(order: list[ir.Node], shapes: dict, of: dict[ir.Node, Group],
                   generators: set[ir.Node], after: dict[ir.Node, list[ir.Node]],
                   recomputed: set[ir.Node]) -> list[Unit]:
    """Units (groups, or single nodes) in an order that respects every dependency; ties go to
    the earlier node of `order`, so the code reads like the source."""
    position = {node: i for i, node in enumerate(order)}
    units: dict[int, Unit] = {}  # by id(unit)
    made: dict[int, Unit] = {}  # by id of the group, or of the node a unit alone computes
    unit_of: dict[ir.Node, Unit] = {}
    for node in order:
        kind = role(node, shapes)
        if kind in ("leaf", "const") or (kind == "generator" and node not in generators):
            continue
        group = of.get(node)
        owner = id(group) if group is not None else id(node)
        if owner not in made:
            made[owner] = Unit(node=None if group else node, group=group)
            units[id(made[owner])] = made[owner]
        unit_of[node] = made[owner]
    needs: dict[int, set[int]] = {id(u): set() for u in units.values()}
    users: dict[int, list[Unit]] = {id(u): [] for u in units.values()}
    for node, unit in unit_of.items():
        kids = [k for kid in (*value_kids(node), *after.get(node, ()))
                for k in (stored_kids(kid, recomputed) if kid in recomputed
                          and of.get(kid) is not unit.group
                          else (kid,))]
        for kid in kids:
            other = unit_of.get(kid)
            if other is None or other is unit:
                continue
            if unit.group is not None and role(kid, shapes) == "generator":
                continue  # a kernel computes a generator inline rather than reading it back
            if id(other) not in needs[id(unit)]:
                needs[id(unit)].add(id(other))
                users[id(other)].append(unit)
    first = {id(u): min(position[n] for n in unit_nodes(u)) for u in units.values()}
    ready = [(first[k], k) for k, v in needs.items() if not v]
    heapq.heapify(ready)
    result: list[Unit] = []
    while ready:
        _, key = heapq.heappop(ready)
        result.append(units[key])
        for user in users[key]:
            needs[id(user)].discard(key)
            if not needs[id(user)]:
                heapq.heappush(ready, (first[id(user)], id(user)))
    assert len(result) == len(units), "kernel grouping made a cycle"
    return result


def _reduced(tail: ir.Node) -> ir.Node:
    """What a reduction (a node of role `tail`: a reducing op or einsum) reduces: its first
    argument."""
    assert isinstance(tail, (ir.Prim, ir.Einsum))
    return tail.args[0]


def unit_nodes(unit: Unit) -> list[ir.Node]:
    """The IR nodes one unit computes."""
    if unit.group is not None:
        return unit.group.members + unit.group.tails
    assert unit.node is not None
    return [unit.node]
