"""Contraction paths: the path optimisers hilbert offers, and opt_einsum's path and per-step
costs for one einsum on given shapes (searched once per spec, shapes and optimiser)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import opt_einsum
from opt_einsum.helpers import flop_count

from ..ops.einsum_spec import parse_spec
from ..ops.shape_rules import Shape
from . import hyper

OPTIMISERS = ("auto", "auto-hq", "optimal", "dp", "greedy", "branch-all", "branch-2",
              "branch-1", "random-greedy", "random-greedy-128", "dynamic-programming", "eager",
              "opportunistic", "hyper", "cotengra")
#: Names of a hyper-optimised search with the default budget ("cotengra": its older name).
HYPER_NAMES = ("hyper", "cotengra")
#: Optimisers whose search grows factorially with the operand count, and the most operands
#: each is given: beyond it (ten chained layers fuse into an eleven-operand einsum) they would
#: not finish, so the einsum is planned with `dp`, which finds the same optimum on such specs.
EXHAUSTIVE = {"optimal": 8, "branch-all": 8, "branch-2": 12}
FALLBACK = "dp"


@dataclass(frozen=True, slots=True)
class ContractStep:
    """One pairwise (or single-operand) step of a contraction path."""

    spec: str
    flops: int
    intermediate: int  # elements of this step's result
    blas: str  # the BLAS kernel opt_einsum would use, or '' if none


def check_optimiser(optimize, span, explicit: bool = False) -> None:
    """An ArgumentError unless `optimize` names a path optimiser that can be used here; with
    `explicit` (a function of one einsum: hilbert.einsum), also an explicit path (a tuple of
    tuples of operand positions, used as it is) or an opt_einsum PathOptimizer object."""
    from ...grammar.errors import ArgumentError

    if explicit and (is_path(optimize) or isinstance(optimize, opt_einsum.paths.PathOptimizer)):
        return
    if not isinstance(optimize, hyper.Hyper) and (not isinstance(optimize, str)
                                                  or optimize not in OPTIMISERS):
        raise ArgumentError("E600", f"unknown path optimiser {optimize!r} (choose from "
                            f"{', '.join(OPTIMISERS)}, or a hilbert.Hyper budget)", span)
    if (isinstance(optimize, hyper.Hyper) or optimize in HYPER_NAMES) and not hyper.installed():
        raise ArgumentError("E600", "hyper-optimised paths need cotengra, which is not "
                            "installed (pip install 'hilbert[networks]')", span)


def is_path(optimize) -> bool:
    """Whether `optimize` is an explicit path: a tuple of tuples of operand positions."""
    return isinstance(optimize, tuple) and all(
        isinstance(step, tuple) and all(isinstance(i, int) for i in step) for step in optimize)


def optimiser_name(optimize) -> str:
    """How a plan names `optimize`: its name, "explicit path", or the optimiser's class."""
    if isinstance(optimize, str):
        return optimize
    if isinstance(optimize, hyper.Hyper):
        return optimize.describe()
    return "explicit path" if is_path(optimize) else type(optimize).__name__


def _search(spec: str, shapes: tuple[Shape, ...], optimize) -> tuple[hyper.Search, str] | None:
    """The hyper-optimised search `optimize` asks for on this einsum (and what led to it), or
    None: a Hyper budget or its names ask for one, and "auto" does where it pays (a large
    network, hyper.may_search, whose greedy path costs more than hyper.AUTO_FLOPS). Never on
    an einsum `_searchable` leaves out (`_choice` plans those)."""
    if not _searchable(shapes):
        return None
    if isinstance(optimize, hyper.Hyper):
        return hyper.search(spec, shapes, optimize), ""
    if optimize in HYPER_NAMES:
        return hyper.search(spec, shapes, hyper.Hyper()), ""
    if optimize == "auto" and hyper.may_search(len(shapes)):
        greedy = sum(s.flops for s in contraction(spec, shapes, "greedy")[1])
        if greedy > hyper.AUTO_FLOPS:
            budget = hyper.AUTO_BUDGET
            return hyper.search(spec, shapes, budget), (
                f"auto: greedy's path would cost {greedy:,} FLOPs, so a search was run "
                f"({budget.describe()}); ")
    return None


def _searchable(shapes: tuple[Shape, ...]) -> bool:
    """Whether a search may run on an einsum of these operand shapes: two operands or more
    (one has one path), and no axis of size 0 (cotengra's cost model divides by sizes)."""
    return len(shapes) >= 2 and not _empty(shapes)


def _empty(shapes: tuple[Shape, ...]) -> bool:
    """Whether an axis has size 0 (the einsum's value is empty, or zeros)."""
    return any(n == 0 for shape in shapes for n in shape)


#: The plan's notes on an einsum with an axis of size 0 that a search would have planned, and
#: one on which dp found no path.
UNSEARCHED = ("an axis has size 0 (the value is empty, or zeros), where a search cannot run (its "
              "cost model divides by sizes): this path is opt_einsum's auto")
FELL_BACK = ("an axis has size 0 (the value is empty, or zeros), where {0} finds no path (its "
             "cost cap, a product of sizes, stays 0): this path is opt_einsum's {1}")


def _choice(spec: str, shapes: tuple[Shape, ...], optimize) -> tuple[object, str]:
    """What opt_einsum is asked to plan `spec` with (an optimiser's name or object, or a path)
    for `optimize`, and the plan's note when there is more to say than the optimiser's name:
    a search's path, an exhaustive search capped (`capped`), or no search (`_searchable`)."""
    found = _search(spec, shapes, optimize)
    if found is not None:
        return list(found[0].path), found[1] + found[0].describe()
    searching = isinstance(optimize, hyper.Hyper) or optimize in HYPER_NAMES or not (
        isinstance(optimize, str) or is_path(optimize))  # (a PathOptimizer object searches)
    if searching and not _searchable(shapes):
        return "auto", UNSEARCHED if _empty(shapes) else ""
    return capped(optimize, len(shapes))


def searches(optimize) -> bool:
    """Whether planning with `optimize` may run a hyper-optimised search (so plans kept from
    before cotengra was installed, or after it was removed, are not given again)."""
    return isinstance(optimize, hyper.Hyper) or optimize in HYPER_NAMES or (
        optimize == "auto" and hyper.installed())


def note(spec: str, shapes: tuple[Shape, ...], optimize) -> str:
    """What the plan says of how this einsum's path was found, when there is more to say than
    the optimiser's name: an exhaustive search capped (`capped`), a hyper-optimised search and
    what it found, or a path planned otherwise for an axis of size 0."""
    contraction(spec, shapes, optimize)  # (what it fell back to, if anything, is known then)
    if (spec, shapes, optimize) in _FELL_BACK:
        return FELL_BACK.format(_FELL_BACK[spec, shapes, optimize], FELL_BACK_TO)
    return _choice(spec, shapes, optimize)[1]


def capped(optimize: str, operands: int) -> tuple[str, str]:
    """The optimiser to use for an einsum of `operands` operands, and a note when it is not
    the one asked for (an exhaustive search over too many operands)."""
    cap = EXHAUSTIVE.get(optimize) if isinstance(optimize, str) else None
    if cap is None or operands <= cap:
        return optimize, ""
    return FALLBACK, (f"{optimize} searches every order and would not finish on {operands} "
                      f"operands (it is used up to {cap}); this path is {FALLBACK}'s")


#: The einsums (spec, shapes, optimiser) whose optimiser found no path for an axis of size 0
#: (opt_einsum's dp: its cost cap, a product of sizes, stays 0), planned by FELL_BACK_TO: each
#: to the name opt_einsum was given.
_FELL_BACK: dict = {}
FELL_BACK_TO = "greedy"


@lru_cache(maxsize=4096)
def contraction(spec: str, shapes: tuple[Shape, ...], optimize: str):
    """opt_einsum's path and per-step costs for `spec` on `shapes` (cached), from `optimize`
    (a hyper-optimised search's path where it asks for one, `capped`'s fallback past its
    operand count: `_choice`). Sizes and costs are Python ints, exact however large (a NumPy
    int64 would wrap past 2⁶³)."""
    chosen = _choice(spec, shapes, optimize)[0]
    try:
        path, info = opt_einsum.contract_path(spec, *shapes, shapes=True, optimize=chosen)
    except RuntimeError:  # ("No contraction found for given `memory_limit`": dp on size 0)
        if not _empty(shapes) or is_path(optimize):
            raise
        _FELL_BACK[(spec, shapes, optimize)] = chosen
        path, info = opt_einsum.contract_path(spec, *shapes, shapes=True, optimize=FELL_BACK_TO)
    steps = []
    for (_, removed, step_spec, _, blas), size in zip(info.contraction_list, info.size_list, strict=True):
        inputs = step_spec.split("->")[0].split(",")
        letters = frozenset("".join(inputs))
        flops = flop_count(letters, bool(removed), len(inputs), info.size_dict)
        steps.append(ContractStep(step_spec, int(flops), int(size), blas or ""))
    if not steps:  # opt_einsum lists nothing for a lone operand that needs no work
        steps.append(ContractStep(spec, 0, elements(output_shape(spec, shapes)), ""))
    return tuple(tuple(p) for p in path), tuple(steps)


def output_shape(spec: str, shapes: tuple[Shape, ...]) -> Shape:
    """The shape of the einsum's value."""
    parsed = parse_spec(spec)
    sizes = {ch: n for term, shape in zip(parsed.inputs, shapes, strict=True) for ch, n in zip(term, shape, strict=True)}
    return tuple(sizes[ch] for ch in parsed.output)


def elements(shape: Shape) -> int:
    """The number of entries of `shape`, as an exact Python int."""
    return math.prod(int(n) for n in shape)
