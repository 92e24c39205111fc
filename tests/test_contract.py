"""hilbert.einsum, contract_path and contract_expression (hilbert/contract.py, issue 24 item
1): NumPy's conventions (implicit output, `...`, the interleaved form) checked against
numpy.einsum itself; paths checked against opt_einsum's own search; explicit paths used as
given; path optimiser objects; memory limits; coded errors. And .hb einsums over any
alphabet's letters, on every executor."""

from __future__ import annotations

import numpy as np
import opt_einsum
import pytest
from hilbert.grammar.errors import HilbertError
from opt_einsum.testing import build_views

# opt_einsum's list of contractions its tests run (scalars, Hadamard products, index
# transformations, traces, outer and inner products, GEMMs, random cases that once failed).
from opt_einsum.tests.test_contract import tests as OPT_EINSUM_CASES

import hilbert

#: numpy.einsum's conventions, each with the shapes of its operands.
CASES = [
    ("ij,jk", [(3, 4), (4, 5)]),                       # implicit output: "ik"
    ("ij,jk->ki", [(3, 4), (4, 5)]),
    ("ii", [(4, 4)]),                                  # a trace
    ("ii->i", [(4, 4)]),                               # a diagonal
    ("ij", [(3, 4)]),
    ("ji", [(3, 4)]),                                  # implicit output sorted: a transpose
    ("i,j", [(3,), (4,)]),                             # an outer product
    ("i,i", [(5,), (5,)]),                             # a dot product
    ("ijk->", [(2, 3, 4)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)]),    # batched, by an ellipsis
    ("...ij,...jk", [(6, 3, 4), (6, 4, 5)]),
    ("i...->...", [(3, 2, 4)]),
    ("ab,bc,cd,de->ae", [(8, 9), (9, 10), (10, 11), (11, 12)]),
    ("abc,cd,bd->a", [(3, 4, 5), (5, 6), (4, 6)]),
    ("ij,ij,ij->", [(3, 4), (3, 4), (3, 4)]),
    ("bij,bjk->bik", [(5, 3, 4), (5, 4, 2)]),
]


def _operands(shapes, rng):
    return [rng.normal(size=s) for s in shapes]


@pytest.mark.parametrize("executor", ["numba", "reference", "dask"])
@pytest.mark.parametrize("subscripts, shapes", CASES, ids=[c[0] for c in CASES])
def test_einsum_agrees_with_numpy(subscripts, shapes, executor, rng):
    operands = _operands(shapes, rng)
    want = np.einsum(subscripts, *operands)
    got = hilbert.einsum(subscripts, *operands, executor=executor)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert np.shape(got) == np.shape(want)


def test_the_interleaved_form_agrees_with_numpy(rng):
    a, b = rng.normal(size=(3, 4)), rng.normal(size=(4, 5))
    np.testing.assert_allclose(hilbert.einsum(a, [0, 1], b, [1, 2], [0, 2]),
                               np.einsum(a, [0, 1], b, [1, 2], [0, 2]), rtol=1e-12)
    np.testing.assert_allclose(hilbert.einsum(a, [0, 1], b, [1, 2]),
                               np.einsum(a, [0, 1], b, [1, 2]), rtol=1e-12)


def test_opt_einsums_symbols_are_read(rng):
    """opt_einsum names indices past the ASCII letters with other characters (get_symbol)."""
    symbols = [opt_einsum.get_symbol(k) for k in (60, 61, 62)]
    spec = f"{symbols[0]}{symbols[1]},{symbols[1]}{symbols[2]}->{symbols[0]}{symbols[2]}"
    a, b = rng.normal(size=(3, 4)), rng.normal(size=(4, 5))
    np.testing.assert_allclose(hilbert.einsum(spec, a, b), a @ b, rtol=1e-12)


@pytest.mark.parametrize("optimize", ["greedy", "dp", "optimal", "dynamic-programming", "eager",
                                      "opportunistic", "branch-2", "auto", "auto-hq"])
def test_contract_path_is_the_path_opt_einsum_finds(optimize, rng):
    spec = "ab,bc,cd,de,ef->af"
    shapes = [(30, 5), (5, 40), (40, 6), (6, 50), (50, 7)]
    path, info = hilbert.contract_path(spec, *shapes, shapes=True, optimize=optimize)
    want, want_info = opt_einsum.contract_path(spec, *shapes, shapes=True, optimize=optimize)
    assert path == [tuple(step) for step in want]
    assert info.flops == info.plan.flops and info.flops > 0
    assert info.sliced_indices == ()
    assert "plan of contract" in str(info) and f"path optimiser {optimize}" in str(info)
    assert info.plan.einsums[0].largest == int(want_info.largest_intermediate)


@pytest.mark.parametrize("optimize", [True, None, False, "random-greedy", "random-greedy-128"])
def test_opt_einsums_other_optimize_values_are_taken(optimize, rng):
    """True and None mean "auto", False one step over every operand (opt_einsum's meanings);
    the random searches find some path."""
    operands = _operands([(6, 5), (5, 7), (7, 4)], rng)
    path, _ = hilbert.contract_path("ij,jk,kl", *operands, optimize=optimize)
    if optimize is False:
        assert path == [(0, 1, 2)]
    elif optimize is not None and optimize is not True:
        assert len(path) == 2
    else:
        assert path == opt_einsum.contract_path("ij,jk,kl", *operands, optimize="auto")[0]
    np.testing.assert_allclose(hilbert.einsum("ij,jk,kl", *operands, optimize=optimize),
                               np.einsum("ij,jk,kl", *operands), rtol=1e-12)


def test_an_explicit_path_is_used_as_given(rng):
    operands = _operands([(3, 4), (4, 5), (5, 6)], rng)
    given = [(1, 2), (0, 1)]
    path, info = hilbert.contract_path("ij,jk,kl", *operands, optimize=given)
    assert path == given and "explicit path" in str(info)
    np.testing.assert_allclose(hilbert.einsum("ij,jk,kl", *operands, optimize=given),
                               operands[0] @ operands[1] @ operands[2], rtol=1e-12)
    with pytest.raises(HilbertError) as caught:
        hilbert.einsum("ij,jk", *operands[:2], optimize=[(0, 1), (0, 1)])
    assert caught.value.code == "E600"


def test_a_path_optimiser_object_is_used(rng):
    operands = _operands([(3, 4), (4, 5), (5, 6), (6, 2)], rng)
    chosen = opt_einsum.RandomGreedy(max_repeats=4)
    got = hilbert.einsum("ij,jk,kl,lm", *operands, optimize=chosen)
    np.testing.assert_allclose(got, np.linalg.multi_dot(operands), rtol=1e-12)
    _, info = hilbert.contract_path("ij,jk,kl,lm", *operands, optimize=chosen)
    assert "path optimiser RandomGreedy" in str(info)


def test_contract_expression_is_reusable_and_checks_shapes(monkeypatch, rng):
    monkeypatch.setenv("HILBERT_COMPILE", "eager")
    shapes = [(6, 3, 4), (6, 4, 5)]
    expression = hilbert.contract_expression("...ij,...jk->...ik", *shapes)
    assert expression.plan.einsums[0].shapes == tuple(shapes)
    expression.build()
    for _ in range(2):
        a, b = _operands(shapes, rng)
        np.testing.assert_allclose(expression(a, b), a @ b, rtol=1e-12)
    assert expression.function.tier == "compiled"
    with pytest.raises(HilbertError) as caught:
        expression(*_operands([(6, 3, 4), (6, 4, 6)], rng))
    assert caught.value.code == "E600" and "made for (6, 4, 5)" in str(caught.value)


def test_memory_limit_refuses_a_contraction_that_needs_more(rng):
    a, b = rng.normal(size=(200, 3)), rng.normal(size=(3, 200))
    np.testing.assert_allclose(hilbert.einsum("ij,jk", a, b, memory_limit="1M"), a @ b,
                               rtol=1e-12)
    for limit in (1000, "10K"):
        with pytest.raises(HilbertError) as caught:
            hilbert.einsum("ij,jk", a, b, memory_limit=limit)
        assert caught.value.code == "E700"
    for limit in ("lots", -5, float("nan")):
        with pytest.raises(HilbertError) as caught:
            hilbert.einsum("ij,jk", a, b, memory_limit=limit)
        assert caught.value.code == "E600"


@pytest.mark.parametrize("call", [
    lambda a: hilbert.einsum("ij,jk->ix->", a, a),
    lambda a: hilbert.einsum("ij,jk", a),
    lambda a: hilbert.einsum("ij->k", a),
])
def test_bad_subscripts_are_e300(call):
    with pytest.raises(HilbertError) as caught:
        call(np.ones((2, 2)))
    assert caught.value.code == "E300"


UNICODE = """fn mm(a, b) ↦ einsum("αβ,βγ->αγ", a, b)
fn trace(a) ↦ einsum("жж->", a)
fn loss(a, b) ↦ einsum("αβ->", einsum("αβ,βγ->αγ", a, b) · einsum("αβ,βγ->αγ", a, b))
def loss2(a, b) ≔ loss(a, b)
fn slope(a, b) ↦ ∂ loss2(a, b) / ∂ a
"""


@pytest.mark.parametrize("executor", ["numba", "reference", "dask"])
def test_hb_einsums_take_any_alphabets_letters(executor, monkeypatch, rng):
    monkeypatch.setenv("HILBERT_COMPILE", "eager")
    module = hilbert.compile_source(UNICODE, executor=executor)
    a, b = rng.normal(size=(3, 4)), rng.normal(size=(4, 5))
    np.testing.assert_allclose(module.mm(a, b), a @ b, rtol=1e-12)
    np.testing.assert_allclose(module.trace(a[:, :3]), np.trace(a[:, :3]), rtol=1e-12)
    np.testing.assert_allclose(module.slope(a, b), 2 * (a @ b) @ b.T, rtol=1e-10)


# ------------------------------------------- opt_einsum's and NumPy's own einsum test cases



@pytest.mark.parametrize("subscripts", sorted(set(OPT_EINSUM_CASES)))
def test_opt_einsums_own_cases_agree_with_numpy(subscripts):
    views = build_views(subscripts)  # (its sizes for each letter; a Python float for ",")
    np.testing.assert_allclose(hilbert.einsum(subscripts, *views),
                               np.einsum(subscripts, *views), rtol=1e-12, atol=1e-12)


#: Ellipses, broadcasting and the interleaved form as NumPy's and opt_einsum's input tests
#: exercise them, each with its operands' shapes.
ELLIPSES = [
    ("...a->...", [(2, 3, 4)]),
    ("a...->...", [(4, 2, 3)]),
    ("a...a->...a", [(3, 2, 3)]),
    ("...,...", [(2, 3), (2, 3)]),
    ("...a,...b", [(2, 3), (2, 4)]),
    ("...a", [(2, 3)]),
    ("...b,...a->...", [(2, 3), (2, 4)]),
    ("...ij,...jk->...ik", [(1, 5), (5, 5)]),           # broadcast: no leading axes on one
    ("...ij,...jk->...ik", [(3, 1, 2, 4), (5, 4, 2)]),  # broadcast: lengths 1 stretched
    ("ij,ij->j", [(10, 2), (1, 2)]),                    # a length-1 axis stretched (gh-10343)
    ("i,i", [(1,), (7,)]),
    ("ij...,jk...->ik...", [(2, 3, 4), (3, 5, 4)]),
    ("...ii->...i", [(2, 3, 3)]),
    ("ii...->...", [(3, 3, 2)]),
]


@pytest.mark.parametrize("subscripts, shapes", ELLIPSES, ids=[c[0] for c in ELLIPSES])
def test_ellipses_and_broadcasting_agree_with_numpy(subscripts, shapes, rng):
    operands = _operands(shapes, rng)
    want = np.einsum(subscripts, *operands)
    got = hilbert.einsum(subscripts, *operands)
    assert np.shape(got) == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_the_interleaved_form_with_ellipses_agrees_with_numpy(rng):
    x, y = rng.normal(size=(2, 3, 4)), rng.normal(size=(3, 5))
    for args in [(x, [Ellipsis, 0], [Ellipsis]), (x, [Ellipsis, 0]),
                 (x, [Ellipsis, 0], [Ellipsis, 0]),
                 (x, [Ellipsis, 1], y, [Ellipsis, 0], [Ellipsis])]:
        np.testing.assert_allclose(hilbert.einsum(*args), np.einsum(*args), rtol=1e-12)
    # (numbers past 52 as opt_einsum takes them: numpy.einsum refuses those)
    args = (x, (1000, 1001, 1002), (1002, 1000))
    np.testing.assert_allclose(hilbert.einsum(*args), opt_einsum.contract(*args), rtol=1e-12)


def test_lengths_that_differ_and_are_not_one_are_e305(rng):
    with pytest.raises(HilbertError) as caught:
        hilbert.einsum("ij,ij->j", rng.normal(size=(10, 2)), rng.normal(size=(3, 2)))
    assert caught.value.code == "E305"
