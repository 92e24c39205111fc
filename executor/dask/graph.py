"""Planned IR as dask.array operations: the graph the dask executor builds for one call.

The host core (compiler/evaluate.py's `Host`) walks the IR and runs the loops; this module's
hooks make each value lazily. Each node becomes a dask array (or stays a NumPy number when it
reads no array): contractions follow the plan's opt_einsum path with dask's tensordot and
einsum; every maximal entrywise region is one blockwise map of the numba executor's generated
kernel for it (one task per block, whatever the region's size); reductions, slices and joins
are dask's own. Loops run on the client step by step (compiler/loops.py), the new state
persisted after every step (`settle`), so the graph never grows with the number of steps. A
symbolic run builds the graphs without computing anything, for the plan: an `if` builds both
branches and a loop a single step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial

import dask
import dask.array as da
import numpy as np
import opt_einsum

from ...compiler import ir
from ...compiler.counting import NOTHING, Counting
from ...compiler.evaluate import Host
from ...compiler.loops import counted, guard_tapes, moving_components
from ...compiler.ops.einsum_spec import parse_spec
from ...compiler.ops.primitives import BY_OP
from ...compiler.passes.shapes import ShapeTable
from ...compiler.plan import Plan, memory_limit
from ...compiler.plan.text import human_bytes
from ...grammar.errors import RuntimeHilbertError
from ...grammar.source import Span
from .extremes import Extremes, first_positions
from .kernels import Kernels

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


class DaskGraph(Host):
    """Evaluates one signature's planned IR on dask arrays: `Host` with hooks that make each
    value lazily, guard its blocks and persist a loop's state (see the module docstring)."""

    def __init__(self, table: ShapeTable, plan: Plan, optimize: str, span: Span,
                 symbolic: bool = False, kernels: dict | None = None, tapes: list | None = None,
                 fast: bool = False, counting: Counting = NOTHING):
        super().__init__(self._contract, plan.dtype, counting)
        self.table = table
        self.plan = plan
        self.optimize = optimize
        self.span = span  # where errors point when a node has no span of its own
        self.symbolic = symbolic
        self.sketch = Sketch({})
        self.limit = memory_limit()
        # blockwise kernels (generated code, which is float64) shared by a program's runs
        self._kernels = Kernels(table, optimize, kernels, fast, plan.dtype == "float64")
        self._extremes = Extremes(table)
        self.tapes = tapes or []  # the call's loops run backwards (loops.tapes_at_the_call)

    def run(self, root: ir.Node, leaves: tuple):
        """The value of `root` (lazy where it reads a dask array) for parameter values `leaves`.
        A loop run backwards whose tape would pass the memory limit is refused (E700) before
        any step runs when its step count is known on the client at the call."""
        memo: dict = {}
        with np.errstate(all="ignore"):
            if self.tapes and not self.symbolic:
                guard_tapes(self.tapes, self.table.states, partial(self._known, memo=memo,
                                                                   leaves=leaves))
            value = self.eval(root, memo, leaves)
        return self.answer(value)

    def _known(self, node: ir.Node, memo: dict, leaves: tuple):
        """The value of a node of the call's scope if the client has it (not lazy), else None."""
        value = self.eval(node, memo, leaves)
        return None if lazy(value) else value

    def number(self, value, stand_in: float = 0.0) -> float:
        """A scalar's value now: a lazy one is computed (a symbolic run takes `stand_in`)."""
        if lazy(value):
            if self.symbolic:
                return stand_in
            value = value.compute()
        return float(np.real(value))  # (a complex call's counter: whole, so real)

    # ---------------------------------------------------------------- the host core's hooks

    def _inputs(self, node: ir.Node, memo: dict) -> tuple[ir.Node, ...]:
        """What `node` needs first: an `if` of a symbolic run both branches; an extreme its
        operand; the root of a blockwise kernel the kernel's inputs."""
        if isinstance(node, ir.Cond):
            if self.symbolic:
                return (node.cond, node.then, node.orelse)
            if node.cond in memo:  # computed once, kept as a number for the branch choice
                memo[node.cond] = np.float64(self.number(memo[node.cond]))
        else:
            extreme = self._extremes.find(node, self.scope)
            if extreme is not None:
                return (extreme[0],)
            if self._kernels.fused(node, self.scope):
                return self._kernels.kernel(node, self.scope).inputs  # type: ignore[union-attr]
        return super()._inputs(node, memo)

    def _value(self, node: ir.Node, memo: dict, leaves: tuple):
        """`node`'s value as the host core makes it, but an extreme's, a blockwise kernel's and
        a symbolic `if`'s; of the call's dtype unless counted; its blocks guarded."""
        value = self._lazily(node, memo)
        if value is None:
            value = super()._value(node, memo, leaves)
        if self.narrow and not isinstance(node, (ir.Loop, ir.LoopGrad, ir.Tuple)) and (
                node not in self.counted):  # (compiler/counting.py: the rest of the call's dtype)
            value = self._as_data(value)
        if lazy(value):
            self._guard(node, value)
        return value

    def _lazily(self, node: ir.Node, memo: dict):
        """The value of a node this runtime makes its own way, else None."""
        if isinstance(node, ir.Cond) and self.symbolic:
            return memo[node.then]
        extreme = self._extremes.find(node, self.scope)
        if extreme is not None:
            x, axis, largest = extreme
            return first_positions(memo[x], axis, largest)
        if self._kernels.fused(node, self.scope):
            kernel = self._kernels.kernel(node, self.scope)
            assert kernel is not None
            return self._kernels.blockwise(kernel, [memo[n] for n in kernel.inputs],
                                           self.table.scopes[self.scope][node])
        return None

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

    def _contract(self, node: ir.Einsum, operands: list):
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

    def prim(self, node: ir.Prim, args: list):
        """The op's NumPy meaning on values the client holds, and on lazy ones where it is lazy
        already; else its dask meaning (the op table's, compiler/ops/meanings.py)."""
        row = BY_OP[node.op]
        if row.dask is not None and any(lazy(a) for a in args):
            return row.dask(node, args, self.number, self.table.scopes[self.scope][node])
        return super().prim(node, args)

    # ---------------------------------------------------------------- loops

    def settle(self, values) -> tuple:
        """A loop's state, or a step's new components, persisted (`settled`)."""
        return settled(values)

    def known(self, value):
        """A step count or a loop's condition on the client: a lazy one computed."""
        return value.compute() if lazy(value) else value

    def loop(self, loop: ir.Loop, state: tuple, memo: dict):
        """The loop run by the host core; a symbolic run builds one step."""
        if self.symbolic:
            return self._sketch_loop(loop, state)
        return super().loop(loop, state, memo)

    def loop_grad(self, node: ir.LoopGrad, init: tuple, seeds: tuple):
        """The loop run backwards by the host core; a symbolic run builds one step each way."""
        if not self.symbolic:
            return super().loop_grad(node, init, seeds)
        self._sketch_loop(node.loop, init)
        leaves = tuple(init) + tuple(seeds)
        return self._sketch(f"{node.loop.name} backwards", node.vjp, leaves, node)

    def _sketch_loop(self, loop: ir.Loop, init: tuple) -> tuple:
        """One step built, not run: its tasks counted; the state after it stands for the final."""
        state = list(init)
        if loop.counter is not None:
            state[loop.counter] = counted(state[loop.counter], 1)
        roots = [loop.step[i] for i in moving_components(loop)]
        if loop.counter is None:
            roots.append(loop.until)
        values = self._sketch(loop.name, roots, tuple(state), loop)
        for i, value in zip(moving_components(loop), values, strict=False):
            state[i] = value
        return tuple(state)

    def _sketch(self, name: str, roots, leaves: tuple, owner) -> tuple:
        memo: dict = {}
        evaluate = self.within(owner, self.eval)
        values = [evaluate(root, memo, leaves) for root in roots]
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
