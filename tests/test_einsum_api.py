"""hilbert.einsum, contract_path, contract_expression and einsum_path as a drop-in for NumPy's and
opt_einsum's (issue 47, items 4 and 14–18): the dtype of every answer (hilbert's rule beside its
dtypes, NumPy's integers exactly, float16 and long double), torch, JAX and dask arrays in and out,
NumPy's and opt_einsum's keywords, opt_einsum's PathInfo attributes, and errors that are also the
built-in exceptions NumPy raises. Expected values come from NumPy, opt_einsum, torch and JAX
themselves, or from Python's integers. opt_einsum's and NumPy's own test files run against these
functions in tests/einsum_suites/."""

from __future__ import annotations

import numpy as np
import opt_einsum
import pytest
from conftest import needs
from hilbert.grammar.errors import CheckError, HilbertError
from opt_einsum.testing import build_views
from opt_einsum.tests.test_contract import tests as OPT_EINSUM_CASES

import hilbert

pytestmark = pytest.mark.usefixtures("on_the_host")


# ------------------------------------------------------------------ item 4: one rule for dtypes

def test_a_scalar_of_integers_beside_float32_is_float64_as_the_array_result_and_hb():
    a, b = np.array([1, 2, 3], np.int8), np.array([0.1, 0.2, 0.3], np.float32)
    want = float(np.dot(a.astype(np.float64), b.astype(np.float64)))
    got = hilbert.einsum("i,i->", a, b)
    assert type(got) is np.float64 and got == want
    assert hilbert.einsum("i,i->i", a, b).dtype == np.float64
    assert hilbert.compile_source('fn f(a, b) ↦ einsum("i,i->i", a, b)').f(a, b).dtype == np.float64
    c = np.array([1j, 2, 3], np.complex64)
    assert type(hilbert.einsum("i,i->", a, c)) is np.complex128


def test_memory_is_counted_in_the_dtype_the_call_computes_in():
    shapes = [(40, 30), (40, 30), (30, 30)]
    outer_first = [(0, 1), (0, 1)]  # a 40×30×40×30 intermediate: 5.5 MiB in float32, 11 in float64
    limit = "8M"

    def slices(*dtypes):
        operands = [np.ones(s, d) for s, d in zip(shapes, dtypes, strict=True)]
        return hilbert.contract_path("ai,bj,ij->ab", *operands, optimize=outer_first,
                                     memory_limit=limit)[1].slices

    assert slices(np.float32, np.float32, np.float32) == 1
    assert slices(np.int8, np.float32, np.float32) == slices(np.float64, np.float64, np.float64) > 1


# ------------------------------------------------------- item 17: integers, float16, long double

def test_int64_contractions_are_exact_above_two_to_the_53():
    big = 2**53 + 1
    a = np.array([[big, 3], [5, big]], np.int64)
    b = np.array([[1, big], [7, 2]], np.int64)
    got = hilbert.einsum("ij,jk->ik", a, b)
    want = [[sum(int(a[i, j]) * int(b[j, k]) for j in range(2)) % 2**64 for k in range(2)]
            for i in range(2)]
    assert got.dtype == np.int64
    assert [[int(x) % 2**64 for x in row] for row in got] == want
    scalar = hilbert.einsum("i,i->", np.array([big, 1]), np.array([1, 1]))
    assert type(scalar) is np.int64 and int(scalar) == big + 1


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "uint32", "int64", "bool"])
def test_integer_and_boolean_operands_answer_as_numpy_einsum(dtype, rng):
    a = rng.integers(0, 100, (4, 5)).astype(dtype)
    b = rng.integers(0, 100, (5, 3)).astype(dtype)
    c = rng.integers(0, 100, (3,)).astype(dtype)
    want = np.einsum("ij,jk,k->i", a, b, c)
    got = hilbert.einsum("ij,jk,k->i", a, b, c)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)  # (int8's wrap-around included, as NumPy's)
    assert hilbert.einsum("ij->", a).dtype == np.einsum("ij->", a).dtype


def test_float16_answers_in_float16_and_long_double_keeps_its_precision():
    half = np.arange(7, dtype=np.float16) + np.float16(0.5)
    got = hilbert.einsum("i,i->", half, half)
    assert type(got) is np.float16 and got == np.float16((half.astype(np.float32) ** 2).sum())
    tiny = np.longdouble(1) / np.longdouble(2**62)
    x = np.array([1, tiny, tiny], np.longdouble)
    got = hilbert.einsum("i->", x)
    assert type(got) is np.longdouble and got == np.sum(x)  # (1 + 2⁻⁶¹ where long double has it)


def test_hb_keeps_its_own_rule_for_integers():
    a = np.array([1, 2, 3], np.int64)
    assert hilbert.compile_source('fn f(a) ↦ einsum("i,i->i", a, a)').f(a).dtype == np.float64


# ----------------------------------------------------------------- item 14: other array libraries

def test_torch_tensors_come_back_as_tensors_with_torch_s_gradient():
    torch = needs("torch")
    x = torch.rand(3, 4, dtype=torch.float64, requires_grad=True)
    w = torch.rand(4, 5, dtype=torch.float64, requires_grad=True)
    got = hilbert.einsum("ij,jk->ik", x, w)
    assert isinstance(got, torch.Tensor) and got.requires_grad
    (got ** 2).sum().backward()
    gx, gw = x.grad.clone(), w.grad.clone()
    x.grad, w.grad = None, None
    (torch.einsum("ij,jk->ik", x, w) ** 2).sum().backward()
    torch.testing.assert_close(gx, x.grad)
    torch.testing.assert_close(gw, w.grad)
    plain = hilbert.einsum("ij,jk->ik", x.detach().float(), w.detach().float())
    assert isinstance(plain, torch.Tensor) and plain.dtype == torch.float32
    ints = hilbert.einsum("i,i->", torch.tensor([2**53 + 1, 1]), torch.tensor([1, 1]))
    assert isinstance(ints, torch.Tensor) and ints.dtype == torch.int64
    assert int(ints) == 2**53 + 2


def test_jax_arrays_come_back_as_jax_arrays_and_work_under_jit_and_grad():
    jax = needs("jax")
    jnp = jax.numpy
    x, w = jnp.arange(12.0).reshape(3, 4) / 10, jnp.arange(20.0).reshape(4, 5) / 10
    got = hilbert.einsum("ij,jk->ik", x, w)
    assert isinstance(got, jax.Array)
    np.testing.assert_allclose(got, jnp.einsum("ij,jk->ik", x, w), rtol=1e-6)

    def loss(w, einsum):
        return (einsum("ij,jk->ik", x, w) ** 2).sum()

    np.testing.assert_allclose(jax.jit(jax.grad(loss), static_argnums=1)(w, hilbert.einsum),
                               jax.grad(loss)(w, jnp.einsum), rtol=1e-5)


def test_dask_arrays_come_back_as_dask_arrays_computed_lazily():
    da = needs("dask.array")
    a = np.arange(12.0).reshape(3, 4)
    got = hilbert.einsum("ij,jk->ik", da.from_array(a, chunks=2), da.from_array(a.T, chunks=2))
    assert isinstance(got, da.Array)
    np.testing.assert_allclose(got.compute(), a @ a.T, rtol=1e-12)


# ------------------------------------------------------ item 15: NumPy's and opt_einsum's keywords

def test_out_dtype_order_and_casting_mean_what_they_mean_to_numpy(rng):
    a, b = rng.normal(size=(3, 4)), rng.normal(size=(4, 5))
    out = np.empty((3, 5))
    assert hilbert.einsum("ij,jk->ik", a, b, out=out) is out
    np.testing.assert_allclose(out, a @ b, rtol=1e-12)
    single = hilbert.einsum("ij,jk->ik", a, b, dtype="float32", casting="same_kind")
    assert single.dtype == np.float32
    np.testing.assert_allclose(single, (a.astype(np.float32) @ b.astype(np.float32)), rtol=1e-5)
    assert hilbert.einsum("ij,jk->ik", a, b, order="F").flags.f_contiguous
    assert hilbert.einsum("ij,jk->ik", a, b, order="C").flags.c_contiguous
    counts = hilbert.einsum("i,i->i", np.arange(3.0), np.arange(3.0), dtype=np.int64,
                            casting="unsafe")
    assert counts.dtype == np.int64 and counts.tolist() == [0, 1, 4]
    np.testing.assert_allclose(hilbert.einsum("ij,jk", a, b, use_blas=False, backend="numpy"),
                               a @ b, rtol=1e-12)


@pytest.mark.parametrize("keywords, builtin", [
    ({"out": "test"}, TypeError),
    ({"dtype": "bad_data_type"}, TypeError),
    ({"dtype": np.float32}, TypeError),  # float64 → float32 is not a 'safe' cast
    ({"order": "W"}, ValueError),
    ({"casting": "blah"}, ValueError),
    ({"backend": "tensorflow"}, ValueError),
    ({"out": np.empty((2, 2), np.int64)}, TypeError),  # float64 → int64 under 'safe'
    ({"out": np.empty((3, 3))}, ValueError),
])
def test_keywords_numpy_refuses_are_coded_and_numpy_s_exception(keywords, builtin):
    a = np.ones((2, 2))
    with pytest.raises(builtin) as caught:
        hilbert.einsum("ij,jk->ik", a, a, **keywords)
    assert isinstance(caught.value, HilbertError) and caught.value.code in ("E600", "E601")


def test_numpy_s_path_format_and_einsum_path_are_taken(rng):
    a, b, c = rng.normal(size=(3, 4)), rng.normal(size=(4, 5)), rng.normal(size=(5, 2))
    path, text = hilbert.einsum_path("ij,jk,kl->il", a, b, c, optimize="greedy")
    assert path == ["einsum_path", *np.einsum_path("ij,jk,kl->il", a, b, c, optimize="greedy")[0][1:]]
    assert "ij,jk,kl->il" in text or "plan" in text
    np.testing.assert_allclose(hilbert.einsum("ij,jk,kl->il", a, b, c, optimize=path),
                               a @ b @ c, rtol=1e-12)


def test_an_explicit_path_that_leaves_operands_uncontracted_is_refused():
    a = np.arange(3.0)
    with pytest.raises(ValueError) as caught:
        hilbert.einsum("a,a,a->a", a, a, a, optimize=[(1,), (0, 1)])
    assert isinstance(caught.value, RuntimeError) and caught.value.code == "E600"


def test_memory_limit_max_input_bounds_the_path_as_opt_einsum_s_does():
    shapes = [(20,), (20, 20), (20, 20), (20, 20), (20, 20), (20, 20), (20, 20)]
    eq = "a,ac,ab,ad,cd,bd,bc->"
    want, _ = opt_einsum.contract_path(eq, *shapes, shapes=True, optimize="greedy",
                                       memory_limit="max_input")
    path, info = hilbert.contract_path(eq, *shapes, shapes=True, optimize="greedy",
                                       memory_limit="max_input")
    assert path == want and info.largest_intermediate <= 400 and info.slices == 1
    operands = [np.ones(s) for s in shapes]
    assert hilbert.einsum(eq, *operands, memory_limit=-1) == np.einsum(eq, *operands)


def test_contract_expression_takes_constants_broadcasting_out_and_backend(rng):
    a, b, c = rng.normal(size=(5, 4)), rng.normal(size=(1, 5)), rng.normal(size=(4, 20))
    expression = hilbert.contract_expression("ab,bc,bd->acd", a.shape, b.shape, c.shape)
    want = np.einsum("ab,bc,bd->acd", a, b, c)
    np.testing.assert_allclose(expression(a, b, c, backend="numpy"), want, rtol=1e-12)
    out = np.empty(want.shape)
    assert expression(a, b, c, out=out) is out
    np.testing.assert_allclose(out, want, rtol=1e-12)
    kept = hilbert.contract_expression("ab,bc,bd->acd", a, b.shape, c, constants=[0, 2])
    np.testing.assert_allclose(kept(b), want, rtol=1e-12)
    assert "constants=[0, 2]" in repr(kept)
    with pytest.raises(ValueError):
        hilbert.contract_expression("ab,bc->ac", (2, 3), (3, 4), out=np.empty((2, 4)))


# -------------------------------------------------- item 16: what contract_path says, as opt_einsum

@pytest.mark.parametrize("subscripts", sorted(set(OPT_EINSUM_CASES)))
def test_path_info_has_opt_einsum_s_attributes_and_values(subscripts):
    views = build_views(subscripts)
    path, info = hilbert.contract_path(subscripts, *views)
    _, theirs = opt_einsum.contract_path(subscripts, *views, optimize=path)
    for name in ("eq", "input_subscripts", "output_subscript", "indices", "size_dict",
                 "opt_cost", "naive_cost", "speedup", "largest_intermediate", "size_list",
                 "scale_list", "contraction_list", "path"):
        assert getattr(info, name) == getattr(theirs, name), name


def test_a_sliced_contraction_s_info_describes_the_whole_path(rng):
    a, b, c = rng.normal(size=(40, 30)), rng.normal(size=(40, 30)), rng.normal(size=(30, 30))
    path, info = hilbert.contract_path("ai,bj,ij->ab", a, b, c, optimize=[(0, 1), (0, 1)],
                                       memory_limit="2M")
    _, theirs = opt_einsum.contract_path("ai,bj,ij->ab", a, b, c, optimize=path)
    assert info.slices > 1
    assert info.contraction_list == theirs.contraction_list
    assert (info.opt_cost, info.largest_intermediate) == (theirs.opt_cost, theirs.largest_intermediate)


def test_an_expression_prints_its_subscripts_and_steps():
    expression = hilbert.contract_expression("ab,bc,cd", (2, 3), (3, 4), (4, 5))
    assert "ab,bc,cd" in repr(expression) and "ab,bc,cd" in str(expression)
    assert "[GEMM]" in str(expression)
    assert expression.contraction_list[-1][2].endswith("->ad")


# ----------------------------------------------------- item 18: NumPy's exceptions, hilbert's codes

@pytest.mark.parametrize("call, builtin, code", [
    (lambda a: hilbert.einsum("ij,jk->ix->", a, a), ValueError, "E300"),
    (lambda a: hilbert.einsum("i->&", a), ValueError, "E300"),
    (lambda a: hilbert.einsum(0, 0), TypeError, "E300"),
    (lambda a: hilbert.einsum("ij,jk", a), ValueError, "E300"),
    (lambda a: hilbert.einsum("ii", np.ones((2, 3))), ValueError, "E305"),
    (lambda a: hilbert.einsum("ijk", a), ValueError, "E306"),
    (lambda a: hilbert.einsum(), ValueError, "E600"),
    (lambda a: hilbert.contract_path("ij,jk", a, np.ones((3, 3))), ValueError, "E305"),
    (lambda a: hilbert.contract_expression("ab,bc", (2, 2), (2, 2))(a), ValueError, "E600"),
    (lambda a: hilbert.einsum("ij", np.array([["x", "y"]])), TypeError, "E601"),
])
def test_einsum_api_errors_are_numpy_s_exceptions_with_hilbert_s_code(call, builtin, code):
    with pytest.raises(builtin) as caught:
        call(np.ones((2, 2)))
    err = caught.value
    assert isinstance(err, HilbertError) and err.code == code and err.message
    assert err.span is not None
    if code.startswith("E3"):
        assert isinstance(err, CheckError)
