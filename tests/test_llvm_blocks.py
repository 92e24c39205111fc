"""Arrays made inside a block by the LLVM back end (issue 48): a product's operand copied
C-ordered at each turn of a loop (K.contiguous, held.copies), read through views in that turn
only. Each is compared with NumPy computed here, freed at each turn (the memory a long run
holds stays flat), and refused where a view of it could outlive the next copy; the Transformer
block's train step (examples/Transformer.hb), whose step makes such copies, is built by LLVM
whole and gives what the Numba-built step gives.

Tolerance for the block: both builds run the same products in the same order; their sums of
entrywise terms may be vectorised differently by two compilers (a few ulps per step), far
below 1e-12 after three Adam steps of weights of size ≤ 1."""

from __future__ import annotations

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
    pytest.param(_copied(returned="c"), id="copy-returned"),
    pytest.param(_copied(inner=True), id="view-taken-inside-an-if"),
    pytest.param(_copied(after=[Assign(("c",), (Call("K.contiguous", (Var("a0"),)),))]),
                 id="copy-made-twice"),
])
def test_a_copy_whose_memory_could_outlive_its_turn_is_left_to_numba(body):
    """Each of these could read or hand back a copy after the next one freed it: not lowered
    (Numba, whose arrays are counted references, builds it)."""
    assert copies(body, {**TYPES, "x": "float64"}) == set()
    with pytest.raises(llvm.Unsupported):
        llvm.lowered(body, ["a0"], [MATRIX], "float64")


TRANSFORMER = Path(__file__).resolve().parents[1] / "examples" / "Transformer.hb"


@pytest.mark.slow  # (its Numba build, compared with, takes over a minute cold)
@pytest.mark.timeout(1200)
def test_the_transformer_blocks_train_step_is_built_by_llvm(monkeypatch):
    """examples/Transformer.hb's Block.train (its step copies the attention weights
    transposed for its products) is one function built by LLVM, and three steps give the
    loss and weights (Adam's moments too) of the same steps built by Numba."""
    rng = np.random.default_rng(5)
    tok = rng.integers(0, 32, size=(4, 9)).astype(float)  # (at these sizes the step copies)
    got: dict = {}
    for backend in ("llvm", "numba"):
        monkeypatch.setenv("HILBERT_CODEGEN", backend)
        module = hilbert.compile_source(TRANSFORMER.read_text(), name=f"block_{backend}.hb")
        block = module.Block(32, 16, 2, 8, 32, 0)
        if backend == "llvm":
            built = [n for n in block.train.plan(tok[:, :-1], tok[:, 1:]).all_notes
                     if "built by" in n]
            assert built and all("built by llvm" in n for n in built), built
        for _ in range(3):
            block.train(tok[:, :-1], tok[:, 1:])
        got[backend] = {"loss": np.asarray(block.loss(tok[:, :-1], tok[:, 1:])),
                        **{k: np.asarray(v) for k, v in block.weights.items()}}
    assert got["llvm"].keys() == got["numba"].keys()
    for name, value in got["llvm"].items():
        np.testing.assert_allclose(value, got["numba"][name], rtol=1e-12, atol=1e-12,
                                   err_msg=name)
