"""Multi-operand contractions written as .hb: AO→MO, batched matmul, small-operand latency,
matrix chains, Einsum Benchmark generator instances, and path search time."""

from __future__ import annotations

import time
from dataclasses import dataclass

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
    compared with opt_einsum's contract_path (same 'auto' optimiser) when a plan is available.
    Operands keep a complex dtype (complex128); anything else is float64."""
    import opt_einsum

    import hilbert

    operands = [np.ascontiguousarray(o, dtype=np.result_type(o, np.float64)) for o in operands]
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
    scale = max(float(np.max(np.abs(opt_einsum.contract(spec, *operands)))), 1.0)
    return Setup(
        ours=lambda: function(*operands),
        anchors=A.einsum_anchors(config, spec, operands, torch_jax),
        params={"spec": spec, "shapes": " ".join("×".join(map(str, s)) or "scalar" for s in shapes)},
        flops=float(theirs), metrics=metrics, rtol=rtol, atol=1e-9 * scale,
        notes=[note] if note else [])


def ao_to_mo(n: int, dtype: str = "float64"):
    def build(config: Config) -> Setup:
        rng = np.random.default_rng(20 + n)
        c = rng.standard_normal((n, n)) / np.sqrt(n)
        g = rng.standard_normal((n, n, n, n))
        if dtype == "complex128":  # (complex orbitals and integrals: zgemm on every path)
            c = c + 1j * rng.standard_normal((n, n)) / np.sqrt(n)
            g = g + 1j * rng.standard_normal((n, n, n, n))
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
# Path search time (issue 4), and planning kept (issue 14, item 5)


def path_search(config: Config) -> Setup:
    from opt_einsum.testing import rand_equation

    import hilbert

    counts = config.pick(tuple(range(2, 11)), (2, 4, 6, 8, 10))
    per = config.pick(8, 4)
    problems = []
    for n in counts:
        for i in range(per):
            spec, shapes = rand_equation(n, 3, n_out=2, d_min=2, d_max=8, seed=1000 * n + i)
            text = einsum_source(spec, n)
            module = hilbert.compile_source(text, name=f"<search {n}.{i}>", executor=config.executor)
            again = hilbert.compile_source(text, name=f"<search {n}.{i}>", executor=config.executor)
            problems.append(_Problem(n, spec, [tuple(s) for s in shapes], module.contract,
                                     module, again.contract))

    def measure(config: Config) -> Measured:
        return _measure_planning(problems, counts, config)

    return Setup(ours=None, measure=measure, compare=False,
                 params={"operands": ", ".join(map(str, counts)), "specs per count": per,
                         "generator": "opt_einsum.testing.rand_equation(n, 3, n_out=2)"},
                 notes=["hilbert: each spec planned afresh by a new function with fn.plan, "
                        "every kept plan and path forgotten first (forget_plans), against "
                        "opt_einsum.contract_path ('auto'); its time includes specialisation, "
                        "the plan's bookkeeping and preparing the program (the numba executor "
                        "generates no code to plan); medians of repeats per spec",
                        "repeated: the same spec on the same shapes planned again by a new "
                        "Function of the same definition (the plan is kept), against "
                        "contract_path given the same path; same_text: by a function compiled "
                        "again from the same text (a new definition: its paths are kept, its "
                        "plan is made again)"])


@dataclass
class _Problem:
    n: int
    spec: str
    shapes: list
    function: object
    module: object
    again: object  # the same text compiled again: a new definition


def _median_of(call, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        begun = time.perf_counter()
        call()
        times.append(time.perf_counter() - begun)
    return float(np.median(times))


def _measure_planning(problems: list[_Problem], counts, config: Config) -> Measured:
    import opt_einsum
    from hilbert.compiler.driver import forget_plans

    from hilbert.api import Function

    times: dict[str, list[float]] = {"hilbert": [], "opt_einsum.contract_path": []}
    per_n: dict[int, dict[str, list[float]]] = {
        n: {"hilbert": [], "opt_einsum": [], "repeated": [], "same_path": []} for n in counts}
    errors: dict[str, str] = {}
    equal, fresh_ratios, repeated, same_text = [], [], [], []
    repeats = config.pick(9, 5)
    how = "Function.plan"
    for p in problems:
        path, info = opt_einsum.contract_path(p.spec, *p.shapes, shapes=True, optimize="auto")
        theirs = _median_of(lambda p=p: opt_einsum.contract_path(
            p.spec, *p.shapes, shapes=True, optimize="auto"), repeats)
        same_path = _median_of(lambda p=p, path=path: opt_einsum.contract_path(
            p.spec, *p.shapes, shapes=True, optimize=path), repeats)
        try:
            plan = p.function.plan(*p.shapes)  # (its first plan, untimed: imports, first uses)

            def fresh(p=p):
                forget_plans()  # nothing kept: the path is searched and the plan made afresh
                Function(p.function.entry, p.module._compiled, p.function.executor).plan(*p.shapes)

            ours = _median_of(fresh, repeats)
            news = [Function(p.function.entry, p.module._compiled, p.function.executor)
                    for _ in range(repeats)]
            again = _median_of(lambda p=p, news=news: news.pop().plan(*p.shapes), repeats)
            retyped = _median_of(lambda p=p: p.again.plan(*p.shapes), 1)
        except Exception as err:  # noqa: BLE001 - an unfinished planner must not stop the suite
            errors["hilbert"] = f"planning failed: {type(err).__name__}: {err}"
            continue
        times["opt_einsum.contract_path"].append(theirs)
        times["hilbert"].append(ours)
        equal.append(plan.flops == int(info.opt_cost))
        fresh_ratios.append(ours / theirs)
        repeated.append(again / same_path)
        same_text.append(retyped / same_path)
        for key, value in (("hilbert", ours), ("opt_einsum", theirs), ("repeated", again),
                           ("same_path", same_path)):
            per_n[p.n][key].append(value)

    def median(values):
        return float(np.median(values)) if values else None

    metrics = {"planned_with": how, "flops_equal": all(equal) if equal else None,
               "flops_equal_count": f"{sum(equal)}/{len(equal)}",
               "fresh_ratio": median(fresh_ratios),
               "repeated_ratio": median(repeated),
               "repeated_ratio_max": float(np.max(repeated)) if repeated else None,
               "same_text_ratio": median(same_text),
               "median_s_by_operands": {str(n): {k: median(v) for k, v in d.items()}
                                        for n, d in per_n.items()}}
    return Measured(times, errors, metrics)


# --------------------------------------------------------------------------------------------
# First calls (issue 14, item 1): every einsum_benchmark generator's instances up to 64
# operands (those whose axes fit the 52 letters a .hb einsum has), each measured in a fresh
# process so that nothing this one compiled or planned helps


def first_call_instances() -> list[tuple[str, str, list[tuple[int, ...]]]]:
    """(name, spec, shapes) of each generator's instances: a small one and the largest that fits
    64 operands and 52 axis letters. quantum_computing.maxcut needs quimb and is left out."""
    from einsum_benchmark.generators import language_model as lm
    from einsum_benchmark.generators import quantum_computing as qc
    from einsum_benchmark.generators import random as rn
    from einsum_benchmark.generators import structured as st

    made = {
        "matrix-chain-8": st.matrix_chain(8, 16, 160, seed=7),
        "matrix-chain-51": st.matrix_chain(51, 16, 160, seed=7),
        "regular-12": rn.regular(12, 3, d_min=2, d_max=4, seed=7),
        "regular-34": rn.regular(34, 3, d_min=2, d_max=4, seed=7),
        "lattice-3x4": st.lattice((3, 4), d_min=2, d_max=4, seed=7),
        "lattice-5x5": st.lattice((5, 5), d_min=2, d_max=4, seed=7),
        "tree-16": st.tree(16, d_min=3, d_max=8, n_outer=2, seed=7),
        "tree-48": st.tree(48, d_min=3, d_max=8, n_outer=2, seed=7),
        "network-16": rn.connected_network(16, 3, number_of_output_indices=2, min_axis_size=2,
                                           max_axis_size=6, seed=7),
        "network-32": rn.connected_network(32, 3, number_of_output_indices=2, min_axis_size=2,
                                           max_axis_size=6, seed=7),
        "hypernetwork-16": rn.connected_hypernetwork(16, 2.5, max_tensor_order=5,
                                                     max_edge_order=3, number_of_output_indices=2,
                                                     min_axis_size=2, max_axis_size=4, seed=7),
        "hypernetwork-32": rn.connected_hypernetwork(32, 2.5, max_tensor_order=5,
                                                     max_edge_order=3, number_of_output_indices=2,
                                                     min_axis_size=2, max_axis_size=4, seed=7),
        "mps-8": qc.matrix_product_state(8, phys_dim_min=4, phys_dim_max=16, bond_dim=8, seed=7),
        "mps-16": qc.matrix_product_state(16, phys_dim_min=4, phys_dim_max=16, bond_dim=8, seed=7),
        "lm-first-last-1": lm.p_first_and_last(1, 4, 6),
        "lm-first-last-2": lm.p_first_and_last(2, 4, 6),
        "lm-sliding-1": lm.sliding_likelihood(1, 4, 6, 8),
        "lm-sliding-2": lm.sliding_likelihood(2, 4, 6, 8),
    }
    return [(name, made_[0], [tuple(int(d) for d in s) for s in made_[1]])
            for name, made_ in made.items()]


def first_calls(reverse: bool) -> None:
    """In a fresh process: for each instance, a prebuilt contract_expression's first call, and
    hilbert's first call (planning included) and first call after planning, each on a new
    function; one JSON line of seconds per instance. `reverse`: hilbert goes first."""
    import json

    import opt_einsum

    import hilbert

    warm = hilbert.compile_source(einsum_source("ij,jk->ik", 2)).contract  # (imports, first
    warm(np.ones((2, 2)), np.ones((2, 2)))                                 # uses of NumPy)
    opt_einsum.contract_expression("ij,jk->ik", (2, 2), (2, 2))(np.ones((2, 2)), np.ones((2, 2)))
    report = {name: _first_call_of(spec, shapes, reverse)
              for name, spec, shapes in first_call_instances()}
    print(json.dumps(report), flush=True)


def _first_call_of(spec: str, shapes: list, reverse: bool) -> dict:
    import opt_einsum

    import hilbert

    rng = np.random.default_rng(40)
    ops = [rng.uniform(0.1, 1.0, size=s) for s in shapes]
    text = einsum_source(spec, len(shapes))
    full, planned = (hilbert.compile_source(text).contract for _ in range(2))
    seconds: dict[str, float] = {}

    def timed(key, call):
        begun = time.perf_counter()
        value = call()
        seconds[key] = time.perf_counter() - begun
        return value

    def theirs():
        expression = timed("oe_build_s", lambda: opt_einsum.contract_expression(spec, *shapes))
        return timed("oe_first_s", lambda: expression(*ops))

    def ours():
        value = timed("hb_first_call_s", lambda: full(*ops))
        timed("hb_plan_s", lambda: planned.plan(*shapes))
        timed("hb_first_exec_s", lambda: planned(*ops))
        return value

    if reverse:
        mine, want = ours(), theirs()
    else:
        want, mine = theirs(), ours()
    scale = max(float(np.max(np.abs(want))), 1e-300)
    return seconds | {"operands": len(shapes), "tier": full.tier,
                      "max_rel_diff": float(np.max(np.abs(mine - want))) / scale}


def first_call(config: Config) -> Setup:
    import einsum_benchmark  # noqa: F401 (a Skip-like error entry when missing)

    instances = first_call_instances()

    def measure(config: Config) -> Measured:
        return _measure_first_calls(config, [name for name, _, _ in instances])

    return Setup(ours=None, measure=measure, compare=False,
                 params={"instances": len(instances),
                         "operands": f"{min(len(s) for _, _, s in instances)}–"
                                     f"{max(len(s) for _, _, s in instances)}",
                         "processes": config.pick(7, 3)},
                 notes=["each repeat is a fresh process (HILBERT_COMPILE=2, the default): per "
                        "instance, a new function's first call (planning included, "
                        "hb_first_call_s) and another's first call after fn.plan "
                        "(hb_first_exec_s: the call itself, as a prebuilt expression's), beside "
                        "opt_einsum.contract_expression built (oe_build_s) then called once "
                        "(oe_first_s); the order alternates between repeats",
                        "hilbert's time: the first call after planning; the anchor's: a "
                        "prebuilt contract_expression's first call (medians over instances of "
                        "per-instance medians)",
                        "quantum_computing.maxcut is left out (it needs quimb); instances with "
                        "more than 52 axes cannot be one .hb einsum (axes are letters)"])


def _measure_first_calls(config: Config, names: list[str]) -> Measured:
    import json
    import os
    import subprocess
    import sys

    from benchmarks.cases.base import ROOT

    runs: list[dict] = []
    env = dict(os.environ, HILBERT_COMPILE="2")
    for repeat in range(config.pick(7, 3)):
        code = f"from benchmarks.cases.multi import first_calls; first_calls({repeat % 2 == 1})"
        done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            return Measured({}, {"hilbert": done.stderr.strip().splitlines()[-1]})
        runs.append(json.loads(done.stdout.splitlines()[-1]))
    by_instance = {}
    for name in names:
        keys = ("oe_build_s", "oe_first_s", "hb_first_call_s", "hb_plan_s", "hb_first_exec_s")
        median = {k: float(np.median([r[name][k] for r in runs])) for k in keys}
        median["first_exec_ratio"] = median["hb_first_exec_s"] / median["oe_first_s"]
        median["first_call_ratio"] = median["hb_first_call_s"] / (median["oe_build_s"]
                                                                  + median["oe_first_s"])
        median["tier"] = runs[0][name]["tier"]
        median["max_rel_diff"] = max(r[name]["max_rel_diff"] for r in runs)
        by_instance[name] = median
    rows = by_instance.values()
    times = {"hilbert": [m["hb_first_exec_s"] for m in rows],
             "oe.expression": [m["oe_first_s"] for m in rows]}
    metrics = {
        "worst_first_exec_ratio": max(m["first_exec_ratio"] for m in rows),
        "median_first_exec_ratio": float(np.median([m["first_exec_ratio"] for m in rows])),
        "worst_first_call_s": max(m["hb_first_call_s"] for m in rows),
        "median_first_call_ratio": float(np.median([m["first_call_ratio"] for m in rows])),
        "worst_first_call_ratio": max(m["first_call_ratio"] for m in rows),
        "all_on_host": all(m["tier"] == "host" for m in rows),
        "worst_rel_diff": max(m["max_rel_diff"] for m in rows),
        "by_instance": {k: {n: round(v, 7) if isinstance(v, float) else v
                            for n, v in m.items()} for k, m in by_instance.items()},
    }
    return Measured(times, {}, metrics)


def _multi(name, title, build, measures, isolate=True, targets=(_SAME_FLOPS, _AS_FAST)):
    return Case(name, "multi-operand", title, measures, build, targets, isolate=isolate)


CASES = [
    _multi("ao-mo-10", "AO→MO transform, N = 10", ao_to_mo(10),
           "pi,qj,ijkl,rk,sl->pqrs: five operands, where the path turns N⁸ into 4·N⁵"),
    _multi("ao-mo-40", "AO→MO transform, N = 40", ao_to_mo(40),
           "the same at N = 40 (2.6 M-element integrals); unplanned einsum is hopeless here"),
    _multi("ao-mo-40-c128", "AO→MO transform in complex128, N = 40",
           ao_to_mo(40, "complex128"), "the N = 40 transform on complex values (zgemm steps)"),
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
         "opt_einsum.contract_path with the same optimiser ('auto'); planning the same spec "
         "again, against contract_path given the same path", path_search,
         (_SAME_FLOPS, Target("repeated planning ≤ 1.2× contract_path (same path)",
                              metric="repeated_ratio", max_value=1.2))),
    Case("first-call", "multi-operand", "first calls of Einsum Benchmark instances",
         "the first call of every einsum_benchmark generator instance up to 64 operands, each "
         "in a fresh process, against a prebuilt contract_expression's first call", first_call,
         (Target("first call ≤ 2× a prebuilt contract_expression's first call",
                 metric="worst_first_exec_ratio", max_value=2.0),
          Target("first call, planning included, ≤ 200 ms", metric="worst_first_call_s",
                 max_value=0.2),
          Target("first calls run on the host (nothing compiled)", metric="all_on_host",
                 expect=True))),
]
