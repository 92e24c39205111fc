"""The API opt_einsum's and NumPy's users know, over hilbert's planner and executors:
`einsum(subscripts, *operands)`, `contract_path(subscripts, *operands)` and
`contract_expression(subscripts, *shapes)`.

Subscripts are read as numpy.einsum reads them (opt_einsum.parser): an explicit output or an
implicit one (the letters that occur once, in order), `...` for broadcast axes, and the
interleaved form `einsum(a, [0, 1], b, [1, 2], [0, 2])`. Each is written as the .hb function
`fn contract(x0, x1, …) ↦ einsum("…", x0, x1, …)` with its axes renamed a, b, … in order
of first appearance, compiled once per process (`compiled`), and called: planned once per
set of shapes, run on the host at once and compiled in the background as any hilbert
function (docs/architecture.md, "Tiers").

`optimize` takes a path optimiser's name (hilbert's: auto, greedy, dp, …), an explicit path
(opt_einsum's form, a list of operand-position tuples, used exactly as given) or an
opt_einsum PathOptimizer object (cotengra's HyperOptimizer is one). Any number of indices:
past a–z, A–Z the axes are named by further Unicode letters. `memory_limit` (bytes, or text
such as "500M"): a contraction whose path needs more is sliced (hilbert/slicing.py), and one
that cannot be brought under it is refused (E700).
"""

from __future__ import annotations

import functools
import json
import math
import sys
from dataclasses import dataclass

import numpy as np
import opt_einsum
from opt_einsum.parser import parse_einsum_input

from hilbert.compiler import dtypes
from hilbert.compiler.ops.einsum_spec import lettered
from hilbert.compiler.plan import Plan, check_optimiser, is_path, size_in_bytes
from hilbert.compiler.plan.paths import contraction
from hilbert.grammar.errors import ArgumentError, CheckError, RuntimeHilbertError
from hilbert.grammar.source import nowhere

from . import slicing
from .api import Function, compile_source

WHERE = "hilbert.einsum"


def einsum(*operands, optimize="auto", memory_limit=None, executor: str = "numba"):
    """numpy.einsum's and opt_einsum.contract's contraction, planned and run by hilbert; over
    `memory_limit`, sliced (hilbert/slicing.py).

    >>> einsum("ij,jk", [[1.0, 2.0]], [[3.0], [4.0]])
    array([[11.]])
    """
    read = _read(operands, shapes=False)
    arrays = _broadcast(read.spec, [np.asarray(a) for a in read.given])
    sizes = tuple(a.shape for a in arrays)
    optimize = _optimiser(optimize, read.spec, sizes)
    return _prepared(read.spec, sizes, optimize, memory_limit, executor, _item(arrays))(arrays)


def contract_path(*operands, shapes: bool = False, optimize="auto", memory_limit=None,
                  executor: str = "numba"):
    """`(path, info)` for the contraction: the path hilbert's plan takes (opt_einsum's form)
    and `info`, the Plan (print it; `.flops`, `.largest_bytes`, `.peak_bytes`) with
    `.sliced_indices` (the indices sliced to stay within `memory_limit`, in the caller's
    symbols). `shapes=True`: the operands are shapes, as in opt_einsum.contract_path. Memory
    is counted in float64 for shapes, else in the operands' dtype."""
    read = _read(operands, shapes=shapes)
    if shapes:
        sizes, item = tuple(tuple(int(n) for n in s) for s in read.given), _item([])
    else:
        arrays = _broadcast(read.spec, [np.asarray(a) for a in read.given])
        sizes, item = tuple(a.shape for a in arrays), _item(arrays)
    optimize = _optimiser(optimize, read.spec, sizes)
    prepared = _prepared(read.spec, sizes, optimize, memory_limit, executor, item)
    info = PathInfo(prepared.plan, read, sizes, prepared.sliced, prepared.peak)
    return info.path, info


def load_path(file) -> list[tuple[int, ...]]:
    """The path a `PathInfo.save` kept in `file` (JSON), to give as `optimize=`: a long
    search paid once. E600 when the file cannot be read or holds no path (its positions are
    checked against the contraction when it is used)."""
    try:
        with open(file, encoding="utf-8") as handle:
            path = json.load(handle)["path"]
        steps = [tuple(step) for step in path]
    except (OSError, ValueError, KeyError, TypeError, RecursionError) as err:
        raise ArgumentError("E600", f"no contraction path can be read from {str(file)!r}: "
                            f"{err}", nowhere(WHERE)) from None
    if not all(_is_position(i) and i < sys.maxsize for step in steps for i in step):
        raise ArgumentError("E600", f"{str(file)!r} holds no contraction path (a list of lists "
                            "of operand positions, whole numbers from 0)", nowhere(WHERE))
    return steps


def _is_position(i) -> bool:
    """Whether `i` can be an operand's position in a path: a whole number from 0 (not a bool)."""
    return isinstance(i, int) and not isinstance(i, bool) and i >= 0


def contract_expression(subscripts, *shapes, optimize="auto", memory_limit=None,
                        executor: str = "numba") -> Expression:
    """A reusable contraction for operands of these shapes (opt_einsum.contract_expression):
    planned now (sliced over `memory_limit`, counted in float64), compiled when first called
    (or by `.build()`)."""
    read = _read((subscripts, *shapes), shapes=True)
    sizes = tuple(tuple(int(n) for n in s) for s in read.given)
    optimize = _optimiser(optimize, read.spec, sizes)
    return Expression(_prepared(read.spec, sizes, optimize, memory_limit, executor, _item([])))


class PathInfo:
    """What contract_path says of a contraction: hilbert's plan (of one slice, when sliced),
    the FLOPs (of every slice), the largest intermediate, the peak memory (the plan's; with a
    memory_limit, what the limit is held to: the operands and the intermediates alive at the
    fullest step, of one slice), and the indices sliced (in the caller's symbols), the number
    of slices and the FLOPs overhead."""

    def __init__(self, plan: Plan, read: _Read, shapes: tuple,
                 sliced: slicing.Sliced | None = None, peak: int | None = None):
        self.plan = plan
        self.path = [tuple(step) for step in _path_of(plan)]
        self.subscripts = read.theirs
        self.shapes = shapes
        self.sliced = sliced
        self.flops = sliced.flops if sliced else plan.flops
        self.largest_bytes = plan.largest_bytes
        self.peak_bytes = plan.peak_bytes if peak is None else peak
        self._symbols = read.symbols
        self.sliced_indices: tuple[str, ...] = tuple(
            self._symbols[ch] for ch in (sliced.indices if sliced else ()))
        self.slices = sliced.count if sliced else 1
        self.flops_overhead = sliced.overhead if sliced else 1.0

    def save(self, file) -> None:
        """Keep the path in `file` (a small JSON file, with the subscripts, shapes, FLOPs and
        sliced indices it was found for): `load_path(file)` gives it back as `optimize=`."""
        data = {"subscripts": self.subscripts, "shapes": [list(s) for s in self.shapes],
                "path": [list(step) for step in self.path], "flops": self.flops,
                "sliced_indices": list(self.sliced_indices)}
        with open(file, "w", encoding="utf-8") as handle:
            json.dump(data, handle, ensure_ascii=False, indent=1)

    def __str__(self) -> str:
        if self.sliced is None:
            return str(self.plan)
        return f"{self.plan}\n{self.sliced.describe(self._symbols)}"

    __repr__ = __str__


class Expression:
    """A contraction for fixed operand shapes: call it with arrays of those shapes."""

    def __init__(self, prepared: _Prepared):
        self._prepared = prepared
        self.function = prepared.function
        self.shapes = prepared.shapes
        self.spec = prepared.spec
        self.sliced = prepared.sliced

    def __call__(self, *arrays):
        if len(arrays) != len(self.shapes):
            raise ArgumentError("E600", f"this contraction takes {len(self.shapes)} operand(s), "
                                f"not {len(arrays)}", nowhere(WHERE))
        for k, (array, shape) in enumerate(zip(arrays, self.shapes, strict=True)):
            if np.shape(array) != shape:
                raise ArgumentError("E600", f"operand {k} has shape {np.shape(array)}; this "
                                    f"contraction was made for {shape}", nowhere(WHERE))
        return self._prepared([np.asarray(a) for a in arrays])

    @property
    def _called_shapes(self) -> tuple[tuple[int, ...], ...]:
        return self.sliced.shapes if self.sliced else self.shapes

    @property
    def plan(self) -> Plan:
        """The plan of the contraction (of one slice, when sliced)."""
        return self.function.plan(*self._called_shapes)

    def build(self) -> Plan:
        """Compile now (the numba executor), so the first call waits for nothing."""
        return self.function.build(*self._called_shapes)

    def benchmark(self, repeat: int = 5):
        """Function.benchmark on these shapes (one slice's, when sliced): each path optimiser's
        planning, first and warm call, beside numpy.einsum."""
        return self.function.benchmark(*self._called_shapes, repeat=repeat)


@dataclass(frozen=True)
class _Read:
    """Subscripts read: `spec` in .hb's explicit form, `theirs` the same in the caller's
    symbols, and the operands (or shapes) given."""

    spec: str
    theirs: str
    given: list

    @property
    def symbols(self) -> dict[str, str]:
        """Each letter of `spec` → the caller's symbol."""
        return dict(zip(self.spec, self.theirs, strict=True))


def _read(operands: tuple, shapes: bool) -> _Read:
    """The contraction's subscripts in .hb's explicit form, axes renamed a, b, …, z, A, …, Z
    and further letters (any number of them: einsum_spec.letters), and its operands (or
    shapes)."""
    if not operands:
        raise ArgumentError("E600", "einsum needs subscripts and operands", nowhere(WHERE))
    try:
        inputs, output, given = parse_einsum_input(list(operands), shapes=shapes)
    except (ValueError, TypeError, IndexError, KeyError) as err:
        raise CheckError("E300", f"these einsum subscripts cannot be read: {err}",
                         nowhere(WHERE)) from None
    theirs = f"{inputs}->{output}"
    return _Read(lettered(theirs), theirs, list(given))


def _broadcast(spec: str, arrays: list) -> list:
    """The operands with each axis of length 1 stretched (a view, nothing copied) to its
    letter's length in the other operands, as numpy.einsum broadcasts them; lengths that
    differ otherwise are left for the compiler to refuse (E305)."""
    terms = spec.split("->")[0].split(",")
    if len(terms) != len(arrays) or any(len(t) != a.ndim for t, a in zip(terms, arrays, strict=True)):
        return arrays  # (a count or rank that does not fit: the compiler says so)
    size: dict[str, int] = {}
    for term, a in zip(terms, arrays, strict=True):
        for ch, n in zip(term, a.shape, strict=True):
            size[ch] = n if size.get(ch, 1) == 1 else size[ch]
    return [a if all(n != 1 or size[ch] == 1 for ch, n in zip(term, a.shape, strict=True))
            else np.broadcast_to(a, tuple(n if n != 1 else size[ch]
                                          for ch, n in zip(term, a.shape, strict=True)))
            for term, a in zip(terms, arrays, strict=True)]


def _dtype(arrays: list) -> str:
    """The dtype hilbert computes the contraction of `arrays` in (float64 for shapes alone)."""
    return (dtypes.natural(np.result_type(*arrays)) if arrays else None) or dtypes.DEFAULT


def _item(arrays: list) -> int:
    """Bytes per entry of the contraction of `arrays` (float64's for shapes alone)."""
    return dtypes.itemsize(_dtype(arrays))


def _optimiser(optimize, spec: str, sizes: tuple):
    """`optimize` checked (an explicit path as a tuple of tuples, checked against the
    contraction: `_checked_path`). As in opt_einsum, True and None are "auto" and False is no
    path: one step over every operand."""
    if optimize is True or optimize is None:
        optimize = "auto"
    elif optimize is False:
        optimize = (tuple(range(len(sizes))),)
    if isinstance(optimize, list):
        optimize = tuple(tuple(step) if isinstance(step, (list, tuple)) else step
                         for step in optimize)
    check_optimiser(optimize, nowhere(WHERE), explicit=True)
    return _checked_path(optimize, spec, sizes) if is_path(optimize) else optimize


#: What a path is, for the messages that refuse one.
PATH_IS = ("a path lists the steps in order, each a tuple of the positions (from 0) of the "
           "operands it contracts among those left, its result going last: n operands take "
           "n − 1 steps of two, such as [(0, 1), (0, 1)] for three")


def _checked_path(path: tuple, spec: str, sizes: tuple) -> tuple:
    """An explicit path, checked against the contraction of `sizes`: E600 saying what a path
    is when it does not fit (`_path_problem`, then opt_einsum's own check). The empty path
    of a lone operand is its one path, [(0,)]; of several, a path that contracts nothing."""
    if not path and len(sizes) == 1:
        return ((0,),)
    problem = _path_problem(path, len(sizes))
    if problem is None:
        try:
            opt_einsum.contract_path(spec, *sizes, shapes=True, optimize=list(path))
        except (ValueError, TypeError, IndexError, OverflowError) as err:
            problem = str(err)
    if problem is not None:
        raise ArgumentError("E600", f"the path {str(list(path)):.80} does not fit this "
                            f"contraction of {len(sizes)} operand(s): {problem} ({PATH_IS})",
                            nowhere(WHERE))
    return path


def _path_problem(path: tuple, count: int) -> str | None:
    """What keeps `path` from contracting `count` operands to one, in plain words, or None."""
    if not path:
        return f"it has no steps, and {count} operands need {count - 1}"
    left = count
    for k, step in enumerate(path, start=1):
        if not step:
            return f"step {k} contracts nothing"
        if not all(_is_position(i) for i in step):
            return f"step {k} {str(step):.40} holds something other than a whole number from 0"
        if len(set(step)) < len(step):
            return f"step {k} {str(step):.40} names an operand twice"
        if (most := max(step)) >= left:
            named = most if most < 10**9 else f"{most:.3g}"
            return (f"step {k} names position {named}, where {left} operand(s) are "
                    f"left (positions 0 to {left - 1})")
        left += 1 - len(step)
    return None if left == 1 else f"it leaves {left} operands, not one"


@functools.lru_cache(maxsize=256)
def _module(spec: str, count: int, executor: str):
    names = ", ".join(f"x{k}" for k in range(count))
    return compile_source(f'fn contract({names}) ↦ einsum("{spec}", {names})\n',
                          name=f"<einsum {spec}>", executor=executor)


@functools.lru_cache(maxsize=256)
def compiled(spec: str, count: int, executor: str, optimize) -> Function:
    """The compiled contraction (once per process for each spec, executor and optimiser: a
    Function keeps its plans and compiled programs per set of shapes)."""
    base = _module(spec, count, executor).contract
    return Function(base.entry, base.module, executor, optimize)


@dataclass(frozen=True)
class _Prepared:
    """A contraction made ready for operands of `shapes`: its compiled function (of one slice,
    when sliced), plan, slicing or None, peak bytes (with a memory limit) and path; calling it
    runs it on arrays, the slices on threads, or as dask tasks with executor="dask"."""

    spec: str
    shapes: tuple
    function: Function
    plan: Plan
    sliced: slicing.Sliced | None
    peak: int | None
    path: tuple
    executor: str

    def __call__(self, arrays: list):
        if self.sliced is None:
            value = self.function(*arrays)
        elif self.executor == "dask":
            value = slicing.run_tasks(arrays, self.spec, self.sliced, self.path)
        else:
            value = slicing.run(self.function, arrays, self.spec, self.sliced)
        # (a scalar as numpy.einsum gives it: a NumPy scalar of the computation's dtype)
        return value if isinstance(value, np.ndarray) else np.dtype(_dtype(arrays)).type(value)


def _prepared(spec: str, sizes: tuple, optimize, memory_limit, executor: str,
              item: int) -> _Prepared:
    """The contraction made ready: sliced when, along its path, it needs more than
    `memory_limit` bytes (entries of `item` bytes, counted by slicing.estimate); E700 when
    even slicing every summed index would not bring it under."""
    peak, path = None, ()
    if memory_limit is not None:
        limit = _bytes(memory_limit)
        path = optimize if is_path(optimize) else tuple(
            tuple(step) for step in contraction(spec, sizes, optimize)[0])
        peak = slicing.estimate(spec, sizes, path, item)[1]
    if peak is None or peak <= limit:
        function = compiled(spec, len(sizes), executor, optimize)
        return _Prepared(spec, sizes, function, function.plan(*sizes), None, peak, path,
                         executor)
    try:
        sliced = slicing.choose(spec, sizes, path, limit, item)
    except ValueError as err:
        raise RuntimeHilbertError(
            "E700", f"this contraction cannot be brought under memory_limit={memory_limit!r} "
            f"by slicing: {err}", nowhere(WHERE)) from None
    assert sliced is not None  # (over the limit: sliced, or refused)
    function = compiled(sliced.spec, len(sizes), executor, path)
    return _Prepared(spec, sizes, function, function.plan(*sliced.shapes), sliced,
                     sliced.peak_bytes, path, executor)


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
