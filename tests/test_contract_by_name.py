"""Contracting by name (docs/language.md, "Contracting by name"): `contract(q, k, over F)` is
the einsum its operands' named axes spell (shared axes multiplied entrywise, the `over` axes
summed, the rest kept), so it computes NumPy's answer on every executor, keeps T and T′
apart, is differentiated like any einsum, and is refused (E332) where the names cannot say
what to contract."""

from __future__ import annotations

import numpy as np
import pytest
from hilbert.grammar.errors import CheckError, ParseError
from hilbert.grammar.parser import parse
from hilbert.grammar.printer import print_module

import hilbert

SCORES = "fn scores(q : B×T×F, k : B×T′×F) : B×T×T′ ↦ contract(q, k, over F)\n"

#: The seed's attention, one head (Vaswani et al. §3.2.1), every contraction by name.
ATTENTION = """
fn attention(x : B×T×M, xs : B×T′×M, wq : M×F, wk : M×F, wv : M×L) : B×T×L ↦
  let q ≔ contract(x, wq, over M),
      k ≔ contract(xs, wk, over M),
      v ≔ contract(xs, wv, over M),
      e ≔ exp(contract(q, k, over F) / sqrt(columns(wq))),
      a ≔ einsum("bts,bt->bts", e, 1 / contract(e, over T′))
  in contract(a, v, over T′)
"""


def body(module, name: str):
    """The IR `name`'s body lowers to (before inlining)."""
    (found,) = [d.body for key, d in module._compiled.resolved.definitions.items()
                if key.endswith(f"::{name}")]
    return found


def test_a_contraction_by_name_parses_and_prints_back():
    module = parse(SCORES + "fn g(x : B×D×E) : B ↦ contract(x, x, over D, E)\n")
    scores, g = (d.body for d in module.decls)
    assert scores.over == ("F",) and len(scores.operands) == 2
    assert g.over == ("D", "E")
    for unicode in (True, False):
        assert parse(print_module(module, unicode)) == module
    assert parse("fn f(q, k) ↦ contract(q, k, over T')").decls[0].body.over == ("T′",)


def test_over_is_a_keyword_only_among_a_calls_arguments():
    (d,) = parse("fn f(over) ↦ g(over) + over").decls  # a name anywhere else
    assert d.params == ("over",)
    assert parse("fn contract(a, b) ↦ contract(a, b)").decls[0].name == "contract"
    with pytest.raises(ParseError) as err:
        parse("fn f(q, k) ↦ g(q, k, over F)")
    assert err.value.code == "E100" and "g(…) takes expressions only" in err.value.message


def test_it_lowers_to_the_einsum_its_names_spell():
    """One letter per axis name, shared names one letter, the rest kept as they first appear;
    so planning, ∂, every executor and ONNX see an einsum."""
    module = hilbert.compile_source(SCORES + ATTENTION)
    scores = body(module, "scores")
    assert type(scores).__name__ == "Einsum" and scores.spec == "abc,adc->abd"


@pytest.mark.parametrize("executor", ["reference", "numba", "dask", "jax"])
def test_attention_written_by_name_equals_numpy(executor):
    pytest.importorskip({"dask": "dask", "jax": "jax"}.get(executor, "numpy"))
    module = hilbert.compile_source(SCORES + ATTENTION)
    rng = np.random.default_rng(5)
    x, xs = rng.standard_normal((2, 3, 6)), rng.standard_normal((2, 5, 6))
    wq, wk, wv = (rng.standard_normal(s) for s in ((6, 4), (6, 4), (6, 7)))
    q, k, v = x @ wq, xs @ wk, xs @ wv
    scores = np.einsum("btf,bsf->bts", q, k)  # T and T′ kept apart, F summed, B shared
    np.testing.assert_allclose(module.scores.using(executor)(q, k), scores, rtol=1e-12)
    e = np.exp(scores / 2.0)
    want = (e / e.sum(axis=2, keepdims=True)) @ v
    got = module.attention.using(executor)(x, xs, wq, wk, wv)
    np.testing.assert_allclose(got, want, rtol=1e-10)


def test_onnx_exports_it_as_the_einsum():
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    model = hilbert.compile_source(SCORES).scores.onnx((2, 3, 4), (2, 5, 4))
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(4)
    q, k = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 5, 4))
    (got,) = session.run(None, {"q": q, "k": k})
    np.testing.assert_allclose(got, np.einsum("btf,bsf->bts", q, k), rtol=1e-12)


def test_t_and_t_prime_stay_distinct():
    """The scores keep T and T′ as two axes: declared as one, refused (E330); contracted over
    T, which the keys do not have, refused (E332); only a rename makes them one, and then the
    shared axis is multiplied entrywise (a diagonal), as names say."""
    with pytest.raises(CheckError) as err:
        hilbert.compile_source(SCORES.replace(": B×T×T′ ↦", ": B×T ↦"))
    assert err.value.code == "E330" and "B×T×T′" in err.value.message
    with pytest.raises(CheckError) as err:
        hilbert.compile_source(SCORES.replace("over F", "over T"))
    assert err.value.code == "E332"
    assert "operand 2 (k) has no axis T to contract over: its axes are B×T′×F" in \
        err.value.message
    same = hilbert.compile_source(
        "fn s(q : B×T×F, k : B×T′×F) : B×T ↦ contract(q, rename(k, T′ → T), over F)")
    rng = np.random.default_rng(6)
    q, k = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 3, 4))
    np.testing.assert_allclose(same.s(q, k), np.einsum("btf,btf->bt", q, k), rtol=1e-12)


def test_derivatives_through_a_contraction_equal_finite_differences():
    module = hilbert.compile_source("""
fn loss(q : B×T×F, k : B×T′×F) : Scalar ↦ einsum("bts->", tanh(contract(q, k, over F)))
fn slope(q : B×T×F, k : B×T′×F) : B×T′×F ↦ ∂ loss(q, k) / ∂ k
""")
    rng = np.random.default_rng(8)
    q, k = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 5, 4))

    def loss(k):
        return np.tanh(np.einsum("btf,bsf->bts", q, k)).sum()

    step, numeric = 1e-6, np.zeros_like(k)
    for i in np.ndindex(k.shape):
        bump = np.zeros_like(k)
        bump[i] = step
        numeric[i] = (loss(k + bump) - loss(k - bump)) / (2 * step)
    np.testing.assert_allclose(module.loss(q, k), loss(k), rtol=1e-12)
    np.testing.assert_allclose(module.slope(q, k), numeric, rtol=1e-6, atol=1e-8)


def test_a_models_method_contracts_with_its_weights_by_name():
    text = ("model Dense(E, R) : Learner {\n  weight w : Tensor[E, R] from 1\n"
            "  def apply(x : B×E) : B×R ≔ contract(x, w, over E)\n"
            "  def fit(x) { w ≔ w − (let y : B×E ≔ x in contract(y, apply(y), over B)) }\n}")
    dense = hilbert.compile_source(text).Dense(3, 2)
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(dense.apply(x), x @ np.ones((3, 2)), rtol=1e-12)
    dense.fit(x)  # w − xᵀ (x w), written by name
    np.testing.assert_allclose(dense.w, np.ones((3, 2)) - x.T @ (x @ np.ones((3, 2))),
                               rtol=1e-12)
    with pytest.raises(CheckError) as err:  # (x, B×E, has no R)
        hilbert.compile_source(text.replace("over E)\n", "over R)\n"))
    assert err.value.code == "E332" and "operand 1 (x)" in err.value.message


@pytest.mark.parametrize("text, says", [
    ("fn f(q, k : T×F) ↦ contract(q, k, over F)", "operand 1 (q)'s axes are not known"),
    ('fn f(q : T×F, k : T×F) ↦ contract(einsum("...f->...f", q), k, over F)',
     "axes are not known"),
    ("fn f(q : F×F, k : T×F) ↦ contract(q, k, over F)", "has the axis F twice (F×F)"),
    ("fn f(q : T×F, k : T×F) ↦ contract(q, k, over F, F)", "names an axis twice"),
    ("fn f(q : T×F, k : Scalar) ↦ contract(q, k, over F)", "has no axis F to contract over: "
     "it is a scalar"),
])
def test_contractions_the_names_cannot_resolve_are_refused(text, says):
    with pytest.raises(CheckError) as err:
        hilbert.compile_source(text)
    assert err.value.code == "E332" and says in err.value.message, str(err.value)


def test_a_contraction_in_a_weights_initialiser_is_refused_not_a_traceback():
    with pytest.raises(CheckError) as err:
        hilbert.compile_source("model M(n) : Learner {\n"
                               "  weight w : Tensor[n] from contract(n, n, over F)\n}").M(2)
    assert err.value.code == "E332"
