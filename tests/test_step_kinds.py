"""How each contraction step runs (compiler/plan/scheduler.py's `_step`, layout.py's cost
model, nest_steps.py): a product where BLAS or the register tiles pay, one loop nest where a
product would copy a whole operand or make thousands of thin products (issue 47, item 19:
einsum_benchmark's tree of 60 tensors, whose first step "n,hlmnopq->hlmopq" copied a
25-million-entry tensor, and a hypernetwork's steps over letters shared by both operands and
the result). Checked on the schedule's data and on the generated code's structure, and every
step's result against numpy.einsum; never by timing."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from conftest import assert_agree
from hilbert.compiler.plan import layout, scheduler

import hilbert

#: The tree's first step at the issue's sizes: 14 × 10×14×14×14×6×11×14.
TREE = dict(zip("hlmnopq", (10, 14, 14, 14, 6, 11, 14), strict=True))


def _decided(spec: str, sizes: dict[str, int], host: bool = False) -> scheduler.Step:
    inputs, output = spec.split("->")
    return scheduler._step(inputs.split(","), output, sizes, free=False, host=host)


def _contract(spec: str):
    inputs = spec.split("->")[0].split(",")
    names = ", ".join(f"t{i}" for i in range(len(inputs)))
    return hilbert.compile_source(f'fn contract({names}) ↦ einsum("{spec}", {names})\n').contract


def _operands(spec: str, sizes: dict[str, int], seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal([sizes[ch] for ch in term])
            for term in spec.split("->")[0].split(",")]


# ---------------------------------------------------------------- the schedule's choice


def test_a_vector_against_a_middle_axis_is_one_loop_nest_in_memory_order():
    """The tree's first step: no copy of the 25 M-entry tensor into another order and no
    loop of 1960 thin products, but one nest in the tensor's own order, its innermost loop
    the contiguous o, p, q."""
    step = _decided("n,hlmnopq->hlmopq", TREE)
    assert step.kind == "loops" and step.layout is None
    assert step.order == "hlmnopq"
    assert layout.merged_groups(step.order, ["n", "hlmnopq", "hlmopq"]) == ["hlm", "n", "opq"]


def test_as_numpy_calls_the_tree_step_copies_nothing():
    """Where the function runs as NumPy calls, the step is one np.matmul over the tensor's
    leading axes, read in place (a loop over a run of letters), not a copy of it."""
    step = _decided("n,hlmnopq->hlmopq", TREE, host=True)
    assert step.kind == "product" and step.layout.copies("n", "hlmnopq") == 0
    assert step.layout.loops == ("h", "l", "m")


@pytest.mark.parametrize("spec, sizes", [
    ("abc,abc->ab", dict(a=300, b=200, c=3)),  # Hadamard-like, a short sum: 60 000 dots
    ("abc,acd->abd", dict(a=3000, b=3, c=2, d=3)),  # 3000 tiny batched products
])
def test_steps_over_many_tiny_batches_are_one_nest(spec, sizes):
    """Letters shared by both operands and the result (a hypernetwork's steps): a small
    product per batch index costs a kernel call each; one nest runs them all."""
    assert _decided(spec, sizes).kind == "loops"


@pytest.mark.parametrize("spec, sizes", [
    ("abc,acd->abd", dict(a=64, b=128, c=128, d=128)),  # batched matrix products: BLAS each
    ("ij,jk->ik", dict(i=64, j=32, k=32)),
    ("abc,c->ab", dict(a=300, b=200, c=64)),  # a GEMV read in place
])
def test_products_that_pay_stay_products(spec, sizes):
    step = _decided(spec, sizes)
    assert step.kind == "product" and step.layout.copies(*spec.split("->")[0].split(",")) == 0


def test_batched_products_keep_one_product_per_batch():
    step = _decided("abc,acd->abd", dict(a=64, b=128, c=128, d=128))
    assert step.layout.loops == ("a",)


def test_a_lone_small_product_still_compiles_nothing():
    """A nest would be quicker than the small product's loops, but not by what a compiled
    function costs to call: a lone 16×16 product stays one np.dot, and nothing is built."""
    f = _contract("ij,jk->ik")
    program = f.program(((16, 16), (16, 16)))
    assert not program.region.generated.compiled
    assert "np.dot" in program.region.source


# ---------------------------------------------------------------- the generated code


def _loop_depth(source: str) -> int:
    """How deep the generated function's `for` loops nest."""
    deepest, open_at = 0, []
    for line in source.splitlines():
        indent = len(line) - len(line.lstrip())
        while open_at and indent <= open_at[-1]:
            open_at.pop()
        if line.lstrip().startswith("for "):
            open_at.append(indent)
            deepest = max(deepest, len(open_at))
    return deepest


def test_the_nest_loops_over_merged_letters():
    """The tree step's shape at a tenth of its size: generated as one nest of three loops
    (h, l, m as one; n; o, p, q as one), its result numpy.einsum's."""
    sizes = dict(zip("hlmnopq", (4, 6, 5, 14, 3, 4, 6), strict=True))
    spec = "n,hlmnopq->hlmopq"
    f = _contract(spec)
    args = _operands(spec, sizes)
    (region,) = f.build(*args).schedule.regions
    assert [u.kind for u in region.units] == ["loops"]
    program = f.program(tuple(a.shape for a in args))
    assert program.region.generated.compiled
    assert _loop_depth(program.region.source) == 3
    assert_agree(f(*args), np.einsum(spec, *args))


def test_a_rearranged_result_is_copied_by_the_shared_kernel_not_a_deep_nest():
    """A hypernetwork's step whose products land in another order than the result's: the
    rearranging copy was a loop nest 15 deep; it is the shared kernel K.arranged_into, which
    walks axes that stay neighbours as one."""
    spec = "lcoqgJKDsFekft,kjhgafc->lcoqJKDsFeftjha"
    sizes = dict(zip("lcoqgJKDsFekftjha", (2, 2, 2, 3, 4, 2, 2, 4, 2, 2, 4, 2, 2, 2, 4, 2, 2), strict=True))
    f = _contract(spec)
    args = _operands(spec, sizes)
    program = f.program(tuple(a.shape for a in args))
    assert "K.arranged_into" in program.region.source
    assert _loop_depth(program.region.source) <= 4
    assert_agree(f(*args), np.einsum(spec, *args))


STEPS = [
    ("n,hlmnopq->hlmopq", dict(zip("hlmnopq", (3, 4, 2, 5, 3, 2, 4), strict=True))),
    ("abc,abc->ab", dict(a=30, b=20, c=3)),
    ("abc,acd->abd", dict(a=300, b=3, c=2, d=3)),
    ("bij,bjk->bik", dict(b=300, i=3, j=2, k=3)),
    ("ij,ij->", dict(i=7, j=9)),
    ("ii,ij->j", dict(i=5, j=4)),  # a diagonal: its letter is never merged
    ("bbac->", dict(a=3, b=2, c=4)),  # a diagonal beside letters that are merged
    ("bbac,ac->b", dict(a=3, b=3, c=4)),
    ("abc,cab->b", dict(a=3, b=4, c=5)),
    ("ab,cd->abcd", dict(a=3, b=4, c=2, d=5)),
    ("abc,b->ac", dict(a=30, b=64, c=30)),
]


@pytest.mark.parametrize("spec, sizes", STEPS, ids=[s for s, _ in STEPS])
def test_every_step_kind_agrees_with_numpy(spec, sizes):
    args = _operands(spec, sizes, seed=3)
    assert_agree(_contract(spec)(*args), np.einsum(spec, *args))
    args[0].flat[::5] = np.nan
    assert_agree(_contract(spec)(*args), np.einsum(spec, *args))


@pytest.mark.parametrize("spec, sizes", STEPS[:4], ids=[s for s, _ in STEPS[:4]])
def test_every_step_kind_agrees_with_numpy_in_float32(spec, sizes):
    args = [a.astype(np.float32) for a in _operands(spec, sizes, seed=4)]
    got = _contract(spec)(*args)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, np.einsum(spec, *args), rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------- the kernel


@pytest.mark.parametrize("shape", [(2, 3, 4), (2, 2, 3, 2, 2), (5,), (4, 1, 3), (2, 0, 3)])
def test_arranged_into_copies_every_order_and_stride(shape):
    """K.arranged_into (and K.contiguous, made of it) against NumPy's copy, for every order of
    the axes, reversed and broadcast axes too (whose neighbours it walks as one)."""
    from hilbert.executor.numba import kernels

    x = np.arange(float(np.prod(shape))).reshape(shape)
    for order in itertools.permutations(range(len(shape))):
        view = x.transpose(order)
        out = np.empty(view.shape)
        np.testing.assert_array_equal(kernels.arranged_into(view, out), np.ascontiguousarray(view))
        np.testing.assert_array_equal(kernels.contiguous(view[::-1]),
                                      np.ascontiguousarray(view[::-1]))
    wide = np.broadcast_to(x[:1], (3, *shape[1:]))
    np.testing.assert_array_equal(kernels.contiguous(wide), np.ascontiguousarray(wide))


def test_letters_read_twice_are_never_merged():
    assert layout.merged_groups("ij", ["ii", "ij", "j"]) == ["i", "j"]
    assert layout.merged_groups("abc", ["abc", "bc", "abc"]) == ["a", "bc"]
