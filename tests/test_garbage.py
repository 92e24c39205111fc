"""A call leaves nothing behind for the garbage collector: its result is freed the moment the
caller drops it. A reference cycle made per call (a closure that calls itself, say) keeps
every result and its memory alive until the collector runs; a layer norm over 4096×512 then
faulted 16 MiB of fresh pages in at every call and ran four times slower. Each test here
counts what the collector finds after calls made with it switched off."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import hilbert

SOURCE = """
fn normalised(a) ↦ (a − 1) / (1 + einsum("ij->", a · a))
fn both(a, b) ↦ (a + b, a · b)
fn total(a) ↦ einsum("ij->", a)
fn halved(a, t) ↦ if t = 0 then a else halved(a / 2, t − 1)
"""

CALLS = {
    "array": ("normalised", lambda rng: (rng.standard_normal((64, 32)),)),
    "tuple": ("both", lambda rng: (rng.standard_normal(40), rng.standard_normal(40))),
    "scalar": ("total", lambda rng: (rng.standard_normal((8, 8)),)),
    "loop": ("halved", lambda rng: (rng.standard_normal(16), 5)),
}


def _garbage_after(call, times: int = 5) -> int:
    """How many unreachable objects the collector finds after `times` calls made with it off."""
    gc.collect()
    gc.disable()
    try:
        for _ in range(times):
            call()
        return gc.collect()
    finally:
        gc.enable()


@pytest.mark.parametrize("kind", sorted(CALLS))
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_a_call_makes_no_reference_cycles(kind, dtype, executor, rng):
    name, make = CALLS[kind]
    f = getattr(hilbert.compile_source(SOURCE, executor=executor), name)
    args = [a.astype(dtype) if isinstance(a, np.ndarray) else a for a in make(rng)]
    for _ in range(3):  # both tiers, the build included, before counting
        f(*args)
    assert _garbage_after(lambda: f(*args)) == 0


def test_an_array_result_is_freed_when_the_caller_drops_it(rng):
    f = hilbert.compile_source(SOURCE).normalised
    a = rng.standard_normal((64, 32))
    for _ in range(3):
        f(a)
    gc.disable()
    try:
        result = f(a)
        gone = weakref.ref(result)
        del result
        assert gone() is None
    finally:
        gc.enable()


def test_a_model_step_makes_no_reference_cycles(executor):
    net = hilbert.load("examples/Perceptron.hb", executor=executor).Perceptron(2, 8, seed=7)
    x, y = [[0, 0], [0, 1], [1, 0], [1, 1]], [[0], [1], [1], [0]]
    for _ in range(3):
        net.train(x, y, 0.5)
        net.loss(x, y)
    assert _garbage_after(lambda: net.train(x, y, 0.5)) == 0
    assert _garbage_after(lambda: net.train(x, y, 0.5, steps=3)) == 0
    assert _garbage_after(lambda: net.loss(x, y)) == 0
