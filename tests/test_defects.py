"""Regressions for the defects an outside round of testing found (issue 29): each test fails
on the code before its fix. Expected values come from NumPy written here, or from the
reference executor where the point is that two tiers agree."""

from __future__ import annotations

import re
import signal

import numpy as np
import pytest
from conftest import ROOT, assert_agree
from hilbert.executor import codegen
from hilbert.executor.numba import interrupt

import hilbert

# ---------------------------------------------------------------- 0: sums over nothing

ZERO_SIZED = [
    ("bdef,cdkj,ji,ikeh,hbc,lfo->lo",
     [(0, 2, 2, 2), (2, 2, 2, 2), (2, 2), (2, 2, 2, 2), (2, 0, 2), (2, 2, 2)]),
    ("cgd,bde,afbc,ghad,bdh,cfg,afdb->e",
     [(2, 2, 3), (0, 3, 2), (2, 2, 0, 2), (2, 2, 2, 3), (0, 3, 2), (2, 2, 2), (2, 2, 3, 0)]),
    ("bij,bjk->ik", [(0, 3, 4), (0, 4, 5)]),
    ("bij,bjk->bik", [(2, 3, 0), (2, 0, 5)]),
    ("ij,jk->ik", [(3, 0), (0, 4)]),
]


@pytest.mark.parametrize("spec, shapes", ZERO_SIZED)
def test_a_compiled_sum_over_an_empty_axis_is_zero(spec, shapes, rng):
    names = ", ".join(f"x{i}" for i in range(len(shapes)))
    f = hilbert.compile_source(f'fn f({names}) ↦ einsum("{spec}", {names})').f
    args = [rng.standard_normal(s) for s in shapes]
    for _ in range(2):  # compiled at the first call (HILBERT_COMPILE=eager in the suite)
        got = f(*args)
        assert f.tier == "compiled"
        np.testing.assert_array_equal(got, np.einsum(spec, *args))


def test_a_sum_over_an_empty_axis_inside_a_loop_is_zero(rng):
    f = hilbert.compile_source(
        'def walk(t, a, b, c) ≔ if t = 0 then c else walk(t − 1, a, b, c + einsum("kij,kjl->il", a, b))\n'
        "fn f(t, a, b, c) ↦ walk(t, a, b, c)").f
    a, b, c = rng.standard_normal((0, 3, 4)), rng.standard_normal((0, 4, 2)), np.ones((3, 2))
    np.testing.assert_array_equal(f(3, a, b, c), c)


# ---------------------------------------------------------------- 1: argmax of host values

ARG_EXTREMES = """
fn joined(x, y) ↦ argmax(concat(x[0:1], y[1:4], 0) + y, 0)
fn placed(x, y) ↦ argmin((∂ einsum("ij,ij->", x[1:3], y[0:2]) / ∂ x) + y, 0)
fn through(x, y) ↦ ∂ einsum("j->", maximum(concat(x[0:1], y[1:4], 0) + y, 0)) / ∂ x
def again(t, x, y) ≔ if t = 0 then x else again(t − 1, argmax(concat(x[0:1], y[1:4], 0) + y, 0), y)
fn looped(x, y) ↦ again(2, x, y)
"""


@pytest.mark.parametrize("name", ["joined", "placed", "through", "looped"])
@pytest.mark.parametrize("when", ["eager", "2"])
def test_arg_extremes_of_concat_and_place_compile(name, when, monkeypatch, rng):
    monkeypatch.setenv("HILBERT_COMPILE", when)
    x, y = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    f = hilbert.compile_source(ARG_EXTREMES).function(name)
    want = f.using("reference")(x, y)
    for _ in range(4):  # with tiering: the host, a build in the background, its code
        assert_agree(f(x, y), want)
        program = f.program((x.shape, y.shape))
        if getattr(program, "queued", False):  # (a build in the background has begun)
            program.wait(300)
    assert f.tier == "compiled"


def test_argmax_of_a_concat_matches_numpy(rng):
    x, y = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    scores = np.concatenate([x[0:1], y[1:4]], 0) + y
    want = (np.arange(4)[:, None] == scores.argmax(0)).astype(float)
    np.testing.assert_array_equal(hilbert.compile_source(ARG_EXTREMES).joined(x, y), want)


# ---------------------------------------------------------------- 2: Ctrl-C in host loops

def test_ctrl_c_during_a_host_loop_never_reaches_a_compiled_call(monkeypatch):
    """A loop run backwards runs on the host, calling compiled code every step. A SIGINT
    arriving inside such a call must not be raised there (Numba would end in SystemError):
    the handler is a recorder while the loop runs, and KeyboardInterrupt comes at a step's
    end."""
    mod = hilbert.compile_source(
        'def grow(t, a, x) ≔ if t = 0 then x else grow(t − 1, a, tanh(einsum("ij,j->i", a, x)))\n'
        'fn g(t, a, x) ↦ ∂ einsum("i->", grow(t, a, x)) / ∂ x')
    a, x = np.eye(3) * 0.5, np.ones(3)
    mod.g(2.0, a, x)  # compiled before the test
    from hilbert.executor.numba import executor as numba_exec

    handlers, calls = [], []
    run = numba_exec.CompiledRegion.run

    def watched(self, args):
        handlers.append(signal.getsignal(signal.SIGINT))
        calls.append(1)
        if len(calls) == 5:
            signal.raise_signal(signal.SIGINT)  # arrives "inside" a compiled call
        return run(self, args)

    monkeypatch.setattr(numba_exec.CompiledRegion, "run", watched)
    with pytest.raises(KeyboardInterrupt):
        mod.g(1000.0, a, x)
    # the fifth call is a step of the loop: Python's raising handler was not in place
    assert handlers[4] is not signal.default_int_handler
    assert 5 <= len(calls) < 10  # stopped at the end of the step it came in
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    np.testing.assert_allclose(mod.g(1.0, a, x), 0.5 * (1 - np.tanh(0.5) ** 2))


# ---------------------------------------------------------------- 4: tuples never alias

TUPLES = """
fn same(x) ↦ let a ≔ x · 2 in (a, a)
fn part(x) ↦ let a ≔ x · 2 in (a, a[0:2])
fn twice(x) ↦ (x, x)
def walk(t, a, b) ≔ if t = 0 then (a, b) else walk(t − 1, a · 2, a · 2)
fn walked(x) ↦ walk(3, x, x)
"""


@pytest.mark.parametrize("executor", ["reference", "numba"])
@pytest.mark.parametrize("when", ["eager", "never"])
@pytest.mark.parametrize("name", ["same", "part", "twice", "walked"])
def test_every_component_of_a_tuple_is_a_fresh_array(executor, when, name, monkeypatch):
    monkeypatch.setenv("HILBERT_COMPILE", when)
    x = np.arange(6.0).reshape(3, 2)
    result = hilbert.compile_source(TUPLES, executor=executor).function(name)(x)
    arrays = [r for r in result if isinstance(r, np.ndarray)]
    assert len(arrays) == 2
    assert not np.shares_memory(arrays[0], arrays[1])
    assert not any(np.shares_memory(r, x) for r in arrays)
    before = arrays[1].copy()
    arrays[0][...] = -7.0
    np.testing.assert_array_equal(arrays[1], before)


# ---------------------------------------------------------------- 9: settings

@pytest.mark.parametrize("variable", ["HILBERT_COMPILE", "HILBERT_THREADS",
                                      "HILBERT_MAX_PROGRAMS", "HILBERT_MEMORY_LIMIT"])
@pytest.mark.parametrize("text", ["²", "①", "٣", "3x"])
def test_a_setting_that_is_no_ascii_number_is_e600_naming_it(variable, text, monkeypatch):
    from hilbert.executor import threads

    threads.forget()
    monkeypatch.setenv(variable, text)
    try:
        with pytest.raises(hilbert.ArgumentError) as err:
            hilbert.compile_source("fn f(x) ↦ x · 2").f(np.ones(2))
    finally:
        monkeypatch.delenv(variable)
        threads.forget()
    assert err.value.code == "E600"
    assert variable in err.value.message


# ---------------------------------------------------------------- 10, 14, 17: the module

def test_a_missing_name_is_a_coded_error_listing_what_the_module_has():
    mod = hilbert.compile_source("fn f(x) ↦ x\ndef g(x) ≔ x\nmodel M(n) : Learner {\n"
                                 "  weight w : Tensor[n] from 0\n  def eval(x) ≔ x\n}")
    for reach in (lambda: mod.function("missing"), lambda: mod.model("missing"),
                  lambda: mod.missing):
        with pytest.raises(hilbert.HilbertError) as err:
            reach()
        assert err.value.code == "E200" and "missing" in err.value.message
        assert isinstance(err.value, AttributeError)  # hasattr and getattr(…, default) work
    assert "f, g" in str(err.value) or "f, M" in str(err.value)
    assert not hasattr(mod, "missing") and getattr(mod, "g", None) is None


def test_hilbert_warning_is_exported():
    from hilbert.grammar.errors import HilbertWarning

    assert hilbert.HilbertWarning is HilbertWarning and "HilbertWarning" in hilbert.__all__


def test_a_module_function_is_looked_up_once(monkeypatch):
    mod = hilbert.compile_source('fn dense(a, w) ↦ einsum("np,pq->nq", a, w)')
    looked_up = []
    function = hilbert.Module.function
    monkeypatch.setattr(hilbert.Module, "function",
                        lambda self, name: looked_up.append(name) or function(self, name))
    a, w = np.ones((2, 2)), np.ones((2, 3))
    for _ in range(5):
        np.testing.assert_array_equal(mod.dense(a, w), a @ w)
    assert looked_up == ["dense"]


# ---------------------------------------------------------------- 11: fractional positions

def test_a_fractional_position_is_shown_as_it_is():
    q = np.ones((5, 3))
    with pytest.raises(hilbert.CheckError) as err:
        hilbert.compile_source("fn f(q) ↦ q[rows(q) − 1 − 0.0000000001]").f(q)
    assert err.value.code == "E318"
    assert "x[3.9999999999]" in err.value.message and "whole" in err.value.message
    with pytest.raises(hilbert.RuntimeHilbertError) as err:
        hilbert.compile_source("fn f(q, t) ↦ q[t]").f(q, 3.9999999999)
    assert err.value.code == "E510" and "t = 3.9999999999" in err.value.message


# ---------------------------------------------------------------- 15: deep ifs and loops

def chained(first: str, each, depth: int, call: str):
    """`f` of a module of definitions 0 (`first`) to `depth` (`each(i)`), answering `call`."""
    lines = [first, *(each(i) for i in range(1, depth + 1)), f"fn f(x) ↦ {call}"]
    return hilbert.compile_source("\n".join(lines)).f


def test_an_if_chain_deeper_than_one_function_holds_compiles():
    depth = 120
    f = chained("def c0(x) ≔ x", lambda i: f'def c{i}(x) ≔ if einsum("i->", x) > {i} then '
                f"x · {i} else c{i - 1}(x)", depth, f"c{depth}(x)")
    for total in (0.5, 30.3, 119.5, 500.0):
        x = np.full(3, total / 3)
        chosen = next((i for i in range(depth, 0, -1) if x.sum() > i), None)
        np.testing.assert_allclose(f(x), x * chosen if chosen else x)
    assert any("nests ifs" in note for note in f.plan((3,)).all_notes)


def test_loops_nested_deeper_than_one_function_holds_compile():
    depth = 9
    f = chained("def l0(t, x) ≔ if t = 0 then x else l0(t − 1, x · 0.5 + 1)",
                lambda i: f"def l{i}(t, x) ≔ if t = 0 then x else l{i}(t − 1, l{i - 1}(2, x))",
                depth, f"l{depth}(2, x)")
    want = np.array([3.0, -1.0])
    for _ in range(2 ** (depth + 1)):  # l0's two steps, run 2^depth times over
        for _ in range(2):
            want = want * 0.5 + 1
    np.testing.assert_allclose(f(np.array([3.0, -1.0])), want)
    assert any("nests loops" in note for note in f.plan((2,)).all_notes)


# ---------------------------------------------------------------- 16 and E900: failed builds

@pytest.fixture
def broken_code_generator(monkeypatch):
    def broken(*args, **kwargs):
        raise AssertionError("a fault injected by the test")

    monkeypatch.setattr(codegen, "generate", broken)


def test_a_background_build_that_fails_leaves_calls_on_the_host(broken_code_generator,
                                                                monkeypatch):
    monkeypatch.setenv("HILBERT_COMPILE", "2")
    f = hilbert.compile_source("fn f(x) ↦ exp(x) + 1").f
    x = np.linspace(-1, 1, 5)
    with pytest.warns(hilbert.HilbertWarning) as warned:
        for _ in range(5):
            np.testing.assert_allclose(f(x), np.exp(x) + 1, rtol=1e-15)
            program = f.program((x.shape,))
            if program.queued:
                program.wait(60)
    assert [w.message.code for w in warned] == ["W903"]
    assert f.tier == "host"
    page = (ROOT / "docs" / "errors" / "W903.md").read_text(encoding="utf-8")
    shown = re.search(r"^```text\n(.*?)\n", page, re.M).group(1)
    pattern = "".join(".*" if part == "…" else re.escape(part) for part in re.split("(…)", shown))
    assert re.fullmatch(pattern, str(warned[0].message))
    assert any("could not be built" in note for note in f.plan(x.shape).notes)


def test_an_eager_build_that_fails_is_e900_afresh_at_every_call(broken_code_generator):
    f = hilbert.compile_source("fn f(x) ↦ exp(x) + 1").f
    raised = []
    for _ in range(3):
        with pytest.raises(hilbert.HilbertError) as err:
            f(np.ones(3))
        raised.append(err.value)
    assert all(e.code == "E900" and "please report" in e.message for e in raised)
    assert isinstance(raised[0].__cause__, AssertionError)
    assert len({id(e) for e in raised}) == 3 and len({id(e.__cause__) for e in raised}) == 3
    depths = [len(list(_frames(e.__cause__.__traceback__))) for e in raised[1:]]
    assert depths[0] == depths[1]  # the traceback does not grow from call to call


def _frames(tb):
    while tb is not None:
        yield tb
        tb = tb.tb_next


def test_an_unexpected_exception_in_the_front_end_is_e900(monkeypatch):
    from hilbert.compiler import driver

    def broken(*args, **kwargs):
        raise KeyError("injected")

    monkeypatch.setattr(driver, "check_recursion", broken)
    with pytest.raises(hilbert.HilbertError) as err:
        hilbert.compile_source("fn f(x) ↦ x")
    assert err.value.code == "E900" and "KeyError" in err.value.message


def test_host_loop_restores_the_handler_of_the_caller():
    with interrupt.host_loop():
        assert signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


# ---------------------------------------------------------------- issue 27: sizes of loop state

EMBED = """
model Embed(vocab, width, seed) : Learner {
  weight emb : Tensor[vocab, width] from gaussian(seed) · 0.5
  weight out : Tensor[width, vocab] from gaussian(seed) · 0.5
  def train(tok, rate) {
    emb ≔ emb + einsum("nv,nw->vw", oneHot(tok, columns(emb) + rows(emb) − columns(emb)),
                       oneHot(tok, columns(emb))) · rate
    out ≔ out · 1
  }
  def slope(tok) ≔ ∂ einsum("nv,vw->", oneHot(tok, rows(emb)), emb[0:rows(emb)]) / ∂ emb
}
"""


@pytest.mark.parametrize("executor", ["reference", "numba", "dask"])
def test_one_hot_of_a_weight_s_rows_in_a_train_block(executor):
    """oneHot(tok, rows(emb)) on a weight inside a train block: the class count is a size of
    loop state, which compiled code once read before the loop computed it."""
    net = hilbert.compile_source(EMBED, executor=executor).Embed(5, 5, 0)
    emb, out = net.emb.copy(), net.out.copy()
    tok = np.array([0.0, 2.0, 4.0, 2.0])
    net.train(tok, 0.1, steps=3)
    by_token = np.eye(5)[tok.astype(int)]  # n×vocab
    for _ in range(3):
        emb = emb + 0.1 * by_token.T @ by_token
    np.testing.assert_allclose(net.emb, emb, rtol=1e-13)
    np.testing.assert_array_equal(net.out, out)
    np.testing.assert_allclose(net.slope(tok), by_token.T @ np.ones((4, 5)), rtol=1e-13)
