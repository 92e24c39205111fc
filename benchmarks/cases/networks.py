"""Tensor networks at real size (issue 24, item 5, in part): einsum_benchmark's generators (an
8×8 lattice, a random 3-regular graph of 100 tensors) and a matrix product state of 40 sites,
through hilbert.contract_expression, against opt_einsum's contract_expression on the same
path; and the random regular network sliced to a sixteenth of its unsliced peak
(hilbert/slicing.py)."""

from __future__ import annotations

import numpy as np

from benchmarks.cases.base import OE, OE_EXPR, Anchor, Case, Config, Setup, Target


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
    if kind == "mps":
        return _chain(40, 16)
    from einsum_benchmark.generators import random as eb_random
    from einsum_benchmark.generators import structured as eb_structured

    if kind == "lattice":
        return eb_structured.lattice((8, 8), d_min=2, d_max=3, seed=7)
    return eb_random.regular(100, 3, d_min=2, d_max=2, seed=7)


def network(kind: str, slice_to: int = 1):
    def build(config: Config) -> Setup:
        import opt_einsum

        import hilbert

        spec, shapes = _network(kind)
        shapes = [tuple(int(n) for n in s) for s in shapes]
        ops = _operands(shapes, 5)
        path, info = hilbert.contract_path(spec, *shapes, shapes=True, memory_limit="1T")
        limit = info.peak_bytes // slice_to if slice_to > 1 else None
        expression = hilbert.contract_expression(spec, *shapes, optimize=path,
                                                 memory_limit=limit, executor=config.executor)
        expression.build()
        theirs = opt_einsum.contract_expression(spec, *shapes, optimize=path)
        metrics = {"tensors": len(shapes), "indices": len(set(spec) - set(",->")),
                   "flops": info.flops, "peak_bytes": info.peak_bytes}
        if slice_to > 1:
            _, sliced = hilbert.contract_path(spec, *shapes, shapes=True, optimize=path,
                                              memory_limit=limit)
            metrics.update(slices=sliced.slices, sliced_peak_bytes=sliced.peak_bytes,
                           flops_overhead=sliced.flops_overhead,
                           under_limit=sliced.peak_bytes <= limit)
        return Setup(
            ours=lambda: expression(*ops),
            anchors=[Anchor(OE_EXPR, lambda: (lambda: theirs(*ops)),
                            "opt_einsum.contract_expression on hilbert's path"),
                     Anchor(OE, lambda: (lambda: opt_einsum.contract(spec, *ops,
                                                                     optimize=path)),
                            "opt_einsum.contract on hilbert's path")],
            params={"tensors": len(shapes), "indices": metrics["indices"],
                    "memory_limit": limit},
            flops=float(info.flops), metrics=metrics, rtol=1e-7, atol=1e-12)
    return build


_AS_FAST = Target("≤ contract_expression on the same path", OE_EXPR, 1.0)

CASES = [
    Case("net-lattice-8x8", "networks", "an 8×8 lattice (einsum_benchmark)",
         "64 tensors, bonds of 2–3, contracted to a scalar along opt_einsum's greedy path",
         network("lattice"), (_AS_FAST,)),
    Case("net-regular-100", "networks", "a random 3-regular network of 100 tensors",
         "einsum_benchmark's random regular graph, 150 bonds of 2, to a scalar",
         network("regular"), (_AS_FAST,)),
    Case("net-mps-40", "networks", "⟨ψ|ψ⟩ of a matrix product state of 40 sites",
         "80 tensors, 118 indices, bond 16", network("mps"), (_AS_FAST,)),
    Case("net-regular-100-sliced", "networks", "the random regular network sliced to 1/16",
         "the same contraction under memory_limit = its unsliced peak / 16",
         network("regular", 16),
         (Target("one slice under the limit", metric="under_limit", expect=True),
          Target("FLOPs overhead ≤ 2×", metric="flops_overhead", max_value=2.0))),
]
