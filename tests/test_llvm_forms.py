"""The LLVM back end's wider forms (issue 48, item 2): slices and partial indices as views
(read, filled, copied into), chained comparisons whose choice reads only the side taken,
transposes written as text, scratch rows made inside loops, tuples of arrays returned (views
among them, as copies), and C's pow, cos and erf. Each is lowered (the plan says llvm built it)
and compared with NumPy computed here; the maths with the Numba path's own kernels, to the bit.

Tolerances, in units of ε = 2⁻⁵²: each operation rounds once; a softmax chains about ten
steps, each with a sum over ≤ 4 terms: 64 ε bounds it with a margin (as
test_llvm_backend.py)."""

from __future__ import annotations

import math
import resource
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hilbert.executor import llvm
from hilbert.executor.codegen.loops import (
    Assign,
    Call,
    Do,
    Fmt,
    For,
    Num,
    Return,
    Store,
    Sub,
    Var,
    number,
    other,
    sizes,
    whole,
)
from hilbert.executor.llvm.types import Array
from hilbert.executor.numba.executor import regions_of
from test_llvm_backend import _built_by, _lowered_entrywise

import hilbert

FORMS = """
open Prelude.Losses
open Prelude.Optimisers
open Prelude.Networks
fn loss(z, labels) ↦ crossEntropy(z, labels)
fn stepped(w, v, g, r, mu) ↦ momentum(w, v, g, r, mu)
fn filtered(x, k) ↦ convolve(x, k)
fn waved(x, p) ↦ cos(x) + abs(x) ^ p
fn smooth(x) ↦ erf(x) · x + 1
"""

EPS = np.finfo(np.float64).eps
LLVM_BUILT = ["numba: generated function 1 built by llvm (optimisation level 3)"]


@pytest.fixture(scope="module")
def forms():
    return hilbert.compile_source(FORMS, name="llvm_forms.hb")


def _close(got, want, ulps: int = 64) -> None:
    scale = np.abs(want).max(initial=1.0)
    np.testing.assert_allclose(got, want, rtol=ulps * EPS, atol=ulps * EPS * scale)


def test_cross_entropy_fills_rows_of_a_view(forms):
    """crossEntropy's one-hot rows are written `b[i, :] = 0.0` (a store into a slice) before
    the label's entry is set."""
    rng = np.random.default_rng(4)
    z, labels = rng.normal(size=(3, 4)), np.array([2.0, 0.0, 3.0])
    shifted = z - z.max(axis=1, keepdims=True)
    logs = np.log(np.exp(shifted).sum(axis=1)) - shifted[np.arange(3), labels.astype(int)]
    _close(forms.loss(z, labels), logs.mean())
    assert _built_by(forms.function("loss"), (3, 4), (3,)) == LLVM_BUILT


def test_momentum_returns_a_tuple_of_arrays(forms):
    w, v, g = (np.arange(6.0).reshape(2, 3) + k for k in (0.5, -1.0, 2.0))
    new_w, new_v = forms.stepped(w, v, g, 0.05, 0.9)
    _close(new_v, 0.9 * v + g)
    _close(new_w, w - 0.05 * (0.9 * v + g))
    assert _built_by(forms.function("stepped"), (2, 3), (2, 3), (2, 3), (), ()) == LLVM_BUILT


def test_functions_of_one_machine_code_keep_their_own_results(monkeypatch):
    """Two functions whose LLVM IR is the same text but whose results differ (a parameter
    handed back is not in the IR): each keeps its own (one function per text and results in a
    process; keyed by the text alone, the pair answered the single array)."""
    module = hilbert.compile_source("fn one(q) ↦ positions(q, 0)\n"
                                    "fn pair(q) ↦ (positions(q, 0), q)\n", export_all=True)
    q = np.arange(1.0, 10.0)
    np.testing.assert_array_equal(module.one(q), np.arange(9.0))
    first, second = module.pair(q)
    np.testing.assert_array_equal(first, np.arange(9.0))
    np.testing.assert_array_equal(second, q)


def test_convolve_reads_inside_its_chained_bounds(forms):
    """convolve's window reads `x[i, p] if 0 <= p < n else 0.0`: zero past the tail."""
    rng = np.random.default_rng(5)
    x, k = rng.normal(size=(2, 6)), np.array([0.5, -1.0, 2.0])
    padded = np.concatenate([x, np.zeros((2, 2))], axis=1)
    want = sum(padded[:, j:j + 6] * k[j] for j in range(3))
    _close(forms.filtered(x, k), want)
    assert _built_by(forms.function("filtered"), (2, 6), (3,)) == LLVM_BUILT


def test_power_and_cos_are_cs(forms):
    x = np.linspace(-3.0, 3.0, 12).reshape(3, 4)
    for p in (2.0, 0.5, -1.0, 3.0, 1.7):
        with np.errstate(divide="ignore"):
            want = np.cos(x) + np.abs(x) ** p
            _close(forms.waved(x, p), want, 4)
        assert _built_by(forms.function("waved"), (3, 4), ()) == LLVM_BUILT


def test_power_and_cos_in_float32_code(forms):
    """float32 code: C's cosf, and kernels32.power (float64's rounded once): each within an
    ulp of float32, and the sum rounds once more."""
    x = np.linspace(-3.0, 3.0, 12, dtype=np.float32).reshape(3, 4)
    for p in (2.0, 0.5, 3.0, 1.7):
        got = forms.waved(x, np.float32(p))
        assert got.dtype == np.float32
        want = np.cos(x.astype(np.float64)) + np.abs(x.astype(np.float64)) ** np.float32(p)
        tolerance = 4 * np.finfo(np.float32).eps
        np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance * 10)
    prepared = forms.function("waved")._prepare(((3, 4), ()), "float32")
    prepared.build()
    assert [r.backend for r in regions_of(prepared.runner)] == ["llvm (optimisation level 3)"]


def test_erf_is_cs(forms):
    x = np.linspace(-3.0, 3.0, 12).reshape(3, 4)
    _close(forms.smooth(x), np.vectorize(math.erf)(x) * x + 1, 4)
    assert _built_by(forms.function("smooth"), (3, 4)) == LLVM_BUILT


def test_maths_are_the_numba_paths_to_the_bit():
    """K.power, np.cos and K.erf lowered against the kernels Numba compiles for them (C's
    pow, cos and erf, and kernels.power's own ways for 2, ½ and −1): the same bits."""
    from hilbert.executor.numba import kernels
    from numba import njit

    rng = np.random.default_rng(8)
    x = np.concatenate([rng.normal(0, 30, 2000), rng.normal(0, 1, 2000),
                        [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-310, 710.0, -3.5]])

    @njit
    def cos(values, _):
        return np.cos(values)

    @njit
    def erf(values, _):
        out = np.empty_like(values)
        for i in range(values.size):
            out[i] = kernels.erf(values[i])
        return out

    @njit
    def power(values, p):
        out = np.empty_like(values)
        for i in range(values.size):
            out[i] = kernels.power(values[i], p)
        return out

    cases = [("np.cos", cos, ()), ("K.erf", erf, ())] + [
        ("K.power", power, (p,)) for p in (2.0, 0.5, -1.0, 3.0, 1.7, -2.5)]
    for fn, kernel, more in cases:
        with np.errstate(all="ignore"):
            want = kernel(x, *(more or (0.0,)))
            got = _lowered_entrywise(fn, x, *more)
        assert np.array_equal(got, want, equal_nan=True), (fn, more)
        assert np.array_equal(got.view(np.int64)[~np.isnan(got)],
                              want.view(np.int64)[~np.isnan(want)]), (fn, more)


def _copied(view, shape) -> list:
    """A function copying `view` (an expression over parameter a0) into a fresh array."""
    return [Assign(("out",), (Call("K.empty", (sizes([whole(n) for n in shape]),)),)),
            Do(Call("K.copy_into", (Var("out"), view))),
            Return(Fmt("{}, {}", (Var("out"), whole(0))))]


ALL = other(":")


@pytest.mark.parametrize("shape, index, meaning", [
    ((2, 3, 4), (whole(1),), lambda a: a[1]),
    ((2, 3, 4), (ALL, whole(2)), lambda a: a[:, 2]),
    ((2, 3, 4), (whole(1), ALL, whole(3)), lambda a: a[1, :, 3]),
    ((2, 3, 4), (ALL, Fmt("{}:{}", (whole(1), whole(3))), whole(2)), lambda a: a[:, 1:3, 2]),
    ((2, 3, 4), (whole(1), ALL, ALL), lambda a: a[1, :, :]),
    ((2, 3, 4, 5), (whole(1),), lambda a: a[1]),
    ((2, 3, 4, 5), (ALL, whole(2), ALL, whole(4)), lambda a: a[:, 2, :, 4])])
def test_slices_and_partial_indices_are_views(shape, index, meaning):
    """A Sub with `:` (or a range) or fewer indices than axes: NumPy's view of it."""
    a = np.arange(float(np.prod(shape))).reshape(shape)
    want = meaning(a)
    made = llvm.lowered(_copied(Sub(Var("a0"), index), want.shape), ["a0"],
                        [Array("float64", len(shape))], "float64", contiguous=True)
    np.testing.assert_array_equal(made(a)[0], want)


def test_stores_into_a_slice_fill_it_or_copy_into_it():
    """`out[1, :] = 5.0` fills a row; `out[:, 2] = a0[0]` copies a vector into a column."""
    body = [Assign(("out",), (Call("K.empty", (sizes([whole(3), whole(4)]),)),)),
            Do(Fmt("{}.fill({})", (Var("out"), number(0.0, "float64")))),
            Store(Sub(Var("out"), (whole(1), ALL)), number(5.0, "float64")),
            Store(Sub(Var("out"), (ALL, whole(2))), Sub(Var("a0"), (whole(0),))),
            Return(Fmt("{}, {}", (Var("out"), whole(0))))]
    a = np.array([[7.0, 8.0, 9.0], [1.0, 2.0, 3.0]])
    want = np.zeros((3, 4))
    want[1, :] = 5.0
    want[:, 2] = a[0]
    made = llvm.lowered(body, ["a0"], [Array("float64", 2)], "float64")
    np.testing.assert_array_equal(made(a)[0], want)


@pytest.mark.parametrize("order", ["2,0,1", "0,2,1", "2,1,0", "1,0,2"])
def test_transposes_written_as_text(order):
    """K.contiguous(K.transposed(a0, "2,0,1")) (a C-ordered copy) and K.arranged_into (the
    transpose written into a given array): NumPy's transpose."""
    axes = [int(p) for p in order.split(",")]
    a = np.arange(24.0).reshape(2, 3, 4)
    want = a.transpose(axes)
    turned = Call("K.transposed", (Var("a0"), Num(f'"{order}"', "other")))
    body = [Assign(("c",), (Call("K.contiguous", (turned,)),)),
            Assign(("out",), (Call("K.empty", (sizes([whole(n) for n in want.shape]),)),)),
            Do(Call("K.arranged_into", (turned, Var("out")))),
            Return(Fmt("{}, {}", (Fmt("({}, {}, )", (Var("c"), Var("out"))), whole(0))))]
    made = llvm.lowered(body, ["a0"], [Array("float64", 3)], "float64", contiguous=True)
    (c, out), _ = made(a)
    np.testing.assert_array_equal(c, want)
    np.testing.assert_array_equal(out, want)
    assert c.flags.c_contiguous


def _scratch_rows() -> list:
    """out[i, j] = 2·a0[i, j] + i through a row made at each turn of the loop over i."""
    shape = [Fmt("{}.shape[0]", (Var("a0"),)), Fmt("{}.shape[1]", (Var("a0"),))]
    i, j = Var("i"), Var("j")
    return [Assign(("n1", "n2"), tuple(shape)),
            Assign(("out",), (Call("K.empty", (sizes([Var("n1"), Var("n2")]),)),)),
            For("i", Var("n1"), [
                Assign(("row",), (Call("K.empty", (Fmt("({},)", (Var("n2"),)),)),)),
                For("j", Var("n2"), [Store(Sub(Var("row"), (j,)), Fmt("{} * {}", (
                    Sub(Var("a0"), (i, j)), number(2.0, "float64"))))]),
                For("j", Var("n2"), [Store(Sub(Var("out"), (i, j)), Fmt("{} + {}", (
                    Sub(Var("row"), (j,)), Call("np.float64", (i,)))))])]),
            Return(Fmt("{}, {}", (Var("out"), Var("n1"))))]


def test_rows_made_inside_a_loop_are_freed_at_each_turn():
    """A scratch row made at each turn (the division rewrite's): right, and each one freed
    (300 calls of 64 rows of 64 KiB would hold 1.2 GB if they were kept; the high-water
    mark of this process's memory grows by far less)."""
    made = llvm.lowered(_scratch_rows(), ["a0"], [Array("float64", 2)], "float64")
    a = np.arange(12.0).reshape(3, 4)
    out, count = made(a)
    np.testing.assert_array_equal(out, 2 * a + np.arange(3.0)[:, None])
    assert count == 3
    assert grown_kib(made, np.ones((64, 8192)), 300) < 200_000


def grown_kib(made, argument: np.ndarray, calls: int) -> int:
    """How much the high-water mark of this process's memory grows (KiB) over `calls` calls
    of `made` on `argument`, after one call (whatever a first call keeps is not counted)."""
    made(argument)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for _ in range(calls):
        made(argument)
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before


#: A child: a choice whose taken side never reads a position 2⁴⁰ entries away (a read of the
#: untaken side would crash there, so not in this process), in straight-line code (optimised
#: at level 1: a load computed for both sides stays where it is) and in a loop.
GUARDED = textwrap.dedent("""
    import numpy as np
    from hilbert.executor import llvm
    from hilbert.executor.codegen.loops import (Assign, Call, Fmt, For, Return, Store, Sub,
                                                Var, number, whole)
    from hilbert.executor.llvm.types import Array
    def guarded(p):
        return Fmt("({} if {} <= {} < {} else {})", (
            Sub(Var("a0"), (p,)), whole(0), p, Var("n"), number(0.0, "float64")))
    n = Assign(("n",), (Fmt("{}.shape[0]", (Var("a0"),)),))
    one = [n, Assign(("v",), (guarded(Var("a1")),)), Return(Fmt("{}, {}", (Var("v"), Var("n"))))]
    each = [n, Assign(("out",), (Call("K.empty", (Fmt("({},)", (Var("n"),)),)),)),
            For("i", Var("n"), [Assign(("p",), (Fmt("{} + {}", (Var("i"), Var("a1"))),)),
                                Store(Sub(Var("out"), (Var("i"),)), guarded(Var("p")))]),
            Return(Fmt("{}, {}", (Var("out"), Var("n"))))]
    params = ["a0", "a1"], [Array("float64", 1), "int64"], "float64"
    one, each = llvm.lowered(one, *params), llvm.lowered(each, *params)
    assert (one.level, each.level) == (1, 3)
    x = np.arange(1.0, 7.0)
    for shift in (-2, 0, 3, 1 << 40, -(1 << 40)):
        want = [x[i + shift] if 0 <= i + shift < 6 else 0.0 for i in range(6)]
        assert list(each(x, shift)[0]) == want, shift
        assert one(x, shift)[0] == want[0], shift
    print("guarded")
""")


def test_a_choice_reads_only_the_side_taken():
    done = subprocess.run([sys.executable, "-c", GUARDED], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "guarded", done.stderr[-2000:]


@pytest.mark.parametrize(("extra", "level"), [(10, 3), (450, 2)])
def test_a_large_function_with_loops_is_optimised_at_level_2(extra, level):
    """A function with loops is optimised at level 3, but at level 2 (loops vectorised,
    straight-line code not) past compile.SLP_LARGE statements, where the SLP vectoriser's time
    grows with the body; its value is the same."""
    from hilbert.executor.codegen.loops import Assign, Fmt, For, Return, Sub, Update, Var, number
    from hilbert.executor.llvm import compile

    body = [Assign(("n1",), (Fmt("{}.shape[0]", (Var("a0"),)),)),
            Assign(("s",), (number(0.0, "float64"),)),
            For("i0", Var("n1"), [Update("s", "+=", Sub(Var("a0"), (Var("i0"),)))]),
            *[Update("s", "+=", number(0.5, "float64")) for _ in range(extra)],
            Return(Fmt("{}, {}", (Var("s"), Var("n1"))))]
    made = llvm.lowered(body, ["a0"], [Array("float64", 1)], "float64")
    assert made.level == level and (extra < compile.SLP_LARGE) == (level == 3)
    x = np.arange(7.0) * 0.25
    total, size = made(x)
    assert (total, size) == (sum(x.tolist()) + 0.5 * extra, 7)


def _views_returned(returned: tuple = ("out", "rows", "out", "first", "turned")) -> list:
    """`returned` of out = 2·a0 (made here), rows = out[1:3], first = a0[0:1] and turned =
    out's transpose (the views a local each, as generated code names them)."""
    n, i, j = Var("n"), Var("i"), Var("j")
    return [Assign(("n", "m"), (Fmt("{}.shape[0]", (Var("a0"),)),
                                Fmt("{}.shape[1]", (Var("a0"),)))),
            Assign(("out",), (Call("K.empty", (sizes([n, Var("m")]),)),)),
            For("i", n, [For("j", Var("m"), [Store(Sub(Var("out"), (i, j)), Fmt("{} * {}", (
                Sub(Var("a0"), (i, j)), number(2.0, "float64"))))])]),
            Assign(("rows",), (Sub(Var("out"), (Fmt("{}:{}", (whole(1), whole(3))),)),)),
            Assign(("first",), (Sub(Var("a0"), (Fmt("{}:{}", (whole(0), whole(1))),)),)),
            Assign(("turned",), (Call("K.transposed", (Var("out"), other('"1,0"'))),)),
            Return(Fmt("{}, {}", (Fmt("(" + "{}, " * len(returned) + ")",
                                      tuple(map(Var, returned))), n)))]


def test_views_and_an_array_returned_twice_are_lowered():
    """A view returned is a C-ordered copy of its own (call.py makes each address handed back
    the one owner of its memory); an array returned twice is one array."""
    made = llvm.lowered(_views_returned(), ["a0"], [Array("float64", 2)], "float64",
                        contiguous=True)
    a = np.arange(12.0).reshape(4, 3)
    (out, rows, again, first, turned), count = made(a)
    np.testing.assert_array_equal(out, 2 * a)
    np.testing.assert_array_equal(rows, (2 * a)[1:3])
    np.testing.assert_array_equal(first, a[0:1])
    np.testing.assert_array_equal(turned, (2 * a).T)
    assert again is out and count == 4
    assert rows.flags.c_contiguous and turned.flags.c_contiguous
    assert not np.shares_memory(rows, out) and not np.shares_memory(first, a)


def test_an_array_only_a_view_of_which_is_returned_is_freed():
    """out = 2·a0 made, only out[1:3] returned (a copy): out is freed at each call (300
    calls on 16 MiB arguments would hold 4.8 GB if it were kept)."""
    made = llvm.lowered(_views_returned(("rows",)), ["a0"], [Array("float64", 2)], "float64", contiguous=True)
    a = np.arange(12.0).reshape(4, 3)
    (rows,), _ = made(a)
    np.testing.assert_array_equal(rows, (2 * a)[1:3])
    assert grown_kib(made, np.ones((8, 1 << 18)), 300) < 200_000


def test_a_tuple_of_an_array_and_its_slice_is_built_by_llvm(monkeypatch):
    """`(a, a[1:3])` (tests/test_random_programs.py's tuple programs): built by llvm, NumPy's
    values."""
    function = hilbert.compile_source("fn f(x, y) ↦ let a ≔ tanh(x) · y in (a, a[1:3])").f
    x, y = np.random.default_rng(3).normal(size=(2, 4, 3))
    whole_a, part_a = function(x, y)
    _close(whole_a, np.tanh(x) * y)
    _close(part_a, (np.tanh(x) * y)[1:3])
    assert _built_by(function, (4, 3), (4, 3)) == LLVM_BUILT
