"""Prelude.Sequences in named axes (issue 54): every definition equals its undeclared form on
every executor, ∂ through the declared definitions equals finite differences, and help() of a
model's method prints its named shapes as help(f) does for a definition."""

import pydoc
import re
from pathlib import Path

import numpy as np
import pytest
from conftest import needs
from hilbert.grammar.errors import CheckError

import hilbert

SOURCE = Path(__file__).parents[1] / "prelude" / "Sequences.hb"

#: Each axis's size: R has D's (the renames say R is read as D) and T′ (S here) and M′ (O)
#: differ from T and M where a definition allows it; G is an LSTM's four gates, H a GRU's three.
SIZES = {"T": 3, "B": 2, "E": 4, "D": 5, "R": 5, "G": 4, "H": 3, "P": 3, "M": 6, "S": 4,
         "O": 7, "F": 2, "L": 3, "N": 2}

#: Every definition's arguments: a shape in the letters of SIZES, or a number for a scalar.
CASES = {
    "lstmCell": "BE BD BD ERG DRG RG", "lstm": "TBE BD BD ERG DRG RG",
    "peepholeCell": "BE BD BD ERG DRG RG DP", "peepholeLstm": "TBE BD BD ERG DRG RG DP",
    "affine": "BE BD ERG DRG RG", "biasOf": "BD RG", "gate": "BDG 1", "peep": "BD DP 2",
    "inputsOf": "TBE ERG", "middle": "DRG", "slab": "BGD 3", "biasAlong": "BGR GR",
    "lstmSteps": "3 TBGR BD BD DGR GR", "lstmFrom": "BGR BD BD DGR GR",
    "peepholeSteps": "3 TBE BD BD ERG DRG RG DP",
    "gruCell": "BE BD ERH DRH RH RH", "gru": "TBE BD ERH DRH RH RH",
    "choCell": "BE BD ERH DRH RH", "choGru": "TBE BD ERH DRH RH", "layer": "DRH 2",
    "gruSteps": "3 TBHR BD DHR HR HR", "gruFrom": "BHR BD DHR HR HR",
    "choSteps": "3 TBE BD ERH DRH RH",
    "attend": "BTF BSF BSL", "causalAttend": "BTF BTF BTL", "attention": "BTM MF MF ML",
    "multiHead": "BTM NMF NMF NML NLO", "causalMultiHead": "BTM NMF NMF NML NLO",
    "layerNormSeq": "BTM M M", "project": "BTM MF", "scores": "BTF BSF", "masked": "BTT",
    "alongLast": "BTM BT", "softmaxLast": "BTS", "heads": "BTM NMF NMF NML 1",
    "drawn": "BTM 6", "hazardOf": "BE E",
}

SHAPE = r"(?:Scalar|\w+′*(?:×\w+′*)*)"


def undeclared(text: str) -> str:
    """Sequences' source with its named axes taken out: no parameter's or result's shape in
    a definition's head (`x : B×E`, `) : B×D ≔`, `) : (B×D, B×D) ≔`), and `rename(v, R → D)` written `(v)`."""
    lines = []
    for line in text.splitlines():
        if line.lstrip().startswith("def "):
            line = re.sub(rf" : (?:{SHAPE}|\({SHAPE}(?:, {SHAPE})*\))(?=[,)]| ≔)", "", line)
        lines.append(line)
    text = "\n".join(lines)
    while (start := text.find("rename(")) >= 0:
        depth, comma = 0, -1
        for at in range(start + len("rename("), len(text)):
            if text[at] in "(":
                depth += 1
            elif text[at] == ")" and depth == 0:
                break
            elif text[at] == ")":
                depth -= 1
            elif text[at] == "," and depth == 0:
                comma = at if comma < 0 else comma
        text = f"{text[:start]}({text[start + len('rename('):comma]}){text[at + 1:]}"
    return text


@pytest.fixture(scope="module")
def named():
    return hilbert.open("Prelude.Sequences")


@pytest.fixture(scope="module")
def plain():
    return hilbert.compile_source(undeclared(SOURCE.read_text()))


def arguments(name: str) -> list:
    rng = np.random.default_rng(sorted(CASES).index(name))
    return [float(w) if w.isdigit() else 0.5 * rng.standard_normal([SIZES[a] for a in w])
            for w in CASES[name].split()]


def test_every_definition_has_a_case_and_the_undeclared_form_declares_nothing(named, plain):
    names = re.findall(r"^def (\w+)", SOURCE.read_text(), re.MULTILINE)
    assert sorted(names) == sorted(CASES)
    declared = [n for n in names if named.function(n).entry.definition.axes is not None]
    assert set(names) - set(declared) == {"drawn", "hazardOf"}  # (any shape: undeclared)
    assert all(plain.function(n).entry.definition.axes is None for n in names)
    stripped = undeclared(SOURCE.read_text())
    head = stripped.split("-- Models")[0]
    assert "rename(" not in stripped and " : B×" not in head and " : (" not in head


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("executor", ["reference", "numba", "dask", "jax"])
def test_every_definition_equals_its_undeclared_form(named, plain, executor, name):
    if executor in ("dask", "jax"):
        needs(executor)  # (dask is required by the run; jax skips where not installed)
    args = arguments(name)
    got = named.function(name).using(executor)(*args)
    want = plain.function(name).using(executor)(*args)
    assert isinstance(got, tuple) == isinstance(want, tuple)
    for g, w in zip(*((x if isinstance(x, tuple) else (x,)) for x in (got, want)), strict=True):
        np.testing.assert_array_equal(g, w)


def central(f, x: np.ndarray, step: float = 1e-6) -> np.ndarray:
    """∂f/∂x by central differences, entry by entry."""
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[index] += step
        down[index] -= step
        grad[index] = (f(up) - f(down)) / (2 * step)
    return grad


LOSSES = '''
open Prelude.Sequences
fn seen(x : B×T×M, wq : M×F, wk : M×F, wv : M×L) : Scalar ↦ einsum("btl->", attention(x, wq, wk, wv)²)
fn bySeen(x : B×T×M, wq : M×F, wk : M×F, wv : M×L) : M×F ↦ ∂ seen(x, wq, wk, wv) / ∂ wk
fn stepped(x : B×E, h : B×D, wx : E×R×G, wh : D×R×G, b : R×G) : Scalar ↦ einsum("bd->", choCell(x, h, wx, wh, b)²)
fn byStepped(x : B×E, h : B×D, wx : E×R×G, wh : D×R×G, b : R×G) : D×R×G ↦ ∂ stepped(x, h, wx, wh, b) / ∂ wh
'''


def test_derivatives_through_the_declared_definitions_equal_finite_differences():
    """Through attention's rename of T to T′ and Cho's renames of R to D."""
    module = hilbert.compile_source(LOSSES)
    x, wq, wk, wv = arguments("attention")
    np.testing.assert_allclose(module.bySeen(x, wq, wk, wv),
                               central(lambda w: module.seen(x, wq, w, wv), wk),
                               rtol=1e-6, atol=1e-8)
    x, h, wx, wh, b = arguments("choCell")
    np.testing.assert_allclose(module.byStepped(x, h, wx, wh, b),
                               central(lambda w: module.stepped(x, h, wx, w, b), wh),
                               rtol=1e-6, atol=1e-8)


def test_help_of_a_models_method_prints_its_named_shapes(named):
    net = named.MultiHeadAttention(6, 2, 4, 3, 0)
    shown = pydoc.render_doc(net.run, renderer=pydoc.plaintext)
    assert "MultiHeadAttention.run(x : B×T×width) : B×T×width  [method at" in shown
    assert named.LSTM(3, 4, 0).run.__doc__.startswith(
        "LSTM.run(x : T×B×inputs, h : B×hidden, c : B×hidden) : (B×hidden, B×hidden)  [method at")
    assert "GRU.run(x : T×B×inputs, h : B×hidden) : B×hidden" in pydoc.render_doc(
        named.GRU, renderer=pydoc.plaintext)
    assert named.lstm.__doc__.startswith(  # as help(f) shows a definition's
        "lstm(x : T×B×E, h : B×D, c : B×D, wx : E×R×G, wh : D×R×G, b : R×G) : (B×D, B×D)  [def at")
    undeclared_method = hilbert.compile_source(
        "model Two(n, seed) : Learner {\n  weight w : Tensor[n] from uniform(seed)\n"
        "  def scaled(x) ≔ x · w\n}\n").Two
    assert undeclared_method(3, 0).scaled.__doc__.startswith("Two.scaled(x)  [method at")


@pytest.mark.parametrize("written,mistaken", [
    # the LSTM's gates added to the memory without renaming R to D
    ("let z ≔ rename(a + einsum(\"bk,kgd->bgd\", h, wh) + biasAlong(a, b), R → D)",
     "let z ≔ a + einsum(\"bk,kgd->bgd\", h, wh) + biasAlong(a, b)"),
    # attention's weights contracted with the values over T instead of T′
    ("einsum(\"bts,bsl->btl\", softmaxLast(scores(q, k)), v)",
     "einsum(\"bts,btl->btl\", softmaxLast(scores(q, k)), v)"),
    # the output projection's weight read transposed (L×M′ as M′×L, both 4 wide in a test)
    ("einsum(\"bntl,nlo->bto\", heads(x, wq, wk, wv, 1), wo)",
     "einsum(\"bntl,nol->bto\", heads(x, wq, wk, wv, 1), wo)"),
])
def test_a_mistake_in_the_declared_definitions_is_refused_when_they_load(written, mistaken):
    text = SOURCE.read_text()
    assert text.count(written) == 1
    # undeclared (and without the models, whose weights name their axes), the mistake loads
    hilbert.compile_source(undeclared(text.replace(written, mistaken).split("\n-- Models")[0]))
    with pytest.raises(CheckError) as err:
        hilbert.compile_source(text.replace(written, mistaken))
    assert err.value.code == "E330"
