"""The typed loop IR (executor/codegen/loops.py, its types loop_types.py) and its verifier
(verify_loops.py): the suite verifies every generated function after each rewrite (conftest
sets HILBERT_VERIFY), the verifier catches broken and wrongly typed loop IR, each op is typed
as NumPy computes it, and float32 code's numbers are float32 from the typed IR (no rewriting
of printed code): scanned here with Python's own tokenizer, independently."""

from __future__ import annotations

import ast
import io
import tokenize

import numpy as np
import pytest
from conftest import ROOT, golden_recorder
from hilbert.compiler.ops import loop_code
from hilbert.executor.codegen import spelling, verify_loops
from hilbert.executor.codegen.loop_types import Type, locals_of, typed
from hilbert.executor.codegen.loops import (
    Assign,
    Call,
    Compare,
    Delete,
    Do,
    Fmt,
    For,
    Num,
    Op,
    Select,
    Store,
    Sub,
    Update,
    Var,
    number,
)
from hilbert.executor.codegen.verify_loops import LoopVerifyError, verify
from hilbert.executor.numba.executor import regions_of
from hilbert.grammar.errors import HilbertError


def _summing(dtype: str, term) -> list:
    """`acc = 0.0; for i in range(n): acc += term; b[0] = acc` over argument a0."""
    return [Assign(("n",), (Fmt("{}.shape[0]", (Var("a0"),)),)),
            Assign(("acc1",), (number(0.0, "float64"),)),
            For("i", Var("n"), [Update("acc1", "+=", term)]),
            Store(Sub(Var("a0"), (Num("0", "int64"),)), Var("acc1"))]


def test_a_well_typed_function_passes():
    body = _summing("float32", Fmt("({} * {})", (Sub(Var("a0"), (Var("i"),)),
                                                 number(0.5, "float32"))))
    verify(body, "float32", ["a0"], "test", _ARGS)


@pytest.mark.parametrize(("term", "found"), [
    # a float32 multiplication fed a float64 literal
    (Fmt("({} * {})", (Sub(Var("a0"), (Var("i"),)), number(0.5, "float64"))), "float64 literal"),
    # an untyped literal
    (Fmt("({} * {})", (Sub(Var("a0"), (Var("i"),)), Num("0.5", ""))), "untyped"),
    # a literal whose dtype does not fit its text
    (Fmt("({} * {})", (Sub(Var("a0"), (Var("i"),)), Num("0.5", "int64"))), "typed int64"),
    # a number of a template's own, not a typed literal
    (Fmt("({} * 0.5)", (Sub(Var("a0"), (Var("i"),)),)), "a number of its own"),
    # a local read before anything sets it
    (Fmt("({} * {})", (Var("t9"), number(0.5, "float32"))), "t9 read before it is set"),
])
def test_the_verifier_catches_broken_loop_ir(term, found):
    with pytest.raises(LoopVerifyError, match=found):
        verify(_summing("float32", term), "float32", ["a0"], "test", _ARGS)


def test_operands_of_two_float_dtypes_are_caught_in_any_code():
    mixed = Fmt("({} * {})", (number(2.0, "float32"), number(0.5, "float64")))
    with pytest.raises(LoopVerifyError, match="combined"):
        verify([Assign(("t",), (mixed,))], "float64", [], "test", {})


def test_a_deleted_local_is_not_read_again():
    body = [Assign(("t",), (number(1.0, "float64"),)), Assign(("u",), (Var("t"),))]
    verify(body, "float64", [], "test", {})
    with pytest.raises(LoopVerifyError, match="t read before"):
        verify([body[0], Delete(("t",)), body[1]], "float64", [], "test", {})


record = golden_recorder()
#: Every golden program, generated for float32 arguments (nothing is compiled).
PROGRAMS = [dict(p, dtype="float32") for p in record.read_programs() if "dtype" not in p]


def _float32_sources() -> list[str]:
    """The generated functions of every program that prepares (a few golden programs record
    the error their shapes give)."""
    sources = []
    with record.pinned_environment():
        for program in PROGRAMS:
            try:
                prepared = record.function_of(program)._prepare(record.shapes_of(program),
                                                                "float32")
            except HilbertError:
                continue
            sources += [region.source for region in regions_of(prepared.runner)]
    return sources


@pytest.mark.timeout(300)  # a bound on blow-up, not a speed test
def test_float32_code_writes_no_float64_number_but_accumulators_and_counted_ones(monkeypatch):
    """Every float literal of float32 code is `np.float32(…)`, or a sum's accumulator's start
    (`accN = 0.0`), or inside `np.float64(…)` (a counted value); and the loop verifier ran on
    each function (the suite sets HILBERT_VERIFY)."""
    calls = []
    real = verify_loops.verify
    monkeypatch.setattr(verify_loops, "verify", lambda *a: calls.append(a[1:4]) or real(*a))
    sources = _float32_sources()
    seen = {"float32": 0, "accumulator": 0}
    for source in sources:
        for line in source.splitlines():
            for kind in _float_literals(line):
                assert kind in ("float32", "accumulator", "counted"), f"{kind}: {line}"
                seen[kind] = seen.get(kind, 0) + 1
    assert len(sources) > 100 and seen["float32"] > 100 and seen["accumulator"] > 10, seen
    assert {after for _, _, after in calls} >= {"emitting", "rows.join", "tidy"}
    assert {dtype for dtype, _, _ in calls} == {"float32"}


def _float_literals(line: str) -> list[str]:
    """Each float literal of one line of Python, and what holds it: float32 (inside
    np.float32(…)), counted (inside np.float64(…)), accumulator (the line is `accN = 0.0`),
    or bare."""
    tokens = [t.string for t in tokenize.generate_tokens(io.StringIO(line.strip()).readline)
              if t.type not in (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER)]
    found = []
    for k, token in enumerate(tokens):
        is_float = (token[0].isdigit() and ("." in token or "e" in token.lower())
                    or token in ("inf", "nan") and tokens[k - 1:k] == ["."])
        if not is_float:
            continue
        start = k - 2 if token in ("inf", "nan") else k
        held = tokens[max(start - 4, 0):start]
        if held == ["np", ".", "float32", "("]:
            found.append("float32")
        elif held == ["np", ".", "float64", "("]:
            found.append("counted")
        elif len(tokens) == 3 and tokens[0].startswith("acc") and tokens[1:] == ["=", "0.0"]:
            found.append("accumulator")
        else:
            found.append("bare")
    return found


def test_precision_rewrites_no_printed_code():
    """precision.py writes literals of a dtype; it holds no regular expression."""
    tree = ast.parse((ROOT / "executor" / "codegen" / "precision.py").read_text())
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom)
                for alias in node.names} | {node.module for node in ast.walk(tree)
                                             if isinstance(node, ast.ImportFrom)}
    assert not imported & {"re", "regex"}


def test_every_function_of_the_op_lowerings_is_spelled_in_every_tier():
    """Each function a lowering may apply (compiler/ops/loop_code.FUNCTIONS) has a spelling
    in compiled, host and fast code, and the tables name no other."""
    for tier, table in spelling.TIERS.items():
        assert set(table) == set(loop_code.FUNCTIONS), tier
    assert set(spelling.HOST) | set(spelling.FAST) <= set(spelling.COMPILED)


#: a0, a float32 vector, and n, its length as a counted value (float64 in float32 code).
_ARGS = {"a0": Type("float32", 1)}


def _typed_body(value, target=None) -> list:
    """`n = a0.shape[0]; c = np.float64(n); for i: t = value; target[i] = t`, typed."""
    return typed([Assign(("n",), (Fmt("{}.shape[0]", (Var("a0"),)),)),
                  Assign(("c",), (Call("np.float64", (Var("n"),)),)),
                  For("i", Var("n"), [Assign(("t",), (value,)),
                                      Store(Sub(target or Var("a0"), (Var("i"),)), Var("t"))])],
                 _ARGS, "float32")


def _x():
    return Sub(Var("a0"), (Var("i"),))


def test_each_op_is_typed_as_numpy_computes_it():
    """An op of float32 operands is float32; one that reads a counted (float64) value is
    float64, as NumPy's scalars (and Numba) compute it; a comparison a bool."""
    half, wide = number(0.5, "float32"), np.float64(1) * np.float32(0.5)
    body = _typed_body(Select(Compare(">", _x(), Var("c"), "float32"),
                              Op("mul", (_x(), half), "float32"), half, "float32"))
    verify(body, "float32", ["a0"], "test", _ARGS)
    select = body[2].body[0].values[0]
    assert select.test.dtype == wide.dtype.name == "float64"  # (a float32 against a float64)
    assert select.dtype == select.a.dtype == (np.float32(2) * np.float32(0.5)).dtype.name
    table = locals_of(body, _ARGS, "float32")
    assert (table["n"], table["c"], table["t"]) == (Type("int64"), Type("float64"),
                                                    Type("float32"))


@pytest.mark.parametrize(("body", "found"), [
    # an op typed float64 over float32 operands (what the typing pass would not give)
    ([Assign(("t",), (Op("mul", (Sub(Var("a0"), (Num("0", "int64"),)),
                                 number(0.5, "float32")), "float64"),))],
     "a float64 Op .* over operands of \\['float32'\\]"),
    # a function no lowering has
    ([Assign(("t",), (Op("sinh", (number(0.5, "float32"),), "float32"),))], "sinh of 1"),
    # a comparison of no known kind
    ([Assign(("t",), (Select(Compare("<>", number(0.5, "float32"), number(1.0, "float32"),
                                     "float32"), number(0.5, "float32"),
                             number(1.0, "float32"), "float32"),))], "comparison '<>'"),
    # a local set by a call of no known type, then read
    ([Assign(("t",), (Call("K.mystery", ()),)), Assign(("u",), (Var("t"),))],
     "K.mystery\\(\\) untyped"),
    # a call of a function of no known type, run for its effect
    ([Do(Call("K.mystery", (number(0.5, "float32"),)))], "K.mystery.* untyped"),
    # a local that is an array and a number
    ([Assign(("t",), (Var("a0"),)), Assign(("t",), (number(0.5, "float32"),))],
     "t set to a .*rank=1.* and to a .*rank=0"),
    # a float32 number stored into an int64 array (narrowed)
    ([Store(Sub(Var("stop"), (Num("0", "int64"),)), number(0.5, "float32"))], None),
])
def test_the_verifier_catches_wrongly_typed_loop_ir(body, found):
    args = {"a0": Type("float32", 1), "stop": Type("int64", 1)}
    if found is None:  # (a float32 number into an int64 array: narrowed)
        found = "a float32 value stored into an array of int64"
    with pytest.raises(LoopVerifyError, match=found):
        verify(body, "float32", list(args), "test", args)


def test_a_sums_accumulator_is_rounded_once_into_an_array_of_the_codes_dtype():
    """`b[i] = acc` with acc float64 in float32 code is allowed (the sum's rounding); a
    float64 value into an int64 array is not."""
    args = {"a0": Type("float32", 1), "stop": Type("int64", 1)}
    body = [Assign(("acc",), (number(0.0, "float64"),)),
            Store(Sub(Var("a0"), (Num("0", "int64"),)), Var("acc"))]
    verify(body, "float32", list(args), "test", args)
    with pytest.raises(LoopVerifyError, match="float64 value stored into an array of int64"):
        verify([body[0], Store(Sub(Var("stop"), (Num("0", "int64"),)), Var("acc"))],
               "float32", list(args), "test", args)
