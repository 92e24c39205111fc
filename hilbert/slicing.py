"""Slicing (issue 24, item 4): a contraction whose path needs more memory than its limit is run
as a sum of smaller contractions, each with some summed indices fixed to one value.

Fixing a summed index `k` of size n to each of its n values and adding the n results gives
the same sum; every intermediate that held `k` is then n times smaller. Slices are chosen
on the path already chosen (an explicit path is sliced, never re-planned), so that one slice's
peak memory (its operands, and the intermediates alive at its fullest step, each freed once
read) is under the limit. Two slicers are asked and the one whose slices cost fewer FLOPs
together wins: hilbert's own, greedy (while the peak is over the limit, fix the summed index,
among those of the largest intermediate, that lowers it most, ties going to the fewest FLOPs
over all slices), and cotengra's (its SliceFinder, seeded) when cotengra is installed. Each
slice runs the same compiled contraction (its spec without the sliced letters, along the same
path), on as many threads as fit in the limit (`workers_for`), each adding its slices' results
as they come, so that it holds one slice's values and its running sum at a time; or, with
executor="dask", as dask tasks (`run_tasks`).
"""

from __future__ import annotations

import itertools
import math
import threading
from dataclasses import dataclass

from hilbert.compiler.ops.einsum_spec import parse_spec
from hilbert.compiler.plan.paths import contraction, elements, output_shape

Shapes = tuple[tuple[int, ...], ...]

#: Slicing that would repeat more than this many times the unsliced FLOPs is refused (E700)
#: instead of run: on a path where every intermediate holds different indices (a lattice swept
#: row by row, a matrix product state) a small limit takes slices by the thousands or more.
MAX_OVERHEAD = 100.0


@dataclass(frozen=True)
class Sliced:
    """How a contraction is sliced: the indices fixed (letters of the spec), their sizes, one
    slice's spec and operand shapes, and the FLOPs and peak memory with and without slicing."""

    indices: tuple[str, ...]
    sizes: tuple[int, ...]
    spec: str
    shapes: Shapes
    flops: int  # every slice together
    unsliced_flops: int
    peak_bytes: int  # one slice
    unsliced_peak_bytes: int
    limit: int  # the memory limit the slicing was chosen for, in bytes
    operand_bytes: int  # the operands' (held once, whatever the slices running)
    result_bytes: int  # the contraction's value (each worker holds one running sum)

    @property
    def count(self) -> int:
        """How many slices run."""
        return math.prod(self.sizes)

    @property
    def overhead(self) -> float:
        """The FLOPs of every slice over the FLOPs unsliced (1.0: nothing repeated)."""
        return self.flops / max(self.unsliced_flops, 1)

    def describe(self, symbols: dict[str, str] | None = None) -> str:
        """A line for the plan: what is sliced (each index in the caller's symbol, from
        `symbols`) and what it costs."""
        from hilbert.compiler.plan.text import human_bytes

        names = symbols or {}
        named = ", ".join(f"{names.get(ch, ch)} ({n})"
                          for ch, n in zip(self.indices, self.sizes, strict=True))
        return (f"sliced over {named}: {self.count:,} slices, FLOPs ×{self.overhead:.3g} "
                f"({self.flops:,} against {self.unsliced_flops:,}), peak "
                f"{human_bytes(self.peak_bytes)} per slice against "
                f"{human_bytes(self.unsliced_peak_bytes)} unsliced")


def estimate(spec: str, shapes: Shapes, path: tuple, item: int) -> tuple[int, int, str]:
    """(FLOPs, peak bytes, the letters of the largest intermediate) of the contraction along
    `path` (opt_einsum's form): the peak is its operands and, at the step that holds most,
    the intermediates alive then (each freed once read) and that step's result."""
    _, steps = contraction(spec, shapes, path)
    alive = [0] * len(shapes)  # (the operands are counted apart: the caller holds them)
    held = peak = 0
    for positions, step in zip(path, steps, strict=True):
        freed = sum(alive.pop(i) for i in sorted(positions, reverse=True))
        peak = max(peak, held + step.intermediate)
        held += step.intermediate - freed
        alive.append(step.intermediate)
    operands = _entries(shapes)
    largest = max(steps, key=lambda s: s.intermediate)
    return sum(s.flops for s in steps), (operands + peak) * item, largest.spec.split("->")[1]


def choose(spec: str, shapes: Shapes, path: tuple, limit: int, item: int) -> Sliced | None:
    """The slicing that brings the contraction under `limit` bytes, None when it is under
    already: the cheaper (fewer FLOPs over all slices) of hilbert's greedy choice and, when
    cotengra is installed, cotengra's slicer's. A ValueError when neither finds one: its
    operands and result alone are over the limit (slicing leaves both whole), fixing every
    summed index would not do, or it would cost more than MAX_OVERHEAD times the FLOPs (its
    message says which)."""
    flops, peak, largest = estimate(spec, shapes, path, item)
    if peak <= limit:
        return None
    operands = _entries(shapes) * item
    if operands > limit:
        raise ValueError(f"its operands alone take {operands:,} bytes (slicing leaves them "
                         "whole: each slice reads a view of them): a larger limit is needed")
    result = elements(output_shape(spec, shapes)) * item
    if operands + result > limit:
        raise ValueError(f"its operands and its result alone take {operands + result:,} bytes "
                         "(slicing leaves both whole: each slice reads views of the operands "
                         "and adds into the result): a larger limit is needed")
    found, why = [], None
    for finder in (_greedy, _cotengra):
        try:
            letters = finder(spec, shapes, path, limit, item, (flops, peak, largest))
        except ValueError as err:
            why = why or err
            continue
        if letters is not None:
            found.append(_sliced(spec, shapes, path, item, letters, flops, peak, limit))
    if not found:
        raise why or ValueError("no slicing brings it under the limit")
    best = min(found, key=lambda s: (s.flops, s.count, s.indices))
    if best.flops > MAX_OVERHEAD * max(flops, 1):
        raise ValueError(f"on this path it would take {best.count:,} slices and "
                         f"{best.overhead:.3g} times the FLOPs (more than {MAX_OVERHEAD:g}): "
                         "another path or a larger limit is needed")
    return best


def _entries(shapes: Shapes) -> int:
    """The entries of every array of `shapes` together."""
    return sum(math.prod(s) for s in shapes)


def slice_cost(spec: str, shapes: Shapes, path: tuple, item: int,
               letters: tuple[str, ...]) -> tuple[int, int, str]:
    """`estimate` of one slice over `letters`: its FLOPs, its peak bytes (the whole operands,
    which the caller holds and every slice reads views of, and the slice's intermediates at
    its fullest step) and the letters of its largest intermediate."""
    sliced_spec, sliced_shapes = without(spec, shapes, letters)
    f, p, big = estimate(sliced_spec, sliced_shapes, path, item)
    return f, p + (_entries(shapes) - _entries(sliced_shapes)) * item, big


def _sliced(spec: str, shapes: Shapes, path: tuple, item: int, letters: tuple[str, ...],
            flops: int, peak: int, limit: int) -> Sliced:
    """The slicing over `letters`, its FLOPs (every slice) and one slice's peak counted."""
    sizes = _summed(spec, shapes)[1]
    sliced_spec, sliced_shapes = without(spec, shapes, letters)
    f, p, _ = slice_cost(spec, shapes, path, item, letters)
    counts = tuple(sizes[ch] for ch in letters)
    result = elements(output_shape(spec, shapes)) * item
    return Sliced(letters, counts, sliced_spec, sliced_shapes, f * math.prod(counts), flops, p,
                  peak, limit, _entries(shapes) * item, result)


def _summed(spec: str, shapes: Shapes) -> tuple[list[str], dict[str, int]]:
    """The summed indices that can be sliced (size > 1), in order, and every index's size."""
    parsed = parse_spec(spec)
    size = {ch: n for term, s in zip(parsed.inputs, shapes, strict=True)
            for ch, n in zip(term, s, strict=True)}
    return [ch for ch in dict.fromkeys("".join(parsed.inputs))
            if ch not in parsed.output and size[ch] > 1], size


def _greedy(spec: str, shapes: Shapes, path: tuple, limit: int, item: int,
            now: tuple) -> tuple[str, ...]:
    """hilbert's own choice: while one slice's peak is over `limit`, fix the summed index,
    among those of the largest intermediate, that lowers the peak most (ties: fewest FLOPs
    over all slices)."""
    summed, size = _summed(spec, shapes)
    chosen: list[str] = []
    while now[1] > limit:
        left = [ch for ch in summed if ch not in chosen]
        # (those of the largest intermediate; if it has none, every summed index left)
        candidates = [ch for ch in left if ch in now[2]] or left
        if not candidates:
            raise ValueError(f"even with every summed index sliced one slice needs "
                             f"{now[1]:,} bytes (its result and operands alone are larger): "
                             "a larger limit is needed")
        trials = []
        for ch in candidates:
            f, p, big = slice_cost(spec, shapes, path, item, (*chosen, ch))
            slices = math.prod(size[c] for c in (*chosen, ch))
            trials.append(((p, f * slices), ch, (f, p, big)))
        _, pick, now = min(trials)
        chosen.append(pick)
    return tuple(chosen)


def _cotengra(spec: str, shapes: Shapes, path: tuple, limit: int, item: int,
              now: tuple) -> tuple[str, ...] | None:
    """cotengra's slicer's choice on the same tree (None when cotengra is not installed, or
    an axis has size 0, where its cost model divides by sizes): asked for ever smaller
    largest intermediates (halving) until one slice's peak, as `slice_cost` counts it, is
    under `limit`. Seeded, so the same in every process."""
    try:
        from cotengra import ContractionTree  # type: ignore[import-not-found]
    except ImportError:
        return None
    summed, size = _summed(spec, shapes)
    if 0 in size.values():
        return None
    parsed = parse_spec(spec)
    tree = ContractionTree.from_path(list(parsed.inputs), parsed.output, size,
                                     path=[list(step) for step in path])
    target = int(tree.max_size())
    while target > 1:
        target //= 2
        try:
            sliced = tree.slice(target_size=target, allow_outer=False, seed=0)
        except (RuntimeError, KeyError) as err:
            # ("Ran out of valid indices to slice"; a KeyError when every index it may slice
            # is sliced already: cotengra 0.8 then picks one it has removed)
            raise ValueError(f"cotengra's slicer finds no slicing ({err!r:.60})") from None
        letters = tuple(ch for ch in summed if ch in sliced.sliced_inds)
        if slice_cost(spec, shapes, path, item, letters)[1] <= limit:
            return letters
    raise ValueError("cotengra's slicer finds no slicing under the limit")


def without(spec: str, shapes: Shapes, letters: tuple[str, ...]) -> tuple[str, Shapes]:
    """`spec` and `shapes` with the axes of `letters` taken out (one slice's)."""
    parsed = parse_spec(spec)
    terms = ["".join(ch for ch in term if ch not in letters) for term in parsed.inputs]
    kept = tuple(tuple(n for ch, n in zip(term, s, strict=True) if ch not in letters)
                 for term, s in zip(parsed.inputs, shapes, strict=True))
    return ",".join(terms) + "->" + parsed.output, kept


def run(contract, arrays: list, spec: str, sliced: Sliced, workers: int | None = None):
    """The sum over every slice of `contract` (one slice's contraction) on the operands'
    views at those index values, on `workers` threads (by default as many as `workers_for`
    allows), each summing its share of the slices; NumPy's BLAS is held to one thread
    meanwhile, so threads never outnumber the cores. The shares are added in a fixed order:
    the same workers give the same bits. Ctrl-C (or a slice's error) stops every thread
    after the slice it is running, and is raised then (`_gathered`)."""
    values = list(itertools.product(*map(range, sliced.sizes)))
    workers = max(1, min(workers or workers_for(sliced), len(values)))
    terms = parse_spec(spec).inputs
    if workers == 1:  # (in the caller's thread: Ctrl-C is raised there between slices)
        return _share(contract, arrays, terms, sliced.indices, values)
    from concurrent.futures import ThreadPoolExecutor

    from threadpoolctl import threadpool_limits

    stop = threading.Event()
    shares = [values[k::workers] for k in range(workers)]
    with threadpool_limits(limits=1, user_api="blas"):
        pool = ThreadPoolExecutor(workers, thread_name_prefix="hilbert-slices")
        pending = [pool.submit(_share, contract, arrays, terms, sliced.indices, share, stop)
                   for share in shares]
        parts = _gathered(pending, pool, stop)
    total = parts[0]
    for part in parts[1:]:
        total = total + part
    return total


def _gathered(pending: list, pool, stop: threading.Event) -> list:
    """The workers' sums, in order. Waiting for them is where the caller's thread receives
    Ctrl-C (a lock's wait is interrupted by signals on POSIX): then, or as soon as a worker
    fails, `stop` is set, every worker ends after the slice it is running, and the exception
    is raised once they all have (no thread goes on computing for a call that is over)."""
    from concurrent.futures import FIRST_EXCEPTION, wait

    try:
        wait(pending, return_when=FIRST_EXCEPTION)
        if any(future.done() and future.exception() is not None for future in pending):
            stop.set()  # (the failure is raised below, in the order of the shares)
        return [future.result() for future in pending]
    except BaseException:
        stop.set()
        raise
    finally:
        pool.shutdown(wait=True)


def workers_for(sliced: Sliced) -> int:
    """How many threads may run `sliced`'s slices: every core (HILBERT_THREADS: 1 is one),
    and no more than fit the memory limit together, each holding one slice's intermediates
    and a running sum beside the operands (held once)."""
    from hilbert.executor import threads

    each = max(sliced.peak_bytes - sliced.operand_bytes + sliced.result_bytes, 1)
    fit = (sliced.limit - sliced.operand_bytes) // each
    return max(1, min(threads.count(), sliced.count, fit))


def _share(contract, arrays: list, terms: tuple[str, ...], indices: tuple[str, ...],
           values: list, stop: threading.Event | None = None) -> object:
    """The sum of `contract` over the slices at `values` (one tuple of index values each);
    None once `stop` is set (read before each slice: the caller is raising an exception)."""
    total = None
    for at in values:
        if stop is not None and stop.is_set():
            return None
        fixed = dict(zip(indices, at, strict=True))
        parts = [a[tuple(fixed.get(ch, slice(None)) for ch in term)]
                 if any(ch in fixed for ch in term) else a
                 for a, term in zip(arrays, terms, strict=True)]
        part = contract(*parts)
        total = part if total is None else total + part
    return total


#: The most dask tasks a sliced contraction is split into (each a batch of slices).
TASKS = 32


def run_tasks(arrays: list, spec: str, sliced: Sliced, path: tuple):
    """`run` as dask tasks (executor="dask"): the slices in up to TASKS batches, each task one
    batch summed on whichever worker runs it (the numba executor there, compiled once per
    worker process), the batches' sums added in a tree; computed by dask's scheduler, the
    cluster's when a distributed Client is active. The operands enter the graph once."""
    import dask

    values = list(itertools.product(*map(range, sliced.sizes)))
    tasks = min(TASKS, len(values))
    operands = [dask.delayed(a, pure=True) for a in arrays]
    sums = [dask.delayed(_batch, pure=True)(sliced.spec, len(arrays), path, spec,
                                            sliced.indices, values[k::tasks], *operands)
            for k in range(tasks)]
    while len(sums) > 1:
        pairs = [dask.delayed(_add, pure=True)(sums[k], sums[k + 1])
                 for k in range(0, len(sums) - 1, 2)]
        sums = pairs + ([sums[-1]] if len(sums) % 2 else [])
    (total,) = dask.compute(sums[0])
    return total


def _batch(one: str, count: int, path: tuple, spec: str, indices: tuple[str, ...],
           values: list, *arrays):
    """One dask task: the slices at `values`, summed (one slice's contraction `one` along
    `path`, compiled by the numba executor in this process)."""
    from .einsum_compiled import compiled

    return _share(compiled(one, count, "numba", path), list(arrays), parse_spec(spec).inputs,
                  indices, values)


def _add(a, b):
    return a + b
