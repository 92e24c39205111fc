"""Which fused loop nests run as one loop over their rows: the plan's decision, from its data.

A layer norm is three nests over an n×p array: the row sums, then the centred values and their
squares' sums, then the division. Each reads the whole array from memory. When every value one
nest hands the next is written and read at the row being computed, the rows can be computed one
after another instead, each nest's work on a row done before the next row starts: the row stays
in the cache between the nests, and memory is read once. A softmax's maximum, exponentials and
division join the same way.

Decided over a function's blocks (scheduler.BlockPlan) once the scheduler has made them, from
what the plan already holds: the fusion groups (a nest's members, stored values and
reductions), each op's reads (fusion.reads: an entrywise op's at its own index, an einsum's by
its letters, a shift's or take's elsewhere along one axis), which values are views of others
(the op table's `view` role, an `if`'s value, a loop's state) and each nest's row count (the
axes every value's sizes are named by: sizes.py). Consecutive nests of a block, with nothing
between them that writes code (a group whose readers all recompute it, a loop's component),
over the same row count, join when

- neither carries a number across its rows (a reduction to one number: its total is started
  before the loop and read after it); the second starts nothing before its loop (an array
  reduction's fill);
- every array either writes is written at the row, first; every array written in one and read
  in the other is read at the row first too; and no other array the two read or write may be a
  view of it, or share its buffer (a buffer taken over from a value it reads, or a loop's
  state buffers).

The code generator joins exactly the nests each BlockPlan's `rows` names
(executor/codegen/rows.py), and the loop over their rows runs on threads when one of them
would alone (threads.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .. import ir
from ..ops.einsum_spec import parse_spec
from ..ops.primitives import BY_OP
from ..passes.shapes import Scope, ShapeTable
from . import fusion, threads
from .sizes import axes_of

if TYPE_CHECKING:
    from .scheduler import BlockPlan

#: The index of the row being computed: a nest's outer axis.
ROW = 0
#: An index along an array's first axis that is not the row (a position, another axis).
ELSEWHERE = -1
#: A unit that writes no code, so nests on either side of it are side by side.
SILENT = "silent"


@dataclass
class _Nest:
    """What deciding a join needs of one nest: its position in its block, its row count, and
    the arrays it writes and reads (by the buffer each is held in: _Names), each with the
    indices its first axis is written or read at (ROW or ELSEWHERE)."""

    position: int
    rows: object
    carries: bool
    starts: bool  # it writes a statement before its outer loop (an array reduction's fill)
    parallel: bool = False  # its rows run on threads (threads.py)
    writes: dict = field(default_factory=dict)
    reads: dict = field(default_factory=dict)


class _Names:
    """The buffer each array value is held in, named as generated code names it: a computed
    value its own (or the loop state's it lands in), a view or an `if`'s value its own with
    the buffers it may share as parents, a loop's state its own (with its start's buffer and
    the loop's step buffers as parents)."""

    def __init__(self) -> None:
        self.parents: dict = {}
        self.of: dict = {}  # a value -> its name, where it is not the value itself

    def name(self, node: ir.Node):
        return self.of.get(node, node)

    def roots(self, name) -> set:
        """`name` and every name it may be a view of."""
        seen, stack = set(), [name]
        while stack:
            n = stack.pop()
            if n not in seen:
                seen.add(n)
                stack.extend(self.parents.get(n, ()))
        return seen


@dataclass
class _Frame:
    """One IR scope as the walk is in it: its shapes, each value's axes, the values a step's
    results land in (the loop's state buffers), and the values stored with an axis moved
    first."""

    shapes: dict
    axes: dict
    scope: Scope
    loop: ir.Loop | None = None  # the loop whose body this scope is
    depth: int = 0  # the loops around it in the function (each a block of Python's)
    destinations: dict = field(default_factory=dict)
    gathered: dict = field(default_factory=dict)
    recomputed: set = field(default_factory=set)


def decide(top: BlockPlan | None, inputs: tuple[ir.Node, ...], scope: Scope, table: ShapeTable, count: int,
           divides: bool) -> None:
    """Set every block's `rows` and `threads` (scheduler.BlockPlan) under `top`, the function
    computing from `inputs` in `scope` whose nests may use `count` threads: the runs of its
    nests that run as one loop over their rows, each the positions of its nests in the block,
    and the nests whose rows run on threads, alone (threads.py) or in a row loop one of whose
    nests would. `divides`: the code generator splits divisions for their rewrite (the
    nests' work counts it). An input's axes are its own (generated code reads each into a
    local, even where it writes the size as a number: a tiny program's)."""
    shapes = table.scopes[scope]
    axes = {node: tuple(("input", k, axis) for axis in range(len(shapes[node])))
            for k, node in enumerate(inputs)}
    _Walk(table, count, divides).block(top, _Frame(shapes, axes, scope))


class _Walk:
    """The function's blocks walked in the order the emitter writes them, each block's nests
    measured and its row loops decided; the buffers' names are the whole function's."""

    def __init__(self, table: ShapeTable, count: int, divides: bool):
        self.table = table
        self.count = count  # threads the nests may use
        self.divides = divides
        self.names = _Names()

    @staticmethod
    def axes(frame: _Frame, node: ir.Node) -> tuple:
        """`node`'s axes (the sizes generated code names them by), from its arguments'."""
        return axes_of(node, frame.axes, frame.shapes, int)

    def block(self, plan: BlockPlan | None, frame: _Frame) -> None:
        if plan is None:
            return
        frame.recomputed |= plan.recomputed
        frame.gathered.update(plan.gathered)
        nests: list[_Nest | str | None] = []  # None: a unit that writes code of its own
        for position, unit in enumerate(plan.units):
            nests.append(self.unit(plan, frame, position, unit))
        plan.rows = tuple(_runs(nests, self.names))
        on_threads = {n.position for n in nests if isinstance(n, _Nest) and n.parallel}
        for run in plan.rows:
            if on_threads & set(run):  # (the loop over the run's rows is a prange)
                on_threads |= set(run)
        plan.threads = frozenset(on_threads)

    def unit(self, plan, frame: _Frame, position: int, unit: fusion.Unit):
        """The nest `unit` is; SILENT for a unit that writes no code (a group its readers
        recompute, a loop's component, a size or a number folded where read); None for one
        that writes code of its own. The blocks inside a unit are walked first."""
        if unit.group is not None:
            group = unit.group
            return self.nest(frame, position, group) if group.stored or group.tails else SILENT
        node = unit.node
        assert node is not None
        role = fusion.role(node, frame.shapes)
        if role == "generator":  # (stored by a nest of its own)
            return self.nest(frame, position, fusion.Group(node, [node], [], {node}))
        match node:
            case ir.Project(loop=loop, index=index):
                self.names.of[node] = ("state", loop, index)
                return SILENT
            case ir.Tuple():
                return SILENT
            case ir.Prim(args=args) if role == "size" or role == "scalar" and all(
                    isinstance(a, ir.Const) for a in args):
                return SILENT
            case ir.Prim(args=args) if role == "view":
                self.names.parents[node] = {self.names.name(args[0])}
            case ir.Cond(then=then, orelse=orelse):
                for branch in plan.branches[node]:
                    self.block(branch, frame)
                if frame.shapes[node]:
                    self.names.parents[node] = {self.names.name(then), self.names.name(orelse)}
            case ir.Loop():
                self.loop(plan, frame, node)
            case ir.Einsum(args=args):
                if node in frame.destinations:
                    self.names.of[node] = frame.destinations.pop(node)
                if all(run.kind == "same" for run in plan.contractions[node].runs):
                    self.names.of[node] = self.names.name(args[0])  # (bound to its operand)
                    return SILENT
        return None

    def loop(self, plan, frame: _Frame, loop: ir.Loop) -> None:
        until, step = plan.loops[loop]
        body = frame.scope + (loop,)
        inner = _Frame(self.table.scopes[body], {}, body, loop, frame.depth + 1)
        for i, init in enumerate(loop.init):
            inner.axes[ir.State(i, None)] = self.axes(frame, init)
            self.names.parents[("state", loop, i)] = {self.names.name(init),
                                                       ("buffers", loop, i)}
        self.block(until, inner)
        arrays = [i for i in _moving(loop) if inner.axes[ir.State(i, None)]]
        for i in arrays:
            step_node = loop.step[i]
            if step is not None and step_node in step.nodes and fusion.role(
                    step_node, inner.shapes) in ("member", "tail", "contraction", "generator"):
                inner.destinations[step_node] = ("buffers", loop, i)
        self.block(step, inner)

    def nest(self, frame: _Frame, position: int, group: fusion.Group) -> _Nest:
        rank = len(frame.shapes[group.space])
        found = _Nest(position, self.axes(frame, group.space)[0], False, False)
        flat = threads.flat(rank, frame.depth)
        identity = tuple(range(rank))
        for member in group.members:
            self.read(frame, group, member, identity, found)
            if member in group.stored:
                landing = frame.destinations.pop(member, None)
                name = landing or self.names.name(member)
                self.names.of[member] = name
                where = ELSEWHERE if member in frame.gathered and not landing else ROW
                found.writes.setdefault(name, set()).add(where)
        for tail in group.tails:
            self.read(frame, group, tail, identity, found)
            kept = _kept(tail, rank)
            name = frame.destinations.pop(tail, None) or self.names.name(tail)
            self.names.of[tail] = name
            if not kept:
                found.carries = True  # (its total starts before the loop, is read after)
                continue
            if kept != list(range(len(kept))) or 0 < len(kept) < flat:
                found.starts = True  # (filled before the loop, added into in it)
                found.reads.setdefault(name, set()).add(ROW if kept[0] == 0 else ELSEWHERE)
            found.writes.setdefault(name, set()).add(ROW if kept[0] == 0 else ELSEWHERE)
        work = threads.measure(group, frame.shapes, frame.recomputed,
                               found.carries or found.starts, flat > 0, self.divides)
        found.parallel = threads.parallel(work, self.count)
        if flat:
            found.rows = None  # (a flat loop's size is its axes' product: it joins nothing)
        return found

    def read(self, frame: _Frame, group: fusion.Group, node: ir.Node, index: tuple,
             found: _Nest) -> None:
        """The arrays `node`, computed at `index` (the nest's axes), reads, into found.reads."""
        for position, (kid, _) in enumerate(fusion.reads(node, frame.shapes)):
            at = _kid_index(node, position, kid, index, frame.shapes)
            if kid in group.members and at == tuple(range(len(at))):
                continue
            if fusion.is_generator(kid, frame.shapes) or (
                    kid in frame.recomputed and kid not in group.members):
                self.read(frame, group, kid, at, found)
                continue
            name = ("state", frame.loop, kid.index) if isinstance(kid, ir.State) else \
                self.names.name(kid)
            found.reads.setdefault(name, set()).add(
                ROW if at and at[0] == 0 else ELSEWHERE)



def _moving(loop: ir.Loop) -> list[int]:
    return [i for i, s in enumerate(loop.step) if s != ir.State(i, None) and i != loop.counter]


def _kept(tail: ir.Node, rank: int) -> list[int]:
    """The axes of the nest a reduction keeps."""
    match tail:
        case ir.Prim(attrs=attrs):
            return [k for k in range(rank) if k != attrs[0]]
        case ir.Einsum(spec=spec):
            parsed = parse_spec(spec)
            return [parsed.inputs[0].index(ch) for ch in parsed.output]
    raise AssertionError(f"planning: {tail!r} is no reduction")


def _kid_index(node: ir.Node, position: int, kid: ir.Node, index: tuple, shapes) -> tuple:
    """The index (each entry an axis of the nest, or ELSEWHERE) `node`, computed at `index`,
    reads its `position`th array argument `kid` at."""
    rank = len(shapes[kid])
    match node:
        case ir.Einsum(spec=spec) if not fusion.summing(spec):
            parsed = parse_spec(spec)
            where = dict(zip(parsed.output, index, strict=True))
            term = [t for t, a in zip(parsed.inputs, node.args, strict=True) if shapes[a]]
            return tuple(where[ch] for ch in term[position])
        case ir.Einsum():
            return index
        case ir.Prim(op=op):
            row = BY_OP[op]
            if row.role == "tail" or "entrywise" in row.traits:
                return index
            if row.form == "shifted":
                axis = node.attrs[0]
                outer = index[:rank - 1]
                return outer[:axis] + (ELSEWHERE,) + outer[axis:]
            if row.form == "taken":
                axis = node.attrs[0]
                return index[:axis] + (ELSEWHERE,) + index[axis:]
    return (ELSEWHERE,) * rank


def _runs(nests: list, names: _Names) -> list[tuple[int, ...]]:
    """The runs of consecutive nests that join (see the module's doc), in order."""
    found: list[tuple[int, ...]] = []
    i = 0
    while i < len(nests):
        head = nests[i]
        i += 1
        if not isinstance(head, _Nest) or head.carries:
            continue
        run = [head]
        while True:
            k = i
            while k < len(nests) and nests[k] == SILENT:
                k += 1
            nxt = nests[k] if k < len(nests) else None
            if not isinstance(nxt, _Nest) or nxt.rows != head.rows or nxt.carries \
                    or nxt.starts or not _row_local(run, nxt, names):
                break
            run.append(nxt)
            i = k + 1
        if len(run) > 1:
            found.append(tuple(n.position for n in run))
    return found


def _row_local(run: list[_Nest], nxt: _Nest, names: _Names) -> bool:
    """Whether `nxt` may run row by row interleaved with the nests of `run`."""
    w1: dict = {}
    r1: dict = {}
    for nest in run:
        for name, where in nest.writes.items():
            w1.setdefault(name, set()).update(where)
        for name, where in nest.reads.items():
            r1.setdefault(name, set()).update(where)
    w2, r2 = nxt.writes, nxt.reads
    if any(where != {ROW} for where in (*w1.values(), *w2.values())):
        return False
    written = set(w1) | set(w2)
    accessed = written | set(r1) | set(r2)
    for name in written:
        shared = name in (set(w1) & (set(w2) | set(r2))) or name in (set(w2) & set(r1))
        if shared:
            where = set().union(*(d.get(name, set()) for d in (w1, w2, r1, r2)))
            if where != {ROW}:
                return False
        roots = names.roots(name)
        for other in accessed - {name}:
            if roots & names.roots(other):
                return False
    return True
