"""The emitter: a region of fused, shape-checked IR -> the loop IR of one function, printed.

The function takes the region's inputs (arrays, or NumPy scalars) and returns its value and
the number of loop steps it ran. Its code is generic in sizes (they are read from the inputs),
so programs that differ only in sizes share one source, one compilation and one disk-cache
entry. Every identifier in it is made here from counters, and every number is printed from a
float: nothing from .hb source text (names, specs) reaches the generated text.

scheduler.py decides the function's schedule first (each block's units, layouts, whether it
is compiled); the Emitter then writes it block by block, handing each unit to entrywise.py
(nests, scalars), products.py (contractions) or control.py (loops, branches, views); rows.py,
division.py and tidy.py rewrite the loop IR, and render.py prints it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ...compiler import ir
from ...compiler.counting import COUNTED, NOTHING, Counting
from ...compiler.ops.primitives import BY_OP
from ...compiler.passes.shapes import Scope, ShapeTable
from ...compiler.plan import fusion, label, scheduler
from ...compiler.plan.schedule import RowLoop, Unit, in_row_loops
from ...compiler.plan.scheduler import BlockPlan, Decisions
from ...compiler.plan.sizes import axes_of
from . import (
    control,
    entrywise,
    forms,
    loop_types,
    precision,
    products,
    render,
    rows,
    tidy,
    verify_loops,
)
from .counted import CountedValues
from .division import Division
from .frame import Frame
from .loop_types import STOP, Type
from .loops import (
    Assign,
    Call,
    Do,
    Expr,
    Fmt,
    For,
    Return,
    Var,
    call,
    number,
    sizes,
    statements,
    whole,
)
from .writer import Writer


@dataclass(frozen=True)
class Region:
    """What one generated function computes: `root` (in IR scope `scope`) from `inputs`, the
    nodes it is given as arguments."""

    root: ir.Node
    inputs: tuple[ir.Node, ...]
    scope: Scope


@dataclass
class Generated:
    """The source of one function, and what it holds."""

    source: str
    compiled: bool  # False: plain NumPy calls only, so it runs uncompiled (no call overhead)
    loops: list[ir.Loop]  # by the number compiled code names a loop with in StepCountError
    reads: list[ir.Prim]  # by the number compiled code names an x[t] or a oneHot in its errors
    kernels: int  # fused loop nests
    products: int  # contractions that reach a matrix product
    copies: int = 0  # operands (or results) a product copies into another axis order
    looped: int = 0  # products run as a loop of products over views (batch letters and others)
    parallel: bool = False  # a nest runs its outer loop on several threads (a prange)
    units: tuple[Unit, ...] = ()  # what it runs, unit by unit (the plan's schedule)
    split: bool = False  # its products are shared out by its threads, BLAS on one thread
    sized: bool = False  # written for the table's sizes only (a tiny program: `generate`)
    weighed: str = ""  # a tensor network's account of whether it compiles (scheduler.py)
    # its loop IR (loops.py) and parameters' names, which `source` prints (executor/llvm
    # lowers them)
    body: list = field(default_factory=list, repr=False, compare=False)
    args: tuple[str, ...] = ()


@dataclass(frozen=True)
class Block:
    """Where emission is: the plan of the block being written and the position of the unit
    being emitted in it (so a kernel may write over an input nothing reads after it)."""

    plan: BlockPlan
    position: int


class Emitter(CountedValues):
    """Writes one function as `decided` (scheduler.py). `host`: not compiled, so NumPy calls
    for contractions; `exact`: sizes written as constants (a tiny program)."""

    def __init__(self, table: ShapeTable, decided: Decisions, dtype: str = "float64",
                 counting: Counting = NOTHING):
        self.table = table
        self.decided = decided
        self.dtype = dtype  # what the code computes in (precision.py: float32's is rewritten)
        # the counted values of every scope (compiler/counting.py): float64 in float32 code
        self.counting = counting
        self.narrow = dtype != "float64"
        # a division by a row's divisor is rewritten (division.py) in float64 code only: a
        # float32 quotient is the processor's, exact and as fast (math="fast" still rewrites)
        self.rewrites_division = dtype == "float64" or decided.fast
        self.host = not decided.compiled
        self.exact = decided.exact
        self.units: list[Unit] = []  # the schedule, in the order its units run
        self.joins: list[RowLoop] = []  # the blocks' row loops (BlockPlan.rows), as numbered
        self.out = Writer()
        self.count = 0
        self.loops: list[ir.Loop] = []
        self.reads: list[ir.Prim] = []
        self.kernels = 0
        self.products = 0
        self.split = False  # (a product was shared out: products._shared_out)
        self.copies = 0
        self.looped = 0
        self.numbers: dict[str, int] = {}  # the letter sizes of the einsum being emitted
        self.frame = Frame({})
        self.identity: list[Var] = []  # the indices of the nest being emitted
        self.pending: list = []  # statements an expression needs first (shift positions)
        # a compiled nest's divisions, while emit_group writes its statements (division.py)
        self.divisions: list[Division] | None = None
        self.block: Block | None = None
        self.input_sizes: set[str] = set()  # sizes read from the inputs (tidy drops unread ones)

    # ---------------------------------------------------------------- the function

    def function(self, region: Region) -> Generated:
        args = [f"a{k}" for k in range(len(region.inputs))]
        self.frame = Frame(self.table.scopes[region.scope], region.scope)
        # (the arguments' types, which the loop IR's types start from: loop_types.py; a
        # counted input is float64, as numba/regions.py passes it)
        self.params = {name: Type(COUNTED if self.counts(node) else self.dtype,
                                  len(self.frame.shapes[node]))
                       for name, node in zip(args, region.inputs, strict=True)}
        self.params["stop"] = STOP
        self.out.add(Assign(("steps",), (whole(0),)))
        for name, node in zip(args, region.inputs, strict=True):
            self.bind(node, Var(name))
            shape = self.frame.shapes[node]
            dims = tuple(Var(self.fresh("n")) for _ in shape)
            for axis, dim in enumerate(dims):
                size: Expr = whole(shape[axis])
                if not self.exact:
                    size = Fmt(f"{{}}.shape[{axis}]", (Var(name),))
                    self.input_sizes.add(dim.name)
                self.out.add(Assign((dim.name,), (size,)))
            self.frame.dims[node] = dims
        self.ensure(self.decided.root)
        # (a counted value is handed back in float64, where the host reads it as it is, but
        # the call's own result, made the call's dtype: a scalar by results.to_python)
        value = self.answer(region.root) if not region.scope and \
            region.root is self.counting.result else self.value(region.root)
        self.out.add(Return(Fmt("{}, {}", (value, Var("steps")))))
        if self.loops:  # loops leave when stop[0] is set (executor/numba/interrupt.py: Ctrl-C)
            args.append("stop")
        # (each op typed by its operands: loop_types.py; division.py's rewrites are in already)
        body = self._checked(loop_types.typed(self.out.body, self.params, self.dtype), args,
                             "emitting")
        if not self.host:  # the nests the plan runs as one loop over rows, joined as it says
            joins = tuple(sorted(self.joins, key=lambda loop: loop.kernels[0]))
            self.units = list(in_row_loops(tuple(self.units), joins))
            body = self._checked(rows.join(body, joins), args, "rows.join")
        body = self._checked(tidy.without_unread(body, self.input_sizes), args, "tidy")
        if not self.host:
            if tidy.calls_vector_maths_in(body):
                body = [Do(Call("K.wide_vectors", ())), *body]
        else:
            body = self._checked(tidy.released(body), args, "tidy.released")
        # (uncompiled code computes on NumPy scalars, which warn on x/0: its callers run it
        # under numerics.quietly, as they run every other NumPy call on the host)
        source = precision.header(self.dtype) + "\n".join(
            [f"def run({', '.join(args)}):", *render.lines(body)]) + "\n"
        parallel = any(isinstance(s, For) and s.parallel for s in statements(body))
        return Generated(source, not self.host, self.loops, self.reads, self.kernels,
                         self.products, self.copies, self.looped, parallel, tuple(self.units),
                         self.split, self.exact, self.decided.weighed, body, tuple(args))

    def _checked(self, body: list, args: list[str], after: str) -> list:
        """`body`, verified (verify_loops.py) when HILBERT_VERIFY asks for it."""
        if verify_loops.enabled():
            verify_loops.verify(body, self.dtype, args, after, self.params)
        return body

    def record(self, kind: str, shape, what: str, how: str = "", parallel: bool = False) -> int:
        """A unit of the schedule, in the scope being emitted; its number (from 1)."""
        self.units.append(Unit(kind, label(self.frame.scope), tuple(shape), what, how, parallel))
        return len(self.units)

    # ---------------------------------------------------------------- names and shapes

    def fresh(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def bind(self, node: ir.Node, value: Expr) -> None:
        owned = self.frame.owned
        if value in owned.values() and owned.get(node) != value:
            for other in [n for n, b in owned.items() if b == value]:
                del owned[other]  # an alias (an identity einsum): no longer safe to write over
        self.frame.blocks[-1][node] = value

    def lookup(self, node: ir.Node) -> Expr | None:
        for block in reversed(self.frame.blocks):
            if node in block:
                return block[node]
        return None

    def value(self, node: ir.Node) -> Expr:
        """The expression holding `node`'s (already computed) value."""
        if isinstance(node, ir.Const):
            return number(node.value, self.dtype)
        found = self.lookup(node)
        assert found is not None, f"code generation: {node!r} used before it is computed"
        return found

    def shape(self, node: ir.Node):
        return self.frame.shapes[node]

    def dims_of(self, node: ir.Node) -> tuple[Expr, ...]:
        """Each axis size of `node` as an expression over the inputs' sizes (the plan's
        rule: compiler/plan/sizes.py)."""
        return axes_of(node, self.frame.dims, self.frame.shapes, whole)

    def alloc(self, node: ir.Node | None, dims: tuple[Expr, ...]) -> Var:
        """A new C-ordered buffer for `node` (made once before the enclosing loop, if any), or
        the state buffer a loop step should land in."""
        if node is not None and node in self.frame.destinations:
            return self.frame.destinations.pop(node)
        name = Var(self.fresh("b"))
        maker = "K.counted_empty" if node is not None and self.widened(node) else "K.empty"
        made = Assign((name.name,), (call(maker, sizes(dims)),))
        if self.frame.hoist is not None:
            self.frame.hoist.append(made)
        else:
            self.out.add(made)
        if node is not None:
            self.frame.owned[node] = name
        return name

    def reuse(self, node: ir.Node, dims: tuple[Expr, ...], inputs: list[ir.Node]) -> Var:
        """A buffer for `node`, a kernel output: the buffer of one of `inputs` (which the kernel
        reads only at its own index, before it writes) if nothing reads that input later, else
        a new one."""
        if node not in self.frame.destinations and self.block is not None:
            plan, position = self.block.plan, self.block.position
            for x in inputs:
                # (x's buffer as this block sees it: one made in the other branch of an
                # `if` is not there; and of the dtype `node` is stored in)
                if (x in self.frame.owned and x in plan.nodes and self.dims_of(x) == dims
                        and plan.last_read.get(x, -1) == position
                        and self.lookup(x) == self.frame.owned[x]
                        and self.widened(x) == self.widened(node)):
                    name = self.frame.owned.pop(x)
                    self.frame.owned[node] = name
                    return name
        return self.alloc(node, dims)

    # ---------------------------------------------------------------- blocks

    def ensure(self, plan: BlockPlan | None) -> None:
        """Emit, in the current block, the code of the block `plan` (None: nothing to do)."""
        if plan is None:
            return
        saved = self.block
        self.frame.recomputed |= plan.recomputed
        self.frame.gathered.update(plan.gathered)
        runs = {position: k for k, run in enumerate(plan.rows) for position in run}
        numbered: list[list[int]] = [[] for _ in plan.rows]
        for position, unit in enumerate(plan.units):
            self.block = Block(plan, position)
            self.emit(unit)
            if position in runs:  # (the nest it wrote is the unit recorded last)
                numbered[runs[position]].append(len(self.units))
        self.joins += [RowLoop(tuple(kernels), any(self.units[k - 1].parallel for k in kernels))
                       for kernels in numbered]
        self.block = saved

    def emit(self, unit: fusion.Unit) -> None:
        if unit.group is not None:
            entrywise.emit_group(self, unit.group)
            return
        node = unit.node
        assert node is not None
        match fusion.role(node, self.frame.shapes):
            case "scalar":
                entrywise.emit_scalar(self, node)
            case "generator":
                entrywise.emit_group(self, fusion.Group(node, [node], [], {node}))
            case "contraction":
                products.emit_einsum(self, node)
            case "cond":
                control.emit_cond(self, node)
            case "loop":
                control.emit_loop(self, node)
            case "project":
                self.bind(node, Var(self.frame.states[node.loop][node.index]))
            case "tuple":
                self.bind(node, sizes([self.value(i) for i in node.items]))
            case other:  # (a size, view, oneHot or draw: its form's lowering)
                assert isinstance(node, ir.Prim), f"code generation: cannot emit a {other} alone"
                forms.lowering(node, "alone")(self, node)



@forms.lowers("size", "alone")
def _measured(em: Emitter, node: ir.Prim) -> None:
    """rows(x), columns(x): the axis of x its row names, a counted number."""
    em.bind(node, em.counted_number(em.dims_of(node.args[0])[BY_OP[node.op].axis]))


#: A program with loops none of whose values holds more entries than this is written for its
#: exact sizes (generate).
TINY = 256


def generate(region: Region, table: ShapeTable, optimize: str, exact: bool = False,
             paths: dict | None = None, fast: bool = False, dtype: str = "float64",
             counted: Counting = NOTHING) -> Generated:
    """The function computing `region`: compiled code, or plain NumPy calls when that is all
    it needs (a lone contraction, say), which runs fastest uncompiled. `exact`: the code runs
    only on the table's own shapes, so a tiny program with loops (no array over TINY entries)
    may be written with its sizes as constants; LLVM then unrolls and vectorises its loops
    (the seed's 4×2 fit runs several times faster). A program without loops gains little
    (one pass, its time in the call) and keeps code that serves every size. Code shared by
    other shapes (dask's blocks) must not ask for it. `paths`: the plan's contraction paths
    (Plan.paths), which the code follows. `fast`: math="fast" (scheduler.Decisions). `dtype`:
    float64, or float32 (precision.py). `counted`: the program's counted values
    (compiler/counting.py), float64 in float32 code."""
    exact = exact and bool(table.states) and is_tiny(table)
    decided = scheduler.decide(region.root, region.inputs, region.scope, table, optimize, exact,
                               paths or {}, fast, machine(), dtype)
    return Emitter(table, decided, dtype, counted).function(region)


def machine() -> scheduler.Machine:
    """This machine as the scheduler needs it: hilbert's threads (executor/threads.py) and
    whether products may be shared out among them (executor/blas_threads.py)."""
    from .. import blas_threads, threads

    count = threads.count()
    return scheduler.Machine(count, count >= 2 and threads.expected_layer() == "workqueue"
                             and blas_threads.controllable())


def is_tiny(table: ShapeTable) -> bool:
    """Whether no value of the program, in any scope, holds more than TINY entries."""
    return all(math.prod(shape) <= TINY for shapes in table.scopes.values()
               for shape in shapes.values())
