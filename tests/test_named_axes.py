"""Named axes (docs/language.md, "Named axes"): declarations parsed and printed, every mistake
the seed names refused before anything runs (E330) although the sizes agree, sizes bound once
per call (E331), and declared code computing exactly what its undeclared form does."""

from __future__ import annotations

from pathlib import Path

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
    let = parse("fn f(x) ↦ let y : B×R ≔ x, (a, b) ≔ (x, x) in y").decls[0]
    assert [b.axes and b.axes.names for b in let.body.bindings] == [("B", "R"), None]
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
    ("fn f(x : T×B×E, h : B×D) ↦ x[0] + h", "the operator + joins axis E"),  # x[t]: B×E
    ("fn f(x : B×R, b : R) ↦ x + b", "joins B×R with R: nothing broadcasts but a scalar"),
    ("fn f(x) ↦ let y : B×E ≔ x, z : B×R ≔ y in z",
     "z is declared B×R, but its value gives B×E"),
    ('fn f(x, w) ↦ let y : B×R ≔ einsum("be,er->br", x, w) in y + rename(y, R → D)',
     "the operator + joins axis R"),
    ('model M(E, R) : Learner {\n  weight w : Tensor[E, R] from 0\n'
     '  def apply(x : B×R) ≔ einsum("be,er->br", x, w)\n}', "einsum letter e joins axis R"),
])
def test_each_disagreement_of_names_is_refused(text, says):
    assert says in refusal(text).message


def test_calls_of_undeclared_definitions_are_followed_through_their_bodies():
    err = refusal("open Prelude.Networks\nfn f(x : B×E, w : R×E) ↦ dense(x, w)")
    assert err.span.source.name.endswith("Networks.hb")  # the einsum inside dense
    assert "einsum letter p joins axis E" in err.message
    assert err.notes[0] == "dense called with these axes at <string>:2:26"
    refusal("open Prelude.Arithmetic\nfn f(a : B×R, c : B×D) ↦ sigmoid(a) + c")
    loop = hilbert.compile_source(  # a loop's own result is not known, its other branch is
        "def count(t, x) ≔ if t = 0 then x else count(t − 1, x + 1)\n"
        "fn f(x : B×E) : B×E ↦ count(3, x)")
    np.testing.assert_array_equal(loop.f(np.zeros((2, 3))), np.full((2, 3), 3.0))


def test_reads_keep_the_axes_they_leave():
    hilbert.compile_source("fn f(x : T×B×E, h : B×E) : B×E ↦ x[0] + h")
    hilbert.compile_source("fn f(x : T×B, y : T×B) : T×B ↦ x[1 : 3] + y[0 : 2]")


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
    assert "while specialising layer(x: B×E = 2×3, w: E×R = 4×3)" in str(err.value)
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


@pytest.mark.parametrize("executor", ["reference", "numba", "dask", "jax"])
def test_a_declared_prelude_definition_equals_its_undeclared_form(executor):
    pytest.importorskip({"dask": "dask", "jax": "jax"}.get(executor, "numpy"))
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
    assert str(module.layer.product("vjp").plan((2, 3), (3, 4), (2, 4))).startswith(
        "plan of vjp of layer(x: B×E = 2×3, w: E×R = 3×4, cotangent: 2×4)")


# The seed's models in named axes (tests/programs/SeedNamedAxes.hb)

SEED = Path(__file__).parent / "programs" / "SeedNamedAxes.hb"


@pytest.fixture(scope="module")
def seed():
    return hilbert.load(SEED)


def test_the_seeds_parameter_counts_come_from_the_declared_shapes(seed):
    assert seed.Peephole(512, 768, 768, 0).parameters() == 3_937_536
    assert seed.ChoGRU(512, 768, 768, 0).parameters() == 2_951_424
    assert seed.TorchGRU(512, 768, 768, 0).parameters() == 2_953_728
    assert seed.Head(768, 64, 64, 0).parameters() == 147_456
    heads = seed.Heads(12, 768, 64, 64, 768, 0)
    assert heads.weights["wo"].size == 589_824
    assert heads.parameters() - heads.weights["wo"].size == 1_769_472


def sigmoid(z):
    return 1 / (1 + np.exp(-z))


def test_the_named_cells_compute_the_papers_formulas(seed):
    rng = np.random.default_rng(4)
    x, h, c = rng.standard_normal((2, 3)), rng.standard_normal((2, 4)), \
        rng.standard_normal((2, 4))
    lstm = seed.Peephole(3, 4, 4, 1)
    w = lstm.weights
    a = {g: x @ w[f"w{g}"] + h @ w[f"u{g}"] + w[f"b{g}"] for g in "ifco"}
    c2 = sigmoid(a["f"] + w["pf"] * c) * c + sigmoid(a["i"] + w["pi"] * c) * np.tanh(a["c"])
    h2 = sigmoid(a["o"] + w["po"] * c2) * np.tanh(c2)
    np.testing.assert_allclose(lstm.memory(x, h, c), c2, rtol=1e-12)
    np.testing.assert_allclose(lstm.state(x, h, c), h2, rtol=1e-12)
    cho, torch_like = seed.ChoGRU(3, 4, 4, 2), seed.TorchGRU(3, 4, 4, 3)
    w = cho.weights
    r, z = (sigmoid(x @ w[f"w{g}"] + h @ w[f"u{g}"] + w[f"b{g}"]) for g in "rz")
    n = np.tanh(x @ w["wn"] + (r * h) @ w["un"] + w["bn"])
    np.testing.assert_allclose(cho.state(x, h), z * h + (1 - z) * n, rtol=1e-12)
    w = torch_like.weights
    r, z = (sigmoid(x @ w[f"w{g}"] + w[f"b{g}"] + h @ w[f"u{g}"] + w[f"c{g}"]) for g in "rz")
    n = np.tanh(x @ w["wn"] + w["bn"] + r * (h @ w["un"] + w["cn"]))
    np.testing.assert_allclose(torch_like.state(x, h), (1 - z) * n + z * h, rtol=1e-12)


def softmax_last(s):
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_the_named_attention_computes_the_papers_formula(seed):
    rng = np.random.default_rng(5)
    x, xs = rng.standard_normal((2, 3, 6)), rng.standard_normal((2, 5, 6))
    head = seed.Head(6, 4, 4, 1)
    w = head.weights
    q, k, v = x @ w["wq"], xs @ w["wk"], xs @ w["wv"]
    expected = softmax_last(q @ k.transpose(0, 2, 1) / 2.0) @ v
    np.testing.assert_allclose(head.attend(x, xs), expected, rtol=1e-12)
    heads = seed.Heads(2, 6, 4, 3, 6, 2)
    w = heads.weights
    q, k, v = (np.einsum("btm,nmf->bntf", x, w[n]) for n in ("wq", "wk", "wv"))
    attended = softmax_last(np.einsum("bntf,bnsf->bnts", q, k) / 2.0) @ v
    expected = x + np.einsum("bntl,nlo->bto", attended, w["wo"])
    np.testing.assert_allclose(heads.block(x), expected, rtol=1e-12)


@pytest.mark.parametrize("written, mistaken", [
    ('einsum("bd,dr->br", h, u)', 'einsum("bd,rd->br", h, u)'),  # U read transposed
    # the scores' positions swapped, so the values' T′ is contracted with the queries' T
    ('einsum("btf,bsf->bts", q, k)', 'einsum("bsf,btf->bts", q, k)'),
    ('x + rename(einsum("bnts,bnsl,nlo->bto", a, v, wo), O → M)',
     'x + einsum("bnts,bnsl,nlo->bto", a, v, wo)'),  # a residual over M′ (O)
])
def test_each_mistake_in_the_seeds_models_is_refused(written, mistaken, tmp_path):
    """The seed's models with one mistake each, which sizes alone cannot see: all refused."""
    text = SEED.read_text(encoding="utf-8")
    assert written in text
    wrong = tmp_path / "Seed.hb"
    wrong.write_text(text.replace(written, mistaken), encoding="utf-8")
    with pytest.raises(CheckError) as err:
        hilbert.load(wrong)
    assert err.value.code == "E330"


# Train blocks: each weight's update has the weight's axes

FIT = ('open Prelude.Sequences\nmodel Fit({params}) : Learner {{\n'
       '  weight w : Tensor[{dims}] from drawn(uniform(seed), {first})\n'
       '  def {predict} ≔ einsum("be,er->br", x, w)\n'
       '  def train(x, y, rate) {{\n'
       '    w ≔ w − rate · einsum("br,be->{grad}", predict(x) − y, x)\n'
       '  }}\n}}\n')


def fit(params: str, dims: str, grad: str, predict: str = "predict(x : B×E) : B×R") -> str:
    return FIT.format(params=params, dims=dims, first=dims.split(",")[0], grad=grad,
                      predict=predict)


def test_a_train_blocks_transposed_gradient_of_a_square_weight_is_refused():
    """The gradient of ½‖x w − y‖² written in the out×in layout (R×E, as a PyTorch Linear
    keeps its weight): with a square weight the sizes agree and training goes silently
    wrong; with the weight's axes named it is refused when the module loads."""
    rng = np.random.default_rng(6)
    x, y = rng.standard_normal((5, 3)), rng.standard_normal((5, 3))
    unnamed = hilbert.compile_source(fit("n, seed", "n, n", "re", "predict(x)")).Fit(3, 1)
    w = unnamed.weights["w"].copy()
    unnamed.train(x, y, 0.1)
    right = w - 0.1 * x.T @ (x @ w - y)
    assert not np.allclose(unnamed.weights["w"], right)  # runs, silently wrong
    for predict in ("predict(x : B×E) : B×R", "predict(x)"):  # declared, or followed
        err = refusal(fit("E, R, seed", "E, R", "re", predict))
        assert "the operator − joins axis E (named at 3:3) with axis R (named at 3:3)" \
            in err.message.replace("-", "−")
        assert (err.span.line, err.span.column) == (6, 9)
    named = hilbert.compile_source(fit("E, R, seed", "E, R", "er")).Fit(3, 3, 1)
    w = named.weights["w"].copy()
    named.train(x, y, 0.1)
    np.testing.assert_allclose(named.weights["w"], w - 0.1 * x.T @ (x @ w - y), rtol=1e-12)


@pytest.mark.parametrize("update, says", [
    ('w ≔ einsum("er->re", w)', "w is a weight of axes E×R, but its update gives R×E: axis R "
     "(named at 3:3) where axis E (named at 3:3) is declared"),
    ("w ≔ einsum(\"er->e\", w)", "w is a weight of axes E×R, but its update gives E"),
    ("(w, v) ≔ (v, w)", "w is a weight of axes E×R, but its update gives R×E"),
])
def test_an_update_whose_axes_differ_from_its_weights_is_refused(update, says):
    text = ("model M(E, R) : Learner {\n  weight v : Tensor[R, E] from 0\n"
            f"  weight w : Tensor[E, R] from 0\n  def train(x) {{\n    {update}\n  }}\n}}")
    err = refusal(text)
    assert says in err.message and err.span.line == 5


def test_a_model_method_takes_its_weights_axes():
    """A method's E is its weights' E: called with another axis there, refused."""
    text = ('model M(E, R) : Learner {\n  weight w : Tensor[E, R] from 0\n'
            '  def apply(x : B×E) : B×R ≔ einsum("be,er->br", x, w)\n'
            '  def twice(x : B×R) ≔ apply(x)\n}')
    assert "apply's axis E joins axis E" in refusal(text).message


def test_an_ellipsis_einsum_is_not_known_rather_than_misread():
    """`…` (as the parser keeps `...`) names no axis: the result is not known, not a value of
    the letters' rank (which refused this declared definition)."""
    f = hilbert.compile_source('fn f(x : B×T×E) : B×T×E ↦ einsum("...e->...e", x)')
    x = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(f.f(x), x)


def test_every_program_of_the_repository_still_loads():
    """Train blocks and methods' calls are checked now: nothing written so far is refused
    (the error examples of tests/errors excepted)."""
    root = Path(__file__).parent.parent
    files = [p for folder in ("examples", "prelude", "tests/programs")
             for p in sorted((root / folder).glob("*.hb"))]
    assert len(files) > 30
    for path in files:
        hilbert.load(path)


def test_a_declared_methods_axis_has_its_weights_size():
    """x's E is w's E: an x of another width is refused (E331), where undeclared it runs
    (nothing in the body joins x's columns with w's rows)."""
    text = ('model M(E, R) : Learner {{\n  weight w : Tensor[E, R] from 1\n'
            '  def scale({x} ≔ x · einsum("er->", w ^ 2)\n}}')
    x = np.arange(10.0).reshape(2, 5)
    undeclared = hilbert.compile_source(text.format(x="x)")).M(3, 2)
    np.testing.assert_array_equal(undeclared.scale(x), 6 * x)  # runs, though |E| = 3
    declared = hilbert.compile_source(text.format(x="x : B×E) : B×E")).M(3, 2)
    np.testing.assert_array_equal(declared.scale(x[:, :3]), 6 * x[:, :3])
    with pytest.raises(CheckError) as err:
        declared.scale(x)
    assert err.value.code == "E331"
    assert "axis E has 3 entries in w but 5 in x" in err.value.message


def test_a_declared_lets_axes_have_one_size_in_a_call():
    """y's E is x's E: a w that maps E onto another number of columns is refused (E331),
    where undeclared it runs; two lets' axes bind each other too."""
    text = 'fn f(x : B×E, w) ↦ let y{y} ≔ einsum("be,ef->bf", x, w) in y'
    x, w = np.ones((2, 3)), np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(hilbert.compile_source(text.format(y="")).f(x, w), x @ w)
    f = hilbert.compile_source(text.format(y=" : B×E"))
    np.testing.assert_array_equal(f.f(x, w[:, :3]), x @ w[:, :3])
    with pytest.raises(CheckError) as err:
        f.f(x, w)
    assert err.value.code == "E331"
    assert "axis E has 3 entries in x but 4 in y" in err.value.message
    assert (err.value.span.line, err.value.span.column) == (1, 30)
    lets = hilbert.compile_source(
        'fn g(x, w) ↦ let y : B×F ≔ einsum("be,ef->bf", x, w), z : F ≔ einsum("be->e", x) '
        'in einsum("bf->b", y) + einsum("f->", z)')
    expected = (x @ w[:, :3]).sum(axis=1) + x.sum()
    np.testing.assert_allclose(lets.g(x, w[:, :3]), expected, rtol=1e-12)
    with pytest.raises(CheckError) as err:
        lets.g(x, w)  # sizes alone agree: nothing joins y's columns with z
    assert err.value.code == "E331"
    assert "axis F has 4 entries in y but 3 in z" in err.value.message


def test_derivatives_through_declared_lets_bind_no_other_sizes():
    """∂ makes nodes where a let's value was written, of other shapes: not a size refused."""
    module = hilbert.compile_source('''
fn loss(x : B×E, w : E×R) : Scalar ↦
  let y : B×R ≔ einsum("be,er->br", x, w), s : Scalar ≔ einsum("br->", y²) in s
fn slope(x : B×E, w : E×R) : E×R ↦ ∂ loss(x, w) / ∂ w
fn back(x : B×E, w : E×R) : B×E ↦ ∂ loss(x, w) / ∂ x
''')
    rng = np.random.default_rng(7)
    x, w = rng.standard_normal((4, 3)), rng.standard_normal((3, 2))
    np.testing.assert_allclose(module.slope(x, w), 2 * x.T @ (x @ w), rtol=1e-10)
    np.testing.assert_allclose(module.back(x, w), 2 * (x @ w) @ w.T, rtol=1e-10)


# The Prelude's sequence models declare their methods in the model's parameter names

def test_the_prelude_sequence_models_declare_their_inputs_axes():
    """Sequences' run methods name their axes after the model's parameters (the keyword API
    and the answers unchanged: tests/test_prelude_sequences.py): an input of another width
    is refused naming the axis, before any einsum sees it."""
    seq = hilbert.open("Prelude.Sequences")
    gru, heads = seq.GRU(3, 4, 0), seq.MultiHeadAttention(6, 2, 4, 3, 0)
    x, h = np.ones((5, 2, 3)), np.zeros((2, 4))
    assert gru.run(x=x, h=h).shape == (2, 4)
    assert heads.run(np.ones((2, 5, 6))).shape == (2, 5, 6)
    for run, args, says in ((gru.run, (np.ones((5, 2, 7)), h), "axis inputs has 3 entries"),
                            (heads.run, (np.ones((2, 5, 4)),), "axis width has 6 entries"),
                            (seq.LSTM(3, 4, 0).run, (x, h, np.zeros((2, 5))),
                             "axis hidden has 4 entries")):
        with pytest.raises(CheckError) as err:
            run(*args)
        assert err.value.code == "E331" and says in err.value.message
