"""The API opt_einsum's and NumPy's users know, over hilbert's planner and executors:
`einsum(subscripts, *operands)`, `contract_path(subscripts, *operands)`,
`contract_expression(subscripts, *shapes)` and `einsum_path(subscripts, *operands)`.

Subscripts are read as numpy.einsum reads them (opt_einsum.parser): an explicit output or an
implicit one (the letters that occur once, in order), `...` for broadcast axes, and the
interleaved form `einsum(a, [0, 1], b, [1, 2], [0, 2])`. Each is written as the .hb function
`fn contract(x0, x1, …) ↦ einsum("…", x0, x1, …)` with its axes renamed a, b, … in order
of first appearance, compiled once per process (`compiled`), and called: planned once per
set of shapes and compiled as any hilbert function is (HILBERT_COMPILE: before its first
call by default; docs/architecture.md, "Tiers").

`optimize` takes a path optimiser's name (hilbert's: auto, greedy, dp, …), an explicit path
(opt_einsum's form, a list of operand-position tuples, used exactly as given) or an
opt_einsum PathOptimizer object (cotengra's HyperOptimizer is one). Any number of indices:
past a–z, A–Z the axes are named by further Unicode letters. `memory_limit` (bytes, or text
such as "500M"): a contraction whose path needs more is sliced (hilbert/slicing.py), and one
that cannot be brought under it is refused (E700).

Around that core, each front door reads NumPy's and opt_einsum's ways of calling it
(einsum_input: subscripts, shapes, constants, broadcasting, their `optimize` and
`memory_limit` forms), their keywords (einsum_options: `out`, `dtype`, `order`, `casting`,
`use_blas`, `backend`), the dtype of the answer (einsum_dtypes: integers, booleans and long
double computed exactly by NumPy along hilbert's path), the operands' own array library
(einsum_arrays: torch, JAX, dask), opt_einsum's account of the path (einsum_info); and its
errors are also the built-in exceptions NumPy raises (grammar/errors.as_numpys).
"""

from __future__ import annotations

import functools
import json
import math
import sys
from dataclasses import dataclass

import opt_einsum

from hilbert.compiler import dtypes
from hilbert.compiler.plan import Plan, check_optimiser, is_path, size_in_bytes
from hilbert.compiler.plan.paths import contraction
from hilbert.grammar.errors import (
    ArgumentError,
    ArgumentValueError,
    HilbertError,
    PathError,
    RuntimeHilbertError,
    as_numpys,
)
from hilbert.grammar.source import nowhere

from . import einsum_arrays, einsum_dtypes, einsum_input, einsum_options, slicing
from .api import Function
from .einsum_compiled import compiled
from .einsum_dtypes import Kind
from .einsum_info import PathInfo, describe_expression, path_of, steps

WHERE = "hilbert.einsum"

__all__ = ["Expression", "PathInfo", "compiled", "contract_expression", "contract_path",
           "einsum", "einsum_path", "load_path"]


def _numpys_errors(front):
    """`front` (a front door of the einsum API) with its E3xx and E600/E601 raised as the
    classes that are also the built-in exception NumPy raises for the same mistake
    (grammar/errors.as_numpys)."""

    @functools.wraps(front)
    def door(*args, **kwargs):
        try:
            return front(*args, **kwargs)
        except HilbertError as err:
            converted = as_numpys(err)
            if converted is err:
                raise
            raise converted.with_traceback(err.__traceback__) from None

    return door


@_numpys_errors
def einsum(*operands, out=None, dtype=None, order="K", casting="safe", optimize="auto",
           memory_limit=None, use_blas=True, backend="auto", executor: str = "numba"):
    """numpy.einsum's and opt_einsum.contract's contraction, planned and run by hilbert; over
    `memory_limit`, sliced (hilbert/slicing.py). `out`, `dtype`, `order` and `casting` mean
    what they mean to numpy.einsum; `use_blas` and `backend` are opt_einsum's (hilbert picks
    each step's kernel itself, and answers in the operands' own array type).

    >>> einsum("ij,jk", [[1.0, 2.0]], [[3.0], [4.0]])
    array([[11.]])
    """
    options = einsum_options.checked(out, dtype, order, casting, backend)
    read = einsum_input.read(operands, shapes=False)
    library = einsum_arrays.library_of(read.given)
    arrays = einsum_options.cast(einsum_arrays.arrays(read.given, library), options)
    arrays = einsum_input.broadcast(read.spec, arrays)
    kind = einsum_dtypes.chosen(arrays, options.dtype)
    sizes = tuple(a.shape for a in arrays)
    optimize, memory_limit = einsum_input.theirs(optimize, memory_limit, read.spec, sizes)
    optimize = _checked_optimiser(optimize, read.spec, sizes)
    prepared = _prepared(read.spec, sizes, optimize, memory_limit, executor, kind.itemsize)
    return _answer(prepared, read.given, arrays, kind, options, library)


@_numpys_errors
def contract_path(*operands, shapes: bool = False, optimize="auto", memory_limit=None,
                  use_blas=True, executor: str = "numba"):
    """`(path, info)` for the contraction: the path hilbert's plan takes (opt_einsum's form)
    and `info`, a PathInfo: the Plan (print it; `.flops`, `.largest_bytes`, `.peak_bytes`),
    `.sliced_indices` (the indices sliced to stay within `memory_limit`, in the caller's
    symbols), and opt_einsum's attributes (`opt_cost`, `contraction_list`, …). `shapes=True`:
    the operands are shapes, as in opt_einsum.contract_path. Memory is counted in float64 for
    shapes, else in what the operands compute in."""
    read = einsum_input.read(operands, shapes=shapes)
    if shapes:
        sizes = einsum_input.stretched(read.spec, einsum_input.shapes_of(read.given))
        kind = einsum_dtypes.SHAPES_ONLY
    else:
        library = einsum_arrays.library_of(read.given)
        arrays = einsum_input.broadcast(read.spec, einsum_arrays.arrays(read.given, library))
        sizes, kind = tuple(a.shape for a in arrays), einsum_dtypes.chosen(arrays)
    optimize, memory_limit = einsum_input.theirs(optimize, memory_limit, read.spec, sizes)
    optimize = _checked_optimiser(optimize, read.spec, sizes)
    prepared = _prepared(read.spec, sizes, optimize, memory_limit, executor, kind.itemsize)
    whole = None if prepared.sliced is None else functools.partial(
        compiled(read.spec, len(sizes), executor, prepared.path).plan, *sizes)
    info = PathInfo(prepared.plan, read.theirs, sizes, read.symbols, prepared.sliced,
                    prepared.peak, whole)
    return info.path, info


def einsum_path(*operands, optimize="greedy"):
    """numpy.einsum_path's answer from hilbert's planner: `(["einsum_path", *path], text)`,
    the path as NumPy writes it (give it to einsum as `optimize=`) and the plan as text. As in
    NumPy, `optimize=True` is "greedy", a search keeps every intermediate within the largest
    operand's (or the result's) size, and `(optimiser, limit)` within `limit` entries."""
    if optimize is True:
        optimize = "greedy"
    searched = isinstance(optimize, str) or isinstance(optimize, opt_einsum.paths.PathOptimizer)
    path, info = contract_path(*operands, optimize=optimize,
                               memory_limit="max_input" if searched else None)
    return ["einsum_path", *path], str(info)


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


@_numpys_errors
def contract_expression(subscripts, *shapes, constants=None, optimize="auto",
                        memory_limit=None, use_blas=True, dtype=None, order="K",
                        casting="safe", out=None, backend=None,
                        executor: str = "numba") -> Expression:
    """A reusable contraction for operands of these shapes (opt_einsum.contract_expression):
    planned now (sliced over `memory_limit`, counted in float64), compiled when first called
    (or by `.build()`). `constants`: the positions whose entry in `shapes` is the operand
    itself, kept by the expression (it is then called with the others). `dtype`, `order` and
    `casting` apply to every call; `out` and `backend` are given to the call, not here."""
    for name, value in (("out", out), ("backend", backend)):
        if value is not None:
            raise ArgumentValueError("E600", f"{name}= is given when calling the "
                                     f"expression, not when making it", nowhere(WHERE))
    options = einsum_options.checked(None, dtype, order, casting)
    read = einsum_input.read((subscripts, *shapes), shapes=True, constants=constants)
    kept = {k: read.given[k] for k in read.constants}
    given = einsum_input.shapes_of(read.given)
    sizes = einsum_input.stretched(read.spec, given)
    optimize, memory_limit = einsum_input.theirs(optimize, memory_limit, read.spec, sizes)
    optimize = _checked_optimiser(optimize, read.spec, sizes)
    prepared = _prepared(read.spec, sizes, optimize, memory_limit, executor,
                         einsum_dtypes.SHAPES_ONLY.itemsize)
    shown = subscripts if isinstance(subscripts, str) else read.theirs
    return Expression(prepared, read, shown, given, kept, options)


class Expression:
    """A contraction for fixed operand shapes: call it with arrays of those shapes (less the
    constants it keeps), optionally `out=` (a NumPy array to write into) and `backend=`
    (opt_einsum's `evaluate_constants=` is taken: the constants join each call as given)."""

    def __init__(self, prepared: _Prepared, read: einsum_input.Read, shown: str, shapes: tuple,
                 constants: dict, options: einsum_options.Options):
        self._prepared = prepared
        self._read = read
        self._constants = constants
        self._options = options
        self.function = prepared.function
        self.shapes = shapes
        self.spec = prepared.spec
        self.sliced = prepared.sliced
        self.contraction = shown
        steps_taken = steps(prepared.plan, *read.terms, read.symbols)
        self.contraction_list = [s.as_tuple() for s in steps_taken]
        self._repr, self._str = describe_expression(shown, shapes, tuple(sorted(constants)),
                                                    steps_taken)

    @_numpys_errors
    def __call__(self, *arrays, out=None, backend="auto", evaluate_constants=False):
        options = einsum_options.checked(out, self._options.dtype, self._options.order,
                                         self._options.casting, backend)
        given = self._merged(arrays)
        library = einsum_arrays.library_of(given)
        found = einsum_arrays.arrays(given, library)
        for k, (array, shape) in enumerate(zip(found, self.shapes, strict=True)):
            if array.shape != shape:
                raise ArgumentValueError("E600", f"operand {k} has shape {array.shape}; this "
                                         f"contraction was made for {shape}", nowhere(WHERE))
        found = einsum_input.broadcast(self.spec, einsum_options.cast(found, options))
        kind = einsum_dtypes.chosen(found, options.dtype)
        return _answer(self._prepared, given, found, kind, options, library)

    def _merged(self, arrays: tuple) -> list:
        """The operands in order: those given, with the kept constants in their places."""
        wanted = len(self.shapes) - len(self._constants)
        if len(arrays) != wanted:
            raise ArgumentValueError("E600", f"this contraction takes {wanted} operand(s), not "
                                     f"{len(arrays)}", nowhere(WHERE))
        given = iter(arrays)
        return [self._constants[k] if k in self._constants else next(given)
                for k in range(len(self.shapes))]

    def __repr__(self) -> str:
        return self._repr

    def __str__(self) -> str:
        return self._str

    @property
    def _called_shapes(self) -> tuple[tuple[int, ...], ...]:
        return self.sliced.shapes if self.sliced else self._prepared.shapes

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


def _checked_optimiser(optimize, spec: str, sizes: tuple):
    """`_optimiser`'s answer; its E600 for an explicit path that does not fit the contraction
    as a PathError (a ValueError, as opt_einsum raises, and a RuntimeError, as NumPy does)."""
    try:
        checked = _optimiser(optimize, spec, sizes)
    except ArgumentError as err:
        if not einsum_input.explicit_path(optimize):
            raise
        raise PathError(err.code, err.message, err.span, err.notes) from None
    return checked


def _answer(prepared: _Prepared, given: list, arrays: list, kind: Kind,
            options: einsum_options.Options, library: einsum_arrays.Library):
    """The contraction's answer for the operands `given` (`arrays`: NumPy's views of them,
    broadcast), in `kind`, finished as `options` ask, in the operands' own library (through
    its bridge where the call stays in it: a gradient recorded, a trace, a dask graph)."""
    if library.lazy and (kind.computed is not None or library.name == "jax"):
        if prepared.sliced is not None or options.out is not None:
            what = "memory_limit= (slicing)" if prepared.sliced else "out="
            raise ArgumentValueError(
                "E600", f"{what} cannot be used on {library.name} operands that stay in their "
                f"library (a gradient, a trace, a dask graph): leave it out, or give NumPy "
                f"arrays (docs/interop.md)", nowhere(WHERE))
        return einsum_arrays.bridged(prepared.function, given, prepared.shapes, library,
                                     kind.computed or "float64", kind.result)
    if library.lazy:  # (integers NumPy computes exactly: the operands are read now)
        arrays = einsum_input.broadcast(prepared.spec, einsum_options.cast(
            einsum_arrays.materialised(given), options))
    answer = einsum_options.finished(prepared(arrays, kind), kind, options, arrays)
    return answer if options.out is not None else einsum_arrays.returned(answer, library)


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

    def __call__(self, arrays: list, kind: Kind):
        if kind.computed is None:  # (NumPy's integers, booleans or long double, exact)
            path = self.path or path_of(self.plan)
            one = functools.partial(_exact, self.sliced.spec if self.sliced else self.spec,
                                    path=path, kind=kind)
            return one(*arrays) if self.sliced is None else \
                slicing.run(one, arrays, self.spec, self.sliced)
        wanted = dtypes.DTYPES[kind.computed]
        arrays = [a if a.dtype is wanted else a.astype(wanted) for a in arrays]
        if self.sliced is None:
            return self.function(*arrays)
        if self.executor == "dask":
            return slicing.run_tasks(arrays, self.spec, self.sliced, self.path)
        return slicing.run(self.function, arrays, self.spec, self.sliced)


def _exact(spec: str, *arrays, path: tuple, kind: Kind):
    return einsum_dtypes.exact(spec, list(arrays), path, kind)


def _prepared(spec: str, sizes: tuple, optimize, memory_limit, executor: str,
              item: int) -> _Prepared:
    """The contraction made ready: sliced when, along its path, it needs more than
    `memory_limit` bytes (entries of `item` bytes, counted by slicing.estimate); E700 when
    even slicing every summed index would not bring it under."""
    peak: int | None = None
    path: tuple = ()
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
