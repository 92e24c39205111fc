"""Random programs over the newer constructs, run on every executor and tier and compared
with the reference executor (the oracle, itself checked against NumPy elsewhere).

Each program is built from `let`, tuples, `x[t]`, slices, concat, erf, oneHot, argmax, ∂ and
counted loops over two 4×3 arguments. CI runs a fixed seed's handful; `-m slow` runs many
more with fresh seeds (docs/testing.md).
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from conftest import assert_agree

import hilbert

#: Entrywise expressions of shape 4×3 over x and y (and each other).
LEAVES = ["x", "y", "x · 0.5", "y − 1"]


def matrix(rnd: random.Random, depth: int, slopes: bool = True) -> str:
    """A random 4×3 expression (with derivatives inside it where `slopes`)."""
    if depth == 0:
        return rnd.choice(LEAVES)
    a, b = matrix(rnd, depth - 1, slopes), matrix(rnd, depth - 1, slopes)
    plain = matrix(rnd, depth - 1, slopes=False)  # what a ∂ is taken of (no ∂ of a ∂: E323)
    return rnd.choice([
        f"({a} + {b})", f"({a} · {b})", f"tanh({a})", f"erf({a})",
        f"concat(({a})[0:1], ({b})[1:4], 0)",
        f"argmax({a}, 0) + {b}", f"argmin({a}, 1) · {b}",
        f"({a} − {b})",
        f"(let u ≔ {a} in u · u + {b})",
        f'einsum("ki,kj->ij", einsum("ij,kj->ik", {a}, {b})[0:4], x) · 0.1',
        f"abs({a})", f'oneHot(einsum("ij->i", {a}) · 0 + 2, 3) + {b}',
        *([f"(∂ einsum(\"ij,ij->\", {plain}, x) / ∂ x) + {b}"] if slopes else []),
    ])


def program(seed: int) -> str:
    """A module answering `f(x, y)`: a matrix, a tuple, a row `x[t]`, or a counted loop."""
    rnd = random.Random(seed)
    shape = rnd.choice(["plain", "tuple", "row", "loop", "slope"])
    body = matrix(rnd, rnd.randint(1, 3), slopes=shape != "slope")  # (no ∂ of a ∂ yet: E323)
    if shape == "tuple":
        return f"fn f(x, y) ↦ let a ≔ {body} in (a, a[1:3])"
    if shape == "row":
        return f"fn f(x, y) ↦ ({body})[2] + y[1]"
    if shape == "loop":
        return ("def walk(t, x, y) ≔ if t = 0 then x else "
                f"walk(t − 1, tanh({body}) · 0.5, y)\nfn f(x, y) ↦ walk(3, x, y)")
    if shape == "slope":
        return ("def walk(t, x, y) ≔ if t = 0 then x else "
                f"walk(t − 1, tanh({body}) · 0.5, y)\n"
                'fn f(x, y) ↦ ∂ einsum("ij->", walk(2, x, y)) / ∂ y')
    return f"fn f(x, y) ↦ {body}"


def check(seed: int, executors: tuple[str, ...], monkeypatch) -> None:
    text = program(seed)
    rng = np.random.default_rng(seed)
    x, y = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    want = hilbert.compile_source(text, executor="reference").f(x, y)
    for executor in executors:
        for when in ("eager", "never"):
            monkeypatch.setenv("HILBERT_COMPILE", when)
            got = hilbert.compile_source(text, executor=executor).f(x, y)
            if isinstance(want, tuple):
                assert isinstance(got, tuple) and len(got) == len(want), text
                for g, w in zip(got, want, strict=True):
                    assert_agree(g, w, rtol=1e-10)
            else:
                assert_agree(got, want, rtol=1e-10)


@pytest.mark.timeout(900)
@pytest.mark.parametrize("seed", range(12))
def test_random_programs_agree_on_every_executor_and_tier(seed, monkeypatch):
    check(seed, ("numba", "dask"), monkeypatch)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(1000, 1200))
def test_random_programs_agree_on_every_executor_and_tier_slow(seed, monkeypatch):
    check(seed, ("numba", "dask"), monkeypatch)
