"""Arrays made inside a block by the LLVM back end (issue 48): a product's operand copied
C-ordered at each turn of a loop (K.contiguous, held.copies), read through views in that turn
only, and any array made inside a block that is dead where it is made again (remade.py: a
copy returned, a loop's buffers made at each turn of a loop around it). Each is compared with
NumPy computed here, freed at each turn (the memory a long run holds stays flat), and refused
where it could be read after the next one is made; the Transformer block's train step
(examples/Transformer.hb), whose step makes such copies, is built by LLVM whole and gives what
the Numba-built step gives.

Tolerance for the block: both builds run the same products in the same order; their sums of
entrywise terms may be vectorised differently by two compilers (a few ulps per step), far
below 1e-12 after three Adam steps of weights of size ≤ 1."""

from __future__ import annotations

import resource
from pathlib import Path

import numpy as np
import pytest
from hilbert.executor import llvm
from hilbert.executor.codegen.loops import (
    Assign,
    Call,
    Do,
    Fmt,
    For,
    If,
    Num,
    Return,
    Store,
    Sub,
    Var,
    View,
    number,
    whole,
)
from hilbert.executor.llvm.held import copies
from hilbert.executor.llvm.remade import remade
from hilbert.executor.llvm.types import Array
from test_llvm_forms import grown_kib

import hilbert

MATRIX = Array("float64", 2)


def _copied(before: list | None = None, after: list | None = None, inner: bool = False,
            returned: str = "out") -> list:
    """out = Σ over three turns k of (k + 1)·a0ᵀ read flat, through a copy of a0ᵀ made at
    each turn and its flat view (`before`/`after`: statements put at the turn's start/end;
    `inner`: the view taken inside an `if` of the turn; `returned`: what is returned)."""
    n1, n2, k, t = Var("n1"), Var("n2"), Var("k"), Var("t")
    size = Fmt("{} * {}", (n1, n2))
    flat = Assign(("flat",), (View(Var("c"), "{0}.reshape(({1}, ))", (size,)),))
    turn = [*(before or []),
            Assign(("c",), (Call("K.contiguous", (Call("K.transposed", (
                Var("a0"), Num('"1,0"', "other"))),)),)),
            If(Fmt("{} >= 0", (k,)), [flat], []) if inner else flat,
            For("t", size, [Store(Sub(Var("out"), (t,)), Fmt("{} * {}", (
                Sub(Var("flat"), (t,)), Fmt("({} + 1.0)", (k,)))), add=True)]),
            *(after or [])]
    return [Assign(("n1", "n2"), (Fmt("{}.shape[0]", (Var("a0"),)),
                                  Fmt("{}.shape[1]", (Var("a0"),)))),
            Assign(("out",), (Call("K.empty", (Fmt("({},)", (size,)),)),)),
            Do(Fmt("{}.fill({})", (Var("out"), number(0.0, "float64")))),
            For("k", whole(3), turn),
            Return(Fmt("{}, {}", (Var(returned), Var("n1"))))]


TYPES = {"a0": MATRIX, "c": MATRIX, "flat": Array("float64", 1), "out": Array("float64", 1),
         "n1": "int64", "n2": "int64", "k": "int64", "t": "int64"}


def test_a_copy_made_at_each_turn_is_right_and_freed():
    """The copy of a0ᵀ made at each of three turns, read through its flat view: NumPy's
    Σ (k + 1)·a0ᵀ, and each copy freed (200 calls of three 8 MiB copies would hold 4.8 GB
    if they were kept; the high-water mark of this process's memory grows by far less)."""
    body = _copied()
    assert copies(body, TYPES) == {"c"}
    made = llvm.lowered(body, ["a0"], [MATRIX], "float64")
    a = np.arange(12.0).reshape(3, 4)
    out, count = made(a)
    np.testing.assert_array_equal(out, 6.0 * a.T.ravel())
    assert count == 3
    assert grown_kib(made, np.ones((1024, 1024)), 200) < 200_000


def test_a_copy_of_a_strided_argument_reads_through_its_strides():
    """A non-contiguous argument (every other column) copied transposed at each turn."""
    made = llvm.lowered(_copied(), ["a0"], [MATRIX], "float64")
    a = np.arange(40.0).reshape(5, 8)[:, ::2]
    out, _ = made(a)
    np.testing.assert_array_equal(out, 6.0 * a.T.ravel())


#: A read of the view before the turn makes its copy: the previous turn's, freed by then.
STALE = [Assign(("x",), (Sub(Var("flat"), (whole(0),)),))]


@pytest.mark.parametrize("body", [
    pytest.param(_copied(before=STALE), id="view-read-at-the-next-turn"),
    pytest.param(_copied(inner=True), id="view-taken-inside-an-if"),
])  # (the second: where the `if` takes no view, the view of the copy before is read)
def test_a_copy_whose_memory_could_outlive_its_turn_is_left_to_numba(body):
    """Each of these could read a copy after the next one freed it: not lowered (Numba,
    whose arrays are counted references, builds it)."""
    assert copies(body, {**TYPES, "x": "float64"}) == set()
    with pytest.raises(llvm.Unsupported):
        llvm.lowered(body, ["a0"], [MATRIX], "float64")


def test_the_last_copy_returned_is_kept_and_the_others_freed():
    """The copy made at each turn returned after the last (remade.py: each one made frees the
    one before, as no view of it is read again; the last is handed back): a0ᵀ, C-ordered,
    still whole after later calls, and 200 calls on 8 MiB arguments hold none of the copies
    before the last (4.8 GB if they were kept)."""
    made = llvm.lowered(_copied(returned="c"), ["a0"], [MATRIX], "float64")
    a = np.arange(12.0).reshape(3, 4)
    first, count = made(a)
    for k in range(3):
        made(a + k)
    np.testing.assert_array_equal(first, a.T)
    assert first.flags.c_contiguous and count == 3
    assert grown_kib(made, np.ones((1024, 1024)), 200) < 200_000


def test_a_copy_made_twice_in_a_turn_frees_the_one_before_each_time():
    """The copy made again at the turn's end (dead by then: its view is not read again before
    the next copy): out is NumPy's Σ (k + 1)·a0ᵀ, and no copy is kept."""
    body = _copied(after=[Assign(("c",), (Call("K.contiguous", (Var("a0"),)),))])
    assert remade(body, TYPES) == {"c"}
    made = llvm.lowered(body, ["a0"], [MATRIX], "float64")
    a = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(made(a)[0], 6.0 * a.T.ravel())
    assert grown_kib(made, np.ones((1024, 1024)), 200) < 200_000


def _last_of_turns(kept: bool = False) -> list:
    """last = a0·(k + 1) for each turn k < a1, through an array made at each turn (a0 where
    there are none), returned; `kept`: out, the sum of each turn's with the one before it,
    read through `keep`, the array of the turn before (so still read when the next is made)."""
    n, i, k = Var("n"), Var("i"), Var("k")
    scaled = Fmt("{} * ({} + 1.0)", (Sub(Var("a0"), (i,)), k))
    turn = [Assign(("made",), (Call("K.empty", (Fmt("({},)", (n,)),)),)),
            For("i", n, [Store(Sub(Var("made"), (i,)), scaled)])]
    if kept:
        turn += [For("i", n, [Store(Sub(Var("out"), (i,)), Fmt("{} + {}", (
            Sub(Var("keep"), (i,)), Sub(Var("made"), (i,)))), add=True)]),
                 Assign(("keep",), (Var("made"),))]
    return [Assign(("n",), (Fmt("{}.shape[0]", (Var("a0"),)),)),
            Assign(("last", "keep"), (Var("a0"), Var("a0"))),
            Assign(("out",), (Call("K.empty", (Fmt("({},)", (n,)),)),)),
            Do(Fmt("{}.fill({})", (Var("out"), number(0.0, "float64")))),
            For("k", Var("a1"), [*turn, Assign(("last",), (Var("made"),))]),
            Return(Fmt("{}, {}", (Fmt("({}, {}, )", (Var("last"), Var("out"))), n)))]


VECTOR = Array("float64", 1)


def test_an_array_made_at_each_turn_is_returned_or_freed():
    """`made`, made at each turn, is freed when the next is made and the last is returned
    through `last` (a0 itself where the loop has no turn): NumPy's a0·a1, and 300 turns of
    8 MiB arrays hold one at a time (2.4 GB if they were kept)."""
    made = llvm.lowered(_last_of_turns(), ["a0", "a1"], [VECTOR, "int64"], "float64",
                        contiguous=True)
    a = np.arange(1.0, 6.0)
    for turns in (0, 1, 3):
        (last, out), _ = made(a, np.int64(turns))
        np.testing.assert_array_equal(last, a * max(turns, 1))
        assert (last is a) == (turns == 0)
    big = np.ones(1 << 20)
    made(big, np.int64(300))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    made(big, np.int64(300))
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200_000


def test_an_array_read_after_the_next_is_made_is_left_to_numba():
    """`keep` holds the turn before's array when the next is made, and is read after: freeing
    it there would read freed memory, so the function is not lowered."""
    body = _last_of_turns(kept=True)
    assert remade(body, {"a0": VECTOR, "made": VECTOR, "keep": VECTOR, "last": VECTOR,
                         "out": VECTOR, "a1": "int64", "n": "int64", "i": "int64",
                         "k": "int64"}) == set()
    with pytest.raises(llvm.Unsupported, match="made inside a block"):
        llvm.lowered(body, ["a0", "a1"], [VECTOR, "int64"], "float64")


NESTED = """
def inner(t, a) ≔ if t = 0 then a else inner(t − 1, tanh(a))
def outer(t, a) ≔ if t = 0 then a else outer(t − 1, inner(2, a) + a · 0.5)
fn nested(t, a) ↦ outer(t, a)
"""


def test_a_loop_inside_a_loops_step_is_built_by_llvm(monkeypatch):
    """The inner loop's buffers are made at each outer turn: built by llvm, NumPy's values
    (each step a few roundings: 64 ε), and 300 outer turns on 2 MiB arrays hold one turn's
    buffers at a time (1.2 GB if each turn's were kept)."""
    function = hilbert.compile_source(NESTED, name="llvm_nested.hb").function("nested")
    a = np.arange(12.0).reshape(3, 4) / 7
    want = a
    for _ in range(3):
        want = np.tanh(np.tanh(want)) + 0.5 * want
    eps = np.finfo(np.float64).eps
    np.testing.assert_allclose(function(3.0, a), want, rtol=64 * eps, atol=64 * eps)
    built = [n for n in function.plan((), (3, 4)).all_notes if "built by" in n]
    assert built == ["numba: generated function 1 built by llvm (optimisation level 3)"]
    big = np.full((512, 512), 0.1)
    function(300.0, big)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    function(300.0, big)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200_000


TRANSFORMER = Path(__file__).resolve().parents[1] / "examples" / "Transformer.hb"


@pytest.mark.timeout(1200)
def test_the_transformer_blocks_train_step_is_built_by_llvm(monkeypatch):
    """examples/Transformer.hb's Block.train (its step copies the attention weights
    transposed for its products) is one function built by LLVM, and three steps give the
    loss and weights (Adam's moments too) of the same steps on the host tier
    (HILBERT_COMPILE=never: NumPy calls along the plan)."""
    rng = np.random.default_rng(5)
    tok = rng.integers(0, 32, size=(4, 9)).astype(float)  # (at these sizes the step copies)
    got: dict = {}
    for when in ("eager", "never"):
        monkeypatch.setenv("HILBERT_COMPILE", when)
        module = hilbert.compile_source(TRANSFORMER.read_text(), name=f"block_{when}.hb")
        block = module.Block(32, 16, 2, 8, 32, 0)
        if when == "eager":
            built = [n for n in block.train.plan(tok[:, :-1], tok[:, 1:]).all_notes
                     if "built by" in n]
            assert built and all("built by llvm" in n for n in built), built
        for _ in range(3):
            block.train(tok[:, :-1], tok[:, 1:])
        assert block.tier == ("compiled" if when == "eager" else "host")
        got[when] = {"loss": np.asarray(block.loss(tok[:, :-1], tok[:, 1:])),
                     **{k: np.asarray(v) for k, v in block.weights.items()}}
    assert got["eager"].keys() == got["never"].keys()
    for name, value in got["eager"].items():
        np.testing.assert_allclose(value, got["never"][name], rtol=1e-12, atol=1e-12,
                                   err_msg=name)
