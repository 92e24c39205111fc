"""Layout planning of pairwise products (compiler/plan/layout.py): which operand is copied, which
letters are looped over, and that every layout computes what numpy.einsum and the reference
executor compute, compiled and on the host, on finite data and on inf and NaN."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest
from conftest import assert_agree
from hilbert.compiler.plan import layout as layouts
from hilbert.compiler.plan.layout import layout

import hilbert


def contract(spec: str, executor: str = "numba"):
    arity = spec.split("->")[0].count(",") + 1
    names = ", ".join(f"t{i}" for i in range(arity))
    source = f'fn contract({names}) ↦ einsum("{spec}", {names})\n'
    return hilbert.compile_source(source, executor=executor).contract


def operands(spec: str, sizes: dict[str, int], seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    terms = spec.split("->")[0].split(",")
    return [rng.standard_normal(tuple(sizes[ch] for ch in term)) for term in terms]


# ---------------------------------------------------------------- the planner alone


def test_a_summed_axis_in_the_middle_is_a_product_per_slice_not_a_copy():
    """"abc,b->ac" (issue 14: the whole operand was copied): one matrix-vector product per a,
    each reading a[i] transposed in place."""
    plan = layout("abc", "b", "ac", {"a": 300, "b": 64, "c": 300}, free=False)
    assert plan.loops == ("a",) and plan.copies("abc", "b") == 0
    assert layout("abc", "b", "ac", {"a": 300, "b": 64, "c": 300}, False, host=True).loops == ("a",)


def test_batch_letters_are_looped_over_without_copies():
    sizes = {"b": 64, "i": 128, "j": 128, "k": 128}
    for a, b, out in (("bij", "bjk", "bik"), ("bjk", "bij", "bik"), ("bij", "bkj", "kbi"),
                      ("ibj", "jbk", "bik")):
        for host in (False, True):
            plan = layout(a, b, out, sizes, free=False, host=host)
            assert "b" in plan.loops
            assert plan.copies(a, b) == 0 or (host and out == "kbi"), (a, b, out, plan)


def test_no_copy_is_made_twice():
    """"jik,kjx->ix" copied jik once for nothing, then again in the order kjx needs."""
    plan = layout("kjx", "jik", "ix", {"i": 10, "j": 20, "k": 30, "x": 5}, free=False)
    assert plan.copies("kjx", "jik") <= 1


def test_a_summed_letter_may_be_looped_over_and_accumulated():
    """"jab,jb->a": the summed j sits apart from b in the first operand; looping over j
    (each product accumulating into the result) reads both in place."""
    sizes = {"j": 50, "a": 400, "b": 400}
    plan = layout("jab", "jb", "a", sizes, free=False)
    assert plan.loops == ("j",) and plan.copies("jab", "jb") == 0
    assert "j" not in layout("jab", "jb", "a", sizes, free=False, host=True).loops


def test_a_free_result_takes_the_order_that_needs_no_rearranging():
    plan = layout("ik", "kj", "ji", {"i": 40, "j": 50, "k": 60}, free=True)
    assert not plan.rearranged and plan.copies("ik", "kj") == 0


LETTERS = "abcdefgh"


def random_products(count: int, seed: int):
    """Pairwise products with letters of every role (batch, rows, columns, summed) in random
    orders, and random sizes from 1 up."""
    rng = np.random.default_rng(seed)
    made = 0
    while made < count:
        letters = list(rng.permutation(list(LETTERS))[:rng.integers(3, 7)])
        roles = rng.integers(0, 4, size=len(letters))  # 0 batch, 1 rows, 2 columns, 3 summed
        if not (roles == 3).any():
            continue
        a = [ch for ch, r in zip(letters, roles, strict=True) if r in (0, 1, 3)]
        b = [ch for ch, r in zip(letters, roles, strict=True) if r in (0, 2, 3)]
        out = [ch for ch, r in zip(letters, roles, strict=True) if r in (0, 1, 2)]
        if not out:
            continue
        a, b, out = ("".join(rng.permutation(x)) for x in (a, b, out))
        sizes = {ch: int(rng.choice([1, 2, 3, 5, 17])) for ch in letters}
        yield f"{a},{b}->{out}", sizes
        made += 1


def simulate(plan: layouts.Layout, a_term: str, b_term: str, out_term: str, a, b):
    """What the emitted code computes for `plan`, in NumPy: the checks the planner promises
    (each operand read in place is a view of whole merged axes) made as assertions."""
    if plan.a != a_term:
        a = np.ascontiguousarray(a.transpose([a_term.index(ch) for ch in plan.a]))
    if plan.b != b_term:
        b = np.ascontiguousarray(b.transpose([b_term.index(ch) for ch in plan.b]))
    sizes = {ch: n for term, x in ((plan.a, a), (plan.b, b)) for ch, n in zip(term, x.shape, strict=True)}
    out = np.zeros(tuple(sizes[ch] for ch in plan.output))
    for index in itertools.product(*(range(sizes[ch]) for ch in plan.loops)):
        at = dict(zip(plan.loops, index, strict=True))
        left = _matrix(a, plan.a, at, plan.rows, plan.summed, sizes)
        right = _matrix(b, plan.b, at, plan.summed, plan.cols, sizes)
        target = _matrix(out, plan.output, at, plan.rows, plan.cols, sizes)
        target += left @ right
    if plan.rearranged:
        out = out.transpose([plan.output.index(ch) for ch in out_term])
    return out


def _matrix(x, term, at, first, second, sizes):
    """x at the loop indices `at` as a first×second matrix that must be a view of x."""
    picked = x[(*(at.get(ch, slice(None)) for ch in term), ...)]  # a 0-d view, not a scalar
    kept = [ch for ch in term if ch not in at]
    moved = picked.transpose([kept.index(ch) for ch in first + second])
    shape = (int(np.prod([sizes[ch] for ch in first])), int(np.prod([sizes[ch] for ch in second])))
    view = moved.reshape(shape)
    assert np.shares_memory(view, x) or view.size == 0, "a reading the planner made is a copy"
    return view


@pytest.mark.parametrize("host", [False, True])
def test_every_planned_layout_computes_the_einsum(host):
    for spec, sizes in random_products(300, seed=7 + host):
        inputs, out = spec.split("->")
        a_term, b_term = inputs.split(",")
        x, y = operands(spec, sizes, seed=1)
        for free in (False, True):
            plan = layout(a_term, b_term, out, sizes, free=free, host=host)
            got = simulate(plan, a_term, b_term, out, x, y)
            want = np.einsum(f"{a_term},{b_term}->{out if not free else plan.output}", x, y)
            assert_agree(got, want)


# ---------------------------------------------------------------- the generated code

CASES = [
    ("abc,b->ac", {"a": 30, "b": 64, "c": 70}),  # a matrix-vector product per a
    ("jab,jb->a", {"j": 9, "a": 80, "b": 90}),  # a summed letter looped over, accumulating
    ("bij,bjk->bik", {"b": 5, "i": 40, "j": 30, "k": 20}),  # batched
    ("bij,bkj->kbi", {"b": 5, "i": 40, "j": 30, "k": 20}),  # batched, the result rearranged
    ("ibj,jbk->kib", {"b": 3, "i": 20, "j": 30, "k": 40}),  # batch letters in the middle
    ("jik,kjx->ix", {"i": 10, "j": 20, "k": 30, "x": 5}),  # one copy, not two
    ("ijk,jk->i", {"i": 2, "j": 3, "k": 4}),  # a summed block and a unit side
    ("abc,cd->bad", {"a": 4, "b": 1, "c": 3, "d": 2}),  # sizes of one
    ("bij,bjk->bik", {"b": 300, "i": 3, "j": 2, "k": 3}),  # many small products
]


@pytest.mark.parametrize("spec, sizes", CASES, ids=[c[0] for c in CASES])
def test_generated_layouts_agree_with_numpy_and_the_reference(spec, sizes):
    args = operands(spec, sizes)
    got = contract(spec)(*args)
    assert_agree(got, np.einsum(spec, *args))
    assert_agree(got, contract(spec, "reference")(*args))


@pytest.mark.parametrize("spec, sizes", CASES[:5], ids=[c[0] for c in CASES[:5]])
def test_generated_layouts_agree_on_inf_and_nan(spec, sizes):
    args = operands(spec, sizes, seed=3)
    args[0].flat[::7] = np.inf
    args[1].flat[::5] = np.nan
    assert_agree(contract(spec)(*args), contract(spec, "reference")(*args))


def test_a_summed_axis_in_the_middle_copies_nothing():
    program = contract("abc,b->ac").program(((300, 64, 300), (64,)))
    assert "ascontiguousarray" not in program.region.source
    assert program.region.generated.copies == 0 and program.region.generated.looped == 1


def test_a_large_batched_product_runs_uncompiled_as_one_matmul():
    program = contract("bij,bjk->bik").program(((64, 128, 128), (64, 128, 128)))
    assert not program.region.generated.compiled
    assert "np.matmul" in program.region.source and "ascontiguousarray" not in program.region.source


def test_small_batched_products_are_compiled_loops():
    program = contract("bij,bjk->bik").program(((300, 3, 2), (300, 2, 3)))
    assert program.region.generated.compiled and "np.matmul" not in program.region.source


def test_the_dead_copy_is_gone():
    program = contract("jik,kjx->ix").program(((20, 10, 30), (30, 20, 5)))
    assert program.region.source.count("ascontiguousarray") == 1


# ------------------------------------------------------------------ gate-first buffers

GATES = """
def gates(z, c) ≔ let y ≔ z + z in
  tanh(einsum("bdg,g->bd", y, positions(y, 2) = 2)) · c
  + exp(einsum("bdg,g->bd", y, positions(y, 2) = 0))
  + einsum("bdg,g->bd", y, positions(y, 2) = 3)
"""


@pytest.mark.parametrize("executor", ["numba", "reference"])
def test_an_array_read_only_in_constant_slices_agrees_with_numpy(tmp_path, executor):
    (tmp_path / "Gates.hb").write_text(GATES, encoding="utf-8")
    f = hilbert.load(tmp_path / "Gates.hb", executor=executor).function("gates")
    rng = np.random.default_rng(3)
    z, c = rng.normal(size=(6, 50, 4)), rng.normal(size=(6, 50))
    y = z + z
    np.testing.assert_allclose(f(z, c), np.tanh(y[..., 2]) * c + np.exp(y[..., 0]) + y[..., 3],
                               rtol=1e-12, atol=1e-12)


def test_an_array_read_only_in_constant_slices_is_stored_slice_first(tmp_path):
    """Its buffer holds the sliced axis first, so each slice is contiguous and the nest that
    reads the slices runs in vector lanes (an LSTM's gates: z is B×D×4, read at gate k)."""
    (tmp_path / "Gates.hb").write_text(GATES, encoding="utf-8")
    f = hilbert.load(tmp_path / "Gates.hb").function("gates")
    rng = np.random.default_rng(3)
    f(rng.normal(size=(6, 50, 4)), rng.normal(size=(6, 50)))
    source = f.program(((6, 50, 4), (6, 50))).region.source
    assert re.search(r"b\d+\[p\d+, i0, i1\]", source), source
    assert not re.search(r"b\d+\[i0, i1, p\d+\]", source), source


# ------------------------------------------------------------------ gate-middle slabs

MIDDLE = """
def slabs(a, u, b, c) ≔ let z ≔ a + u + einsum("bgd,gd->bgd", a ^ 0, b) in
  tanh(einsum("bgd,g->bd", z, positions(z, 1) = 2)) · c
  + exp(einsum("bgd,g->bd", z, positions(z, 1) = 0))
  + einsum("bgd,g->bd", z, positions(z, 1) = 3)
"""


def _slabs(tmp_path, executor="numba"):
    (tmp_path / "Slabs.hb").write_text(MIDDLE, encoding="utf-8")
    rng = np.random.default_rng(4)
    args = (rng.normal(size=(6, 4, 50)), rng.normal(size=(6, 4, 50)), rng.normal(size=(4, 50)),
            rng.normal(size=(6, 50)))
    return hilbert.load(tmp_path / "Slabs.hb", executor=executor).function("slabs"), args


@pytest.mark.parametrize("executor", ["numba", "reference"])
def test_slabs_along_a_middle_axis_agree_with_numpy(tmp_path, executor):
    f, (a, u, b, c) = _slabs(tmp_path, executor)
    z = a + u + b
    np.testing.assert_allclose(f(a, u, b, c), np.tanh(z[:, 2]) * c + np.exp(z[:, 0]) + z[:, 3],
                               rtol=1e-12, atol=1e-12)


def test_slabs_along_a_middle_axis_are_read_in_place_not_stored(tmp_path):
    """A sum read only as slabs z[:, k, :] is contiguous along its last axis already: the nest
    reading the slabs adds a[i0, k, i1] + u[i0, k, i1] + b[k, i1] itself (an LSTM step's gate
    pre-activations, gate axis in the middle), with no B×G×D buffer and no nest writing one."""
    f, args = _slabs(tmp_path)
    f(*args)
    source = f.program(tuple(np.shape(x) for x in args)).region.source
    assert source.count("for i0 in") == 1, source
    assert not re.search(r"K\.empty\(\(n\d+, n\d+, n\d+", source), source
    assert re.search(r"a0\[i0, p\d+, i1\] \+ a1\[i0, p\d+, i1\]", source), source
