"""A call run as blocks of rows, one per thread, when each row of its result depends only on
the same rows of some arguments (compiler/plan/rows.py proves it from the IR, and its rule,
`row_blocks`, says whether and into how many blocks: the plan's decision, run here).

A recurrence over a batch steps 64 rows of state 200 times; one step is a few microseconds of
work, less than a launch of threads costs, so its loop nests run serially. Split by rows
instead, each thread runs the whole loop on its own rows, and the call pays one hand-over to
the threads, not one a step. Each block is the same generated function called on a slice of
the split arguments (their rows are C-ordered: a slice is a view, no copy), and the results
are joined along their first axis.

Blocks run on a pool of `threads.count()` − 1 threads, the caller running the first block
itself; pool threads wait on a queue (they sleep, never spin). Only serial generated code is
split (nothing in a block launches Numba's threads, whose workqueue layer allows one launch at
a time), and NumPy's BLAS runs on one thread for the call, so hilbert's threads and BLAS's
never outnumber the cores. Every block reads the call's one stop flag, so Ctrl-C stops them
all within a step (interrupt.py).
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

from ...compiler import ir
from ...compiler.plan import Plan, rows
from .. import blas_threads, threads
from . import interrupt
from .loading import load
from .regions import CompiledRegion


class RowBlocks:
    """A compiled region called as `blocks` blocks of rows: the arguments at `positions` are
    split along their first axis, the others passed whole to every block."""

    def __init__(self, region: CompiledRegion, positions: tuple[int, ...], blocks: int):
        self.region = region
        self.positions = positions
        self.blocks = blocks
        self.dtype = region.dtype  # (its large products run as own products: own_products.py)

    def run(self, args: list):
        """(value, loop steps run), as CompiledRegion.run gives them (its code has loops:
        `blocks_for`)."""
        return interrupt.call(self, args)

    def __call__(self, args: list):
        rows = args[self.positions[0]].shape[0]
        edges = bounds(rows, self.blocks)
        parts = [self._rows(args, a, b) for a, b in itertools.pairwise(edges)]
        own = load("hilbert.executor.numba.own_products")  # (compiled code: Numba is loaded)
        with blas_threads.single(), own.used(self.dtype):
            pool = block_pool(self.blocks - 1)
            pending = [pool.submit(self.region, part) for part in parts[1:]]
            try:
                first = self.region(parts[0])
            finally:
                done = [_outcome(f) for f in pending]  # (every block ends before the call does)
            for failure in (d for d in done if isinstance(d, BaseException)):
                raise failure
        values = [first[0], *(d[0] for d in done)]
        return joined(values), first[1]

    def _rows(self, args: list, a: int, b: int) -> list:
        part = list(args)
        for i in self.positions:
            part[i] = args[i][a:b]
        return part


def bounds(rows: int, blocks: int) -> list[int]:
    """The first row of each block and the end: as even as blocks of whole fours allow."""
    inner = [min(rows, (k * rows // blocks + 3) // 4 * 4) for k in range(1, blocks)]
    return [0, *inner, rows]


def joined(values: list):
    """The blocks' results (arrays, or tuples of arrays) joined along their first axis."""
    if isinstance(values[0], tuple):
        return tuple(np.concatenate(items) for items in zip(*values, strict=True))
    return np.concatenate(values)


def blocks_for(region: CompiledRegion, plan: Plan,
               prove: Callable[[], tuple[int, ...]]) -> RowBlocks | None:
    """The blocks a call of `region` (a whole program's, planned as `plan`) runs as, or None,
    as the plan's rule decides (compiler/plan/rows.py, `row_blocks`) from what the scheduler
    decided of its code (compiled, loops, no nest on threads, not written for its sizes
    alone) and this machine's threads; `prove` gives the parameters to split."""
    generated = region.generated
    serial_loops = (generated.compiled and bool(generated.loops) and not generated.parallel
                    and not generated.sized)
    split, blocks = rows.row_blocks(plan, serial_loops, threads.count(), prove)
    positions = tuple(j for j, node in enumerate(region.region.inputs)
                      if isinstance(node, ir.Param) and node.index in split)
    return RowBlocks(region, positions, blocks) if split and positions else None


def note(blocks: RowBlocks) -> str:
    """What the plan says of a call run as blocks of rows."""
    names = [n.name for j, n in enumerate(blocks.region.region.inputs) if j in blocks.positions]
    return (f"the call runs as {blocks.blocks} blocks of rows on {blocks.blocks} threads, "
            f"{', '.join(names)} split along the first axis, each block the whole call: each "
            "row of the result depends only on the same rows of those (compiler/plan/rows.py)")


def _outcome(future: Future):
    try:
        return future.result()
    except BaseException as err:  # noqa: BLE001 (raised by the caller, after every block ended)
        return err


_POOL: ThreadPoolExecutor | None = None
_POOL_SIZE = 0
_POOL_LOCK = threading.Lock()


def block_pool(workers: int) -> ThreadPoolExecutor:
    """The pool of block threads (they sleep when idle), with at least `workers` threads (made
    when first needed); own_products.shared_product uses it too."""
    global _POOL, _POOL_SIZE
    with _POOL_LOCK:
        if _POOL is None or _POOL_SIZE < workers:
            if _POOL is not None:
                _POOL.shutdown(wait=False)  # (its threads end once idle)
            _POOL = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="hilbert-rows")
            _POOL_SIZE = workers
        return _POOL


def _forget_pool() -> None:
    """In a forked child the pool's threads are gone: a new pool is made when needed."""
    global _POOL, _POOL_SIZE
    _POOL, _POOL_SIZE = None, 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)
