"""Whether a tensor network is compiled: the cost model's build time of the LLVM back end against
what compiled code saves a call over NumPy calls (issue 48, item 4).

A function whose contractions take more pairwise steps than NETWORK_STEPS, each of which
numpy.einsum can name, and which needs compiling for nothing else, can run either way: as one
compiled function, or as NumPy calls (a product or an einsum per step). Compiled, each step is
code of its own in one large function, so its build grows with the steps: Numba's front end
took minutes (280 steps: over ten; it was removed in issue 48), LLVM directly takes well under
a second a step. The
scheduler asks `weigh`, which decides from the model alone (no timing while it decides: the
same program is planned the same way in every process) and says why, for the plan.
"""

from __future__ import annotations

from dataclasses import dataclass

#: More pairwise steps than this make a function a tensor network, whose compiling is weighed
#: (`weigh`); a function with fewer is compiled wherever it needs to be, as its build is short
#: (the host tier runs its first calls meanwhile under HILBERT_COMPILE=background).
NETWORK_STEPS = 64
#: The build time of a compiled network (ns): per pairwise step, and per loop level of its loop
#: nests and copies into another axis order (a nest `depth` letters deep counts depth², as
#: LLVM's passes at level 3 grow faster than the nest). LLVM IR from the loop IR, fitted to
#: einsum_benchmark's networks built whole (2-core machine, loaded): a matrix product state's
#: 79 steps and 393 levels 0.8 s, an 8×8 lattice's 63 steps and 2,492 levels 9.9 s, a random
#: regular graph's 99 steps and 5,125 levels 74 s (the model gives 2.0 s, 10.3 s and 21 s: a
#: whole function's build grows faster still, so the largest are underestimated).
STEP_NS = 5e6
LEVEL_NS = 4e6
#: What a compiled call costs beyond its steps for each array it takes (ns): the LLVM back
#: end's entry (executor/llvm/cpython.py) reads it from the object, after the region's check of
#: its layout in Python (measured, 168 complex arrays: the entry 2.0 µs a call, the check
#: 15.5 µs; it was 1.9 µs an array when ctypes packed them).
ARGUMENT_NS = 100.0
#: How many times the cost model's time for a real step a step of each dtype takes: a complex
#: product's entry is four real products and their sums, in NumPy's BLAS and compiled code
#: alike (QAOA's network: 0.81 ms a call as NumPy calls, the model's real figure 0.20 ms).
WORK = {"complex128": 4.0, "complex64": 4.0}
#: The calls over which a build must pay for itself: a network planned once
#: (contract_expression) and called where its speed matters (a parameter sweep, an optimiser)
#: is called this many times; the host tier runs the first calls while it builds.
PAYBACK_CALLS = 100_000


@dataclass(frozen=True)
class Weighed:
    """A network's decision: `compiles`, and why (`note`, for the plan)."""

    compiles: bool
    note: str


def levels(kind: str, spec: str, copied: list[str]) -> int:
    """The loop levels a compiled step adds to the build (LEVEL_NS): a "loops" step's nest
    over its letters, and each term a product step copies (`copied`), each its depth²."""
    nests = [set(spec) - set(",->")] if kind == "loops" else [set(t) for t in copied]
    return sum(len(letters) ** 2 for letters in nests)


def weigh(steps: int, depth: int, compiled_ns: float, host_ns: float, arrays: int,
          dtype: str = "float64") -> Weighed:
    """Whether a network of `steps` steps, its nests and copies `depth` loop levels (`levels`),
    is compiled: its steps take `compiled_ns` compiled and
    `host_ns` as NumPy calls (the cost model's times, layout.py), and a compiled call takes
    `arrays` arrays, both times for real steps (WORK: those of `dtype`). Compiled where that
    is quicker a call and the saving pays the build back within PAYBACK_CALLS calls.

    >>> weigh(100, 400, 50_000.0, 400_000.0, 100).compiles
    True
    >>> weigh(100, 400, 50_000.0, 51_000.0, 100).compiles
    False
    """
    build = steps * STEP_NS + depth * LEVEL_NS
    work = WORK.get(dtype, 1.0)
    compiled_ns, host_ns = compiled_ns * work, host_ns * work
    call = compiled_ns + arrays * ARGUMENT_NS
    saving = host_ns - call
    compiles = saving > 0 and saving * PAYBACK_CALLS >= build
    head = (f"a tensor network of {steps} steps: "
            + ("compiled as one function" if compiles else "its steps run as NumPy calls"))
    figures = (f"the cost model puts a call at {_time(call)} compiled by llvm against "
               f"{_time(host_ns)} as NumPy calls, and llvm's build at {_time(build)}")
    if compiles:
        why = f"the build pays for itself within {PAYBACK_CALLS:,} calls"
    elif saving <= 0:
        why = "compiled code would be no quicker"
    else:
        why = f"the build would not pay for itself within {PAYBACK_CALLS:,} calls"
    return Weighed(compiles, f"{head}: {figures}, so {why}")


def _time(ns: float) -> str:
    """A time in the unit that suits it."""
    for unit, size in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= size:
            return f"{ns / size:.3g} {unit}"
    return f"{ns:.3g} ns"
