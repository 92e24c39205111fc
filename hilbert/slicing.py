"""Slicing (issue 24, item 4): a contraction whose path needs more memory than its limit is run
as a sum of smaller contractions, each with some summed indices fixed to one value.

Fixing a summed index `k` of size n to each of its n values and adding the n results gives
the same sum; every intermediate that held `k` is then n times smaller. The slicer is greedy,
on the path already chosen (an explicit path is sliced, never re-planned): while one slice's
peak memory (its operands, and the intermediates alive at its fullest step, each freed once
read) is over the limit, it fixes the summed index, among those of the largest
intermediate, that lowers that peak most, ties going to the fewest FLOPs over all slices. Each
slice runs the same compiled contraction (its spec without the sliced letters, along the same
path); the results are added as they come, so no more than one slice's values and the running
sum are held at once.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from hilbert.compiler.ops.einsum_spec import parse_spec
from hilbert.compiler.plan.paths import contraction

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
    operands = sum(math.prod(s) for s in shapes)
    largest = max(steps, key=lambda s: s.intermediate)
    return sum(s.flops for s in steps), (operands + peak) * item, largest.spec.split("->")[1]


def choose(spec: str, shapes: Shapes, path: tuple, limit: int, item: int) -> Sliced | None:
    """The slicing that brings the contraction under `limit` bytes, None when it is under
    already; a ValueError when fixing every summed index would not, or would cost more than
    MAX_OVERHEAD times the FLOPs (its message says which)."""
    flops, peak, largest = estimate(spec, shapes, path, item)
    if peak <= limit:
        return None
    parsed = parse_spec(spec)
    size = {ch: n for term, s in zip(parsed.inputs, shapes, strict=True)
            for ch, n in zip(term, s, strict=True)}
    summed = [ch for ch in dict.fromkeys("".join(parsed.inputs))
              if ch not in parsed.output and size[ch] > 1]
    chosen: list[str] = []
    now = (flops, peak, largest)
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
            sliced_spec, sliced_shapes = without(spec, shapes, (*chosen, ch))
            f, p, big = estimate(sliced_spec, sliced_shapes, path, item)
            slices = math.prod(size[c] for c in (*chosen, ch))
            trials.append(((p, f * slices), ch, (f, p, big)))
        _, pick, now = min(trials)
        chosen.append(pick)
    sliced_spec, sliced_shapes = without(spec, shapes, tuple(chosen))
    sizes = tuple(size[ch] for ch in chosen)
    total = now[0] * math.prod(sizes)
    if total > MAX_OVERHEAD * max(flops, 1):
        raise ValueError(f"on this path it would take {math.prod(sizes):,} slices and "
                         f"{total / max(flops, 1):.3g} times the FLOPs (more than "
                         f"{MAX_OVERHEAD:g}): another path or a larger limit is needed")
    return Sliced(tuple(chosen), sizes, sliced_spec, sliced_shapes, total, flops, now[1], peak)


def without(spec: str, shapes: Shapes, letters: tuple[str, ...]) -> tuple[str, Shapes]:
    """`spec` and `shapes` with the axes of `letters` taken out (one slice's)."""
    parsed = parse_spec(spec)
    terms = ["".join(ch for ch in term if ch not in letters) for term in parsed.inputs]
    kept = tuple(tuple(n for ch, n in zip(term, s, strict=True) if ch not in letters)
                 for term, s in zip(parsed.inputs, shapes, strict=True))
    return ",".join(terms) + "->" + parsed.output, kept


def run(contract, arrays: list, spec: str, sliced: Sliced):
    """The sum over every slice of `contract` (one slice's contraction) on the operands' views
    at those index values."""
    terms = parse_spec(spec).inputs
    total = None
    for values in itertools.product(*map(range, sliced.sizes)):
        fixed = dict(zip(sliced.indices, values, strict=True))
        parts = [a[tuple(fixed.get(ch, slice(None)) for ch in term)]
                 if any(ch in fixed for ch in term) else a
                 for a, term in zip(arrays, terms, strict=True)]
        part = contract(*parts)
        total = part if total is None else total + part
    return total
