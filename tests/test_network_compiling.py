"""Tensor networks (more pairwise steps than scheduler.NETWORK_STEPS) compiled as one function
where the cost model says the LLVM back end's build pays for itself (compiler/plan/building.py),
and run as NumPy calls where it does not: a network of 72 small products compiles (its build
is under a second); asked to pay back within one call, the same network stays NumPy calls.
Either way the plan says which and why, and the answer is NumPy's matrix products' (computed
here)."""

from __future__ import annotations

import numpy as np
import pytest
from hilbert.compiler.plan import building

import hilbert

#: Nine chains of eight 3×3 products, nested: 72 pairwise steps over two parameters.
SOURCE = """
def chain(x, a, b) ≔ einsum("ij,jk,kl,lm,mn,no,op,pq,qr->ir", x, b, a, b, a, b, a, b, a)
def twice(x, a, b) ≔ chain(chain(x, a, b), a, b)
def net(a, b) ≔ chain(twice(twice(twice(twice(a, a, b), a, b), a, b), a, b), a, b)
"""


def _wanted(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """net(a, b) by NumPy's products, one by one."""
    x = a
    for _ in range(9):
        for m in (b, a, b, a, b, a, b, a):
            x = x @ m
    return x


def _operands(dtype: str):
    """Two unitary 3×3 matrices (a product of 72 stays of size 1), real or complex."""
    rng = np.random.default_rng(4)
    shape = (3, 3)
    made = [rng.normal(size=shape) + (1j * rng.normal(size=shape) if dtype == "complex128"
                                      else 0.0) for _ in range(2)]
    a, b = (np.linalg.qr(m)[0] for m in made)
    return a.astype(dtype), b.astype(dtype)


def _network_notes(notes) -> list[str]:
    return [note for note in notes if "a tensor network of" in note]


@pytest.mark.timeout(300)
def test_a_network_is_one_compiled_function():
    function = hilbert.compile_source(SOURCE, name="network_llvm.hb").function("net")
    a, b = _operands("float64")
    before = function.plan(a.shape, b.shape).all_notes  # (decided before anything runs)
    notes = function.build(a, b).all_notes
    assert _network_notes(before) == _network_notes(notes)
    weighed = _network_notes(notes)
    assert len(weighed) == 1 and "72 steps: compiled as one function" in weighed[0], notes
    assert "compiled by llvm" in weighed[0] and "pays for itself" in weighed[0]
    assert any("the whole call runs as one compiled function" in n for n in notes), notes
    assert any("built by llvm" in n for n in notes), notes
    np.testing.assert_allclose(function(a, b), _wanted(a, b), rtol=1e-12, atol=1e-14)


def test_a_network_whose_build_does_not_pay_stays_numpy_calls(monkeypatch):
    monkeypatch.setattr(building, "PAYBACK_CALLS", 1)  # (its build must pay within one call)
    function = hilbert.compile_source(SOURCE, name="network_unpaid.hb").function("net")
    a, b = _operands("float64")
    notes = function.build(a, b).all_notes
    weighed = _network_notes(notes)
    assert len(weighed) == 1 and "72 steps: its steps run as NumPy calls" in weighed[0], notes
    assert "compiled by llvm" in weighed[0] and "would not pay for itself within 1 calls" in \
        weighed[0]
    assert any("direct NumPy/BLAS calls (nothing to compile)" in n for n in notes), notes
    np.testing.assert_allclose(function(a, b), _wanted(a, b), rtol=1e-12, atol=1e-14)


def test_a_complex_network_gives_numpys_answer():
    """A complex network, built by llvm (executor/llvm/complex.py): NumPy's answer."""
    function = hilbert.compile_source(SOURCE, name="network_c.hb").function("net")
    a, b = _operands("complex128")
    got = function(a, b)
    assert got.dtype == np.complex128
    np.testing.assert_allclose(got, _wanted(a, b), rtol=1e-12, atol=1e-14)


def test_a_matrix_product_states_network_is_compiled():
    """⟨ψ|ψ⟩ of a 40-site matrix product state of bond 2 (79 steps, 80 arrays): since the
    LLVM back end's entry reads its arrays from the objects (building.ARGUMENT_NS: 0.1 µs an
    array, where ctypes' packing took 1.9 µs), compiled code is quicker a call (measured:
    56 µs against 143 µs as NumPy calls), so it is compiled; the answer is opt_einsum's."""
    opt_einsum = pytest.importorskip("opt_einsum")
    symbols = iter(opt_einsum.get_symbol(k) for k in range(120))
    up, down = ([next(symbols) for _ in range(39)] for _ in range(2))
    phys = [next(symbols) for _ in range(40)]
    terms = [(bond[k - 1] if k else "") + phys[k] + (bond[k] if k < 39 else "")
             for bond in (up, down) for k in range(40)]
    rng = np.random.default_rng(5)
    ops = [rng.normal(size=tuple(2 for _ in t)) / 2 for t in terms]
    spec = ",".join(terms) + "->"
    expression = hilbert.contract_expression(spec, *[o.shape for o in ops])
    weighed = _network_notes(expression.plan.all_notes)
    assert len(weighed) == 1 and "79 steps: compiled as one function" in weighed[0]
    assert "pays for itself" in weighed[0]
    want = opt_einsum.contract(spec, *ops)
    np.testing.assert_allclose(expression(*ops), want, rtol=1e-10)


def test_weighing_follows_the_build_time():
    """The same network's figures: a build of 72 steps (0.36 s) pays for itself within
    PAYBACK_CALLS calls for a saving of 17.6 µs a call; with 500 loop levels more (2 s more
    of build: 2.36 s against the 1.76 s saved) it does not; a compiled call slower than the
    NumPy calls is never worth a build."""
    assert building.weigh(72, 0, 10_000.0, 27_800.0, 2).compiles
    deeper = building.weigh(72, 500, 10_000.0, 27_800.0, 2)
    assert not deeper.compiles and "would not pay for itself" in deeper.note
    slower = building.weigh(72, 0, 30_000.0, 27_800.0, 2)
    assert not slower.compiles and "no quicker" in slower.note
