"""Planning: a contraction path for every einsum, loops, FLOPs and memory, and the schedule an
executor's generated code runs (the path optimisers in paths.py; the schedule in schedule.py;
the plan as text in text.py)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from ...grammar.errors import RuntimeHilbertError
from .. import dtypes, ir
from ..memory import memory_limit, size_in_bytes  # noqa: F401 (importable here too)
from ..ops.primitives import having
from ..passes.shapes import Scope, Shape, ShapeTable
from .hyper import Hyper  # noqa: F401
from .paths import (  # noqa: F401 (what planning gives: the optimisers, paths and their steps)
    OPTIMISERS,
    ContractStep,
    check_optimiser,
    contraction,
    elements,
    is_path,
    optimiser_name,
    searches,
)
from .paths import note as path_note
from .schedule import Schedule

ITEM_BYTES = 8  # float64: the default dtype's (a plan counts its own dtype's: Plan.item_bytes)
_SHAPES_ONLY = having("shapes_only")


@dataclass(frozen=True, slots=True)
class EinsumPlan:
    """The plan of one einsum: its operand shapes, path, steps and costs."""

    spec: str
    shapes: tuple[Shape, ...]
    path: tuple[tuple[int, ...], ...]
    steps: tuple[ContractStep, ...]
    flops: int
    largest: int  # elements of the largest intermediate
    where: str  # source location
    scope: str  # 'call' or the loop it runs in
    note: str = ""  # why the path came from another optimiser than the one asked for, if so

    @property
    def blas(self) -> bool:
        return any(s.blas for s in self.steps)


@dataclass(frozen=True, slots=True)
class LoopPlan:
    """A loop: its definition's name, trip count (if known) and state shapes."""

    name: str
    counted: bool
    trips: int | None
    state: tuple[Shape, ...]
    flops_per_step: int
    where: str


@dataclass(frozen=True)
class Plan:
    """How one call of a function will be computed, for one signature of argument shapes."""

    function: str
    signature: tuple[Shape, ...]
    params: tuple[str, ...]
    einsums: tuple[EinsumPlan, ...]
    loops: tuple[LoopPlan, ...]
    flops: int | None  # total for the call; None when a loop's trip count is unknown
    largest_bytes: int
    peak_bytes: int
    executor: str
    optimize: str
    paths: dict = field(default_factory=dict, compare=False, repr=False)  # (spec, shapes) -> (path, steps)
    notes: tuple[str, ...] = ()  # the planner's and the executor's account: how calls run
    # what the generated code runs and the executor's account of it (none: nothing generated)
    schedule: Schedule = field(default_factory=Schedule, compare=False)
    dtype: str = dtypes.DEFAULT  # what the call computes in (compiler/dtypes.py)
    laws: tuple[str, ...] = ()  # the laws that rewrote the definition's body, as they fired
    axes: tuple[str, ...] = ()  # each parameter's declared named axes ("" where none)

    @property
    def item_bytes(self) -> int:
        """Bytes per entry of the call's values (its memory counts are in these)."""
        return dtypes.itemsize(self.dtype)

    @property
    def all_notes(self) -> tuple[str, ...]:
        """Every note the plan's text shows: the planner's and the executor's, then the
        schedule's (deciding the schedule, if it was not yet)."""
        return self.notes + self.schedule.notes

    def to_dict(self) -> dict:
        """Plain data (JSON-ready) for the plan: its notes all of them, its schedule the
        generated functions'."""
        data = asdict(self)
        data.pop("paths")
        data["notes"] = list(self.all_notes)
        data["schedule"] = [asdict(region) for region in self.schedule.regions]
        return data

    def draw(self, figure=None):
        """Its einsums' contraction trees drawn with matplotlib, one panel each, every step's
        FLOPs and result size at its node (compiler/plan/drawing.py): the figure."""
        from .drawing import draw

        return draw(self, figure)

    def __str__(self) -> str:
        from .text import render_plan

        return render_plan(self)


@dataclass
class _ScopeResult:
    """What planning one scope found: its FLOPs per evaluation (of the loops inside, those
    whose step counts are known), whether that is all of them, and the most bytes it holds at
    once while it runs."""

    flops: int
    complete: bool
    peak: int


class _Frame:
    """One scope being planned: its nodes in order, how far planning has got, and what it has
    found so far. `keeps_all`: every value is held until the scope ends."""

    def __init__(self, table: ShapeTable, roots: list[ir.Node], scope: Scope, keeps_all: bool):
        self.roots = roots
        self.scope = scope
        self.keeps_all = keeps_all
        self.shapes = table.scopes[scope]
        self.label = label(scope)
        self.order = ir.topological(*roots)
        self.position = 0
        self.flops = 0
        self.complete = True  # every loop's step count known
        self.during: dict[int, int] = {}  # bytes a node needs while computed, beyond its value
        self.bodies: list[_ScopeResult] = []  # the scopes of the loop at `position`, planned


def label(scope: Scope) -> str:
    """How a plan names a scope: the call, a loop's name, or a loop run backwards."""
    if not scope:
        return "call"
    last = scope[-1]
    return last.name if isinstance(last, ir.Loop) else f"{last.loop.name} backwards"


def _scopes_of(node: ir.Node, scope: Scope) -> list[tuple[Scope, list[ir.Node]]]:
    """The scopes inside a loop node, in the order they are planned: a Loop's body; a
    LoopGrad's forward loop's body, then its adjoints."""
    if isinstance(node, ir.Loop):
        return [(scope + (node,), [node.until, *node.step])]
    assert isinstance(node, ir.LoopGrad)
    loop = node.loop
    return [(scope + (loop,), [loop.until, *loop.step]), (scope + (node,), list(node.vjp))]


class _Planner:
    """Walks the scopes of specialised IR: a path per einsum, the loops, fused groups, costs
    and a memory estimate. `keeps_all`: the executor keeps every value of a scope until the
    scope ends (a host walk with a memo); otherwise a value is freed after its last reader."""

    def __init__(self, table: ShapeTable, signature: tuple[Shape, ...], optimize: str,
                 values: tuple | None, keeps_all: bool, item: int = ITEM_BYTES):
        self.table = table
        self.item = item  # bytes per entry
        self.signature = signature
        self.optimize = optimize
        self.values = values
        self.keeps_all = keeps_all
        self.einsums: list[EinsumPlan] = []
        self.loops: list[LoopPlan] = []
        self.paths: dict = {}
        self.largest = 0  # elements of the largest value or intermediate

    def call(self, root: ir.Node) -> _ScopeResult:
        """Plan the call's scope and every loop body in it. Loops nest as deep as definitions
        do, so scopes are walked with an explicit stack: a loop suspends its scope until its
        body is planned (`loop` then finishes it)."""
        frames = [_Frame(self.table, [root], (), self.keeps_all)]
        while True:
            frame = frames[-1]
            body = self.advance(frame)
            if body is not None:
                frames.append(body)
                continue
            result = self.close(frames.pop())
            if not frames:
                return result
            frames[-1].bodies.append(result)

    def advance(self, frame: _Frame) -> _Frame | None:
        """Plan `frame` onwards; the frame of a loop body to plan first, or None at its end."""
        while frame.position < len(frame.order):
            node = frame.order[frame.position]
            if ir.is_loop(node):
                scopes = _scopes_of(node, frame.scope)
                if len(frame.bodies) < len(scopes):  # every value of a body is held through it
                    scope, roots = scopes[len(frame.bodies)]
                    return _Frame(self.table, roots, scope, True)
                self.loop(frame) if isinstance(node, ir.Loop) else self.loop_grad(frame)
                frame.bodies = []
                continue
            self.largest = max(self.largest, elements(frame.shapes[node]))
            if isinstance(node, ir.Einsum):
                cost, frame.during[id(node)] = self.einsum(node, frame.shapes, frame.label)
                frame.flops += cost
            frame.position += 1
        return None

    def close(self, frame: _Frame) -> _ScopeResult:
        """A planned scope's FLOPs and peak."""
        sizes = {id(n): _stored_bytes(n, frame.shapes, self.table, frame.scope, self.item)
                 for n in frame.order}
        peak = _peak(frame.order, frame.roots, sizes, frame.during, frame.keeps_all)
        return _ScopeResult(frame.flops, frame.complete, peak)

    def einsum(self, node: ir.Einsum, shapes: dict, label: str) -> tuple[int, int]:
        """(FLOPs, bytes of intermediates) of one einsum, planned and recorded."""
        operand_shapes = tuple(shapes[a] for a in node.args)
        path, steps = contraction(node.spec, operand_shapes, self.optimize)
        note = path_note(node.spec, operand_shapes, self.optimize)
        self.paths[(node.spec, operand_shapes)] = (path, steps)
        largest = max(s.intermediate for s in steps)
        self.largest = max(self.largest, largest)
        flops = sum(s.flops for s in steps)
        self.einsums.append(EinsumPlan(node.spec, operand_shapes, path, steps, flops, largest,
                                       str(node.span), label, note))
        # Every step's result but the last (the einsum's own value) may be alive at once.
        return flops, sum(s.intermediate for s in steps[:-1]) * self.item

    def loop(self, frame: _Frame) -> None:
        """Finish the loop `frame` waits at, its body planned: its total FLOPs, and the bytes
        it holds while it runs, its state twice (the state a step reads and the one it writes)
        and every value of its body (compiled code makes a body's buffers once, before it)."""
        loop = frame.order[frame.position]
        assert isinstance(loop, ir.Loop)
        body, = frame.bodies
        state = self.table.states[frame.scope + (loop,)]
        trips = self.trips(loop)
        self.loops.append(LoopPlan(loop.name, loop.counter is not None, trips, state,
                                   body.flops, str(loop.span)))
        held = 2 * sum(elements(s) for s in state) * self.item + body.peak
        frame.during[id(loop)] = held - _stored_bytes(loop, frame.shapes, self.table, frame.scope,
                                                      self.item)
        if trips is None:
            frame.complete = False
        else:
            frame.flops += body.flops * trips
            frame.complete = frame.complete and body.complete
        frame.position += 1

    def loop_grad(self, frame: _Frame) -> None:
        """Finish a loop run backwards: its forward run again, then each step's adjoints, with a
        tape of every step's moving state (counted in the peak when the step count is known)."""
        node = frame.order[frame.position]
        assert isinstance(node, ir.LoopGrad)
        forward, backward = frame.bodies
        loop = node.loop
        state = self.table.states[frame.scope + (loop,)]
        adjoint = self.table.states[frame.scope + (node,)]
        trips = self.trips(loop)
        self.loops.append(LoopPlan(f"{loop.name} backwards", loop.counter is not None, trips,
                                   adjoint[len(state):], forward.flops + backward.flops,
                                   str(node.span)))
        moving = [s for i, s in enumerate(state) if loop.step[i] != ir.State(i, None)]
        tape = (trips or 0) * sum(elements(s) for s in moving) * self.item
        held = (2 * sum(elements(s) for s in adjoint) * self.item
                + max(forward.peak, backward.peak) + tape)
        frame.during[id(node)] = held - _stored_bytes(node, frame.shapes, self.table, frame.scope,
                                                      self.item)
        if trips is None:
            frame.complete = False
        else:
            frame.flops += (forward.flops + backward.flops) * trips
            frame.complete = frame.complete and forward.complete and backward.complete
        frame.position += 1

    def trips(self, loop: ir.Loop) -> int | None:
        if loop.counter is None:
            return None
        init = loop.init[loop.counter]
        leaves = [n for n in ir.topological(init) if isinstance(n, (ir.Param, ir.Loop, ir.State))]
        if any(not isinstance(n, ir.Param) for n in leaves):
            return None
        if self.values is None and not _reads_only_shapes(init):
            return None
        values = self.values or _placeholders(self.signature)
        if values is None:
            return None
        from ..evaluate import value_of

        value = value_of(init, values)
        number = float(value)
        return int(number) if number >= 0 and number.is_integer() else None


def _placeholders(signature: tuple[Shape, ...]) -> tuple | None:
    """Zero arrays of these shapes that take no memory (read for their shapes only), or None
    if a shape is too large for NumPy to describe."""
    try:
        return tuple(np.broadcast_to(np.float64(0.0), s) for s in signature)
    except ValueError:
        return None


def _stored_bytes(node: ir.Node, shapes: dict, table: ShapeTable, scope: Scope,
                  item: int) -> int:
    """Bytes a node's value takes (`item` per entry): a loop's value is its final state; a
    component read from it or an argument or state already held takes nothing new."""
    match node:
        case ir.Loop():
            return sum(elements(s) for s in table.states[scope + (node,)]) * item
        case ir.LoopGrad():
            state = table.states[scope + (node,)]
            return sum(elements(s) for s in state[len(node.loop.init):]) * item
        case ir.Project() | ir.Param() | ir.State() | ir.Const():
            return 0
    return elements(shapes[node]) * item


def _peak(order: list[ir.Node], roots: list[ir.Node], sizes: dict[int, int],
          during: dict[int, int], keeps_all: bool) -> int:
    """The most bytes held at once while `order` is computed in turn: the values computed so
    far, less those whose last reader has run (unless the executor keeps them all), plus what
    the node being computed needs beyond its value (einsum intermediates, a loop's body)."""
    last: dict[int, int] = {}
    for position, node in enumerate(order):
        for kid in ir.children(node):
            last[id(kid)] = position
    for root in roots:
        last[id(root)] = len(order)  # read after the scope: held to its end
    held = peak = 0
    for position, node in enumerate(order):
        peak = max(peak, held + during.get(id(node), 0) + sizes[id(node)])
        held += sizes[id(node)]
        if keeps_all:
            continue
        for read in set(map(id, ir.children(node))):
            if last[read] == position:
                held -= sizes[read]
    return peak


def _reads_only_shapes(root: ir.Node) -> bool:
    """True if every parameter `root` reads is read only through rows, columns or positions."""
    for node in ir.topological(root):
        if isinstance(node, ir.Prim) and node.op in _SHAPES_ONLY:
            continue
        if any(isinstance(k, ir.Param) for k in ir.children(node)):
            return False
    return not isinstance(root, ir.Param)


def make_plan(function: str, params: tuple[str, ...], root: ir.Node, table: ShapeTable,
              signature: tuple[Shape, ...], optimize: str = "auto", executor: str = "numba",
              values: tuple | None = None, limit: int | None = None,
              keeps_all: bool = False, dtype: str = dtypes.DEFAULT,
              laws: tuple[str, ...] = ()) -> Plan:
    """Requires shape-checked IR (what `executor` will run); ensures a Plan within the memory
    limit, or raises E700. The arguments count towards the peak; `keeps_all`: the executor
    holds every value it computes in a scope until the scope ends (a host walk), rather than
    freeing each after its last reader (compiled code). Bytes are counted in `dtype`'s.
    `laws` name the laws that rewrote the definition's body (the plan lists them)."""
    item = dtypes.itemsize(dtype)
    planner = _Planner(table, signature, optimize, values, keeps_all, item)
    call = planner.call(root)
    arguments = sum(elements(s) for s in signature) * item
    plan = Plan(function, signature, params, tuple(planner.einsums), tuple(planner.loops),
                call.flops if call.complete else None, planner.largest * item,
                arguments + call.peak, executor, optimiser_name(optimize), planner.paths,
                _mask_notes(root), dtype=dtype, laws=laws)
    guard(plan, root, table, limit if limit is not None else memory_limit())
    return plan


def _mask_notes(root: ir.Node) -> tuple[str, ...]:
    """What the masks pass made of a one-hot of a value, for the user (docs/semantics.md)."""
    return tuple(f"masks: the einsum at {node.span} reads one slice at a value (the one-hot "
                 "mask is not built; zeros where the value is no position)"
                 for node in ir.everything(root) if isinstance(node, ir.Prim) and node.op == "take")


def guard(plan: Plan, root: ir.Node, table: ShapeTable, limit: int) -> None:
    """E700 (naming the einsum that needs the most, if one does) when `plan`'s peak memory is
    over `limit` bytes; `root` and `table` are what was planned."""
    if plan.peak_bytes <= limit:
        return
    from .text import human_bytes

    culprit = max(plan.einsums, key=lambda e: e.largest, default=None)
    span = root.span
    item = plan.item_bytes
    if culprit is not None and culprit.largest * item * 2 >= plan.largest_bytes:
        for scope in table.scopes.values():
            for node in scope:
                if isinstance(node, ir.Einsum) and node.spec == culprit.spec:
                    span = node.span
        what = (f'einsum "{culprit.spec}" on {", ".join("×".join(map(str, s)) or "scalar" for s in culprit.shapes)} '
                f"needs an intermediate of {culprit.largest:,} elements "
                f"({human_bytes(culprit.largest * item)})")
    else:
        what = f"its largest value has {plan.largest_bytes // item:,} elements"
    raise RuntimeHilbertError(
        "E700", f"{plan.function} would need about {human_bytes(plan.peak_bytes)} of memory: "
        f"{what}, over the limit of {human_bytes(limit)} (set HILBERT_MEMORY_LIMIT to change it)",
        span)
