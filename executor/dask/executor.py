"""The dask executor: a function's plan run as dask.array operations, so a batch (or tensors)
larger than one machine's memory runs on a dask.distributed cluster. docs/dask.md says how.

Arguments: NumPy arrays are cut into blocks (by default the first array argument along its
first axis; `chunks=` chooses), dask arrays keep theirs. With NumPy arguments the answer is
computed and returned as NumPy; with a dask array among them it stays lazy (a dask array)
unless `compute=True`. Work runs wherever dask's scheduler runs it: the local threads, or the
cluster of the `dask.distributed.Client` made last.
"""

from __future__ import annotations

import math
import sys
from dataclasses import replace
from functools import cached_property

import dask
import dask.array as da
import numpy as np
from dask.utils import parse_bytes

from ...compiler.counting import counting_in
from ...compiler.driver import Entry, Specialised, annotate, plan_entry
from ...compiler.dtypes import is_complex, natural
from ...compiler.loops import tapes_at_the_call
from ...compiler.plan import Plan, memory_limit
from ...compiler.plan.text import human_bytes
from ...grammar.errors import ArgumentError, HilbertError
from ...grammar.source import Span
from .graph import BLOCK_SHARE, DaskGraph, count_tasks, lazy

#: The options `Function.using(executor="dask", …)` takes.
OPTIONS = ("chunks", "compute")
#: Default blocks of a NumPy argument hold at most this share of HILBERT_MEMORY_LIMIT (and at
#: most dask's `array.chunk-size`): values made from a block may be several times larger.
DEFAULT_SHARE = 16


def prepare(entry: Entry, shapes, optimize: str = "auto", values=None, chunks=None,
            compute: bool | None = None, math: str = "exact",
            dtype: str = "float64") -> DaskProgram:
    """Specialise and plan `entry` for `shapes`; the program that runs it on dask. The whole
    plan is not held to the memory limit (it is spread over blocks): every block is, as the
    graph is built (E700). `math`: "fast" lets the blockwise kernels compute as the numba
    executor's do under it."""
    ready = plan_entry(entry, shapes, optimize, "dask", values, limit=sys.maxsize, dtype=dtype)
    return DaskProgram(ready, entry, optimize, values, chunks, compute, math == "fast")


def check_options(options: dict, span: Span) -> None:
    """An ArgumentError unless `chunks` and `compute` are of a kind this executor takes."""
    chunks = options.get("chunks")
    if not (chunks is None or _rows(chunks) or isinstance(chunks, dict)):
        raise ArgumentError("E600", f"chunks={chunks!r:.60}: give a number of rows per block "
                            "for the first array argument, or a dict of dask chunks by "
                            "parameter name", span)
    if isinstance(chunks, dict):
        for name, spec in chunks.items():
            if not isinstance(name, str) or isinstance(spec, bool) or spec is None:
                raise ArgumentError("E600", f"chunks={{{name!r}: {spec!r:.40}}}: keys are "
                                    "parameter names, values dask chunks (rows per block, a "
                                    "tuple or 'auto')", span)
    if options.get("compute") not in (None, True, False):
        raise ArgumentError("E600", f"compute={options['compute']!r:.40}: give True, False or "
                            "None (compute unless an argument is a dask array)", span)


def _rows(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


class DaskProgram:
    """A callable for one signature: `run(values)` builds the graph and computes it (or not)."""

    def __init__(self, ready: Specialised, entry: Entry, optimize: str, values, chunks,
                 compute: bool | None, fast: bool = False):
        self.body = ready.body
        self.fast = fast
        self.table = ready.table
        self.optimize = optimize
        self.entry = entry
        self.values = values
        self.chunks = chunks
        self.compute = compute
        self.loop_steps = 0
        self._kernels: dict = {}  # the blockwise kernels every run shares
        self._plan = ready.plan
        self._blocks = chunking(entry, ready.plan.signature, chunks)
        self._tapes = tapes_at_the_call(self.body)  # checked before a call runs a step
        self._counting = counting_in(self.body, ready.plan.dtype)  # (compiler/counting.py)

    @cached_property
    def plan(self) -> Plan:
        """The plan, with the dask executor's account: blocks, tasks, loops (built, not run)."""
        graph = self._graph(symbolic=True)
        result = graph.run(self.body, self._inputs(self._stand_ins(), symbolic=True))
        values = result if isinstance(result, tuple) else (result,)
        notes = describe(self.entry.params, self._plan.signature, self._blocks, count_tasks(values),
                         graph)
        return replace(self._plan, notes=self._plan.notes + tuple(f"dask: {n}" for n in notes))

    def __call__(self, values):
        """NumPy values in, NumPy values out (as every executor's program)."""
        return _numpy(self.run(values, compute=True))

    def run(self, values, compute: bool | None = None):
        """The answer for `values` (NumPy or dask arrays, one per parameter): computed, or lazy
        when an argument is lazy, unless `compute` (or the program's option) says."""
        graph = self._graph(symbolic=False)
        result = graph.run(self.body, self._inputs(values, symbolic=False))
        self.loop_steps += graph.loop_steps
        if compute is None:
            compute = self.compute if self.compute is not None else not any(map(lazy, values))
        if not compute:
            return result
        return tuple(dask.compute(*result)) if isinstance(result, tuple) else dask.compute(result)[0]

    def _graph(self, symbolic: bool) -> DaskGraph:
        return DaskGraph(self.table, self._plan, self.optimize, self.entry.definition.span,
                         symbolic, self._kernels, self._tapes, self.fast, self._counting)

    def _stand_ins(self) -> tuple:
        """What a symbolic run starts from: the plan's values, or unknown numbers and arrays."""
        if self.values is not None:
            return tuple(self.values)
        return tuple(da.zeros((), chunks=()) if s == () else None for s in self._plan.signature)

    def _inputs(self, values, symbolic: bool) -> tuple:
        """Each argument as the graph takes it: numbers as NumPy floats, NumPy arrays cut into
        their blocks, dask arrays as they are (or rechunked where `chunks` names them)."""
        out = []
        for i, (value, shape) in enumerate(zip(values, self._plan.signature, strict=True)):
            blocks = self._blocks.get(i)
            if lazy(value):
                out.append(value.rechunk(blocks) if blocks and self._named(i) else value)
            elif shape == ():
                out.append(np.asarray(value)[()])  # (a NumPy number of the call's dtype)
            elif symbolic:
                out.append(da.zeros(shape, chunks=blocks))
            else:
                out.append(da.from_array(value, chunks=blocks, name=False))
        return tuple(out)

    def _named(self, index: int) -> bool:
        return isinstance(self.chunks, dict) and self.entry.params[index] in self.chunks


def chunking(entry: Entry, shapes, chunks) -> dict[int, tuple]:
    """The blocks of each array parameter (by position) as dask's normalised chunks."""
    arrays = [i for i, s in enumerate(shapes) if s != ()]
    span = entry.definition.span
    if isinstance(chunks, dict):
        unknown = sorted(set(chunks) - set(entry.params))
        if unknown:
            raise ArgumentError("E600", f"chunks names {', '.join(unknown)}, not parameter(s) of "
                                f"{entry.name} ({', '.join(entry.params)})", span)
        specs = {entry.params.index(name): spec for name, spec in chunks.items()}
    else:
        first = arrays[0] if arrays else None
        specs = {} if first is None else {first: _default_rows(shapes[first]) if chunks is None
                                          else chunks}
    for i in specs:
        if shapes[i] == ():
            raise ArgumentError("E600", f"chunks names {entry.params[i]}, but it is a number: "
                                "it has no axes to cut", span)
    blocks = {}
    for i in arrays:
        spec = specs.get(i, -1)
        if _rows(spec):
            spec = {0: spec, **{axis: -1 for axis in range(1, len(shapes[i]))}}
        blocks[i] = _normalised(entry, i, spec, shapes[i])
    return blocks


def _default_rows(shape: tuple[int, ...]) -> int:
    """Rows per block so that a block of this array is within its share of the memory limit
    and of dask's `array.chunk-size`."""
    target = min(parse_bytes(dask.config.get("array.chunk-size")), memory_limit() // DEFAULT_SHARE)
    row = 8 * math.prod(shape[1:])
    return max(1, target // max(row, 1))


def _normalised(entry: Entry, index: int, spec, shape) -> tuple:
    try:
        return da.core.normalize_chunks(spec, shape, dtype=np.float64)
    except (ValueError, TypeError, KeyError) as err:
        raise ArgumentError("E600", f"chunks for {entry.params[index]} ({spec!r:.40}) do not fit "
                            f"its shape {'×'.join(map(str, shape))}: {err}",
                            entry.definition.span) from None


def describe(params, shapes, blocks: dict[int, tuple], tasks: int, graph: DaskGraph) -> list[str]:
    """The plan's dask lines: how each argument is cut, the graph's size, loops, blocks."""
    parts = []
    for i, (name, shape) in enumerate(zip(params, shapes, strict=True)):
        if shape == ():
            parts.append(f"{name} a number")
            continue
        chunks = blocks[i]
        count = math.prod(len(c) for c in chunks)
        largest = "×".join(str(max(c, default=0)) for c in chunks)
        cut = [str(axis) for axis, c in enumerate(chunks) if len(c) > 1]
        along = f" (axis {', '.join(cut)} cut)" if cut else ""
        each = f"{count} blocks of {largest}" if count > 1 else "one block"
        parts.append(f"{name} {'×'.join(map(str, shape))} in {each}{along}")
    lines = ["arguments: " + "; ".join(parts)]
    lines.append(f"task graph of the call: {tasks} task(s) after dask's blockwise fusion; largest "
                 f"block {human_bytes(graph.sketch.largest)} (each must fit in a "
                 f"{BLOCK_SHARE}th of the memory limit, {human_bytes(graph.limit // BLOCK_SHARE)})")
    for name, count in graph.sketch.steps.items():
        lines.append(f"loop {name}: {count} task(s) a step, run step by step, its new state "
                     "persisted after each step (one round trip to the scheduler a step)")
    return lines


def call(function, args: tuple, kwargs: dict):
    """`function(*args, **kwargs)` on dask (Function.__call__ hands its calls here): arguments
    bound and checked as for any executor, but dask arrays kept lazy."""
    values, dtype = bind(function.entry, args, kwargs, function.dtype, function.counted_params)
    program = function.program(tuple(v.shape for v in values), dtype)
    try:
        result = program.run(values)
    except HilbertError as err:
        raise annotate(err, function.module.resolved).with_note(
            function._call_note(values)) from None
    return _python(result, values)


def bind(entry: Entry, args: tuple, kwargs: dict, dtype: str | None = None,
         counted: frozenset[int] = frozenset()) -> tuple[tuple, str]:
    """(one value per parameter, the call's dtype): all of the call's dtype (`dtype`, or the
    arguments' promoted as any call's), dask arrays lazy, the rest as the other executors
    take them, a Python number for a parameter in `counted` in float64 as bind_arguments
    binds it. Binding itself (names, counts) is the API's, given markers."""
    from ...compiler.arguments import (
        bind_arguments,
        call_dtype,
        cast,
        counted_dtype,
        counted_number,
        to_array,
    )

    given = [*args, *kwargs.values()]
    marks = bind_arguments(entry, tuple(float(i) for i in range(len(args))),
                           {k: float(len(args) + j) for j, k in enumerate(kwargs)})
    span = entry.definition.span
    bound = [given[int(mark)] for mark in marks]
    values = [_lazy_argument(entry, param, value) if lazy(value)
              else to_array(entry.name, param, value, span)
              for param, value in zip(entry.params, bound, strict=True)]
    target = dtype or call_dtype(values, bound)
    whole = counted_dtype(target)
    return tuple(_lazy_cast(entry, param, value, target) if lazy(value)
                 else cast(entry.name, param, value, whole if i in counted and
                           counted_number(given_value) else target, span)
                 for i, (param, value, given_value) in enumerate(
                     zip(entry.params, values, bound, strict=True))), target


def _lazy_argument(entry: Entry, param: str, value: da.Array) -> da.Array:
    span = entry.definition.span
    if natural(value.dtype) is None:
        raise ArgumentError("E601", f"argument {param} of {entry.name} must be an array of "
                            f"numbers, but it is a dask array of {value.dtype}", span)
    if any(math.isnan(n) for n in value.shape):
        raise ArgumentError("E601", f"argument {param} of {entry.name} is a dask array whose "
                            "shape is not known yet (call its compute_chunk_sizes() first)", span)
    return value


def _lazy_cast(entry: Entry, param: str, value: da.Array, dtype: str) -> da.Array:
    """A lazy argument in the call's dtype (a complex one to a real call is E601)."""
    if value.dtype.kind == "c" and not is_complex(dtype):
        raise ArgumentError("E601", f"argument {param} of {entry.name} is complex, but the call "
                            f"computes in {dtype} (it was asked to: dtype={dtype})",
                            entry.definition.span)
    return value if value.dtype == dtype else value.astype(dtype)


def _numpy(result):
    """A computed answer as the other executors give it: NumPy floats and arrays."""
    if isinstance(result, tuple):
        return tuple(_numpy(r) for r in result)
    array = np.asarray(result)
    return array[()] if array.ndim == 0 else array


def _python(result, inputs):
    """As any executor's result (compiler/results.py: to_python), a dask array left as it is."""
    from ...compiler.results import to_python

    return to_python(result, inputs, lazy=lazy)
