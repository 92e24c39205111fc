"""Multi-operand contractions written as .hb: AO→MO, batched matmul, small-operand latency,
matrix chains, Einsum Benchmark generator instances, and path search time."""

from __future__ import annotations

import time

import numpy as np

from benchmarks import anchors as A
from benchmarks.cases.base import (
    OE_EXPR,
    Case,
    Config,
    Measured,
    Setup,
    Target,
    einsum_source,
    plan_flops,
)

_SAME_FLOPS = Target("plan FLOPs = opt_einsum's", metric="flops_equal", expect=True)
_AS_FAST = Target("≤ contract_expression", OE_EXPR, 1.0)


def einsum_setup(config: Config, spec: str, operands, note: str = "",
                 torch_jax: bool = True, rtol: float = 1e-7) -> Setup:
    """One .hb entry point that is this einsum, against every einsum anchor; plan FLOPs are
    compared with opt_einsum's contract_path (same 'auto' optimiser) when a plan is available."""
    import opt_einsum

    import hilbert

    operands = [np.ascontiguousarray(o, dtype=np.float64) for o in operands]
    shapes = [o.shape for o in operands]
    module = hilbert.compile_source(einsum_source(spec, len(operands)), name="<bench>",
                                    executor=config.executor)
    function = module.contract
    _, info = opt_einsum.contract_path(spec, *shapes, shapes=True, optimize="auto")
    ours_flops, how = plan_flops(function, shapes)
    theirs = int(info.opt_cost)
    metrics = {"opt_einsum_flops": theirs, "plan_flops": ours_flops, "plan_from": how,
               "flops_equal": None if ours_flops is None else ours_flops == theirs,
               "operands": len(operands), "naive_flops": float(info.naive_cost)}
    scale = max(float(np.max(np.abs(np.einsum(spec, *operands, optimize=True)))), 1.0)
    return Setup(
        ours=lambda: function(*operands),
        anchors=A.einsum_anchors(config, spec, operands, torch_jax),
        params={"spec": spec, "shapes": " ".join("×".join(map(str, s)) or "scalar" for s in shapes)},
        flops=float(theirs), metrics=metrics, rtol=rtol, atol=1e-9 * scale,
        notes=[note] if note else [])


def ao_to_mo(n: int):
    def build(config: Config) -> Setup:
        rng = np.random.default_rng(20 + n)
        c = rng.standard_normal((n, n)) / np.sqrt(n)
        g = rng.standard_normal((n, n, n, n))
        return einsum_setup(config, "pi,qj,ijkl,rk,sl->pqrs", [c, c, g, c, c],
                            "the four-index transform of quantum chemistry")
    return build


def batched_matmul(config: Config) -> Setup:
    b, n = config.pick((64, 128), (32, 128))
    rng = np.random.default_rng(30)
    x, y = rng.standard_normal((b, n, n)), rng.standard_normal((b, n, n))
    return einsum_setup(config, "bij,bjk->bik", [x, y])


def strided_slices(config: Config) -> Setup:
    a, b, c = config.pick((300, 64, 300), (200, 64, 200))
    rng = np.random.default_rng(33)
    x, v = rng.standard_normal((a, b, c)), rng.standard_normal(b)
    return einsum_setup(config, "abc,b->ac", [x, v],
                        "a summed axis in the middle: one matrix-vector product per a, no copy")


def one_copy(config: Config) -> Setup:
    i, j, k, x = config.pick((100, 60, 80, 40), (50, 40, 60, 20))
    rng = np.random.default_rng(34)
    a, b = rng.standard_normal((j, i, k)), rng.standard_normal((k, j, x))
    return einsum_setup(config, "jik,kjx->ix", [a, b],
                        "the summed letters apart in one operand: copied once, never twice")


def small_multi(config: Config) -> Setup:
    rng = np.random.default_rng(31)
    ops = [rng.standard_normal((4, 4)) for _ in range(4)]
    return einsum_setup(config, "ij,jk,kl,lm->im", ops, "latency of a small 4-operand chain")


def matrix_chain(config: Config) -> Setup:
    big, small = config.pick((400, 20), (200, 20))
    rng = np.random.default_rng(32)
    dims = [big, small, big, small, big]
    ops = [rng.standard_normal((dims[i], dims[i + 1])) for i in range(len(dims) - 1)]
    return einsum_setup(config, "ab,bc,cd,de->ae", ops,
                        "a chain whose cost depends on the order: ((AB)(CD)) is cheap")


# --------------------------------------------------------------------------------------------
# Einsum Benchmark's own generators (generated here, nothing downloaded)


def _generated(kind: str) -> tuple[str, list, str]:
    """(spec, shapes, where it came from). Uses the einsum_benchmark package's generators when
    it is installed, else opt_einsum.testing.rand_equation (and says so)."""
    try:
        spec, shapes = _from_einsum_benchmark(kind)
    except ImportError:  # the package, or networkx for its random generator, is missing
        return _fallback(kind)
    return spec, [tuple(int(n) for n in s) for s in shapes], "einsum_benchmark generator"


def _from_einsum_benchmark(kind: str):
    from einsum_benchmark.generators import random as eb_random
    from einsum_benchmark.generators import structured as eb_structured

    match kind:
        case "matrix-chain":
            return eb_structured.matrix_chain(num_matrices=8, min_dim=16, max_dim=160, seed=7)
        case "random-regular":
            return eb_random.regular(12, 3, d_min=2, d_max=4, seed=7)
        case "lattice":
            return eb_structured.lattice((3, 4), d_min=2, d_max=4, seed=7)
        case "tree":
            return eb_structured.tree(16, d_min=3, d_max=8, n_outer=2, seed=7)
        case "tree-30":
            return eb_structured.tree(30, d_min=3, d_max=8, n_outer=2, seed=7)
        case "random-regular-big":
            return eb_random.regular(12, 3, d_min=4, d_max=8, seed=7)
    raise ValueError(f"no einsum_benchmark generator {kind!r}")


def _fallback(kind: str) -> tuple[str, list, str]:
    from opt_einsum.testing import rand_equation

    if kind == "matrix-chain":
        dims = np.random.default_rng(7).integers(16, 161, size=9)
        spec = ",".join(f"{chr(97 + i)}{chr(98 + i)}" for i in range(8)) + "->ai"
        return spec, [(int(dims[i]), int(dims[i + 1])) for i in range(8)], "hand-built chain"
    n, reg, n_out, d_max = {"random-regular": (12, 3, 0, 4), "lattice": (12, 4, 0, 4),
                            "tree": (16, 2, 2, 4), "tree-30": (30, 2, 2, 8),
                            "random-regular-big": (12, 3, 0, 8)}[kind]
    spec, shapes = rand_equation(n, reg, n_out=n_out, d_min=2, d_max=d_max, seed=7)
    return spec, [tuple(s) for s in shapes], ("opt_einsum.testing.rand_equation (einsum_benchmark "
                                              "is not installed)")


def generated(kind: str):
    def build(config: Config) -> Setup:
        spec, shapes, source = _generated(kind)
        rng = np.random.default_rng(40)
        ops = [rng.uniform(0.1, 1.0, size=s) for s in shapes]
        return einsum_setup(config, spec, ops, f"instance from {source}", rtol=1e-6)
    return build


# --------------------------------------------------------------------------------------------
# Path search time (issue 4): planning a fresh signature, against opt_einsum.contract_path


def path_search(config: Config) -> Setup:
    import opt_einsum
    from opt_einsum.testing import rand_equation

    import hilbert

    counts = config.pick(tuple(range(2, 11)), (2, 4, 6, 8, 10))
    per = config.pick(8, 4)
    problems = []
    for n in counts:
        for i in range(per):
            spec, shapes = rand_equation(n, 3, n_out=2, d_min=2, d_max=8, seed=1000 * n + i)
            module = hilbert.compile_source(einsum_source(spec, n), name=f"<search {n}.{i}>",
                                            executor=config.executor)
            problems.append((n, spec, [tuple(s) for s in shapes], module.contract))

    def measure(config: Config) -> Measured:
        times: dict[str, list[float]] = {"hilbert": [], "opt_einsum.contract_path": []}
        per_n: dict[int, dict[str, list[float]]] = {n: {"hilbert": [], "opt_einsum": []}
                                                    for n in counts}
        errors, equal = {}, []
        for n, spec, shapes, function in problems:
            begun = time.perf_counter()
            _, info = opt_einsum.contract_path(spec, *shapes, shapes=True, optimize="auto")
            theirs = time.perf_counter() - begun
            times["opt_einsum.contract_path"].append(theirs)
            per_n[n]["opt_einsum"].append(theirs)
            begun = time.perf_counter()
            flops, how = plan_flops(function, shapes)  # a fresh signature: the first plan
            ours = time.perf_counter() - begun
            if flops is None:
                errors["hilbert"] = how
                continue
            times["hilbert"].append(ours)
            per_n[n]["hilbert"].append(ours)
            equal.append(flops == int(info.opt_cost))
        metrics = {"planned_with": how, "flops_equal": all(equal) if equal else None,
                   "flops_equal_count": f"{sum(equal)}/{len(equal)}",
                   "median_s_by_operands": {str(n): {k: float(np.median(v)) if v else None
                                                     for k, v in d.items()}
                                            for n, d in per_n.items()}}
        return Measured(times, errors, metrics)

    return Setup(ours=None, measure=measure, compare=False,
                 params={"operands": ", ".join(map(str, counts)), "specs per count": per,
                         "generator": "opt_einsum.testing.rand_equation(n, 3, n_out=2)"},
                 notes=["each spec is planned once, at its first signature (no cache can "
                        "help); hilbert time includes specialisation and the plan's bookkeeping"])


def _multi(name, title, build, measures, isolate=True, targets=(_SAME_FLOPS, _AS_FAST)):
    return Case(name, "multi-operand", title, measures, build, targets, isolate=isolate)


CASES = [
    _multi("ao-mo-10", "AO→MO transform, N = 10", ao_to_mo(10),
           "pi,qj,ijkl,rk,sl->pqrs: five operands, where the path turns N⁸ into 4·N⁵"),
    _multi("ao-mo-40", "AO→MO transform, N = 40", ao_to_mo(40),
           "the same at N = 40 (2.6 M-element integrals); unplanned einsum is hopeless here"),
    _multi("batched-matmul", "batched matmul", batched_matmul,
           "bij,bjk->bik: a batch axis kept through a BLAS contraction"),
    _multi("strided-slices", "a summed axis in the middle", strided_slices,
           "abc,b->ac: a matrix-vector product per slice a, reading each in place"),
    _multi("one-copy", "summed letters apart", one_copy,
           "jik,kjx->ix: j and k apart in the first operand, so one operand is copied, once"),
    _multi("small-multi", "small multi-operand latency", small_multi,
           "four 4×4 operands: the cost is per-call overhead and path handling"),
    _multi("matrix-chain", "matrix chain", matrix_chain,
           "the order of a chain of products decides its cost"),
    _multi("eb-matrix-chain", "Einsum Benchmark: matrix chain", generated("matrix-chain"),
           "matrix chain multiplication instance from einsum_benchmark's generator"),
    _multi("eb-random-regular", "Einsum Benchmark: random regular", generated("random-regular"),
           "a random 3-regular tensor network contracted to a scalar"),
    _multi("eb-lattice", "Einsum Benchmark: lattice", generated("lattice"),
           "a 3×4 lattice tensor network contracted to a scalar"),
    _multi("eb-tree", "Einsum Benchmark: tree", generated("tree"),
           "a tree-shaped tensor network with two open indices"),
    _multi("eb-tree-30", "Einsum Benchmark: tree of 30", generated("tree-30"),
           "a tree-shaped tensor network of 30 tensors with two open indices"),
    _multi("eb-random-regular-big", "Einsum Benchmark: random regular, larger",
           generated("random-regular-big"),
           "a random 3-regular network of 12 tensors, axes of 4 to 8, contracted to a scalar"),
    Case("path-search", "planning", "path search time, 2 to 10 operands",
         "time to plan a fresh signature of one einsum with n operands, against "
         "opt_einsum.contract_path with the same optimiser ('auto')", path_search,
         (_SAME_FLOPS,)),
]
