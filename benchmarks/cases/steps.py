"""Steps and host calls (issue 47, items 19 and 20): einsum_benchmark's tree of 60 tensors' first
step, `n,hlmnopq->hlmopq` at 14 × 10×14×14×14×6×11×14 (a vector against a middle axis, which
compiled code ran as a copy of the whole tensor), compiled, on the host tier and in NumPy and
opt_einsum; and a small MLP's Adam step (64×16 → 32 → 4, its gradient by ∂) on the host tier,
with nothing compiled (HILBERT_COMPILE=never), against the same step written in NumPy."""

from __future__ import annotations

import os

import numpy as np

from benchmarks import anchors as A
from benchmarks.cases.base import NUMPY, OE, Anchor, Case, Config, Setup, Target

#: hilbert's host tier on the same call (the planned path as NumPy/BLAS steps, nothing built).
HOST = "hilbert host tier"

TREE_SIZES = dict(zip("hlmnopq", (10, 14, 14, 14, 6, 11, 14), strict=True))

ADAM = """
open Prelude.Networks
open Prelude.Optimisers

def loss(x, y, w1, w2) ≔ einsum("ij->", (outputs(x, w1, w2) − y)²) / (2 · rows(x))

fn adamStep(x, y, w1, w2, m1, m2, v1, v2, t) ↦
  let (g1, g2) ≔ ∂ loss(x, y, w1, w2) / ∂ (w1, w2),
      (n1, p1, q1) ≔ adam(w1, m1, v1, g1, t, 0.001, 0.9, 0.999, 1e-8),
      (n2, p2, q2) ≔ adam(w2, m2, v2, g2, t, 0.001, 0.9, 0.999, 1e-8)
  in (n1, n2, p1, p2, q1, q2)
"""


def tree_step(config: Config) -> Setup:
    import hilbert

    spec = "n,hlmnopq->hlmopq"
    rng = np.random.default_rng(3)
    ops = [rng.standard_normal([TREE_SIZES[ch] for ch in term])
           for term in spec.split("->")[0].split(",")]
    shapes = tuple(o.shape for o in ops)
    expression = hilbert.contract_expression(spec, *shapes, executor=config.executor)
    expression.build()
    anchors = A.einsum_anchors(config, spec, ops, torch_jax=False)
    if config.executor == "numba":
        host = expression.function.program(shapes).host
        anchors.append(Anchor(HOST, lambda: (lambda: host(tuple(ops))),
                              "the same signature's host tier: numpy.einsum for this step"))
    return Setup(ours=lambda: expression(*ops), anchors=anchors,
                 params={"spec": spec, "shapes": " · ".join("×".join(map(str, s))
                                                              for s in shapes)},
                 flops=2.0 * float(np.prod(ops[1].shape)))


def adam_numpy(x, y, w1, w2, m1, m2, v1, v2, t, r=0.001, b1=0.9, b2=0.999, eps=1e-8):
    """The step by hand: the network's gradients, then Adam on each weight."""
    z = x @ w1
    a = np.maximum(z, 0)
    d = (a @ w2 - y) / x.shape[0]
    grads = (x.T @ ((d @ w2.T) * (z > 0)), a.T @ d)
    new = []
    for w, m, v, g in zip((w1, w2), (m1, m2), (v1, v2), grads, strict=True):
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        new.append((w - r / (1 - b1 ** t) * m / (np.sqrt(v) / np.sqrt(1 - b2 ** t) + eps), m, v))
    return tuple(new[k][i] for i in range(3) for k in range(2))


def _flat(results: tuple) -> np.ndarray:
    """The step's six arrays as one vector, to compare (both sides pay it alike)."""
    return np.concatenate([r.ravel() for r in results])


def adam_host(config: Config) -> Setup:
    import hilbert

    rng = np.random.default_rng(0)
    n, p, h, q = 64, 16, 32, 4
    args = (rng.standard_normal((n, p)), rng.standard_normal((n, q)),
            rng.standard_normal((p, h)) * 0.3, rng.standard_normal((h, q)) * 0.3,
            np.zeros((p, h)), np.zeros((h, q)), np.zeros((p, h)), np.zeros((h, q)), 3.0)
    step = hilbert.compile_source(ADAM, executor=config.executor).adamStep
    before = os.environ.get("HILBERT_COMPILE")
    os.environ["HILBERT_COMPILE"] = "never"  # (read when the signature's program is made)
    try:
        step(*args)
    finally:
        if before is None:
            del os.environ["HILBERT_COMPILE"]
        else:
            os.environ["HILBERT_COMPILE"] = before
    return Setup(ours=lambda: _flat(step(*args)),
                 anchors=[A.numpy_anchor(lambda *a: _flat(adam_numpy(*a)), *args,
                                         note="the step written in NumPy")],
                 params={"network": f"{n}×{p} → {h} → {q}", "tier": step.tier},
                 rtol=1e-10, atol=1e-14)


CASES = [
    Case("tree-first-step", "steps", "the tree of 60's first step, n,hlmnopq->hlmopq",
         "a vector against a middle axis of a 25 M-entry tensor (einsum_benchmark's tree of 60 "
         "tensors, issue 47 item 19): compiled as one nest in memory order",
         tree_step, (Target("≤ 1.1× the host tier", HOST, 1.1),
                     Target("≤ 1.1× opt_einsum", OE, 1.1))),
    Case("adam-host", "steps", "a small MLP's Adam step on the host tier",
         "64×16 → 32 → 4, gradient by ∂ and Adam on both weights, HILBERT_COMPILE=never: the "
         "host tier's own cost per op (issue 47 item 20)",
         adam_host, (Target("≤ 2.5× the step in NumPy", NUMPY, 2.5),)),
]
