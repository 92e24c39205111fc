"""The parser: every construct, both spellings to one tree, spans, and the printer round trip."""

import warnings
from pathlib import Path

import pytest
from hilbert.grammar import syntax as s
from hilbert.grammar.errors import HilbertWarning, ParseError
from hilbert.grammar.parser import parse
from hilbert.grammar.printer import print_expr, print_module

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted((ROOT / "prelude").glob("*.hb")) + sorted((ROOT / "examples").glob("*.hb"))


def body(text: str) -> s.Expr:
    """The body of the single definition `def f(x, y, z) ≔ text`."""
    return parse(f"def f(x, y, z) ≔ {text}").decls[0].body


def n(value: float) -> s.Number:
    return s.Number(value, None)


def v(name: str) -> s.Name:
    return s.Name(name, None, None)


def b(op: str, left, right) -> s.Binary:
    return s.Binary(op, left, right, None)


# Declarations


def test_empty_text_and_comments_are_an_empty_module():
    assert parse("").decls == ()
    assert parse("-- only a comment\n\n   -- another\n").decls == ()


def test_open_declaration():
    (decl,) = parse("open Prelude.Networks").decls
    assert decl == s.Open(("Prelude", "Networks"), None)


def test_def_fn_and_nullary_definitions():
    decls = parse("def dense(a, w) ≔ a\nfn go(x) ↦ x\ndef half ≔ 0.5\ndef none() ≔ 1").decls
    assert [(d.kind, d.name, d.params) for d in decls] == [
        ("def", "dense", ("a", "w")), ("fn", "go", ("x",)), ("def", "half", ()), ("def", "none", ())]


def test_definitions_span_lines_until_the_next_keyword():
    decls = parse("def f(x) ≔\n  x\n  + 1\nfn g(x) ↦\n  f(x)").decls
    assert decls[0].body == b("+", v("x"), n(1))
    assert decls[1].body == s.Call("f", None, (v("x"),), None)


def test_model_declaration():
    text = """
model Perceptron(inputs, hidden, seed) : Learner {
  weight first  : Tensor[inputs, hidden] from gaussian(seed) · 0.5
  weight bias   : Tensor[3] from 0
  def train(x, y, rate) {
    first ≔ first − rate · x
  }
  def eval(x) ≔ einsum("np,pq->nq", x, first)
  def size ≔ 2
}"""
    (model,) = parse(text).decls
    assert isinstance(model, s.Model)
    assert (model.name, model.params, model.base) == ("Perceptron", ("inputs", "hidden", "seed"), "Learner")
    assert [(w.name, w.type_name, w.dims) for w in model.weights] == [
        ("first", "Tensor", ("inputs", "hidden")), ("bias", "Tensor", (3.0,))]
    (train,) = model.trains
    assert train.name == "train" and train.params == ("x", "y", "rate")
    assert [a.name for a in train.assigns] == ["first"]
    assert [m.name for m in model.methods] == ["eval", "size"]


def test_doc_comment_block_becomes_the_docstring():
    text = "-- unrelated\n\n-- dense(a, w) · a n×p\n-- One layer.\ndef dense(a, w) ≔ a\n"
    assert parse(text).decls[0].doc == "dense(a, w) · a n×p\nOne layer."


# Expressions and precedence


@pytest.mark.parametrize("text, tree", [
    ("1 + 2 · 3", b("+", n(1), b("*", n(2), n(3)))),
    ("1 − 2 − 3", b("-", b("-", n(1), n(2)), n(3))),
    ("x / y / z", b("/", b("/", v("x"), v("y")), v("z"))),
    ("x ^ y ^ z", b("^", v("x"), b("^", v("y"), v("z")))),
    ("−x ^ 2", s.Negate(b("^", v("x"), n(2)), None)),
    ("x²", b("^", v("x"), n(2))),
    ("2 · x²", b("*", n(2), b("^", v("x"), n(2)))),
    ("(x + y) · z", b("*", b("+", v("x"), v("y")), v("z"))),
    ("x + y = z", s.Compare("=", b("+", v("x"), v("y")), v("z"), None)),
    ("if x ≥ 0 then x else 0 − x",
     s.If(s.Compare(">=", v("x"), n(0), None), v("x"), b("-", n(0), v("x")), None)),
    ("f(x, 2)", s.Call("f", None, (v("x"), n(2)), None)),
    ("Networks.dense(x, y)", s.Call("dense", "Networks", (v("x"), v("y")), None)),
    ("Networks.half", s.Name("half", "Networks", None)),
    ('einsum("ij->ji", x)', s.Call("einsum", None, (s.String("ij->ji", None), v("x")), None)),
])
def test_precedence_and_associativity(text, tree):
    assert body(text) == tree


@pytest.mark.parametrize("literal, value", [
    ("0", 0.0), ("12", 12.0), ("0.5", 0.5), ("1e-5", 1e-5), ("1e300", 1e300), ("2.5E-3", 2.5e-3),
    ("1e+2", 100.0),
])
def test_numbers(literal, value):
    assert body(literal) == n(value)


@pytest.mark.parametrize("op", ["=", "≠", "!=", "<", ">", "≤", "<=", "≥", ">="])
def test_every_comparison(op):
    assert isinstance(body(f"x {op} y"), s.Compare)


def test_comparisons_do_not_chain():
    with pytest.raises(ParseError) as err:
        parse("def f(x) ≔ 0 < x < 1")
    assert err.value.code == "E100"


def test_unicode_identifiers():
    (decl,) = parse("def ι(α, x_1) ≔ α · x_1").decls
    assert decl.name == "ι" and decl.params == ("α", "x_1")


@pytest.mark.parametrize("keyword", ["open", "def", "fn", "model", "weight", "from", "if", "then", "else"])
def test_keywords_are_not_names(keyword):
    with pytest.raises(ParseError):
        parse(f"def {keyword}(x) ≔ x")


def test_keywords_may_begin_a_name():
    (decl,) = parse("def iffy(define, often) ≔ define + often").decls
    assert decl.params == ("define", "often")


# Both spellings


UNICODE = """
def f(x, y) ≔ if x ≥ y then x · y − x² else if x ≤ y then −x / y else x ≠ y
fn g(x) ↦ f(x, 2)
"""
ASCII = """
def f(x, y) := if x >= y then x * y - x^2 else if x <= y then -x / y else x != y
fn g(x) |-> f(x, 2)
"""


def test_unicode_and_ascii_spellings_give_the_same_tree():
    assert parse(UNICODE) == parse(ASCII)


def test_mixed_spellings_give_the_same_tree():
    mixed = UNICODE.replace("·", "*").replace("≔", ":=").replace("≥", ">=")
    assert parse(mixed) == parse(ASCII)


@pytest.mark.parametrize("unicode, ascii_", [
    ("def f(x, y) ≔ x", "def f(x, y) := x"),
    ("fn f(x, y) ↦ x", "fn f(x, y) |-> x"),
    ("fn f(x, y) ↦ x · y", "fn f(x, y) ↦ x * y"),
    ("fn f(x, y) ↦ x − y", "fn f(x, y) ↦ x - y"),
    ("fn f(x, y) ↦ −y", "fn f(x, y) ↦ -y"),
    ("fn f(x, y) ↦ x ≥ y", "fn f(x, y) ↦ x >= y"),
    ("fn f(x, y) ↦ x ≤ y", "fn f(x, y) ↦ x <= y"),
    ("fn f(x, y) ↦ x ≠ y", "fn f(x, y) ↦ x != y"),
    ("fn f(x, y) ↦ x²", "fn f(x, y) ↦ x^2"),
])
def test_each_operator_pair(unicode, ascii_):
    assert parse(unicode) == parse(ascii_)


def test_square_is_power_two():
    assert body("x²") == body("x^2") == body("x ^ 2")


def test_negative_exponent_minus_sign():
    assert body("1e−5") == body("1e-5") == n(1e-5)


# Spans


def test_spans_point_at_the_source():
    module = parse("def f(x) ≔\n  x + g(x)", name="demo.hb")
    (decl,) = module.decls
    assert (decl.span.line, decl.span.column) == (1, 1)
    call = decl.body.right
    assert (call.span.line, call.span.column, call.span.end_column) == (2, 7, 11)
    assert str(call.span) == "demo.hb:2:7"


def test_syntax_error_has_line_and_column():
    with pytest.raises(ParseError) as err:
        parse("def f(x) ≔ x\ndef g(x) ≔ x +* 2")
    assert (err.value.code, err.value.span.line, err.value.span.column) == ("E100", 2, 15)
    assert "def g(x) ≔ x +* 2" in str(err.value) and "^" in str(err.value)


# Printer round trip


ROUND_TRIP = [
    "def f(x) ≔ 1 − (2 − 3)",
    "def f(x) ≔ (x ^ 2) ^ 3",
    "def f(x) ≔ x ^ −2",
    "def f(x) ≔ −(x + 1) · 2",
    "def f(x) ≔ (if x > 0 then x else 0) + 1",
    "def f(x) ≔ (x = 1) = (x = 2)",
    "def f(x) ≔ x / (x / x)",
    "def f(x) ≔ 1e-300 + 1e300 + 0.1 + 123456789012345678",
    'def f(x) ≔ einsum("ij , jk -> ik", x, x)',
    "open Prelude.Networks\nfn g(a, w) ↦ Networks.dense(a, w) + Networks.half",
    UNICODE,
]


@pytest.mark.parametrize("text", ROUND_TRIP)
@pytest.mark.parametrize("unicode", [False, True])
def test_round_trip_through_the_printer(text, unicode):
    tree = parse(text)
    printed = print_module(tree, unicode=unicode)
    assert parse(printed) == tree
    assert print_module(parse(printed), unicode=unicode) == printed


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name)
@pytest.mark.parametrize("unicode", [False, True])
def test_every_shipped_file_round_trips(path, unicode):
    tree = parse(path.read_text(encoding="utf-8"), path.name)
    assert parse(print_module(tree, unicode=unicode)) == tree


def test_print_expr_adds_only_needed_parentheses():
    assert print_expr(body("(x + y) · z")) == "(x + y) * z"
    assert print_expr(body("x + (y · z)")) == "x + y * z"
    assert print_expr(body("x − (y − z)"), unicode=True) == "x − (y − z)"
    assert print_expr(body("x ^ (y ^ (z ^ w))")) == "x ^ y ^ z ^ w"
    assert print_expr(body("x ^ (y ^ z) ^ w")) == "x ^ (y ^ z) ^ w"
    assert print_expr(body("(x ^ y) ^ z")) == "(x ^ y) ^ z"


# Long chains of one operator are not nesting


def test_a_long_chain_prints_and_parses_back_without_recursion():
    for op in ("+", "-", "*", "/", "^"):
        text = f" {op} ".join(f"x{i}" for i in range(20_000))
        assert print_expr(body(text)) == text


# Text that is not quite .hb


def test_a_byte_order_mark_at_the_start_is_not_text():
    (decl,) = parse("\ufeffdef f(x) ≔ x").decls
    assert decl.name == "f" and (decl.span.line, decl.span.column) == (1, 1)
    with pytest.raises(ParseError) as err:
        parse("\ufeffdef f(x) ≔ x +")
    assert err.value.span.column == 15 and "def f(x) ≔ x +" in str(err.value)


@pytest.mark.parametrize("text, digit", [
    ("x + ٣", "U+0663 ARABIC-INDIC DIGIT THREE"),     # Arabic-Indic
    ("x + ３", "U+FF13 FULLWIDTH DIGIT THREE"),         # fullwidth
    ("1٣ + x", "U+0663 ARABIC-INDIC DIGIT THREE"),      # after ASCII digits
    ("x + ۳", "U+06F3 EXTENDED ARABIC-INDIC DIGIT THREE"),
    ("³x + 1", "U+00B3 SUPERSCRIPT THREE"),            # would otherwise begin a name
])
def test_digits_other_than_ascii_are_refused(text, digit):
    with pytest.raises(ParseError) as err:
        body(text)
    assert err.value.code == "E103"
    assert digit in err.value.message and "ASCII digits 0–9" in err.value.message
    assert "write 3" in err.value.message


def test_a_name_may_hold_other_digits_after_its_first_letter():
    (decl,) = parse("def f(x٣, y３) ≔ x٣ + y３").decls
    assert decl.params == ("x٣", "y３")


@pytest.mark.parametrize("text, says, at", [
    ("fn f(x) ↦ switch x with", "no switch: choose with match x { when 1 ↦ a", 11),
    ("fn f(x) ↦ case x of", "no case: choose with match x { when 1 ↦ a", 11),
    ("fn f(x) ↦ for i in x", "no for: a loop is a definition that calls itself", 11),
    ("fn f(x) ↦ while x", "no while: a loop is a definition that calls itself", 11),
    ("fn f(x) ↦ lambda y: y", "no lambda: give the function a name with def", 11),
    ("import numpy", "no import: write open Module", 1),
    ("class Model:", "no class: a trainable model is model Name(…) : Learner", 1),
    ("fn f(x) ↦ x\nreturn x", "no return: a definition's body is its value", 1),
    ("fn f(x) ↦ if x > 0 and x < 1 then 1 else 0", "no and: comparisons give 1 or 0", 20),
    ("def f(x : Frame(path)) ≔ x", "a parameter its named axes, `x : B×E`", 11),
    ("fn g(y) ↦ f(y : T)", "no type annotations such as `x : T`", 15),
    ("model M(n) : Table(path) { }", "no type Table(…): after `:` a model names its base", 14),
    ("model M(n) : Learner {\n  weight w : Frame(path) from 0\n}", "no type Frame(…)", 14),
])
def test_constructs_of_other_languages_say_what_to_write_instead(text, says, at):
    with pytest.raises(ParseError) as err:
        parse(text)
    assert err.value.code == "E104"
    assert says in err.value.message and err.value.message.startswith(".hb has no ")
    assert err.value.span.column == at


def test_those_words_are_ordinary_names_where_the_text_parses():
    decls = parse("def case(x) ≔ x\ndef for(switch) ≔ case(switch)").decls
    assert [d.name for d in decls] == ["case", "for"]
    with pytest.raises(ParseError) as err:
        parse("open C:.Secret")  # a colon that annotates nothing is a plain syntax error
    assert err.value.code == "E100"


# Names that look alike


def test_look_alike_names_are_warned_about_with_both_spellings():
    with pytest.warns(HilbertWarning) as warned:
        parse("def f(а, a) ≔ а + a + а + a")  # the first а is Cyrillic
    (warning,) = [w.message for w in warned]
    assert warning.code == "W100" and (warning.span.line, warning.span.column) == (1, 10)
    assert warning.message == ("the names а (U+0430 CYRILLIC SMALL LETTER A) at 1:7 and a "
                               "look alike but are different names; rename one")


@pytest.mark.parametrize("text", [
    "def f(Α, A) ≔ Α + A",            # Greek capital alpha
    "def f(ｘ, x) ≔ ｘ + x",            # fullwidth x (NFKC)
    "def rоw(x) ≔ x\ndef row(x) ≔ x",  # a Cyrillic о inside a name
])
def test_other_look_alikes_warn_too(text):
    with pytest.warns(HilbertWarning, match="W100"):
        parse(text)


@pytest.mark.parametrize("text", [
    "def f(α, a) ≔ α + a",            # a mathematician's α is not an a
    "def f(ι, i) ≔ ι + i",
    "def f(l, I, O, o) ≔ l + I + O + o",  # ASCII names are never reported
    "def f(а) ≔ а · а",               # one spelling only
])
def test_names_that_differ_on_the_page_do_not_warn(text):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        parse(text)
