"""One transcendental function over 10⁶ entries: executor/numba/vmath.py's loops against NumPy's own
vectorised ufuncs (and torch, JAX)."""

from __future__ import annotations

import numpy as np

import hilbert
from benchmarks import anchors as A
from benchmarks.cases.base import Case, Config, Setup

#: op in .hb, NumPy's name for it, and where its inputs are drawn from (a fixed seed).
FUNCTIONS = {"exp": ("exp", (-20.0, 20.0)), "ln": ("log", (1e-3, 1e3)),
             "tanh": ("tanh", (-5.0, 5.0))}


def entrywise(op: str, math: str = "exact"):
    """A Case builder: `fn f(x) ↦ op(x)` on a 1000×1000 matrix, in maths `math`."""
    name, (low, high) = FUNCTIONS[op]

    def build(config: Config) -> Setup:
        x = np.random.default_rng(20).uniform(low, high, (1000, 1000))
        module = hilbert.compile_source(f"fn f(x) ↦ {op}(x)\n", name=f"<{op}>",
                                        executor=config.executor, math=math)
        numpy_fn = getattr(np, name)
        return Setup(
            ours=lambda: module.f(x),
            anchors=[A.numpy_anchor(numpy_fn, x, note=f"np.{name}(x)"),
                     A.torch_anchor(config, lambda torch: getattr(torch, name), x,
                                    note=f"torch.{name}"),
                     A.jax_anchor(config, lambda jnp, lax: getattr(jnp, name), x)],
            params={"x": "1000×1000", "range": f"[{low:g}, {high:g}]"}, flops=1e6, rtol=1e-14)

    return build


CASES = [
    Case(f"{op}-1e6", "entrywise", f"{op} over 10⁶ entries",
         f"{op} in a compiled loop nest (executor/numba/vmath.py, vectorised) against np.{name}",
         entrywise(op))
    for op, (name, _) in FUNCTIONS.items()
] + [Case("tanh-1e6-fast", "entrywise", "tanh over 10⁶ entries, math=\"fast\"",
          "tanh within 4 ulp (vmath.tanh_fast: one formula) against np.tanh",
          entrywise("tanh", "fast"))]
