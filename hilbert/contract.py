"""The API opt_einsum's and NumPy's users know, over hilbert's planner and executors:
`einsum(subscripts, *operands)`, `contract_path(subscripts, *operands)` and
`contract_expression(subscripts, *shapes)`.

Subscripts are read as numpy.einsum reads them (opt_einsum.parser): an explicit output or an
implicit one (the letters that occur once, in order), `...` for broadcast axes, and the
interleaved form `einsum(a, [0, 1], b, [1, 2], [0, 2])`. Each is written as the .hb function
`fn contract(x0, x1, …) ↦ einsum("…", x0, x1, …)` with its axes renamed a, b, … in order
of first appearance, compiled once per process (`_function`), and called: planned once per
set of shapes, run on the host at once and compiled in the background as any hilbert
function (docs/architecture.md, "Tiers").

`optimize` takes a path optimiser's name (hilbert's: auto, greedy, dp, …), an explicit path
(opt_einsum's form, a list of operand-position tuples, used exactly as given) or an
opt_einsum PathOptimizer object (cotengra's HyperOptimizer is one). `memory_limit` (bytes, or
text such as "500M") refuses a contraction whose plan needs more (E700).
"""

from __future__ import annotations

import functools
import math

import numpy as np
import opt_einsum
from opt_einsum.parser import parse_einsum_input

from hilbert.compiler.ops.einsum_spec import lettered
from hilbert.compiler.plan import Plan, check_optimiser, is_path, size_in_bytes
from hilbert.compiler.plan.text import human_bytes
from hilbert.grammar.errors import ArgumentError, CheckError, RuntimeHilbertError
from hilbert.grammar.source import nowhere

from .api import Function, compile_source

WHERE = "hilbert.einsum"


def einsum(*operands, optimize="auto", memory_limit=None, executor: str = "numba"):
    """numpy.einsum's and opt_einsum.contract's contraction, planned and run by hilbert.

    >>> einsum("ij,jk", [[1.0, 2.0]], [[3.0], [4.0]])
    array([[11.]])
    """
    spec, arrays = _read(operands, shapes=False)
    function = _function(spec, len(arrays), executor, _optimiser(optimize, spec, arrays, False))
    _guard(function, arrays, memory_limit)
    return function(*arrays)


def contract_path(*operands, shapes: bool = False, optimize="auto", memory_limit=None,
                  executor: str = "numba"):
    """`(path, info)` for the contraction: the path hilbert's plan takes (opt_einsum's form)
    and `info`, the Plan (print it; `.flops`, `.largest_bytes`, `.peak_bytes`), with
    `.sliced_indices` (none: hilbert does not slice yet). `shapes=True`: the operands are
    shapes, as in opt_einsum.contract_path."""
    spec, given = _read(operands, shapes=shapes)
    function = _function(spec, len(given), executor, _optimiser(optimize, spec, given, shapes))
    sizes = tuple(tuple(s) for s in given) if shapes else tuple(np.shape(a) for a in given)
    plan = _guard(function, sizes, memory_limit)
    return [tuple(step) for step in _path_of(plan)], PathInfo(plan)


def contract_expression(subscripts, *shapes, optimize="auto", memory_limit=None,
                        executor: str = "numba") -> Expression:
    """A reusable contraction for operands of these shapes (opt_einsum.contract_expression):
    planned now, compiled when first called (or by `.build()`)."""
    spec, given = _read((subscripts, *shapes), shapes=True)
    sizes = tuple(tuple(int(n) for n in s) for s in given)
    function = _function(spec, len(sizes), executor, _optimiser(optimize, spec, sizes, True))
    _guard(function, sizes, memory_limit)
    return Expression(function, sizes)


class PathInfo:
    """What contract_path says of a contraction: hilbert's plan, its FLOPs, its largest
    intermediate and peak memory, and the indices it slices (none yet)."""

    def __init__(self, plan: Plan):
        self.plan = plan
        self.flops = plan.flops
        self.largest_bytes = plan.largest_bytes
        self.peak_bytes = plan.peak_bytes
        self.sliced_indices: tuple[str, ...] = ()

    def __str__(self) -> str:
        return str(self.plan)

    __repr__ = __str__


class Expression:
    """A contraction for fixed operand shapes: call it with arrays of those shapes."""

    def __init__(self, function: Function, shapes: tuple[tuple[int, ...], ...]):
        self.function = function
        self.shapes = shapes

    def __call__(self, *arrays):
        if len(arrays) != len(self.shapes):
            raise ArgumentError("E600", f"this contraction takes {len(self.shapes)} operand(s), "
                                f"not {len(arrays)}", nowhere(WHERE))
        for k, (array, shape) in enumerate(zip(arrays, self.shapes, strict=True)):
            if np.shape(array) != shape:
                raise ArgumentError("E600", f"operand {k} has shape {np.shape(array)}; this "
                                    f"contraction was made for {shape}", nowhere(WHERE))
        return self.function(*arrays)

    @property
    def plan(self) -> Plan:
        return self.function.plan(*self.shapes)

    def build(self) -> Plan:
        """Compile now (the numba executor), so the first call waits for nothing."""
        return self.function.build(*self.shapes)

    def benchmark(self, repeat: int = 5):
        """Function.benchmark on these shapes: each path optimiser's planning, first and warm
        call, beside numpy.einsum."""
        return self.function.benchmark(*self.shapes, repeat=repeat)


def _read(operands: tuple, shapes: bool) -> tuple[str, list]:
    """The contraction's subscripts in .hb's explicit form, axes renamed a, b, … (E300 past
    52), and its operands (or shapes)."""
    if not operands:
        raise ArgumentError("E600", "einsum needs subscripts and operands", nowhere(WHERE))
    try:
        inputs, output, given = parse_einsum_input(list(operands), shapes=shapes)
    except (ValueError, TypeError, IndexError, KeyError) as err:
        raise CheckError("E300", f"these einsum subscripts cannot be read: {err}",
                         nowhere(WHERE)) from None
    try:
        return lettered(f"{inputs}->{output}"), list(given)
    except ValueError as err:
        raise CheckError("E300", f"this einsum has {err}, more than hilbert can name yet",
                         nowhere(WHERE)) from None


def _optimiser(optimize, spec: str, given: list, shapes: bool):
    """`optimize` checked (an explicit path as a tuple of tuples, checked against the
    contraction by opt_einsum: E600 if it does not fit)."""
    if isinstance(optimize, list):
        optimize = tuple(tuple(step) for step in optimize)
    check_optimiser(optimize, nowhere(WHERE), explicit=True)
    if is_path(optimize):
        sizes = [tuple(s) for s in given] if shapes else [np.shape(a) for a in given]
        try:
            opt_einsum.contract_path(spec, *sizes, shapes=True, optimize=list(optimize))
        except (ValueError, TypeError, IndexError) as err:
            raise ArgumentError("E600", f"the path {list(optimize)} does not fit this "
                                f"contraction of {len(sizes)} operand(s): {err}",
                                nowhere(WHERE)) from None
    return optimize


@functools.lru_cache(maxsize=256)
def _module(spec: str, count: int, executor: str):
    names = ", ".join(f"x{k}" for k in range(count))
    return compile_source(f'fn contract({names}) ↦ einsum("{spec}", {names})\n',
                          name=f"<einsum {spec}>", executor=executor)


@functools.lru_cache(maxsize=256)
def _function(spec: str, count: int, executor: str, optimize) -> Function:
    """The compiled contraction (once per process for each spec, executor and optimiser: a
    Function keeps its plans and compiled programs per set of shapes)."""
    base = _module(spec, count, executor).contract
    return Function(base.entry, base.module, executor, optimize)


def _guard(function: Function, operands, memory_limit) -> Plan:
    """The plan for these operands (or shapes); E700 when it needs more than `memory_limit`."""
    plan = function.plan(*operands)
    if memory_limit is None:
        return plan
    limit = _bytes(memory_limit)
    if plan.peak_bytes > limit:
        raise RuntimeHilbertError(
            "E700", f"this contraction would need about {human_bytes(plan.peak_bytes)} of "
            f"memory (its largest value {human_bytes(plan.largest_bytes)}), over "
            f"memory_limit={memory_limit!r}: choose another path or a larger limit",
            nowhere(WHERE))
    return plan


def _bytes(limit) -> int:
    """`memory_limit` as bytes: a number, or text such as "500M" or "8G"."""
    if isinstance(limit, str) and (found := size_in_bytes(limit)) is not None:
        return found
    if isinstance(limit, (int, float)) and not isinstance(limit, bool) and 0 < limit < math.inf:
        return int(limit)
    raise ArgumentError("E600", f"memory_limit={limit!r:.40} is not a number of bytes (a "
                        "positive number, or text such as 500M or 8G)", nowhere(WHERE))


def _path_of(plan: Plan):
    """The path of the plan's one einsum (none for a contraction with no einsum left, such as
    a lone operand returned as it is)."""
    return plan.einsums[0].path if plan.einsums else ()
