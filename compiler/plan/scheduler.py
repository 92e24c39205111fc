"""The schedule of one generated function, decided before any code is written.

`decide` walks a region's IR block by block, as the emitter will, and fixes everything the
code generator would otherwise find out while writing: each block's units (fusion.schedule:
which values share a loop nest, which are stored, which recomputed), the axis order each
stored value is laid out in, each contraction's pairwise steps and their layouts
(layout.py), whether the function is compiled at all or runs as plain NumPy calls, and
whether its nests may use threads. The emitter then writes exactly this (emitter.py), once;
dask's kernels are generated from it the same way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from .. import ir
from ..ops.einsum_spec import NUMPY_LETTERS, parse_spec
from ..passes.shapes import Scope, ShapeTable
from . import building, fusion, row_loops
from .building import NETWORK_STEPS  # noqa: F401 (where a network begins: building.py)
from .layout import SMALL_PRODUCT, Layout, layout, nest
from .paths import contraction

#: A loop nest that replaced a product (`Step.replaces`) makes a function compiled that
#: NumPy calls would otherwise run only where the model says it saves this much a call: a
#: compiled function costs a few microseconds more to call, and seconds to build.
COMPILING_PAYS_NS = 20_000.0


@dataclass(frozen=True)
class Step:
    """One pairwise step of a contraction: `kind` "same" (its one operand already is the
    result), "product" (matrix products laid out by `layout`) or "loops" (a loop nest over
    its letters in `order`, outermost first; one numpy.einsum on the host); `spec` its
    operands' letters as they are held -> its result's. `replaces`: for a nest chosen over a
    product that would need no compiling, what it saves a call against NumPy calls' way of
    running the step (which the function takes were nothing else compiled), in the cost
    model's nanoseconds. `shared`: a product of a `split` function shared out among hilbert's
    threads by blocks of rows (True) or of columns (False) (Layout.shared); None: not."""

    kind: str
    spec: str
    shape: tuple[int, ...]
    layout: Layout | None = None
    order: str = ""
    replaces: float = 0.0
    shared: bool | None = None

    def compiles(self, numbers: dict[str, int]) -> bool:
        """Whether this step needs compiled code: a loop nest, a result rearranged by one,
        or a loop of products that sums or whose products are small (plain loops); a lone
        product, or a loop of large ones, is a NumPy call on the host."""
        plan = self.layout
        if plan is None:
            return self.kind == "loops"
        if plan.rearranged:
            return True
        if not plan.loops:
            return False
        sums = [ch for ch in plan.loops if ch not in plan.output]
        each = math.prod(numbers[ch] for ch in plan.rows + plan.summed + plan.cols)
        return bool(sums) or each <= SMALL_PRODUCT


@dataclass(frozen=True)
class Contraction:
    """An einsum as generated code computes it: the plan's `path` and opt_einsum `steps`,
    each letter's size (`numbers`) and what each step runs as (`runs`)."""

    path: tuple
    steps: tuple
    numbers: dict[str, int]
    runs: tuple[Step, ...]


@dataclass(eq=False)
class BlockPlan:
    """One block of code: its units in order; the nodes it computes; for each stored value
    the position of the last unit reading it (len(units): read after the block); the members
    its kernels recompute rather than read; the values stored with an axis moved first
    (`gathered`: value -> that axis); and the plans of what its units hold: each `if`'s
    branches, each loop's stopping test and step, each contraction's steps."""

    units: list[fusion.Unit]
    nodes: set[ir.Node]
    last_read: dict[ir.Node, int]
    recomputed: set[ir.Node]
    gathered: dict[ir.Node, int]
    branches: dict[ir.Node, tuple[BlockPlan | None, BlockPlan | None]] = field(
        default_factory=dict)
    loops: dict[ir.Node, tuple[BlockPlan | None, BlockPlan | None]] = field(
        default_factory=dict)
    contractions: dict[ir.Node, Contraction] = field(default_factory=dict)
    # the runs of its nests that run as one loop over their rows, each the positions of its
    # nests among `units`, and the positions of the nests whose rows run on threads
    # (row_loops.py, threads.py)
    rows: tuple[tuple[int, ...], ...] = ()
    threads: frozenset[int] = frozenset()


@dataclass(eq=False)
class Decisions:
    """A function's schedule: its top block; `compiled` (False: plain NumPy calls, nothing
    to compile); `serial`: its nests never use threads, because it has loops (OpenMP's
    threads spin a while after a parallel nest, and a BLAS product started meanwhile loses a
    core to them: an MLP fit, whose steps alternate products and nests, ran ten times slower
    so, with torch imported, whose OpenMP settings then hold), or products whose BLAS threads
    hilbert cannot set; `exact`: written for the table's own sizes (a tiny program); `fast`:
    math="fast" (spelling.FAST, and division by a reciprocal: division.py);
    `split`: a loop-free function with products, whose large products hilbert's threads share
    out by blocks of rows or columns, NumPy's BLAS on one thread for the call (products.py,
    executor/blas_threads.py), so its nests may use threads too; `threads`: how many threads
    its nests and shared products may use (executor/threads.py; 1 when it is not compiled or
    is `serial`), which each nest's decision reads (compiler/plan/threads.py); `weighed`: a
    tensor network's account of why it is compiled or runs as NumPy calls (building.py), for
    the plan ("" where nothing was weighed)."""

    root: BlockPlan | None
    compiled: bool
    serial: bool
    exact: bool
    fast: bool = False
    split: bool = False
    threads: int = 1
    weighed: str = ""


def moving(loop: ir.Loop) -> list[int]:
    """The loop's state values a step changes (not the counter, which the loop counts)."""
    return [i for i, s in enumerate(loop.step) if s != ir.State(i, None) and i != loop.counter]


class _Frame:
    """What is computed so far in one IR scope: a set per open block (branches open one)."""

    def __init__(self, shapes: dict, bound: set[ir.Node]):
        self.shapes = shapes
        self.blocks = [bound]

    def bound(self, node: ir.Node) -> bool:
        return any(node in block for block in self.blocks)


class _Scheduler:
    def __init__(self, table: ShapeTable, optimize: str, paths: dict):
        self.table = table
        self.optimize = optimize
        self.paths = paths
        self.compiles = False
        self.serial = False  # (it has loops)
        self.products = False
        self.contractions: list[tuple[BlockPlan, ir.Einsum, dict]] = []
        self.other_code = False  # something but contraction steps needs compiling
        self.steps = 0  # pairwise steps of every contraction
        self.saved = 0.0  # what nests chosen over products save against NumPy calls (ns)
        self.widest = 0  # the most letters of one step
        self.cost = 0.0  # the model's time of every step as decided (ns)
        self.levels = 0  # the loop levels of the compiled steps' nests and copies (building.py)
        self.weighed: building.Weighed | None = None  # a network's decision (`compiled`)

    def block(self, frame: _Frame, scope: Scope, roots: list[ir.Node],
              final: bool = True) -> BlockPlan | None:
        """The plan of the block computing `roots` (None: all computed already). Not `final`:
        more code of this block follows and may read what it computes."""
        order = self._needed(frame, roots)
        if not order:
            return None
        branch_reads = self._read_by_branches(frame, order)
        read_later = list(roots) + [n for nodes in branch_reads.values() for n in nodes]
        plan = fusion.schedule(order, frame.shapes, read_later, branch_reads)
        last = {n: i for i, reads in enumerate(plan.reads) for n in reads} if final else {}
        last.update((n, len(plan.units)) for n in read_later)
        gathered = sliced(order, set(read_later), frame.shapes) if final else {}
        made = BlockPlan(plan.units, set(order), last, plan.recomputed, gathered)
        for unit in plan.units:
            self._unit(frame, scope, made, unit)
        return made

    def _unit(self, frame: _Frame, scope: Scope, made: BlockPlan, unit: fusion.Unit) -> None:
        bound = frame.blocks[-1]
        if unit.group is not None:
            group = unit.group
            if group.stored or group.tails:  # else every reader recomputes its members
                self.compiles = self.other_code = True
                bound.update(group.stored, group.tails)
            return
        node = unit.node
        assert node is not None
        match fusion.role(node, frame.shapes):
            case "generator":
                self.compiles = self.other_code = True
            case "contraction":
                assert isinstance(node, ir.Einsum)
                made.contractions[node] = self._contraction(node, frame.shapes, host=False)
                self.contractions.append((made, node, frame.shapes))
                self.products = True
            case "cond":
                assert isinstance(node, ir.Cond)
                made.branches[node] = (self._branch(frame, scope, node.then),
                                       self._branch(frame, scope, node.orelse))
            case "loop":
                assert isinstance(node, ir.Loop)
                self.compiles = self.serial = self.other_code = True
                made.loops[node] = self._loop(scope, node)
        bound.add(node)

    def _branch(self, frame: _Frame, scope: Scope, root: ir.Node) -> BlockPlan | None:
        frame.blocks.append(set())
        plan = self.block(frame, scope, [root])
        frame.blocks.pop()
        return plan

    def _loop(self, scope: Scope, loop: ir.Loop):
        body = scope + (loop,)
        frame = _Frame(self.table.scopes[body], {ir.State(i, None) for i in range(len(loop.init))})
        until = self.block(frame, body, [loop.until], final=False) if loop.counter is None \
            else None
        return until, self.block(frame, body, [loop.step[i] for i in moving(loop)])

    def _contraction(self, node: ir.Einsum, shapes: dict, host: bool) -> Contraction:
        """The einsum along its planned path (the plan's, when it has this einsum:
        Plan.paths), each step decided as products.py will run it; an intermediate's letter
        order is the layout's choice."""
        operand_shapes = tuple(shapes[a] for a in node.args)
        path, steps = self.paths.get((node.spec, operand_shapes)) or \
            contraction(node.spec, operand_shapes, self.optimize)
        parsed = parse_spec(node.spec)
        numbers = {ch: int(n) for term, shape in zip(parsed.inputs, operand_shapes, strict=True)
                   for ch, n in zip(term, shape, strict=True)}
        terms = list(parsed.inputs)
        runs = []
        for number, (positions, step) in enumerate(zip(path, steps, strict=True)):
            last = number == len(steps) - 1
            taken = [terms.pop(i) for i in sorted(positions, reverse=True)]
            output = parsed.output if last else parse_spec(step.spec).output
            run, cost = _priced_step(taken, output, numbers, free=not last, host=host)
            runs.append(run)
            self.cost += cost
            self.levels += 0 if host else building.levels(run.kind, run.spec, _copied(run, taken))
            terms.append(output if run.layout is None or run.layout.rearranged
                         else run.layout.output)
            if run.replaces:
                self.saved += run.replaces
            else:
                self.compiles |= run.compiles(numbers)
            self.widest = max(self.widest, len(set(run.spec) - set(",->")))
        self.steps += len(runs)
        return Contraction(tuple(path), tuple(steps), numbers, tuple(runs))

    def compiled(self, arrays: int, dtype: str = "float64") -> bool:
        """Whether the function is compiled. A tensor network's steps alone (more of them than
        NETWORK_STEPS, each nameable by numpy.einsum, so NumPy calls can run them) are
        weighed: compiled where the cost model says compiling pays, the function taking
        `arrays` arrays (building.py; `weighed` says why), lone products included, whose NumPy
        calls cost more than compiled code's. Otherwise where something
        needs compiling, or the nests chosen over products save enough (COMPILING_PAYS_NS)."""
        wanted = self.compiles or self.saved >= COMPILING_PAYS_NS
        if self.other_code:
            return True
        if self.steps <= NETWORK_STEPS or self.widest > NUMPY_LETTERS:
            return wanted
        compiled, steps = self.cost, self.steps
        self.cost = 0.0
        hosted = [(made, node, self._contraction(node, shapes, host=True))
                  for made, node, shapes in self.contractions]
        self.weighed = building.weigh(steps, self.levels, compiled, self.cost, arrays, dtype)
        if not self.weighed.compiles:
            for made, node, decided in hosted:
                made.contractions[node] = decided
        return self.weighed.compiles

    def share_out(self) -> None:
        """Each lone product large enough shared out among hilbert's threads (the function
        is `split`: Layout.shared)."""
        for made, node, _ in self.contractions:
            decided = made.contractions[node]
            runs = tuple(run if run.layout is None else
                         replace(run, shared=run.layout.shared(decided.numbers))
                         for run in decided.runs)
            made.contractions[node] = replace(decided, runs=runs)

    def as_host(self) -> None:
        """Nothing needs compiling: every contraction laid out for NumPy calls instead (a
        step that is no product as one numpy.einsum), unless `compiled` has already."""
        if self.weighed is None:
            for made, node, shapes in self.contractions:
                made.contractions[node] = self._contraction(node, shapes, host=True)
        self.compiles = False  # (a network's steps, which would compile, are NumPy calls now)

    @staticmethod
    def _needed(frame: _Frame, roots: list[ir.Node]) -> list[ir.Node]:
        """Nodes not yet computed that `roots` need unconditionally, inputs first."""
        order: list[ir.Node] = []
        seen: set[ir.Node] = set()
        stack = [(r, False) for r in reversed(roots)]
        while stack:
            node, done = stack.pop()
            if done:
                order.append(node)
                continue
            if node in seen or isinstance(node, ir.Const) or frame.bound(node):
                continue
            seen.add(node)
            stack.append((node, True))
            stack.extend((k, False) for k in reversed(fusion.value_kids(node)))
        return order

    @staticmethod
    def _read_by_branches(frame: _Frame, order: list[ir.Node]) -> dict[ir.Node, list[ir.Node]]:
        """For each `if` of this block, the nodes of the block its branches read (they must be
        stored, and computed before the `if`)."""
        inside = set(order)
        reads: dict[ir.Node, list[ir.Node]] = {}
        for cond in (n for n in order if isinstance(n, ir.Cond)):
            found: list[ir.Node] = []
            seen: set[ir.Node] = set()
            stack = [cond.then, cond.orelse]
            while stack:
                node = stack.pop()
                if node in seen:
                    continue
                seen.add(node)
                if node in inside:
                    found.append(node)
                elif not frame.bound(node):
                    stack.extend(ir.children(node))
            reads[cond] = found
        return reads


def _step(taken: list[str], output: str, numbers: dict[str, int], free: bool,
          host: bool) -> Step:
    """How one pairwise step runs (`_priced_step`)."""
    return _priced_step(taken, output, numbers, free, host)[0]


def _priced_step(taken: list[str], output: str, numbers: dict[str, int], free: bool,
                 host: bool) -> tuple[Step, float]:
    """How one pairwise step runs. `free`: the output's letter order is ours to choose. A
    product runs as one loop nest instead where the cost model (layout.py) says that is
    quicker (a vector against a middle axis: "n,hlmnopq->hlmopq", whose product would copy
    the whole tensor or make a thousand thin ones)."""
    spec = f"{','.join(taken)}->{output}"
    shape = tuple(numbers[ch] for ch in output)
    if len(taken) == 1 and taken[0] == output:
        return Step("same", spec, shape), 0.0
    loops = nest(taken, output, numbers, host)
    if len(taken) != 2 or not is_product(taken[0], taken[1], output):
        return Step("loops", spec, shape, order=loops.order), loops.cost
    product = layout(taken[0], taken[1], output, numbers, free, host)
    named = len(set(spec) - set(",->")) <= NUMPY_LETTERS
    if product.cost <= loops.cost or (host and not named):
        return Step("product", spec, shape, product), product.cost
    if host or Step("product", spec, shape, product).compiles(numbers):
        return Step("loops", spec, shape, order=loops.order), loops.cost
    plain = layout(taken[0], taken[1], output, numbers, free, host=True).cost
    if named:
        plain = min(plain, nest(taken, output, numbers, host=True).cost)
    return (Step("loops", spec, shape, order=loops.order, replaces=max(plain - loops.cost, 1.0)),
            loops.cost)


def _copied(run: Step, taken: list[str]) -> list[str]:
    """The terms a compiled product step copies into another axis order (its operands', and
    its result's when rearranged): each a loop nest of its own in the generated code."""
    plan = run.layout
    if plan is None:
        return []
    copied = [term for term, held in zip(taken, (plan.a, plan.b), strict=True) if held != term]
    return copied + ([plan.output] if plan.rearranged else [])


def is_product(a: str, b: str, output: str) -> bool:
    """A matrix product: no diagonal, something summed between the two, nothing summed within
    one operand alone, and a non-scalar result."""
    if len(set(a)) != len(a) or len(set(b)) != len(b) or not output:
        return False
    summed = (set(a) & set(b)) - set(output)
    alone = (set(a) ^ set(b)) - set(output)
    return bool(summed) and not alone


def sliced(order: list[ir.Node], read_later: set, shapes) -> dict[ir.Node, int]:
    """The arrays of `order` whose every reader takes one constant slice along the same axis,
    the last (and which nothing after this block reads): that axis, each. A slice along a
    middle axis is already contiguous along the last, which nests run innermost."""
    readers: dict[ir.Node, set[ir.Node]] = {}
    for node in order:
        for kid in ir.children(node):
            readers.setdefault(kid, set()).add(node)
    found = {}
    for node in order:
        axes = {fusion.slice_axis(r, node) for r in readers.get(node, ())}
        last = len(shapes[node]) - 1
        if node not in read_later and last > 0 and axes == {last}:
            found[node] = last
    return found


@dataclass(frozen=True)
class Machine:
    """What the executor tells the scheduler of the machine it runs on: how many `threads` a
    compiled function's nests may use (executor/threads.py), and whether a loop-free
    function's products may be shared out among them (`splits`: there are threads, on a layer
    whose idle threads sleep, and a BLAS whose threads can be set for the call)."""

    threads: int = 1
    splits: bool = False


def decide(root: ir.Node, inputs: tuple[ir.Node, ...], scope: Scope, table: ShapeTable,
           optimize: str, exact: bool, paths: dict, fast: bool = False,
           machine: Machine = Machine(), dtype: str = "float64") -> Decisions:
    """The schedule of the function computing `root` in `scope` from `inputs` (`fast`:
    under math="fast"), in `dtype`, on `machine`: each block's units, layouts and steps, and
    which of its nests run on threads and which run as one loop over rows (row_loops.py)."""
    scheduler = _Scheduler(table, optimize, paths)
    top = scheduler.block(_Frame(table.scopes[scope], set(inputs)), scope, [root])
    if scheduler.compiled(len(inputs), dtype):
        scheduler.compiles = True
    else:
        scheduler.as_host()
    split = scheduler.products and not scheduler.serial and machine.splits
    serial = scheduler.serial or scheduler.products and not split
    if split:
        scheduler.share_out()
    count = machine.threads if scheduler.compiles and not serial else 1
    if scheduler.compiles:  # (division.py splits divisions in float64 code, or fast maths')
        row_loops.decide(top, inputs, scope, table, count, dtype == "float64" or fast)
    weighed = scheduler.weighed.note if scheduler.weighed is not None else ""
    return Decisions(top, scheduler.compiles, serial, exact and scheduler.compiles,
                     fast and scheduler.compiles, split, count, weighed)
