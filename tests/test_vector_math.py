"""executor/numba/vmath.py: exp, log and tanh within 2 ulp of NumPy on every finite input (dense grids
over the whole range, random samples, the neighbourhoods of every threshold), NumPy's exact
values on special inputs, the same through .hb programs on both executors, and machine code
that is vectorised (packed FMA instructions in the loop a generated kernel compiles to)."""

from __future__ import annotations

import math
import re

import llvmlite.binding as llvm
import numpy as np
import pytest
from hilbert.executor.numba import cache, kernels, vmath

import hilbert

NUMPY = {"exp": np.exp, "log": np.log, "tanh": np.tanh}
HB = {"exp": "exp", "log": "ln", "tanh": "tanh"}
#: The most any result may differ from NumPy's, in units in the last place.
ULPS = 2

requires_jit = pytest.mark.skipif(vmath.PYTHON_MODE, reason="NUMBA_DISABLE_JIT=1: NumPy's own")


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """How many float64s lie between a and b (0: the same number; ±0 count as one)."""
    def ordered(x):
        bits = np.ascontiguousarray(x, dtype=np.float64).view(np.int64)
        return np.where(bits < 0, np.int64(-(2 ** 63)) - bits, bits)
    return np.abs(ordered(a) - ordered(b))


def same_values(a: np.ndarray, b: np.ndarray) -> bool:
    """Bit for bit equal, the sign of 0 included; any NaN equals any NaN."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    nan = np.isnan(a)
    return bool((nan == np.isnan(b)).all() and (a[~nan].view(np.int64) == b[~nan].view(np.int64)).all())


_LOOPS: dict = {}


def applied(name: str, x: np.ndarray) -> np.ndarray:
    """vmath's `name` on every entry of x, in a compiled loop (as generated code calls it)."""
    if name not in _LOOPS:
        function = getattr(vmath, name)

        def loop(x, out):
            for i in range(x.shape[0]):
                out[i] = function(x[i])
            return out

        _LOOPS[name] = kernels.jit(loop)
    flat = np.ascontiguousarray(x, dtype=np.float64).ravel()
    return _LOOPS[name](flat, np.empty_like(flat)).reshape(np.shape(x))


def grid(low: float, high: float, count: int) -> np.ndarray:
    return np.linspace(low, high, count)


def log_grid(low: float, high: float, count: int) -> np.ndarray:
    """count points spaced evenly in log10 from low to high (both > 0)."""
    return np.logspace(np.log10(low), np.log10(high), count)


def around(points, width: int = 64) -> np.ndarray:
    """Every float64 within `width` steps of each point."""
    steps = np.arange(-width, width + 1)
    bits = np.asarray(points, dtype=np.float64).view(np.int64)[:, None] + steps
    return bits.ravel().view(np.float64)


def inputs(name: str, rng: np.random.Generator) -> np.ndarray:
    """Dense grids over the whole range of `name`, random samples, and every float64 near each
    threshold where the algorithm changes (or the result overflows, underflows, rounds to ±1)."""
    tiny = 2.2250738585072014e-308
    if name == "exp":
        parts = [grid(-746.0, 710.0, 2_000_001), grid(-1.0, 1.0, 200_001),
                 grid(-745.2, -708.0, 200_001), rng.uniform(-746.0, 710.0, 500_000),
                 rng.standard_normal(200_000), log_grid(1e-300, 1.0, 100_000),
                 -log_grid(1e-300, 1.0, 100_000),
                 around([709.782712893384, -745.1332191019411, -708.3964185322641, 0.0,
                         np.log(2) / 2, -np.log(2) / 2])]
    elif name == "log":
        parts = [np.exp(grid(-744.0, 709.7, 2_000_001)), grid(0.5, 2.0, 200_001),
                 1.0 + grid(-1e-6, 1e-6, 20_001), grid(5e-324, 1e-307, 100_001),
                 rng.uniform(0.0, 1.0, 200_000), np.exp(rng.uniform(-744.0, 709.7, 500_000)),
                 log_grid(1e300, 1e308, 10_001), 1.7976931348623157e308 - grid(0.0, 1e300, 10_001),
                 around([1.0, np.sqrt(0.5), np.sqrt(2.0), tiny, 5e-324, 0.5, 2.0])]
    else:
        parts = [grid(-25.0, 25.0, 2_000_001), grid(-1.0, 1.0, 200_001),
                 log_grid(1e-300, 25.0, 200_001), -log_grid(1e-300, 25.0, 200_001),
                 rng.uniform(-20.0, 20.0, 500_000), rng.standard_normal(200_000),
                 log_grid(5e-324, tiny, 1_001),
                 around([vmath.TANH_SMALL, -vmath.TANH_SMALL, 19.06, vmath.TANH_ONE, 0.0])]
    values = np.concatenate(parts)
    return values[np.isfinite(values) & ((values > 0) if name == "log" else True)]


SPECIALS = {
    "exp": [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 5e-324, -5e-324, 1e-310,
            709.782712893384, 709.7827128933841, 710.0, 1e308, -745.1332191019411,
            -745.1332191019412, -746.0, -1e308, -708.3964185322641],
    "log": [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, -1.0, -5e-324, -1e308, 1.0, 5e-324,
            2.2250738585072014e-308, 1.7976931348623157e308, 2.0, 0.5],
    "tanh": [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 5e-324, -5e-324,
             2.2250738585072014e-308, 20.0, -20.0, 25.0, 1e308, -1e308],
}


# ---------------------------------------------------------------- the kernels themselves

@requires_jit
@pytest.mark.parametrize("name", list(NUMPY))
def test_every_finite_input_is_within_2_ulp_of_numpy(name, rng):
    distance = within(name, name, ULPS, rng)
    assert np.mean(distance == 0) > 0.75  # (most results are NumPy's exactly)


def within(name: str, kernel: str, ulps: int, rng) -> np.ndarray:
    """vmath's `kernel` against NumPy's `name` on every input of `inputs(name)`: asserted
    within `ulps` everywhere; the distances, in ulp."""
    x = inputs(name, rng)
    with np.errstate(over="ignore"):
        want = NUMPY[name](x)
    got = applied(kernel, x)
    distance = ulp_distance(got, want)
    worst = int(np.argmax(distance))
    assert distance[worst] <= ulps, (f"{kernel}({x[worst]!r}) = {got[worst]!r}, NumPy says "
                                     f"{want[worst]!r}: {distance[worst]} ulp apart")
    return distance


@requires_jit
@pytest.mark.skipif(np.finfo(np.longdouble).nmant < 63, reason="no extended precision here")
@pytest.mark.parametrize("name", list(NUMPY))
def test_results_are_within_an_ulp_of_the_true_value(name, rng):
    """Against NumPy in 80-bit extended precision (C's expl, logl, tanhl)."""
    x = inputs(name, rng)[::7]
    x = x[(x > -708.0) & (x < 709.0)] if name == "exp" else x  # (normal results only)
    with np.errstate(over="ignore", under="ignore"):
        exact = NUMPY[name](x.astype(np.longdouble))
    got = applied(name, x).astype(np.longdouble)
    keep = exact != 0
    spacing = np.spacing(np.abs(exact[keep]).astype(np.float64)).astype(np.longdouble)
    error = np.abs(got[keep] - exact[keep]) / spacing
    assert float(error.max()) < 1.0


@requires_jit
@pytest.mark.parametrize("name", list(NUMPY))
def test_special_values_are_numpys_exactly(name):
    x = np.array(SPECIALS[name])
    with np.errstate(all="ignore"):
        want = NUMPY[name](x)
    got = applied(name, x)
    assert same_values(got, want), list(zip(x, got, want, strict=True))
    for value, expected in zip(x, want, strict=True):  # one number at a time, as scalar code does
        assert same_values(getattr(vmath, name)(value), expected)


@requires_jit
def test_each_kernel_is_exact_where_it_should_be():
    assert vmath.exp(0.0) == 1.0 and vmath.log(1.0) == 0.0 and vmath.tanh(0.0) == 0.0
    assert vmath.exp(1.0) == np.exp(1.0) and vmath.log(np.e) == 1.0
    assert vmath.log(2.0 ** -1074) == np.log(2.0 ** -1074)  # the smallest subnormal
    for k in range(-1074, 1024, 37):
        assert vmath.log(2.0 ** k) == np.log(2.0 ** k)


@requires_jit
def test_the_kernels_vectorise():
    """The loop over exp, log and tanh compiles to packed FMAs (LLVM vectorised the inlined
    arithmetic); without vmath it would call the C library once per entry."""
    features = llvm.get_host_cpu_features().flatten()
    if "+avx2" not in features or "+fma" not in features:
        pytest.skip("no AVX2 and FMA on this CPU")
    for name in NUMPY:
        applied(name, np.ones(8))
        loop = _LOOPS[name]
        assembly = loop.inspect_asm(loop.signatures[0])
        assert re.search(r"vfn?m(add|sub)\w*pd\s+%[yz]mm", assembly), name
        assert not re.search(r"call\w*\s+\S*(exp|log|tanh)", assembly), name


@requires_jit
def test_a_sum_in_any_order_vectorises_with_its_exps():
    """total = add_any_order(total, exp(x)): the loop runs in vector lanes, the sum included
    (packed additions into partial sums, not one scalar chain), and the total is the exact sum
    to within rounding."""
    def softmax_sum(x, out):
        total = 0.0
        for i in range(x.shape[0]):
            e = vmath.exp(x[i])
            total = vmath.add_any_order(total, e)
            out[i] = e
        return total

    compiled = kernels.jit(softmax_sum)
    x = np.random.default_rng(3).standard_normal(10_001) * 3
    out = np.empty_like(x)
    total = compiled(x, out)
    np.testing.assert_allclose(out, np.exp(x), rtol=4e-16)
    exact = math.fsum(out)
    assert abs(total - exact) <= 1e-15 * exact
    assembly = compiled.inspect_asm(compiled.signatures[0])
    assert re.search(r"vfn?m(add|sub)\w*pd\s+%[yz]mm", assembly)
    assert re.search(r"vaddpd\s+%[yz]mm", assembly)


def test_the_disk_cache_key_covers_vmath():
    """Generated code inlines these kernels: a change to them must recompile it."""
    assert vmath.STAMP in kernels.STAMP


# ---------------------------------------------------------------- through .hb programs

PROGRAM = "fn e(x) ↦ exp(x)\nfn l(x) ↦ ln(x)\nfn t(x) ↦ tanh(x)\n"
ENTRY = {"exp": "e", "log": "l", "tanh": "t"}


@pytest.mark.parametrize("name", list(NUMPY))
def test_programs_agree_with_numpy_on_both_executors(name, executor, rng):
    module = hilbert.compile_source(PROGRAM, executor=executor)
    x = inputs(name, rng)[::50]
    x = x[: x.size // 2 * 2].reshape(-1, 2)
    with np.errstate(over="ignore"):
        want = NUMPY[name](x)
    got = getattr(module, ENTRY[name])(x)
    assert ulp_distance(got, want).max() <= ULPS
    specials = np.array(SPECIALS[name])
    with np.errstate(all="ignore"):
        want = NUMPY[name](specials)
    assert same_values(getattr(module, ENTRY[name])(specials), want)
    for value, expected in zip(specials, want, strict=True):  # scalar code
        assert same_values(getattr(module, ENTRY[name])(value), expected)


SOFTMAX = """
open Prelude.Arithmetic
fn soft(x) ↦ softmaxRows(x)
fn squashed(x, y) ↦ tanh(x) · ln(y) + 1 / (1 + exp(−x))
fn total(x) ↦ einsum("ij->", exp(x))
"""


def test_fused_kernels_agree_with_the_reference(rng):
    """exp, ln and tanh inside fused loop nests, row sums and scalar reductions."""
    fast = hilbert.compile_source(SOFTMAX)
    slow = hilbert.compile_source(SOFTMAX, executor="reference")
    x = rng.standard_normal((37, 129)) * 20
    y = np.abs(rng.standard_normal((37, 129))) + 1e-3
    x[0, :4] = [np.inf, -np.inf, np.nan, 0.0]
    y[1, :4] = [0.0, -1.0, np.inf, np.nan]
    for name, args in (("soft", (x,)), ("squashed", (x, y)), ("total", (x[1:],))):
        got = np.asarray(getattr(fast, name)(*args))
        want = np.asarray(getattr(slow, name)(*args))
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        infinite = np.isinf(want)
        np.testing.assert_array_equal(got[infinite], want[infinite])
        finite = np.isfinite(want)
        np.testing.assert_allclose(got[finite], want[finite], rtol=1e-12, atol=0)


def test_compiled_code_calls_vmath_and_host_code_calls_numpy():
    module = hilbert.compile_source(PROGRAM)
    for name, entry in ENTRY.items():
        function = getattr(module, entry)
        compiled = function.program(((3, 4),)).region
        assert compiled.generated.compiled and f"K.{name}(" in compiled.source
        host = function.program(((),)).region  # one number: plain NumPy calls, uncompiled
        assert not host.generated.compiled
        assert f"np.{name}(" in host.source and "K." not in host.source


@requires_jit
def test_a_generated_kernel_vectorises():
    """The loop nest generated for softmaxRows (exp inside a row sum) compiles to packed
    FMAs; it is compiled here in memory, as the disk cache's code cannot be inspected."""
    features = llvm.get_host_cpu_features().flatten()
    if "+avx2" not in features or "+fma" not in features:
        pytest.skip("no AVX2 and FMA on this CPU")
    module = hilbert.compile_source(SOFTMAX)
    region = module.soft.program(((8, 64),)).region
    assert "K.exp(" in region.source
    function = kernels.jit(cache._plain(cache._HEADER + region.source))
    x = np.random.default_rng(4).standard_normal((8, 64))
    value, _ = function(x)
    np.testing.assert_allclose(value, module.soft(x), rtol=0, atol=0)
    assembly = function.inspect_asm(function.signatures[0])
    assert re.search(r"vfn?m(add|sub)\w*pd\s+%[yz]mm", assembly)
