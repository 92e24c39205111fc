"""What the LLVM back end lowers that it once left to Numba's front end (issue 48, item 3: the
old path goes once the new one lowers everything): counter-based draws, bit for bit with the
host's (compiler/ops/draws.py); column sums added pairwise, bit for bit with the pairwise
order written here in NumPy; sin and tan (C's); a scalar made a vector (np.full) and a
counted buffer converted (astype); floats' floored remainder and quotient (NumPy's bits,
signed zeros included); and every compiled function of the golden guard's programs. Each is checked to be built by llvm (the plan's note), not only to be right."""

from __future__ import annotations

import numpy as np
import pytest
from hilbert.compiler.ops import draws

import hilbert

SOURCE = """
fn uniformly(t, x) ↦ uniform(7, t, x) · x + einsum("ij,ij->", x, x)
fn normally(t, x) ↦ gaussian(7, t, x) · x + einsum("ij,ij->", x, x)
fn shuffled(t, v) ↦ permutation(7, t, v) · v + einsum("i,i->", v, v)
fn badKey(t, x) ↦ uniform(7.5, t, x) · x + einsum("ij,ij->", x, x)
fn columns(a) ↦ einsum("ij->j", a)
fn tangent(x) ↦ tan(x) + sin(x) · x
fn picked(q, t) ↦ einsum("s,s->", q, oneHot(t, rows(q)))
fn remainder(a, b) ↦ a mod b
fn quotient(a, b) ↦ a div b
fn past(q) ↦ minimum(einsum("b,ab->ab", positions(q, 1), q = q) + (1 − (q = 1)) · 9007199254740992, 1)
"""

LLVM = "numba: generated function 1 built by llvm (optimisation level 3)"


@pytest.fixture(scope="module")
def module():
    return hilbert.compile_source(SOURCE, name="llvm_everything.hb")


def _built_by(function, *shapes) -> list[str]:
    return [note for note in function.plan(*shapes).all_notes if "built by" in note]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name, draw", [("uniformly", draws.uniform),
                                        ("normally", draws.gaussian)])
def test_draws_in_compiled_code_are_the_hosts_bits(module, name, draw, dtype):
    x = np.arange(1.0, 16.0, dtype=dtype).reshape(3, 5) / 4
    function = module.function(name)
    for step in (0, 3, 2 ** 40 + 1):
        want = draw(7, step, (3, 5), dtype) * x + (x * x).sum(dtype=np.float64).astype(dtype)
        np.testing.assert_array_equal(function(step, x), want)
    assert _built_by(function, (), (3, 5)) == [LLVM]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n", [1, 2, 7, 64, 1000, 1025])
def test_a_permutation_in_compiled_code_is_the_hosts(module, n, dtype):
    """A stable sort of n uniforms (a merge sort in LLVM IR, runs of every length)."""
    v = np.ones(n, dtype)
    got = module.shuffled(5, v)
    np.testing.assert_array_equal(got, draws.permutation(7, 5, n, dtype) + n)
    assert sorted(got - n) == list(range(n))
    assert _built_by(module.shuffled, (), (n,)) == [LLVM]


def test_a_key_that_is_no_whole_number_is_e512_from_compiled_code(module):
    with pytest.raises(hilbert.HilbertError) as raised:
        module.badKey(1, np.ones((2, 2)))
    assert raised.value.code == "E512" and "7.5" in raised.value.message
    assert _built_by(module.badKey, (), (2, 2)) == [LLVM]


def _pairwise_columns(a: np.ndarray, block: int = 1024) -> np.ndarray:
    """Column sums as the generated nest adds them: rows added in order within blocks of
    `block` rows, each block's sum pushed onto a stack whose equal groups are added (older
    on the left) as a binary counter carries, the rest added smallest group first."""
    stack: list[np.ndarray] = []
    counts: list[int] = []  # (each stacked sum's number of blocks)
    part = np.zeros(a.shape[1])
    for start in range(0, a.shape[0], block):
        for row in a[start:start + block]:
            part = part + row
        if start + block > a.shape[0]:
            break  # (the last, partial block is added at the end)
        size = 1
        while counts and counts[-1] == size:
            part = stack.pop() + part
            counts.pop()
            size *= 2
        stack.append(part)
        counts.append(size)
        part = np.zeros(a.shape[1])
    for held in reversed(stack):
        part = held + part
    return part


@pytest.mark.parametrize("rows", [1023, 1024, 5000, 9000])
def test_column_sums_add_their_blocks_pairwise_to_the_bit(module, rows):
    a = np.random.default_rng(rows).normal(size=(rows, 3)) * 1e3
    got = module.columns(a)
    np.testing.assert_array_equal(got, _pairwise_columns(a))
    assert _built_by(module.columns, (rows, 3)) == [LLVM]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sin_and_tan_are_lowered(module, dtype):
    x = np.linspace(-1.4, 1.4, 12, dtype=dtype).reshape(3, 4)
    wide = x.astype(np.float64)
    np.testing.assert_allclose(module.tangent(x), np.tan(wide) + np.sin(wide) * wide,
                               rtol=16 * np.finfo(dtype).eps, atol=16 * np.finfo(dtype).eps)
    assert _built_by(module.tangent, (3, 4)) == [LLVM]


def test_a_scalar_made_a_vector_and_a_counted_buffer_converted(module):
    q = np.arange(6.0)
    assert module.picked(q, 4) == 4.0
    assert _built_by(module.picked, (6,), ()) == [LLVM]
    rows = np.float32([[0, 1, 0, 1], [1, 0, 0, 0]])
    np.testing.assert_array_equal(module.past(rows), np.float32([1, 0]))
    assert _built_by(module.past, (2, 4)) == [LLVM]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_floats_remainder_and_quotient_are_numpys(module, dtype):
    a = np.array([7, -7, 7, -7, 0, -0.0, 5.5, -5.5, np.inf, 3, np.nan, -7, 1e30, 2.5], dtype)
    b = np.array([3, 3, -3, -3, 3, 3, 2, 2, 3, 0, 2, 0, 7, -0.5], dtype)
    with np.errstate(all="ignore"):
        for name, meaning in (("remainder", np.mod), ("quotient", np.floor_divide)):
            got, want = getattr(module, name)(a, b), meaning(a, b)
            np.testing.assert_array_equal(got, want)
            assert np.array_equal(np.signbit(got), np.signbit(want)), name
            assert _built_by(getattr(module, name), (14,), (14,)) == [LLVM]


@pytest.mark.timeout(600)
def test_every_compiled_function_of_the_golden_programs_is_lowered():
    """Each compiled function of the golden guard's programs (the Prelude's and the
    benchmarks') lowered to LLVM IR (nothing compiled): none is refused."""
    from benchmarks import llvm_coverage

    with llvm_coverage.record.in_root():
        found = llvm_coverage.lowerings()
    assert len(found) > 400
    assert [(name, why) for name, why in found if why is not None] == []
