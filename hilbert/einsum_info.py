"""What contract_path says of a contraction (`PathInfo`): hilbert's plan, and opt_einsum's
account of the same path (its PathInfo's attributes: the steps in the caller's symbols, each
step's FLOPs, size, scaling and kernel, the naive and optimised costs), read from hilbert's plan
and counted as opt_einsum counts them (docs/networks.md, "What contract_path says")."""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal

from hilbert.compiler.plan import Plan

from . import slicing

#: opt_einsum keeps each step's remaining terms only while there are at most this many.
REMAINING_KEPT = 20


@dataclass(frozen=True)
class Step:
    """One step of the path as opt_einsum's `contraction_list` holds it (in the caller's
    symbols): the operand positions (highest first), the indices summed away, the step's
    subscripts, the terms left after it (None past REMAINING_KEPT), and its BLAS kernel (or
    False); with its FLOPs, result size (entries) and scaling (indices it runs over)."""

    positions: tuple[int, ...]
    removed: frozenset[str]
    subscripts: str
    remaining: tuple[str, ...] | None
    blas: str | bool
    flops: int
    size: int
    scale: int

    def as_tuple(self) -> tuple:
        """The row as opt_einsum's contraction_list holds it."""
        return (self.positions, self.removed, self.subscripts, self.remaining, self.blas)


def path_of(plan: Plan) -> tuple:
    """The path of the plan's one einsum (none for a contraction with no einsum left)."""
    return plan.einsums[0].path if plan.einsums else ()


def steps(plan: Plan, inputs: list[str], output: str, symbols: dict[str, str]) -> list[Step]:
    """The steps of `plan`'s einsum along its path, in the caller's symbols (`symbols`: each
    letter of the plan's → the caller's), the terms `inputs` walked as opt_einsum walks them."""
    if not plan.einsums:
        return []
    terms = list(inputs)
    found = []
    # (strict=False: a path the planner gives empty, for a lone operand, reads as no step)
    for positions, step in zip(plan.einsums[0].path, plan.einsums[0].steps, strict=False):
        ins, out = step.spec.split("->")
        theirs = ",".join("".join(symbols.get(ch, ch) for ch in t) for t in ins.split(","))
        result = "".join(symbols.get(ch, ch) for ch in out)
        for k in sorted(positions, reverse=True):
            terms.pop(k)
        terms.append(result)
        letters = set(theirs) - {","}
        found.append(Step(tuple(sorted(positions, reverse=True)), frozenset(letters - set(result)),
                          f"{theirs}->{result}",
                          tuple(terms) if len(terms) <= REMAINING_KEPT else None,
                          step.blas or False, step.flops, step.intermediate, len(letters)))
    return found


def naive_flops(inputs: list[str], sizes: dict[str, int]) -> int:
    """opt_einsum's naive cost: one pass over every index at once, a multiply per operand
    beyond the first, and an add when any index is summed."""
    indices = set("".join(inputs))
    summed = sum(len(set(t)) for t in inputs) > len(indices)
    per_entry = max(len(inputs) - 1, 1) + (1 if summed else 0)
    return math.prod(sizes[ch] for ch in indices) * per_entry


class PathInfo:
    """What contract_path says of a contraction: hilbert's plan (of one slice, when sliced),
    the FLOPs (of every slice), the largest intermediate, the peak memory (the plan's; with a
    memory_limit, what the limit is held to: the operands and the intermediates alive at the
    fullest step, of one slice), and the indices sliced (in the caller's symbols), the number
    of slices and the FLOPs overhead. opt_einsum's attributes (`eq`, `contraction_list`,
    `opt_cost`, `naive_cost`, `speedup`, `size_list`, `scale_list`, `largest_intermediate`,
    `size_dict`, …) describe the whole contraction along the same path."""

    def __init__(self, plan: Plan, theirs: str, shapes: tuple, symbols: dict[str, str],
                 sliced: slicing.Sliced | None = None, peak: int | None = None,
                 whole: Callable[[], Plan] | None = None):
        self.plan = plan
        self.path = [tuple(step) for step in path_of(plan)]
        self.subscripts = theirs
        self.shapes = shapes
        self.sliced = sliced
        self.flops = sliced.flops if sliced else plan.flops
        self.largest_bytes = plan.largest_bytes
        self.peak_bytes = plan.peak_bytes if peak is None else peak
        self._symbols = symbols
        self._whole = whole or (lambda: plan)  # (the unsliced plan, made when first asked)
        self.sliced_indices: tuple[str, ...] = tuple(
            self._symbols[ch] for ch in (sliced.indices if sliced else ()))
        self.slices = sliced.count if sliced else 1
        self.flops_overhead = sliced.overhead if sliced else 1.0
        self.input_subscripts, self.output_subscript = theirs.split("->")
        self.eq = theirs

    @functools.cached_property
    def _steps(self) -> list[Step]:
        return steps(self._whole(), self.input_subscripts.split(","), self.output_subscript,
                     self._symbols)

    @functools.cached_property
    def size_dict(self) -> dict[str, int]:
        """Each index's size (the largest, where an operand broadcasts it from 1)."""
        sizes: dict[str, int] = {}
        for term, shape in zip(self.input_subscripts.split(","), self.shapes, strict=True):
            for ch, n in zip(term, shape, strict=True):
                sizes[ch] = max(sizes.get(ch, n), n) if n != 1 else sizes.get(ch, 1)
        return sizes

    @property
    def indices(self) -> frozenset[str]:
        return frozenset(self.input_subscripts.replace(",", ""))

    @property
    def contraction_list(self) -> list[tuple]:
        return [s.as_tuple() for s in self._steps]

    @property
    def size_list(self) -> list[int]:
        return [s.size for s in self._steps]

    @property
    def scale_list(self) -> list[int]:
        return [s.scale for s in self._steps]

    @property
    def opt_cost(self) -> Decimal:
        """The path's FLOPs as opt_einsum counts them (the plan's, unsliced)."""
        return Decimal(sum(s.flops for s in self._steps))

    @property
    def naive_cost(self) -> Decimal:
        return Decimal(naive_flops(self.input_subscripts.split(","), self.size_dict))

    @property
    def speedup(self) -> Decimal:
        return self.naive_cost / max(self.opt_cost, Decimal(1))

    @property
    def largest_intermediate(self) -> Decimal:
        """Entries of the largest intermediate (1 with no step), as opt_einsum counts it."""
        return Decimal(max(self.size_list, default=1))

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

    def _repr_html_(self) -> str:
        """The path as a notebook shows it: each step with its FLOPs, the peak memory
        (hilbert/display.py)."""
        from .display import path_info_html

        return path_info_html(self)

    def draw(self, figure=None):
        """The path's contraction tree as a matplotlib Figure: each step with its FLOPs
        (compiler/plan/drawing.py)."""
        from hilbert.compiler.plan.drawing import draw

        return draw(self, figure)


def describe_expression(subscripts: str, shapes: tuple, constants: tuple[int, ...],
                        plan_steps: list[Step]) -> tuple[str, str]:
    """(repr, str) of a contract_expression: its subscripts as given, the shapes and the
    constant operands; str adds each step of its path (subscripts and BLAS kernel)."""
    const = f", constants={list(constants)}" if constants else ""
    head = f"<hilbert.contract_expression({subscripts!r}, shapes={list(shapes)}{const})>"
    lines = [head] + [f"  {k}. {s.subscripts!r}" + (f" [{s.blas}]" if s.blas else "")
                      for k, s in enumerate(plan_steps, 1)]
    return head, "\n".join(lines)
