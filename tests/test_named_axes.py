"""Named axes (docs/language.md, "Named axes"): declarations parsed and printed, every mistake
the seed names refused before anything runs (E330) although the sizes agree, sizes bound once
per call (E331), and declared code computing exactly what its undeclared form does."""

from __future__ import annotations

import numpy as np
import pytest
from hilbert.grammar.errors import CheckError, ParseError
from hilbert.grammar.parser import parse
from hilbert.grammar.printer import print_module

import hilbert

# Declarations in the syntax


def test_parameters_and_results_declare_named_axes_and_print_back():
    text = ('def step(x : B×E, w : E×R, c) : B×R ≔ einsum("be,er->br", x, w) · c\n'
            "fn f(k : B×T′×F) : Scalar ↦ 1\n"
            "def g(x : B×D) : B×R ≔ rename(x, D → R)\n")
    module = parse(text)
    step, f, g = module.decls
    assert step.params == ("x", "w", "c")
    assert [a and a.names for a in step.axes.params] == [("B", "E"), ("E", "R"), None]
    assert step.axes.result.names == ("B", "R")
    assert f.axes.params[0].names == ("B", "T′", "F") and f.axes.result.names == ()
    assert g.body.pairs == (("D", "R"),)
    for unicode in (True, False):
        assert parse(print_module(module, unicode)) == module
    ascii_text = "def h(x : B*T') : T' := rename(x, B -> A)"
    assert parse(ascii_text).decls[0].axes.params[0].names == ("B", "T′")


def test_undeclared_definitions_parse_as_before():
    (d,) = parse("def f(x, y) ≔ x + y").decls
    assert d.axes is None and d.params == ("x", "y")


def test_rename_is_a_keyword():
    with pytest.raises(ParseError) as err:
        parse("def rename(x) ≔ x")
    assert err.value.code == "E100"


@pytest.mark.parametrize("text", ["model M(n : N) : Learner { }",
                                  "model M(n) : Learner {\n  def train(x : B) { }\n}"])
def test_only_definitions_declare_axes(text):
    with pytest.raises(ParseError) as err:
        parse(text)
    assert err.value.code == "E100" and "only a definition's parameters" in err.value.message


# Mistakes the sizes cannot see, refused when the module loads

DENSE = 'fn layer(x : B×E, w : E×R) : B×R ↦ einsum("be,{}->br", x, w)'


def refusal(text: str) -> CheckError:
    with pytest.raises(CheckError) as err:
        hilbert.compile_source(text)
    assert err.value.code == "E330", str(err.value)
    return err.value


def test_a_transposed_square_weight_is_refused_though_its_sizes_agree():
    undeclared = hilbert.compile_source(
        'fn layer(x, w) ↦ einsum("be,re->br", x, w)')  # the transposed read, undeclared
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((2, 4)), rng.standard_normal((4, 4))  # |E| = |R| = 4
    assert not np.allclose(undeclared.layer(x, w), x @ w)  # runs, silently wrong
    err = refusal(DENSE.format("re"))
    assert "einsum letter e joins axis E (named at 1:16) with axis R " \
           "(named at 1:25)" in err.message
    assert (err.span.line, err.span.column) == (1, 36)
    declared = hilbert.compile_source(DENSE.format("er"))
    np.testing.assert_allclose(declared.layer(x, w), x @ w, rtol=1e-12)


ATTENTION = '''
fn scores(q : B×T×F, k : B×T′×F) : B×T×T′ ↦ einsum("btf,{}->bts", q, k)
'''


def test_attention_that_contracts_t_with_t_prime_is_refused():
    err = refusal(ATTENTION.format("btf").replace("->bts", "->bt").replace("B×T×T′ ↦", "B×T ↦"))
    assert "axis T (named at 2:17) with axis T′ (named at 2:28)" in err.message
    hilbert.compile_source(ATTENTION.format("bsf"))


def test_a_residual_over_m_prime_is_refused_and_a_rename_allows_it():
    text = ('fn block(x : B×M, v : B×L, wo : L×M′) : B×M ↦ x + {}')
    err = refusal(text.format('einsum("bl,lm->bm", v, wo)'))
    assert "the operator + joins axis M (named at 1:16) with axis M′" in err.message
    fixed = hilbert.compile_source(text.format('rename(einsum("bl,lm->bm", v, wo), M′ → M)'))
    rng = np.random.default_rng(1)
    x, v, wo = rng.standard_normal((2, 3)), rng.standard_normal((2, 5)), \
        rng.standard_normal((5, 3))
    np.testing.assert_allclose(fixed.block(x, v, wo), x + v @ wo, rtol=1e-12)


@pytest.mark.parametrize("text, says", [
    ('fn f(x : B×E, w : E×R) : B×E ↦ einsum("be,er->br", x, w)',
     "f is declared to give B×E, but its body gives B×R"),
    ("fn f(x : B×E) : E ↦ x", "f is declared to give E, but its body gives B×E"),
    ("fn f(x : D, y : R, c) ↦ if c > 0 then x else y", "if … then … else joins axis D"),
    ("fn f(x : D, y : R) ↦ max(x, y)", "max(…) joins axis D"),
    ("fn f(x : D) ↦ rename(x, R → D)", "rename(…, R → D) names an axis R, but the value's "
                                       "axes are D"),
    ('def step(x : B×E, w : E×R) : B×R ≔ einsum("be,er->br", x, w)\n'
     "fn two(x : B×E, w : E×R, u : D×R) ↦ step(step(x, w), u)",
     "step's axis E joins axis R"),
    ("fn f(x : B×E) ↦ let y ≔ x in y + rename(x, E → R)", "joins axis E"),
    ('model M(E, R) : Learner {\n  weight w : Tensor[E, R] from 0\n'
     '  def apply(x : B×R) ≔ einsum("be,er->br", x, w)\n}', "einsum letter e joins axis R"),
])
def test_each_disagreement_of_names_is_refused(text, says):
    assert says in refusal(text).message


def test_a_long_chain_of_operators_is_checked_without_recursion():
    refusal("fn f(x : D, y : R) ↦ " + " + ".join(["x"] * 3000) + " + y")


def test_hilbert_check_refuses_before_anything_runs(tmp_path, capsys):
    from hilbert.cli import main

    path = tmp_path / "attention.hb"
    path.write_text(ATTENTION.format("btf").replace("->bts", "->bt")
                    .replace("B×T×T′ ↦", "B×T ↦"), encoding="utf-8")
    assert main(["check", str(path)]) == 1
    assert "error[E330]" in capsys.readouterr().err


# Sizes, bound once per call


def test_one_axis_has_one_size_in_a_call():
    module = hilbert.compile_source(DENSE.format("er"))
    with pytest.raises(CheckError) as err:
        module.layer(np.ones((2, 3)), np.ones((4, 3)))
    assert err.value.code == "E331"
    assert "axis E has 3 entries in x but 4 in w" in err.value.message
    with pytest.raises(CheckError) as err:
        module.layer(np.ones(3), np.ones((3, 3)))
    assert err.value.code == "E331" and "x is declared B×E, 2 axes" in err.value.message


# Declared code computes what its undeclared form does

SCORES = '''
open Prelude.Networks
-- The seed's attention scores: queries over T, keys over T′, both of key width F.
fn scores(q : T×F, k : T′×F, d : Scalar) : T×T′ ↦ einsum("tf,sf->ts", q, k) / sqrt(d)
fn plain(q, k, d) ↦ attentionScores(q, k, d)
'''


@pytest.mark.parametrize("executor", ["reference", "numba"])
def test_a_declared_prelude_definition_equals_its_undeclared_form(executor):
    module = hilbert.compile_source(SCORES)
    rng = np.random.default_rng(2)
    q, k = rng.standard_normal((3, 4)), rng.standard_normal((5, 4))
    named = module.scores.using(executor)(q, k, 4.0)
    np.testing.assert_array_equal(named, module.plain.using(executor)(q, k, 4.0))
    np.testing.assert_allclose(named, q @ k.T / 2.0, rtol=1e-12)


def test_derivatives_through_named_code():
    module = hilbert.compile_source('''
fn loss(x : B×E, w : E×R) : Scalar ↦ einsum("br->", einsum("be,er->br", x, w)²)
fn slope(x : B×E, w : E×R) : E×R ↦ ∂ loss(x, w) / ∂ w
''')
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((4, 3)), rng.standard_normal((3, 2))
    np.testing.assert_allclose(module.slope(x, w), 2 * x.T @ (x @ w), rtol=1e-10)


# Shown where users look


def test_help_repr_and_plans_show_the_named_shapes():
    module = hilbert.compile_source(DENSE.format("er") + "\nfn plain(x, w) ↦ x")
    assert module.layer.__doc__.startswith("layer(x : B×E, w : E×R) : B×R  [fn at")
    assert repr(module.layer).startswith("<hilbert fn layer(x : B×E, w : E×R) : B×R at")
    assert str(module.layer.plan((2, 3), (3, 4))).startswith(
        "plan of layer(x: B×E = 2×3, w: E×R = 3×4)")
    assert str(module.plain.plan((2, 3), (3, 4))).startswith("plan of plain(x: 2×3, w: 3×4)")
