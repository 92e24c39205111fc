"""Complex numbers in the LLVM back end (executor/llvm/complex.py, complex_products.py):
complex128 and complex64 calls are compiled, their functions built by
llvm (the plan says so), and give NumPy's answers, computed here. A quotient is NumPy's own
formula, so the same bits; a product rounds each real product (NumPy's scalar loop), where
NumPy's AVX-512 loops fuse a multiply and an add, and a modulus is C's hypot where NumPy's
AVX-512 loop scales its own: those agree with NumPy to an ulp or two, whatever the machine, so
they are compared to 4 ulps of the result's size. Matrix products sum in another order than
NumPy's BLAS: compared to a tolerance of the sums' size."""

from __future__ import annotations

import numpy as np
import pytest

import hilbert

SOURCE = """
def mixed(a, b, c) ≔ a · conj(a) + a / c − im(a) + re(c) · abs(b)
def divided(a, c) ≔ a / c + a
def chained(a, b, c) ≔ einsum("ij,jk->ik", a · b, c) · 0.5
def inner(a, b) ≔ einsum("ij,ij->", a · b, conj(b))
def scaled(a, s) ≔ a · s − conj(a)
def parts(z) ≔ re(z) · 2 − im(z) + abs(z)
def size(z) ≔ einsum("ij,ij->", abs(z), re(z))
def both(z) ≔ (abs(z), z · 2)
def rot(t, z, u) ≔ if t = 0 then z else rot(t − 1, einsum("ij,j->i", u, z) · 0.5 + conj(z), u)
fn rotated(t, z, u) ↦ rot(t, z, u)
def exp_(z) ≔ exp(z)
def ln_(z) ≔ ln(z)
def sqrt_(z) ≔ sqrt(z)
def sin_(z) ≔ sin(z)
def cos_(z) ≔ cos(z)
def tan_(z) ≔ tan(z)
def tanh_(z) ≔ tanh(z)
"""


@pytest.fixture(scope="module")
def module():
    return hilbert.compile_source(SOURCE, name="llvm_complex.hb")


def _values(rng, shape, dtype):
    return (rng.normal(size=shape) + 1j * rng.normal(size=shape)).astype(dtype)


def _built_by_llvm(function, *args) -> None:
    notes = function.build(*args).all_notes
    assert any("built by llvm" in n for n in notes), notes
    assert not any("is not compiled" in n or "on the host tier only" in n for n in notes), notes


def _close(got, want, dtype, ulps=4.0):
    eps = np.finfo(np.dtype(dtype).type(0).real.dtype).eps
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_allclose(got, want, rtol=0, atol=ulps * eps * np.max(np.abs(want)))


@pytest.mark.parametrize("dtype", ["complex128", "complex64"])
def test_entrywise_complex_arithmetic_is_built_by_llvm(module, dtype):
    rng = np.random.default_rng(1)
    a, b, c = (_values(rng, (5, 7), dtype) for _ in range(3))
    f = module.function("mixed")
    _built_by_llvm(f, a, b, c)
    want = a * np.conj(a) + a / c - a.imag + c.real * np.abs(b)
    _close(f(a, b, c), want, dtype, ulps=8.0)


@pytest.mark.parametrize("dtype", ["complex128", "complex64"])
def test_a_complex_quotient_has_numpys_bits(module, dtype):
    """NumPy's division (the larger part of the divisor divides the smaller), operation for
    operation, with divisors of very different parts and zero ones."""
    rng = np.random.default_rng(2)
    a = _values(rng, (64,), dtype)
    c = _values(rng, (64,), dtype) * np.exp(rng.uniform(-20, 20, 64)).astype(dtype)
    c[:4] = [0, 1j, 2, 0]
    a[3] = 0
    f = module.function("divided")
    _built_by_llvm(f, a, c)
    with np.errstate(all="ignore"):
        want = a / c + a
        got = f(a, c)
    np.testing.assert_array_equal(got.view(got.real.dtype), want.view(want.real.dtype))


@pytest.mark.parametrize("size", [3, 24, 100])
def test_a_complex_contraction_is_built_by_llvm(module, size):
    """Products by the back end's loops, the largest (over complex_products.BLAS_WORK) by
    NumPy's zgemm."""
    rng = np.random.default_rng(3)
    a, b = (_values(rng, (size, size + 1), "complex128") for _ in range(2))
    c = _values(rng, (size + 1, size + 2), "complex128")
    f = module.function("chained")
    _built_by_llvm(f, a, b, c)
    want = ((a * b) @ c) * 0.5
    got = f(a, b, c)
    assert got.dtype == np.complex128
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13 * np.max(np.abs(want)))


@pytest.mark.parametrize("dtype", ["complex128", "complex64"])
def test_a_complex_scalar_result(module, dtype):
    """A full contraction answers one complex number (two words through the ABI)."""
    rng = np.random.default_rng(4)
    a, b = (_values(rng, (6, 5), dtype) for _ in range(2))
    f = module.function("inner")
    _built_by_llvm(f, a, b)
    got = f(a, b)
    want = np.sum(a * b * np.conj(b))
    assert np.iscomplexobj(got) and np.asarray(got).dtype == np.dtype(dtype)
    tol = 1e-12 if dtype == "complex128" else 1e-4
    assert abs(got - want) <= tol * np.sum(np.abs(a * b * np.conj(b)))


@pytest.mark.parametrize("dtype", ["complex128", "complex64"])
def test_a_complex_scalar_argument(module, monkeypatch, dtype):
    """A complex number given crosses the ABI as its two parts, read from the object by the
    entry from Python (cpython.py): call.py's ctypes path is never taken (where the entry is
    available: a process whose objects have the layouts it reads)."""
    from hilbert.executor.llvm import call, cpython

    rng = np.random.default_rng(5)
    a = _values(rng, (4, 3), dtype)
    f = module.function("scaled")
    s = 0.5 - 2.0j
    _built_by_llvm(f, a, s)

    def refused(*args):
        raise AssertionError("the ctypes path was taken")

    if cpython.available():
        monkeypatch.setattr(call.ctypes, "create_string_buffer", refused)  # (its packing)
    _close(f(a, s), a * np.dtype(dtype).type(s) - np.conj(a), dtype)


@pytest.mark.parametrize("dtype", ["complex128", "complex64"])
def test_real_results_of_a_complex_call_are_real(module, dtype):
    """re, im and abs are real (compiler/passes/realness.py): compiled code computes them in
    complex arrays, and the call answers their real parts, as the host answers NumPy's."""
    rng = np.random.default_rng(7)
    z = _values(rng, (3, 5), dtype)
    real = np.dtype(dtype).type(0).real.dtype
    parts, size, both = (module.function(n) for n in ("parts", "size", "both"))
    for f in (parts, size, both):
        _built_by_llvm(f, z)
    _close(parts(z), z.real * 2 - z.imag + np.abs(z), real, ulps=8.0)
    got = size(z)
    assert not np.iscomplexobj(got)
    assert abs(got - np.sum(np.abs(z) * z.real)) <= 1e-5 * np.sum(np.abs(z) ** 2)
    modulus, doubled = both(z)
    _close(modulus, np.abs(z), real)
    _close(doubled, z * 2, dtype)


@pytest.mark.parametrize("dtype", ["complex128", "complex64"])
def test_a_complex_loop_is_built_by_llvm(module, dtype):
    """A counted loop over complex state (its count given as a complex number: its real part
    counts, its imaginary part checked to be 0). A complex64 call's count is a counted
    float64 (compiler/counting.py), given to compiled code as its real part."""
    rng = np.random.default_rng(8)
    z, u = _values(rng, (4,), dtype), _values(rng, (4, 4), dtype) / 4
    f = module.function("rotated")
    _built_by_llvm(f, 5, z, u)
    want = z
    for _ in range(5):
        want = (u @ want) * 0.5 + np.conj(want)
    got = f(5, z, u)
    assert f.tier == "compiled"
    tol = 1e-13 if dtype == "complex128" else 1e-5
    np.testing.assert_allclose(got, want, rtol=0, atol=tol * np.max(np.abs(want)))


@pytest.mark.parametrize("count, why", [(2.5, "(not whole)"), (-1, "(negative)"),
                                        (2 + 1j, "the complex number (2+1j)")])
def test_a_complex_loops_bad_count_is_the_hosts_error(module, count, why):
    """The count is checked in compiled code and raised as the host raises it (E500)."""
    z, u = np.ones(4, np.complex128), np.eye(4, dtype=np.complex128)
    f = module.function("rotated")
    _built_by_llvm(f, 3, z, u)
    with pytest.raises(hilbert.HilbertError) as raised:
        f(count, z, u)
    assert raised.value.code == "E500" and why in str(raised.value)
    assert f.tier == "compiled"


@pytest.mark.parametrize("count, why", [(2.5, "(not whole)"), (-1, "(negative)"),
                                        (2 + 1j, "the complex number (2+1j)")])
def test_a_complex64_loops_bad_count_is_the_hosts_error(module, count, why):
    """A complex64 call's count is a float64 in compiled code: a whole real part is counted
    there, a bad one refused there (E500), and one with an imaginary part, which float64
    cannot hold, makes the call run on the host, which refuses it as it refuses it alone."""
    z, u = np.ones(4, np.complex64), np.eye(4, dtype=np.complex64)
    f = module.function("rotated")
    _built_by_llvm(f, 3, z, u)
    with pytest.raises(hilbert.HilbertError) as raised:
        f(count, z, u)
    assert raised.value.code == "E500" and why in str(raised.value)
    want = z
    for _ in range(3):
        want = (u @ want) * np.float32(0.5) + np.conj(want)
    np.testing.assert_allclose(f(3 + 0j, z, u), want, rtol=1e-6)
    assert f.tier == "compiled"


@pytest.mark.parametrize("size", [3, 13])
def test_a_complex_loop_products_bits_are_pythons_in_order(module, size):
    """The back end's product loops add each entry's terms in order from 0, each a product
    rounded as Python's complex multiplies: the same bits as Python's complex arithmetic."""
    rng = np.random.default_rng(9)
    a, b = (_values(rng, (size, size + 1), "complex128") for _ in range(2))
    c = _values(rng, (size + 1, size + 9), "complex128")
    f = module.function("chained")
    _built_by_llvm(f, a, b, c)
    ab = [[complex(x) * complex(y) for x, y in zip(ra, rb, strict=True)]
          for ra, rb in zip(a, b, strict=True)]
    want = np.empty((size, size + 9), np.complex128)
    for i in range(size):
        for j in range(size + 9):
            total = 0j
            for p in range(size + 1):
                total += ab[i][p] * complex(c[p, j])
            want[i, j] = total * 0.5
    got = f(a, b, c)
    np.testing.assert_array_equal(got.view(np.float64), want.view(np.float64))


_MATHS = {"exp": np.exp, "ln": np.log, "sqrt": np.sqrt, "sin": np.sin, "cos": np.cos,
          "tan": np.tan, "tanh": np.tanh}


def _c_library(name: str, z: np.ndarray) -> np.ndarray:
    """C's complex function `name` (cexp, …; cexpf, … for complex64) of each entry, called
    through ctypes."""
    import ctypes
    import ctypes.util

    real = ctypes.c_double if z.dtype == np.complex128 else ctypes.c_float

    class Complex(ctypes.Structure):
        _fields_ = [("re", real), ("im", real)]

    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    function = getattr(libm, "c" + name + ("" if z.dtype == np.complex128 else "f"))
    function.restype, function.argtypes = Complex, [Complex]
    made = [function(Complex(x.real, x.imag)) for x in z.ravel()]
    return np.array([complex(m.re, m.im) for m in made], z.dtype).reshape(z.shape)


@pytest.mark.parametrize("dtype", ["complex128", "complex64"])
@pytest.mark.parametrize("name", sorted(_MATHS))
def test_complex_maths_functions_are_the_c_librarys(module, name, dtype):
    """exp, ln, sqrt, sin, cos, tan and tanh of complex values: the C library's cexp, clog, …
    (their bits), which NumPy's complex loops compute as well (to 2 ulps here). The back end
    calls them by x86-64's C ABI: elsewhere the call stays on the host tier, saying so."""
    import llvmlite.binding as llvm

    rng = np.random.default_rng(10)
    z = _values(rng, (6, 7), dtype) * 2
    c_name = {"ln": "log"}.get(name, name)
    f = module.function(name + "_")
    if not llvm.get_process_triple().startswith("x86_64"):
        notes = f.build(z).all_notes
        assert any("calls stay on the host" in n for n in notes), notes
        _close(f(z), _MATHS[name](z), dtype, ulps=2.0)
        return
    _built_by_llvm(f, z)
    got = f(z)
    want = _c_library(c_name, z)
    real = got.real.dtype
    np.testing.assert_array_equal(got.view(real), want.view(real))
    _close(got, _MATHS[name](z), dtype, ulps=2.0)
