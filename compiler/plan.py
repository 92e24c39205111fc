"""Planning: a contraction path for every einsum, fused groups, loops, FLOPs and memory."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from functools import lru_cache

import numpy as np
import opt_einsum
from hilbert.grammar.errors import RuntimeHilbertError
from opt_einsum.helpers import flop_count

from . import ir
from .einsum_spec import parse_spec
from .primitives import BY_OP
from .shapes import Shape, ShapeTable

ITEM_BYTES = 8  # float64
OPTIMISERS = ("auto", "auto-hq", "optimal", "dp", "greedy", "branch-all", "branch-2",
              "branch-1", "random-greedy", "cotengra")
_ENTRYWISE = {"unary", "binary", "compare"}


@dataclass(frozen=True, slots=True)
class ContractStep:
    """One pairwise (or single-operand) step of a contraction path."""

    spec: str
    flops: int
    intermediate: int  # elements of this step's result
    blas: str  # the BLAS kernel opt_einsum would use, or '' if none


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


@dataclass(frozen=True, slots=True)
class FusedGroup:
    """A connected group of entrywise operations the executor runs as one kernel."""

    ops: tuple[str, ...]
    shape: Shape
    scope: str


@dataclass(frozen=True)
class Plan:
    """How one call of a function will be computed, for one signature of argument shapes."""

    function: str
    signature: tuple[Shape, ...]
    params: tuple[str, ...]
    einsums: tuple[EinsumPlan, ...]
    loops: tuple[LoopPlan, ...]
    groups: tuple[FusedGroup, ...]
    flops: int | None  # total for the call; None when a loop's trip count is unknown
    largest_bytes: int
    peak_bytes: int
    executor: str
    optimize: str
    paths: dict = field(default_factory=dict, compare=False, repr=False)
    notes: tuple[str, ...] = ()  # the executor's account: what it compiled, what it did not and why

    def to_dict(self) -> dict:
        """Plain data (JSON-ready) for the plan."""
        data = asdict(self)
        data.pop("paths")
        return data

    def __str__(self) -> str:
        from .plan_text import render_plan

        return render_plan(self)


def memory_limit() -> int:
    """Bytes a plan may use: HILBERT_MEMORY_LIMIT (e.g. 8G, 500M, 1e9) or half of RAM."""
    text = os.environ.get("HILBERT_MEMORY_LIMIT", "").strip()
    if text:
        scale = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}.get(text[-1].upper(), 1)
        try:
            limit = float(text[:-1] if scale > 1 else text) * scale
        except ValueError:
            limit = -1.0
        if not limit > 0 or limit == float("inf"):
            from hilbert.grammar.errors import ArgumentError
            from hilbert.grammar.source import nowhere

            raise ArgumentError("E600", f"HILBERT_MEMORY_LIMIT={text!r} is not a size in bytes; "
                                "write it as 8G, 500M, 64K or 1e9", nowhere("HILBERT_MEMORY_LIMIT"))
        return int(limit)
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2
    except (ValueError, OSError, AttributeError):
        return 8 * 2**30


def check_optimiser(optimize: str, span) -> None:
    """An ArgumentError unless `optimize` names a path optimiser that can be used here."""
    from hilbert.grammar.errors import ArgumentError

    if optimize not in OPTIMISERS:
        raise ArgumentError("E600", f"unknown path optimiser {optimize!r} (choose from "
                            f"{', '.join(OPTIMISERS)})", span)
    if optimize == "cotengra":
        try:
            import cotengra  # type: ignore[import-not-found]  # noqa: F401
        except ImportError:
            raise ArgumentError("E600", "the cotengra path optimiser is not installed "
                                "(pip install cotengra)", span) from None


def _optimizer(optimize: str):
    if optimize == "cotengra":
        import cotengra  # type: ignore[import-not-found]

        return cotengra.HyperOptimizer(max_repeats=16, progbar=False)
    return optimize


@lru_cache(maxsize=4096)
def contraction(spec: str, shapes: tuple[Shape, ...], optimize: str):
    """opt_einsum's path and per-step costs for `spec` on `shapes` (cached)."""
    path, info = opt_einsum.contract_path(spec, *shapes, shapes=True, optimize=_optimizer(optimize))
    steps = []
    for (_, removed, step_spec, _, blas), size in zip(info.contraction_list, info.size_list, strict=True):
        inputs = step_spec.split("->")[0].split(",")
        letters = frozenset("".join(inputs))
        flops = flop_count(letters, bool(removed), len(inputs), info.size_dict)
        steps.append(ContractStep(step_spec, int(flops), int(size), blas or ""))
    if not steps:  # opt_einsum lists nothing for a lone operand that needs no work
        steps.append(ContractStep(spec, 0, int(np.prod(_output_shape(spec, shapes))), ""))
    return tuple(tuple(p) for p in path), tuple(steps)


def _output_shape(spec: str, shapes: tuple[Shape, ...]) -> Shape:
    parsed = parse_spec(spec)
    sizes = {ch: n for term, shape in zip(parsed.inputs, shapes, strict=True) for ch, n in zip(term, shape, strict=True)}
    return tuple(sizes[ch] for ch in parsed.output)


def _elements(shape: Shape) -> int:
    return int(np.prod(shape, dtype=np.int64)) if shape else 1


class _Planner:
    def __init__(self, table: ShapeTable, signature: tuple[Shape, ...], optimize: str,
                 values: tuple | None):
        self.table = table
        self.signature = signature
        self.unknown = False  # a loop whose trip count cannot be known from the arguments
        self.optimize = optimize
        self.values = values
        self.einsums: list[EinsumPlan] = []
        self.loops: list[LoopPlan] = []
        self.groups: list[FusedGroup] = []
        self.paths: dict = {}
        self.largest = 0
        self.peak = 0

    def scope(self, roots: list[ir.Node], loop: ir.Loop | None) -> int:
        """Plan one scope; returns its FLOPs per evaluation (loops inside counted fully)."""
        shapes = self.table.scopes[loop]
        label = ("call" if loop is None else loop.name if isinstance(loop, ir.Loop)
                 else f"{loop.loop.name} backwards")
        flops, live = 0, 0
        order = ir.topological(*roots)
        for node in order:
            shape = shapes[node]
            live += _elements(shape)
            self.largest = max(self.largest, _elements(shape))
            if isinstance(node, ir.Einsum):
                flops += self.einsum(node, shapes, label)
            elif isinstance(node, ir.Loop):
                flops += self.loop(node, shapes)
            elif isinstance(node, ir.LoopGrad):
                flops += self.loop_grad(node)
        self.groups += _fused_groups(order, shapes, label)
        self.peak = max(self.peak, live * ITEM_BYTES + self.largest * ITEM_BYTES)
        return flops

    def einsum(self, node: ir.Einsum, shapes: dict, label: str) -> int:
        operand_shapes = tuple(shapes[a] for a in node.args)
        path, steps = contraction(node.spec, operand_shapes, self.optimize)
        self.paths[(node.spec, operand_shapes)] = path
        largest = max(s.intermediate for s in steps)
        self.largest = max(self.largest, largest)
        flops = sum(s.flops for s in steps)
        self.einsums.append(EinsumPlan(node.spec, operand_shapes, path, steps, flops, largest,
                                       str(node.span), label))
        return flops

    def loop(self, loop: ir.Loop, shapes: dict) -> int:
        body = self.scope([loop.until, *loop.step], loop)
        trips = self.trips(loop)
        self.loops.append(LoopPlan(loop.name, loop.counter is not None, trips,
                                   self.table.states[loop], body, str(loop.span)))
        if trips is None:
            self.unknown = True
            return 0
        return body * trips

    def loop_grad(self, node: ir.LoopGrad) -> int:
        """A loop run backwards: its forward run again, then the adjoint of every step, with a
        tape of every step's moving state (counted in the peak when the trips are known)."""
        loop = node.loop
        forward = self.loop(loop, self.table.scopes[None])
        backward = self.scope(list(node.vjp), node)  # type: ignore[arg-type]
        trips = self.trips(loop)
        state = self.table.states[loop]
        self.loops.append(LoopPlan(f"{loop.name} backwards", loop.counter is not None, trips,
                                   tuple(state[c] for c in node.carried), backward,
                                   str(node.span)))
        if trips is None:
            return 0
        moving = [s for i, s in enumerate(state) if loop.step[i] != ir.State(i, None)]
        self.peak += trips * sum(_elements(s) for s in moving) * ITEM_BYTES
        return forward + backward * trips

    def trips(self, loop: ir.Loop) -> int | None:
        if loop.counter is None:
            return None
        init = loop.init[loop.counter]
        leaves = [n for n in ir.topological(init) if isinstance(n, (ir.Param, ir.Loop, ir.State))]
        if any(not isinstance(n, ir.Param) for n in leaves):
            return None
        values = self.values or tuple(np.zeros(s) for s in self.signature)
        if self.values is None and not _reads_only_shapes(init):
            return None
        from hilbert.executor.reference import Reference

        value = Reference().run(init, values)
        number = float(value)
        return int(number) if number >= 0 and number.is_integer() else None


def _reads_only_shapes(root: ir.Node) -> bool:
    """True if every parameter `root` reads is read only through rows, columns or positions."""
    for node in ir.topological(root):
        if isinstance(node, ir.Prim) and BY_OP[node.op].kind in ("size", "positions"):
            continue
        if any(isinstance(k, ir.Param) for k in ir.children(node)) and not (
                isinstance(node, ir.Prim) and BY_OP[node.op].kind in ("size", "positions")):
            return False
    return not isinstance(root, ir.Param)


def _fused_groups(order: list[ir.Node], shapes: dict, label: str) -> list[FusedGroup]:
    """Maximal connected sets of entrywise nodes of one shape (each becomes one kernel)."""
    entrywise: list[ir.Prim] = [n for n in order
                                if isinstance(n, ir.Prim) and BY_OP[n.op].kind in _ENTRYWISE]
    parent = {id(n): id(n) for n in entrywise}

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for node in entrywise:
        for kid in node.args:
            if id(kid) in parent and shapes[kid] == shapes[node]:
                parent[find(id(kid))] = find(id(node))
    groups: dict[int, list[ir.Prim]] = {}
    for node in entrywise:
        groups.setdefault(find(id(node)), []).append(node)
    return [FusedGroup(tuple(n.op for n in members), shapes[members[-1]], label)
            for members in groups.values() if len(members) > 1]


def make_plan(function: str, params: tuple[str, ...], root: ir.Node, table: ShapeTable,
              signature: tuple[Shape, ...], optimize: str = "auto", executor: str = "numba",
              values: tuple | None = None, limit: int | None = None) -> Plan:
    """Requires fused, shape-checked IR; ensures a Plan within the memory limit, or raises E700."""
    planner = _Planner(table, signature, optimize, values)
    total = planner.scope([root], None)
    plan = Plan(function, signature, params, tuple(planner.einsums), tuple(planner.loops),
                tuple(planner.groups), None if planner.unknown else total,
                planner.largest * ITEM_BYTES, planner.peak, executor, optimize, planner.paths)
    _guard(plan, root, table, limit if limit is not None else memory_limit())
    return plan


def _guard(plan: Plan, root: ir.Node, table: ShapeTable, limit: int) -> None:
    if plan.peak_bytes <= limit:
        return
    from .plan_text import human_bytes

    culprit = max(plan.einsums, key=lambda e: e.largest, default=None)
    span = root.span
    if culprit is not None and culprit.largest * ITEM_BYTES * 2 >= plan.largest_bytes:
        for scope in table.scopes.values():
            for node in scope:
                if isinstance(node, ir.Einsum) and node.spec == culprit.spec:
                    span = node.span
        what = (f'einsum "{culprit.spec}" on {", ".join("×".join(map(str, s)) or "scalar" for s in culprit.shapes)} '
                f"needs an intermediate of {culprit.largest:,} elements "
                f"({human_bytes(culprit.largest * ITEM_BYTES)})")
    else:
        what = f"its largest value has {plan.largest_bytes // ITEM_BYTES:,} elements"
    raise RuntimeHilbertError(
        "E700", f"{plan.function} would need about {human_bytes(plan.peak_bytes)} of memory: "
        f"{what}, over the limit of {human_bytes(limit)} (set HILBERT_MEMORY_LIMIT to change it)",
        span)
