"""Planned IR as dask.array operations: the graph the dask executor builds for one call.

Each node becomes a dask array (or stays a NumPy number when it reads no array): contractions
follow the plan's opt_einsum path with dask's tensordot and einsum; every maximal entrywise
region is one blockwise map of the numba executor's generated kernel for it (one task per
block, whatever the region's size); reductions, slices and joins are dask's own. Loops run on
the client step by step, the new state persisted after every step, so the graph never grows
with the number of steps. A symbolic run builds the graphs without computing anything, for
the plan: an `if` builds both branches and a loop a single step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial

import dask
import dask.array as da
import numpy as np
import opt_einsum
from hilbert.compiler import dtypes, ir
from hilbert.compiler.counting import NOTHING, counting_in
from hilbert.compiler.evaluate import as_counted, as_data, data_operands, evaluate, needs
from hilbert.compiler.ops.einsum_spec import parse_spec
from hilbert.compiler.ops.primitives import BY_OP
from hilbert.compiler.passes.shapes import ShapeTable
from hilbert.compiler.plan import Plan, memory_limit
from hilbert.compiler.plan.text import human_bytes
from hilbert.executor.dask.extremes import Extremes, first_positions
from hilbert.executor.dask.kernels import Kernels
from hilbert.executor.reference import (
    counted,
    guard_tapes,
    moving_components,
    step_count,
    tape_guard,
)
from hilbert.grammar.errors import RuntimeHilbertError
from hilbert.grammar.source import Span

#: A task holds its input blocks, its result and a temporary at once: each block of a value may
#: use at most this share of HILBERT_MEMORY_LIMIT.
BLOCK_SHARE = 4


def lazy(value) -> bool:
    """True for a dask array (a value the cluster holds or will compute)."""
    return isinstance(value, da.Array)


@dataclass
class Sketch:
    """What a symbolic run saw: tasks per step of each loop, the largest block."""

    steps: dict[str, int]
    largest: int = 0


class DaskGraph:
    """Evaluates one signature's planned IR on dask arrays (see the module docstring)."""

    def __init__(self, table: ShapeTable, plan: Plan, optimize: str, span: Span,
                 symbolic: bool = False, kernels: dict | None = None, tapes: list | None = None,
                 fast: bool = False):
        self.table = table
        self.plan = plan
        self.optimize = optimize
        self.span = span  # where errors point when a node has no span of its own
        self.symbolic = symbolic
        self.sketch = Sketch({})
        self.loop_steps = 0
        self.limit = memory_limit()
        # blockwise kernels (generated code, which is float64) shared by a program's runs
        self._kernels = Kernels(table, optimize, kernels, fast, plan.dtype == "float64")

        self._extremes = Extremes(table)
        self.counting = NOTHING  # the call's counted values (compiler/counting.py): `run` sets
        self.narrow = dtypes.real(plan.dtype) != dtypes.COUNTED
        self.data = np.dtype(dtypes.real(plan.dtype)).type
        self.tapes = tapes or []  # the call's loops run backwards (reference.tapes_at_the_call)

    def run(self, root: ir.Node, leaves: tuple):
        """The value of `root` (lazy where it reads a dask array) for parameter values `leaves`.
        A loop run backwards whose tape would pass the memory limit is refused (E700) before
        any step runs when its step count is known on the client at the call."""
        memo: dict = {}
        self.counting = counting_in(root, self.plan.dtype)
        with np.errstate(all="ignore"):
            if self.tapes and not self.symbolic:
                guard_tapes(self.tapes, self.table.states, partial(self._known, memo=memo,
                                                                   leaves=leaves))
            value = self.eval(root, memo, leaves, ())
        if not self.narrow:
            return value
        if isinstance(value, tuple):
            return tuple(as_data(v, self.data) for v in value)
        return as_data(value, self.data)

    def _known(self, node: ir.Node, memo: dict, leaves: tuple):
        """The value of a node of the call's scope if the client has it (not lazy), else None."""
        value = self.eval(node, memo, leaves, ())
        return None if lazy(value) else value

    def eval(self, node: ir.Node, memo: dict, leaves: tuple, scope):
        return evaluate(node, memo, leaves, partial(self._inputs, scope=scope),
                        partial(self._value, scope=scope))

    def number(self, value, stand_in: float = 0.0) -> float:
        """A scalar's value now: a lazy one is computed (a symbolic run takes `stand_in`)."""
        if lazy(value):
            if self.symbolic:
                return stand_in
            value = value.compute()
        return float(np.real(value))  # (a complex call's counter: whole, so real)

    # ---------------------------------------------------------------- what a node needs

    def _inputs(self, node: ir.Node, memo: dict, scope) -> tuple[ir.Node, ...]:
        if isinstance(node, ir.Cond):
            if self.symbolic:
                return (node.cond, node.then, node.orelse)
            if node.cond in memo:  # computed once, kept as a number for the branch choice
                memo[node.cond] = np.float64(self.number(memo[node.cond]))
            return needs(node, memo)
        extreme = self._extremes.find(node, scope)
        if extreme is not None:
            return (extreme[0],)
        if self._kernels.fused(node, scope):
            return self._kernels.kernel(node, scope).inputs  # type: ignore[union-attr]
        return ir.children(node)

    # ---------------------------------------------------------------- values

    def _value(self, node: ir.Node, memo: dict, leaves: tuple, scope):
        value = self._compute(node, memo, leaves, scope)
        if self.narrow and not isinstance(node, (ir.Loop, ir.LoopGrad, ir.Tuple)):
            # (compiler/counting.py: a counted value in float64, any other of the call's dtype)
            if node not in self._counted(scope):
                value = as_data(value, self.data)
            elif isinstance(node, ir.Param):
                value = as_counted(value)
        if lazy(value):
            self._guard(node, value)
        return value

    def _counted(self, scope) -> frozenset:
        """The counted nodes of `scope` (compiler/counting.py)."""
        return self.counting.at(scope[-1] if scope else None)

    def _read(self, node: ir.Node, memo: dict, scope) -> list:
        """The values `node` reads, as Host reads them in a call whose dtype is not float64:
        counted ones made data where `node`'s value is data (evaluate.data_operands)."""
        values = [memo[k] for k in ir.children(node)]
        counted = self._counted(scope)
        if not self.narrow or node in counted:
            return values
        return data_operands(node, values, counted, self.counting,
                             lambda v: as_data(v, self.data))

    def _compute(self, node: ir.Node, memo: dict, leaves: tuple, scope):
        match node:
            case ir.Param(index=i) | ir.State(index=i):
                return leaves[i]
            case ir.Const(value=v) if self.narrow and node in self._counted(scope):
                return np.float64(v)
            case ir.Const(value=v):
                return dtypes.constant(v, self.plan.dtype)
            case ir.Prim() if self._extremes.find(node, scope) is not None:
                x, axis, largest = self._extremes.find(node, scope)  # type: ignore[misc]
                return first_positions(memo[x], axis, largest)
            case ir.Prim() if self._kernels.fused(node, scope):
                kernel = self._kernels.kernel(node, scope)
                assert kernel is not None
                return self._kernels.blockwise(kernel, [memo[n] for n in kernel.inputs],
                                       self.table.scopes[scope][node])
            case ir.Prim():
                return self._prim(node, self._read(node, memo, scope), scope)
            case ir.Einsum():
                return self._einsum(node, self._read(node, memo, scope))
            case ir.Cond():
                if self.symbolic:
                    return memo[node.then]
                return memo[node.then if memo[node.cond] != 0 else node.orelse]
            case ir.Loop():
                return self._loop(node, tuple(self._read(node, memo, scope)), scope)
            case ir.LoopGrad():
                n = len(node.loop.init)
                values = tuple(self._read(node, memo, scope))
                return self._loop_grad(node, values[:n], values[n:], scope)
            case ir.Project():
                return memo[node.loop][node.index]
            case ir.Tuple():
                return tuple(memo[a] for a in node.items)
        raise AssertionError(f"the dask executor cannot evaluate {node!r}")

    def _guard(self, node: ir.Node, value: da.Array) -> None:
        """E700 before any block of `value` would pass its share of the memory limit."""
        block = [max(sizes, default=0) for sizes in value.chunks]
        size = math.prod(block) * self.plan.item_bytes
        self.sketch.largest = max(self.sketch.largest, size)
        if size * BLOCK_SHARE <= self.limit:
            return
        shape = "×".join(map(str, block)) or "scalar"
        raise RuntimeHilbertError(
            "E700", f"{self.plan.function} would hold blocks of {shape} ({human_bytes(size)}) "
            f"on a dask worker, over a {BLOCK_SHARE}th of the memory limit of "
            f"{human_bytes(self.limit)} (a task holds its inputs and its result at once): give "
            "smaller chunks, or set HILBERT_MEMORY_LIMIT", node.span or self.span)

    def _einsum(self, node: ir.Einsum, operands: list):
        """Along the plan's path: pairwise tensordot (BLAS on each block) or einsum steps."""
        shapes = tuple(np.shape(o) for o in operands)
        planned = self.plan.paths.get((node.spec, shapes))
        path = list(planned[0] if planned else [tuple(range(len(operands)))])
        if not any(lazy(o) for o in operands):
            return opt_einsum.contract(node.spec, *operands, optimize=path)
        terms = parse_spec(node.spec).inputs
        arrays = [_diagonal_chunks(term, _aligned(term, o, terms, operands))
                  for term, o in zip(terms, operands, strict=True)]
        return opt_einsum.contract(node.spec, *arrays, optimize=path, backend="dask")

    def _prim(self, node: ir.Prim, args: list, scope):
        """The op's NumPy meaning on values the client holds, and on lazy ones where it is lazy
        already; else its dask meaning (the op table's, compiler/ops/meanings.py)."""
        row = BY_OP[node.op]
        if row.dask is not None and any(lazy(a) for a in args):
            return row.dask(node, args, self.number, self.table.scopes[scope][node])
        assert row.meaning is not None, f"{node.op} has no NumPy meaning"
        return row.meaning(node, args)

    # ---------------------------------------------------------------- loops

    def _loop(self, loop: ir.Loop, init: tuple, scope: tuple):
        if self.symbolic:
            return self._sketch_loop(loop, init, scope)
        final, steps = self._run_loop(loop, init, scope)
        self.loop_steps += steps
        return final

    def _run_loop(self, loop: ir.Loop, state, scope: tuple,
                  tape: list | None = None) -> tuple[tuple, int]:
        """(final state, steps run), as the reference executor runs a loop, but each step's
        new state persisted together (computed where the scheduler runs it, kept there).
        `scope` is where the loop is; its body is the scope `scope + (loop,)`."""
        moving = moving_components(loop)
        body = scope + (loop,)
        state = list(settled(state))  # what every step reads is made (or sent) once
        if loop.counter is not None:
            remaining = step_count(loop, self.number(state[loop.counter]))
            if tape is not None:
                tape_guard(loop, _sizes_only(state), moving, remaining)
            for left in range(remaining, 0, -1):
                state[loop.counter] = counted(state[loop.counter], left)
                self._step(loop, state, moving, {}, tape, body)
            state[loop.counter] = counted(state[loop.counter], 0)
            return tuple(state), remaining
        steps = 0
        while True:
            memo: dict = {}
            if self.number(self.eval(loop.until, memo, tuple(state), body)) != 0:
                return tuple(state), steps
            steps += 1
            if tape is not None:
                tape_guard(loop, _sizes_only(state), moving, steps)
            self._step(loop, state, moving, memo, tape, body)

    def _step(self, loop: ir.Loop, state: list, moving: list[int], memo: dict,
              tape: list | None, body: tuple) -> None:
        frozen = tuple(state)
        if tape is not None:
            tape.append(frozen)
        new = [self.eval(loop.step[i], memo, frozen, body) for i in moving]
        for i, value in zip(moving, settled(new), strict=True):
            state[i] = value

    def _loop_grad(self, node: ir.LoopGrad, init: tuple, seeds: tuple, scope: tuple):
        """The loop forward with a tape of its persisted states, then every step's adjoint
        backwards, each persisted in turn."""
        if self.symbolic:
            self._sketch_loop(node.loop, init, scope)
            leaves = tuple(init) + tuple(seeds)
            return self._sketch(f"{node.loop.name} backwards", node.vjp, leaves, scope + (node,))
        tape: list = []
        _, steps = self._run_loop(node.loop, init, scope, tape)
        adjoints = tuple(seeds)
        while tape:
            before = tape.pop()
            memo: dict = {}
            adjoints = settled([self.eval(term, memo, before + adjoints, scope + (node,))
                                for term in node.vjp])
        self.loop_steps += steps
        return adjoints

    def _sketch_loop(self, loop: ir.Loop, init: tuple, scope: tuple) -> tuple:
        """One step built, not run: its tasks counted; the state after it stands for the final."""
        state = list(init)
        if loop.counter is not None:
            state[loop.counter] = counted(state[loop.counter], 1)
        roots = [loop.step[i] for i in moving_components(loop)]
        if loop.counter is None:
            roots.append(loop.until)
        values = self._sketch(loop.name, roots, tuple(state), scope + (loop,))
        for i, value in zip(moving_components(loop), values, strict=False):
            state[i] = value
        return tuple(state)

    def _sketch(self, name: str, roots, leaves: tuple, scope) -> tuple:
        memo: dict = {}
        values = [self.eval(root, memo, leaves, scope) for root in roots]
        self.sketch.steps[name] = count_tasks(values)
        return tuple(_stand_in(v) for v in values)


def settled(values) -> tuple:
    """`values` computed and kept where they were computed (dask arrays backed by blocks in
    memory, or by a cluster's futures), waiting until they are: a loop's next step starts
    from a finished state, and nothing else a call submits runs ahead of it and piles up."""
    values = dask.persist(*values)
    try:
        from distributed import futures_of, wait
    except ImportError:  # only the local scheduler, whose persist has already waited
        return values
    futures = futures_of([v for v in values if lazy(v)])
    if futures:  # a cluster's: persist only submitted them
        wait(futures)
    return values


def _sizes_only(state: list) -> list:
    """The state as arrays of its sizes that hold nothing (what the tape's guard reads)."""
    return [np.broadcast_to(np.float64(0), v.shape) if lazy(v) else v for v in state]


def _aligned(term: str, operand, terms, operands) -> da.Array:
    """An einsum operand as a dask array: a NumPy one (a vector of positions, a small weight)
    cut along each letter as the first lazy operand with that letter is, so that it meets
    their blocks as they are. Left whole, dask's einsum would see a block as long as the whole
    axis and cut every operand into far smaller blocks to match (argmax over 20×20 blocks became
    80×80 blocks, 90 000 tasks)."""
    if lazy(operand):
        return operand
    cuts: dict[str, tuple] = {}
    for t, o in zip(terms, operands, strict=True):
        if lazy(o):
            for letter, chunks in zip(t, o.chunks, strict=True):
                cuts.setdefault(letter, chunks)
    return da.from_array(np.asarray(operand), name=False,
                         chunks=tuple(cuts.get(letter, -1) for letter in term) or ())


def _diagonal_chunks(term: str, array: da.Array) -> da.Array:
    """`array` with the axes of a repeated letter (a diagonal, as in "ii->i") cut alike: dask
    reads a diagonal block by block only when the blocks are square."""
    first: dict[str, int] = {}
    wanted = {}
    for axis, letter in enumerate(term):
        if letter in first:
            wanted[axis] = array.chunks[first[letter]]
        first.setdefault(letter, axis)
    return array.rechunk(wanted) if wanted else array


def _stand_in(value):
    """A lazy value of the same shape and chunks that costs one task per block to make."""
    return da.zeros(value.shape, chunks=value.chunks) if lazy(value) else value


def count_tasks(values) -> int:
    """Tasks in the graph of the lazy ones among `values`, after dask's optimisation (which
    fuses chains of blockwise work into one task per block); 0 when none is lazy."""
    keys: set = set()
    for value in dask.optimize(*[v for v in values if lazy(v)]):
        keys.update(value.__dask_graph__().keys())
    return len(keys)
