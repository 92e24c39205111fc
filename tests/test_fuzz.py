"""Fuzzing the front end: any text ends in a module or a HilbertError with a code and a span.

Inputs are random token streams, random Unicode text, random well-formed programs, and
mutations of every file in prelude/ and examples/ (lines and tokens deleted, duplicated,
swapped; tokens and Unicode inserted). Whatever parses also survives the printer round trip.

No input may blow up: each test has a per-test timeout (pytest-timeout), never a wall-clock
assertion. The default run is a few hundred cases per strategy, derandomised so it is repeatable. The
`slow` marker runs tens of thousands of random ones: `.venv/bin/python -m pytest -m slow`
(see docs/testing.md).
"""

import re
from pathlib import Path

import pytest
from hilbert.grammar.errors import CODES, HilbertError
from hilbert.grammar.parser import parse
from hilbert.grammar.printer import print_module
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hilbert

ROOT = Path(__file__).resolve().parent.parent
SOURCES = {p.name: p.read_text(encoding="utf-8")
           for p in sorted((ROOT / "prelude").glob("*.hb")) + sorted((ROOT / "examples").glob("*.hb"))}

FAST = settings(max_examples=150, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
SLOW = settings(max_examples=5_000, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

TOKENS = [
    "open", "def", "fn", "model", "weight", "from", "if", "then", "else",
    "≔", ":=", "↦", "|->", "·", "*", "−", "-", "+", "/", "^", "²", "=", "≠", "!=", "<", ">",
    "≤", "<=", "≥", ">=", "(", ")", ",", ".", ":", "{", "}", "[", "]", "..",
    "x", "y", "f", "g", "t", "ι", "_", "__import__", "os", "einsum", "exp", "ln", "sqrt", "max",
    "min", "maximum", "minimum", "rows", "columns", "positions", "gaussian", "uniform", "abs",
    "floor", "Prelude", "Networks", "Prelude.Networks", "Tensor", "Learner", "dense", "relu",
    '"ij->ji"', '"ii->"', '"ij,jk->ik"', '"...i->i"', '"ij"', '"i,->"', '"ij->k"', '""', '"->"',
    '"a\'b"', "0", "1", "2.5", "1e-5", "1e300", "1e999", ".5", "--", "-- note\n", "\n", " ",
    "\t", "é", "\u200b", "\x00", "'", '"', "\\", "#", ";", "@", "$",
]

_TOKEN = re.compile(r'--[^\n]*|"[^"\n]*"|\w+|\s+|.')


def outcome(text: str) -> str:
    """Compile `text`; return 'module' or the error code. Fails the test on anything else."""
    try:
        hilbert.compile_source(text, name="fuzz.hb")
        result = "module"
    except HilbertError as err:
        assert err.code in CODES
        span = err.span
        assert span.line >= 1 and span.column >= 1
        assert span.line <= text.count("\n") + 1 or span.source.name != "fuzz.hb"
        assert str(err)  # renders
        result = err.code
    return result


def round_trips(text: str) -> None:
    """If `text` parses, printing the tree (either spelling) and parsing again gives it back."""
    try:
        tree = parse(text)
    except HilbertError:
        return
    for unicode in (False, True):
        assert parse(print_module(tree, unicode=unicode)) == tree


def check(text: str) -> None:
    outcome(text)
    round_trips(text)


# Strategies


token_streams = st.lists(st.sampled_from(TOKENS), max_size=40).map(" ".join)
glued_streams = st.lists(st.sampled_from(TOKENS), max_size=40).map("".join)
unicode_text = st.text(max_size=200)


@st.composite
def mutated_sources(draw) -> str:
    """A shipped .hb file with a few lines or tokens deleted, duplicated, swapped or added."""
    lines = SOURCES[draw(st.sampled_from(sorted(SOURCES)))].split("\n")
    for _ in range(draw(st.integers(1, 6))):
        i, j = (draw(st.integers(0, len(lines) - 1)) for _ in range(2))
        operation = draw(st.sampled_from(["del line", "dup line", "swap lines", "del token",
                                          "dup token", "swap tokens", "new token", "unicode"]))
        if operation.endswith(("line", "lines")):
            _mutate(lines, i, j, operation, None)
        else:
            tokens = _TOKEN.findall(lines[i]) or [""]
            k, m = (draw(st.integers(0, len(tokens) - 1)) for _ in range(2))
            new = draw(st.sampled_from(TOKENS) if operation == "new token" else st.characters())
            _mutate(tokens, k, m, operation, new)
            lines[i] = "".join(tokens)
        lines = lines or [""]
    return "\n".join(lines)


def _mutate(items: list, i: int, j: int, operation: str, new) -> None:
    """Delete, duplicate or swap items i and j, or insert `new` at i."""
    match operation.split()[0]:
        case "del":
            del items[i]
        case "dup":
            items.insert(i, items[j])
        case "swap":
            items[i], items[j] = items[j], items[i]
        case _:
            items.insert(i, new)


NAMES = st.sampled_from(["x", "y", "z", "ι", "a_1"])


def expressions(depth: int = 4):
    """Random well-formed expressions over x, y, z (shapes and arities may still be wrong)."""
    leaves = st.one_of(NAMES, st.sampled_from(["0", "1", "2.5", "1e-3", "half"]))
    return st.recursive(leaves, lambda inner: st.one_of(
        st.tuples(inner, st.sampled_from(["+", "−", "·", "/", "^", "=", "<", "≥", "≠"]), inner)
        .map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        inner.map(lambda e: f"−{e}"),
        inner.map(lambda e: f"{e}²"),
        st.tuples(st.sampled_from(["exp", "tanh", "abs", "helper", "sqrt"]), inner)
        .map(lambda t: f"{t[0]}({t[1]})"),
        st.tuples(inner, inner).map(lambda t: f"max({t[0]}, {t[1]})"),
        st.tuples(inner, inner, inner).map(lambda t: f"(if {t[0]} then {t[1]} else {t[2]})"),
        st.tuples(st.sampled_from(['"ij->ji"', '"i,i->"', '"ij,jk->ik"', '"->"']), inner, inner)
        .map(lambda t: f"einsum({t[0]}, {t[1]}, {t[2]})"),
    ), max_leaves=depth * 4)


EXPRESSIONS = expressions()

#: Random bodies for an entry point that may call a fixed helper and constant.
programs = EXPRESSIONS.map(lambda body: "def half ≔ 0.5\ndef helper(x) ≔ 2 · x + half\n"
                                        f"fn f(x, y, z, ι, a_1) ↦ {body}\n")


# Default runs


@FAST
@given(token_streams)
def test_random_token_streams(text):
    check(text)


@FAST
@given(glued_streams)
def test_random_glued_tokens(text):
    check(text)


@FAST
@given(unicode_text)
def test_random_unicode_text(text):
    check(text)


@settings(FAST, max_examples=100)
@given(mutated_sources())
def test_mutated_shipped_sources(text):
    check(text)


@FAST
@given(programs)
def test_random_programs(text):
    result = outcome(text)
    assert result in {"module", "E201", "E206", "E303", "E304", "E307"}, result
    round_trips(text)


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_every_shipped_file_compiles(name):
    assert outcome(SOURCES[name]) == "module"


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_every_prefix_of_a_shipped_file(name):
    """Cut a shipped file at 40 places: half-written files fail cleanly."""
    text = SOURCES[name]
    for end in range(0, len(text), max(1, len(text) // 40)):
        check(text[:end])


# Slow runs: tens of thousands of random inputs (pytest -m slow)


@pytest.mark.slow
@SLOW
@given(token_streams)
def test_random_token_streams_slow(text):
    check(text)


@pytest.mark.slow
@SLOW
@given(glued_streams)
def test_random_glued_tokens_slow(text):
    check(text)


@pytest.mark.slow
@SLOW
@given(unicode_text)
def test_random_unicode_text_slow(text):
    check(text)


@pytest.mark.slow
@settings(SLOW, max_examples=10_000)
@given(mutated_sources())
def test_mutated_shipped_sources_slow(text):
    check(text)


@pytest.mark.slow
@SLOW
@given(programs)
def test_random_programs_slow(text):
    check(text)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SOURCES))
def test_every_line_deleted_slow(name):
    """Each shipped file with each one of its lines deleted in turn."""
    lines = SOURCES[name].split("\n")
    for i in range(len(lines)):
        check("\n".join(lines[:i] + lines[i + 1:]))
