"""Tensor networks at real size (issue 24, item 5): einsum_benchmark's generators (an 8×8
lattice, a random 3-regular graph of 100 tensors, a QAOA max-cut amplitude of 24 qubits and 2
layers, complex; a tree and a hypernetwork of 60 tensors, issue 47 item 19) and a matrix
product state of 40 sites, through hilbert.contract_expression,
against opt_einsum's contract_expression, cotengra's own contraction of the same tree, and
torch and JAX (opt_einsum's torch and jax backends, jitted for JAX) on the same path. The
QAOA path is hilbert's hyper-optimised one (optimize=hilbert.Hyper(max_time=10)), its FLOPs
set beside a cotengra HyperOptimizer's own with the same budget. And the random regular
network sliced to a sixteenth of its unsliced peak (hilbert/slicing.py), in this process and
as dask tasks on a LocalCluster of two workers."""

from __future__ import annotations

import statistics
import time

import numpy as np

from benchmarks import anchors as A
from benchmarks.cases.base import (
    JAX,
    OE,
    OE_EXPR,
    TORCH,
    Anchor,
    Case,
    Config,
    Measured,
    Setup,
    Skip,
    Target,
)

COTENGRA = "cotengra"
#: The budget of the QAOA case's search, hilbert's and cotengra's alike.
SEARCH_SECONDS = 10.0


def _operands(shapes, seed: int) -> list[np.ndarray]:
    """Random entries, each tensor scaled to norm 2 (the contraction stays in range)."""
    rng = np.random.default_rng(seed)
    ops = [rng.standard_normal(s) for s in shapes]
    return [o / np.sqrt(np.sum(o * o)) * 2 for o in ops]


def _chain(sites: int, bond: int, physical: int = 2):
    """⟨ψ|ψ⟩ of a matrix product state: (spec, shapes), in opt_einsum's symbols."""
    import opt_einsum

    symbols = (opt_einsum.get_symbol(k) for k in range(3 * sites))
    up = [next(symbols) for _ in range(sites - 1)]
    down = [next(symbols) for _ in range(sites - 1)]
    phys = [next(symbols) for _ in range(sites)]
    terms = []
    for layer in (up, down):
        for k in range(sites):
            terms.append((layer[k - 1] if k else "") + phys[k] + (layer[k] if k < sites - 1
                                                                   else ""))
    shapes = [tuple(bond if ch in up or ch in down else physical for ch in t) for t in terms]
    return ",".join(terms) + "->", shapes


def _network(kind: str):
    """(spec, operands) of the case's network."""
    if kind == "mps":
        spec, shapes = _chain(40, 16)
        return spec, _operands(shapes, 5)
    try:
        from einsum_benchmark.generators import quantum_computing as eb_quantum
        from einsum_benchmark.generators import random as eb_random
        from einsum_benchmark.generators import structured as eb_structured
    except ImportError:
        raise Skip("einsum_benchmark is not installed (pip install -e '.[bench]')") from None
    if kind == "qaoa":
        try:
            spec, arrays = eb_quantum.maxcut(n=24, reg=3, p=2, seed=1)
        except ImportError:
            raise Skip("quimb is not installed (pip install -e '.[bench]')") from None
        return spec, [np.asarray(a) for a in arrays]
    if kind == "tree":  # (its first step: 14 × 10×14×14×14×6×11×14, issue 47 item 19)
        spec, shapes = eb_structured.tree(60, d_min=6, d_max=16, n_outer=2, seed=2)
    elif kind == "hypernetwork":
        spec, shapes = eb_random.connected_hypernetwork(
            60, 2.5, max_tensor_order=6, max_edge_order=3, number_of_output_indices=2,
            min_axis_size=2, max_axis_size=4, seed=1)
    elif kind == "lattice":
        spec, shapes = eb_structured.lattice((8, 8), d_min=2, d_max=3, seed=7)
    else:
        spec, shapes = eb_random.regular(100, 3, d_min=2, d_max=2, seed=7)
    return spec, _operands([tuple(int(n) for n in s) for s in shapes], 5)


def _anchors(config: Config, spec: str, ops: list, path) -> list[Anchor]:
    """opt_einsum (an expression and a plain call), cotengra's own contraction of the same
    tree, and torch and JAX through opt_einsum's backends: all on `path`."""
    import opt_einsum

    shapes = [o.shape for o in ops]
    theirs = opt_einsum.contract_expression(spec, *shapes, optimize=path)

    def cotengra():
        try:
            from cotengra import ContractionTree
        except ImportError:
            raise Skip("cotengra is not installed (pip install -e '.[networks]')") from None
        inputs, output = spec.split("->")
        size = {ch: n for term, s in zip(inputs.split(","), shapes, strict=True)
                for ch, n in zip(term, s, strict=True)}
        tree = ContractionTree.from_path(inputs.split(","), output, size, path=path)
        return lambda: tree.contract(ops)

    def torch():
        torch = A.torch_module()
        tensors = [torch.from_numpy(np.ascontiguousarray(o)) for o in ops]

        def call():
            with torch.no_grad():
                return theirs(*tensors, backend="torch").numpy()
        return call

    def jax():
        jax, jnp, _ = A.jax_modules()
        arrays = [jnp.asarray(o) for o in ops]
        jitted = jax.jit(lambda *xs: theirs(*xs, backend="jax"))
        return lambda: np.asarray(jitted(*arrays).block_until_ready())

    return [Anchor(OE_EXPR, lambda: (lambda: theirs(*ops)),
                   "opt_einsum.contract_expression on hilbert's path"),
            Anchor(OE, lambda: (lambda: opt_einsum.contract(spec, *ops, optimize=path)),
                   "opt_einsum.contract on hilbert's path"),
            Anchor(COTENGRA, cotengra, "cotengra's ContractionTree.contract, the same tree"),
            A._optional(config, Anchor(TORCH, torch,
                                       "torch tensordot/einsum steps along hilbert's path "
                                       "(opt_einsum's torch backend), eager")),
            A._optional(config, Anchor(JAX, jax,
                                       "jax.jit of the steps along hilbert's path (opt_einsum's "
                                       "jax backend)"))]


def _hyper_against_cotengra(spec: str, ops: list, ours: int) -> float:
    """Our path's FLOPs over those of the path a cotengra HyperOptimizer finds itself with the
    same budget (both counted by opt_einsum)."""
    import cotengra
    import opt_einsum

    optimizer = cotengra.HyperOptimizer(max_time=SEARCH_SECONDS, max_repeats=64,
                                        parallel=False, progbar=False)
    _, info = opt_einsum.contract_path(spec, *ops, optimize=optimizer)
    return ours / max(int(info.opt_cost), 1)


def network(kind: str, slice_to: int = 1, hyper: bool = False):
    def build(config: Config) -> Setup:
        import hilbert

        spec, ops = _network(kind)
        shapes = [o.shape for o in ops]
        optimize = hilbert.Hyper(max_time=SEARCH_SECONDS) if hyper else "auto"
        path, info = hilbert.contract_path(spec, *ops, optimize=optimize, memory_limit="1T")
        limit = info.peak_bytes // slice_to if slice_to > 1 else None
        expression = hilbert.contract_expression(spec, *shapes, optimize=path,
                                                 memory_limit=limit, executor=config.executor)
        expression.build()
        metrics = {"tensors": len(shapes), "indices": len(set(spec) - set(",->")),
                   "dtype": str(np.result_type(*ops)), "flops": info.flops,
                   "peak_bytes": info.peak_bytes}
        if hyper:
            metrics["hyper_flops_vs_cotengra"] = _hyper_against_cotengra(spec, ops, info.flops)
        if slice_to > 1:
            _, sliced = hilbert.contract_path(spec, *ops, optimize=path, memory_limit=limit)
            metrics.update(slices=sliced.slices, sliced_peak_bytes=sliced.peak_bytes,
                           flops_overhead=sliced.flops_overhead,
                           under_limit=sliced.peak_bytes <= limit)
        return Setup(
            ours=lambda: expression(*ops), anchors=_anchors(config, spec, ops, path),
            params={"tensors": len(shapes), "indices": metrics["indices"],
                    "dtype": metrics["dtype"], "memory_limit": limit,
                    "path": "hilbert.Hyper(max_time=10)" if hyper else "auto"},
            flops=float(info.flops), metrics=metrics, rtol=1e-7, atol=1e-12)
    return build


def on_a_cluster(config: Config) -> Setup:
    """The random regular network sliced to 1/16, as dask tasks on a LocalCluster of two
    worker processes, against the same slices run in this process."""
    import hilbert

    spec, ops = _network("regular")
    path, info = hilbert.contract_path(spec, *ops, memory_limit="1T")
    limit = info.peak_bytes // 16
    here = hilbert.contract_expression(spec, *[o.shape for o in ops], optimize=path,
                                       memory_limit=limit)
    here.build()

    def measure(config: Config) -> Measured:
        from dask.distributed import Client, LocalCluster

        local = here(*ops)
        times: dict[str, list[float]] = {"hilbert dask, 2 workers": [], "hilbert here": []}
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster):
            tasks = hilbert.einsum(spec, *ops, optimize=path, memory_limit=limit,
                                   executor="dask")  # (the workers compile: not timed)
            for _ in range(config.min_repeats):
                start = time.perf_counter()
                hilbert.einsum(spec, *ops, optimize=path, memory_limit=limit, executor="dask")
                times["hilbert dask, 2 workers"].append(time.perf_counter() - start)
                start = time.perf_counter()
                here(*ops)
                times["hilbert here"].append(time.perf_counter() - start)
        median = {name: statistics.median(t) for name, t in times.items()}
        return Measured(times, metrics={
            "equal": bool(np.allclose(tasks, local, rtol=1e-12, atol=0)),
            "slices": here.sliced.count if here.sliced else 1,
            "dask_over_here": median["hilbert dask, 2 workers"] / median["hilbert here"]})

    return Setup(ours=None, measure=measure, compare=False,
                 params={"tensors": len(ops), "memory_limit": limit, "workers": 2},
                 notes=["hilbert.einsum(executor='dask') under a distributed Client: the slices "
                        "in batches as tasks on two worker processes, summed in a tree"])


_AS_FAST = (Target("≤ contract_expression on the same path", OE_EXPR, 1.0),
            Target("≤ cotengra's contraction of the same tree", COTENGRA, 1.0))

CASES = [
    Case("net-lattice-8x8", "networks", "an 8×8 lattice (einsum_benchmark)",
         "64 tensors, bonds of 2–3, contracted to a scalar along opt_einsum's greedy path",
         network("lattice"), _AS_FAST),
    Case("net-regular-100", "networks", "a random 3-regular network of 100 tensors",
         "einsum_benchmark's random regular graph, 150 bonds of 2, to a scalar",
         network("regular"), _AS_FAST),
    Case("net-mps-40", "networks", "⟨ψ|ψ⟩ of a matrix product state of 40 sites",
         "80 tensors, 118 indices, bond 16", network("mps"), _AS_FAST),
    Case("net-qaoa-24", "networks", "a QAOA max-cut amplitude, 24 qubits, p = 2 (complex)",
         "einsum_benchmark's quantum_computing.maxcut: 168 complex128 tensors over 216 "
         "indices, along hilbert's hyper-optimised path (10 s budget)",
         network("qaoa", hyper=True),
         (*_AS_FAST, Target("the hyper path within 1.1× of cotengra's own FLOPs, same budget",
                            metric="hyper_flops_vs_cotengra", max_value=1.1))),
    Case("net-tree-60", "networks", "a tree of 60 tensors (einsum_benchmark)",
         "einsum_benchmark's structured.tree(60, 6–16, 2 open indices): its first step is a "
         "vector against a middle axis of a 25 M-entry tensor", network("tree"), _AS_FAST),
    Case("net-hypernetwork-60", "networks", "a hypernetwork of 60 tensors (einsum_benchmark)",
         "einsum_benchmark's random connected_hypernetwork of 60 tensors (axes of 2–4, edges "
         "of up to 3 tensors): steps over letters both operands and the result hold",
         network("hypernetwork"), _AS_FAST),
    Case("net-regular-100-sliced", "networks", "the random regular network sliced to 1/16",
         "the same contraction under memory_limit = its unsliced peak / 16",
         network("regular", 16),
         (Target("one slice under the limit", metric="under_limit", expect=True),
          Target("FLOPs overhead ≤ 2×", metric="flops_overhead", max_value=2.0))),
    Case("net-regular-100-dask", "networks", "the sliced network as dask tasks, 2 workers",
         "the 1/16-sliced random regular network on a LocalCluster of two worker processes",
         on_a_cluster,
         (Target("equals the single-process result", metric="equal", expect=True),)),
]
