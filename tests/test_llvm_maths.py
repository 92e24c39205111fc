"""The LLVM back end's vector maths against the Numba-compiled kernels', to the bit (issue 48, item 2):
float32 code's exp, log, tanh and erf (vmath32.py, ported by executor/llvm/maths32.py) of
float32 and of float64 arguments, math="fast"'s exp_fast and tanh_fast in float64 code
(vmath.py's) and in float32 code (vmath32's exp and tanh again), each applied by a loop-IR
function lowered here and by a loop Numba compiles around the kernel itself, over ordinary
values, the special ones (±0, ±∞, NaN, subnormals) and each function's edges; and LLVM runs the
float32 loops in vector lanes."""

from __future__ import annotations

import numpy as np
import pytest
from hilbert.executor import llvm
from hilbert.executor.codegen.loops import Assign, Call, Fmt, For, Return, Store, Sub, Var
from hilbert.executor.llvm.types import Array
from hilbert.executor.numba import kernels, kernels32
from numba import njit

import hilbert

#: Float32's edges: its smallest subnormal and normal, largest finite, and each function's
#: thresholds (exp's overflow and underflow, tanh's and erf's switch of formula and ±1).
EDGES32 = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1.1754942e-38, 1.1754944e-38,
           3.4028235e38, -3.4028235e38, 88.72283, 88.72284, 89.0, -87.33655, -103.97208,
           -103.972084, -104.0, -104.00001, 0.625, -0.625, 0.62499994, 9.01, 10.0, 1.0,
           0.99999994, 4.0, 3.9999998, 1e-20, 5.5e-39]
#: Float64's edges (float64 code's fast functions, and float64 arguments in float32 code: those
#: past float32's range and below its smallest subnormal among them).
EDGES64 = [0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -5e-324, 2.2250738585072014e-308,
           1e-310, 1.7976931348623157e308, 709.78, 709.79, 710.0, -745.13, -745.2, -746.0,
           19.06, 20.0, -20.0, 0.3, 1e-50, 1e-39, 3.5e38, -3.5e38, -104.00000001,
           1.1754943e-38, 88.7228391, -103.9720840, 0.62499999, 4.0000001]


def _values(dtype: str) -> np.ndarray:
    """Ordinary numbers on several scales, every float32 bit pattern's exponent, and the edges
    (a float32 array's entries made float64 exactly)."""
    rng = np.random.default_rng(48)
    ordinary = np.concatenate([rng.normal(0, 1, 3000), rng.normal(0, 30, 3000),
                               rng.uniform(-4.5, 4.5, 3000), rng.uniform(-110, 95, 3000)])
    if dtype == "float32":
        patterns = rng.integers(0, 2 ** 32, 6000, dtype=np.uint64).astype(np.uint32)
        return np.concatenate([ordinary.astype(np.float32), patterns.view(np.float32),
                               np.array(EDGES32, np.float32)])
    scaled = np.exp(rng.uniform(-740, 700, 3000)) * rng.choice([-1.0, 1.0], 3000)
    return np.concatenate([ordinary, scaled, np.array(EDGES32, np.float32).astype(np.float64),
                           np.array(EDGES64)])


def _numba_applied(kernel, x: np.ndarray, out_dtype: str) -> np.ndarray:
    """kernel of each entry of x, in a loop Numba compiles (as generated code calls it)."""

    @njit
    def each(values, out, f=kernel):
        for i in range(values.size):
            out[i] = f(values[i])

    out = np.empty(x.size, out_dtype)
    with np.errstate(all="ignore"):
        each(x, out)
    return out


def _llvm_applied(fn: str, x: np.ndarray, code: str) -> np.ndarray:
    """fn of each entry of x by a loop-IR function lowered to LLVM, in code of dtype `code`
    (its result array of that dtype: a float64 result stored into float32 rounds there)."""
    body = [Assign(("n1",), (Fmt("{}.shape[0]", (Var("a0"),)),)),
            Assign(("b2",), (Call("K.empty", (Fmt("({},)", (Var("n1"),)),)),)),
            For("i0", Var("n1"), [Store(Sub(Var("b2"), (Var("i0"),)),
                                        Call(fn, (Sub(Var("a0"), (Var("i0"),)),)))]),
            Return(Fmt("{}, {}", (Var("b2"), Var("n1"))))]
    made = llvm.lowered(body, ["a0"], [Array(str(x.dtype), 1)], code)
    out, size = made(x)
    assert size == x.size
    return out


def _same_bits(got: np.ndarray, want: np.ndarray) -> bool:
    """Equal to the bit, NaN's payload and sign included."""
    width = {4: np.uint32, 8: np.uint64}[got.itemsize]
    return got.dtype == want.dtype and np.array_equal(got.view(width), want.view(width))


def _difference(got: np.ndarray, want: np.ndarray, x: np.ndarray) -> str:
    width = {4: np.uint32, 8: np.uint64}[got.itemsize]
    where = np.flatnonzero(got.view(width) != want.view(width))
    first = where[:5]
    return f"{where.size} differ, e.g. x={x[first]} got={got[first]} want={want[first]}"


FLOAT32_CODE = ["K.exp", "K.log", "K.tanh", "K.erf", "K.exp_fast", "K.tanh_fast"]


@pytest.mark.parametrize("argument", ["float32", "float64"])
@pytest.mark.parametrize("fn", FLOAT32_CODE)
def test_float32_codes_maths_are_vmath32s_to_the_bit(fn, argument):
    """kernels32's exp, log, tanh and erf (vmath32's, also math="fast"'s exp and tanh) of a
    float32 and of a float64 (Numba compiles vmath32's Python for either: some of its steps
    then run in float64), stored into a float32 array as float32 code stores them."""
    x = _values(argument)
    want = _numba_applied(getattr(kernels32, fn[2:]), x, "float32")
    got = _llvm_applied(fn, x, "float32")
    assert _same_bits(got, want), _difference(got, want, x)


@pytest.mark.parametrize("argument", ["float32", "float64"])
@pytest.mark.parametrize("fn", ["K.exp", "K.log", "K.tanh", "K.erf"])
def test_float32_codes_maths_of_a_float64_are_float64(fn, argument):
    """The value before it is stored: a float64 argument gives a float64 result (vmath32's last
    line chooses between its float32 result and x), to the bit. A loop-IR function returns
    the number of one argument."""
    x = _values(argument)[::7]
    x = x[~np.isnan(x) | (np.isnan(x) & _quiet(x))]  # (a Python float quiets a signalling NaN)
    want = _numba_applied(getattr(kernels32, fn[2:]), x, argument)
    made = llvm.lowered([Return(Call(fn, (Var("a0"),)))], ["a0"], [argument], "float32")
    got = np.array([made(v) for v in x], dtype=argument).ravel()
    assert _same_bits(got, want), _difference(got, want, x)


def _quiet(x: np.ndarray) -> np.ndarray:
    """Whether each NaN of x is quiet (its significand's top bit set)."""
    if x.dtype == np.float32:
        return (x.view(np.uint32) & 0x400000) != 0
    return (x.view(np.uint64) & 0x8000000000000) != 0


@pytest.mark.parametrize("fn", ["K.exp_fast", "K.tanh_fast"])
def test_fast_maths_are_vmaths_to_the_bit(fn):
    """math="fast"'s float64 exp and tanh (vmath.exp_fast, tanh_fast) in float64 code."""
    x = _values("float64")
    want = _numba_applied(getattr(kernels, fn[2:]), x, "float64")
    got = _llvm_applied(fn, x, "float64")
    assert _same_bits(got, want), _difference(got, want, x)


def test_float32_maths_run_in_vector_lanes():
    """The optimised LLVM IR of a float32 loop calling each function works on vectors of
    float32 (<8 x float> with AVX2, <16 x float> with AVX-512; 4 at least with SSE), and on
    no vectors of float64: the port vectorises in float32's lanes, as Numba's does."""
    from hilbert.executor.llvm import compile as compiling
    from llvmlite import binding

    for fn in ("K.exp", "K.log", "K.tanh", "K.erf"):
        body = [Assign(("n1",), (Fmt("{}.shape[0]", (Var("a0"),)),)),
                For("i0", Var("n1"), [Store(Sub(Var("a0"), (Var("i0"),)),
                                            Call(fn, (Sub(Var("a0"), (Var("i0"),)),)))]),
                Return(Var("n1"))]
        made = llvm.lowered(body, ["a0"], [Array("float32", 1)], "float32", contiguous=True)
        module = binding.parse_assembly(made.text)
        machine = compiling._target_machine(3)
        compiling._optimise(module, machine, 3)
        optimised = str(module)
        assert any(f"<{w} x float>" in optimised for w in (4, 8, 16)), fn
        assert " x double>" not in optimised, fn  # (float32 maths: no float64 lanes)


SOURCE = """
open Prelude.Arithmetic
fn soft(x) ↦ exp(x) · tanh(x) + erf(x)
fn squash(x) ↦ 1 / (1 + exp(−x))
fn rows(x) ↦ softmaxRows(x)
"""


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("math", ["exact", "fast"])
def test_programs_are_built_by_llvm_and_nan_where_the_host_is(math, dtype, monkeypatch):
    """Programs calling exp, tanh and erf, a sigmoid and a softmax (whose division by the row
    sum is by a reciprocal: corrected under exact maths, a product under math="fast") are
    built by LLVM (none left to the host), and NaN exactly where the host tier's NumPy is (the
    specials among the values). Their maths' bits are the tests above; the Numba front end's
    builds they were compared with bit for bit are gone (issue 48, item 3)."""
    from hilbert.executor.numba.executor import regions_of

    values = _values(dtype)
    x = np.concatenate([values[:2000], values[-2000:]]).reshape(40, 100)  # (specials too)
    module = hilbert.compile_source(SOURCE, name="llvm_maths.hb")
    for name in ("soft", "squash", "rows"):
        function = module.function(name).using(math=math)
        with np.errstate(all="ignore"):
            got = np.asarray(function(x))
        prepared = function._prepare((x.shape,), dtype)
        prepared.build()
        built = [r.backend for r in regions_of(prepared.runner)]
        assert built and all(b.startswith("llvm (") for b in built), (name, built)
        with np.errstate(all="ignore"):
            host = np.asarray(prepared.host([x]))
        np.testing.assert_array_equal(np.isnan(got), np.isnan(host), err_msg=name)
