"""Every error kind, one small file each: tests/errors/*.hb carry their expected code and place.

A file says what it expects in comments (Crafting Interpreters style):

    -- error: E304 at 3:19          the code, and the line:column of the error's span
    -- call: product ones:2x3 7     call this function from Python (JSON values, or
                                    ones:SHAPE for an array of ones, e.g. ones:3x1)
    -- link: Escape.hb -> outside/Secret.hb
                                    a symbolic link beside the file, to a file outside it

The files are copied into a temporary folder (with shared/) so links never touch the checkout.
"""

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from hilbert.grammar.errors import CODES

import hilbert

ROOT = Path(__file__).resolve().parent.parent
ERRORS = ROOT / "tests" / "errors"
FILES = sorted(ERRORS.glob("*.hb"))

#: The HilbertError subclass each family of codes belongs to.
STAGES = {"E1": hilbert.ParseError, "E2": hilbert.NameResolutionError, "E3": hilbert.CheckError,
          "E4": hilbert.CheckError, "E5": hilbert.RuntimeHilbertError, "E6": hilbert.ArgumentError}

_ERROR = re.compile(r"^-- error: (E\d{3}) at (\d+):(\d+)\s*$", re.M)
_CALL = re.compile(r"^-- call: (\S+)((?: \S+)*)\s*$", re.M)
_LINK = re.compile(r"^-- link: (\S+) -> (\S+)\s*$", re.M)


def expectation(text: str) -> tuple[str, int, int]:
    (found,) = _ERROR.findall(text)
    return found[0], int(found[1]), int(found[2])


def argument(token: str):
    if token.startswith("ones:"):
        dims = token[len("ones:"):]
        return np.ones(tuple(int(d) for d in dims.split("x")) if dims else ())
    return json.loads(token)


def trigger(path: Path, text: str):
    """Compile `path` and make the call its comments ask for (raises what the file expects)."""
    module = hilbert.load(path)
    call = _CALL.search(text)
    if call is not None:
        name, args = call.group(1), call.group(2).split()
        module.function(name)(*[argument(a) for a in args])


@pytest.fixture
def workspace(tmp_path):
    """A copy of tests/errors with a file outside it that links can point to."""
    folder = tmp_path / "errors"
    shutil.copytree(ERRORS, folder)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "Secret.hb").write_text("def secret(x) ≔ x\n", encoding="utf-8")
    return folder


def test_there_is_a_file_per_error_kind():
    assert len(FILES) >= 40
    codes = {expectation(p.read_text(encoding="utf-8"))[0] for p in FILES}
    required = {"E100", "E200", "E201", "E202", "E204", "E301", "E303", "E304", "E305",
                "E310", "E311", "E400", "E401", "E500"}
    assert required <= codes
    assert codes <= set(CODES)


@pytest.mark.parametrize("name", [p.name for p in FILES])
def test_error_file(name, workspace):
    path = workspace / name
    text = path.read_text(encoding="utf-8")
    code, line, column = expectation(text)
    for link, target in _LINK.findall(text):
        (path.parent / link).symlink_to(workspace.parent / target)
    with pytest.raises(hilbert.HilbertError) as raised:
        trigger(path, text)
    err = raised.value
    assert (err.code, err.span.line, err.span.column) == (code, line, column), str(err)
    assert Path(err.span.source.name).name == name
    rendered = str(err)
    assert rendered.startswith(f"{path}:{line}:{column}: error[{code}]: ")
    assert text.splitlines()[line - 1] in rendered and "^" in rendered
    assert isinstance(err, STAGES.get(code[:2], hilbert.HilbertError)) and err.message


def test_errors_render_the_source_line_and_a_caret(workspace):
    with pytest.raises(hilbert.HilbertError) as raised:
        hilbert.load(workspace / "einsum_unknown_output_letter.hb")
    lines = str(raised.value).splitlines()
    assert lines[0].endswith('einsum "ij->k": output letter k is in no input')
    assert lines[1] == '  fn t(a) ↦ einsum("ij->k", a)'
    assert lines[2] == "  " + " " * 17 + "^" * len('"ij->k"')


def test_shape_errors_from_a_call_name_both_shapes_and_the_function(workspace):
    module = hilbert.load(workspace / "column_minus_vector.hb")
    with pytest.raises(hilbert.CheckError) as raised:
        module.residual(np.ones((3, 1)), np.ones(3))
    text = str(raised.value)
    assert "a 3×1 matrix" in text and "a vector of 3" in text
    assert "argument y" in text and "argument p" in text and "residual" in text


def test_recursion_errors_show_the_offending_call(workspace):
    with pytest.raises(hilbert.CheckError) as raised:
        hilbert.load(workspace / "non_tail_self_call.hb")
    assert "factorial calls itself here, but not in tail position" in str(raised.value)
    assert "factorial(n − 1)" in str(raised.value)
    with pytest.raises(hilbert.CheckError) as raised:
        hilbert.load(workspace / "mutual_recursion.hb")
    assert "even, odd call each other" in str(raised.value)


def test_ambiguity_names_both_modules(workspace):
    with pytest.raises(hilbert.NameResolutionError) as raised:
        hilbert.load(workspace / "ambiguous_name.hb")
    assert "Left" in raised.value.message and "Right" in raised.value.message


def test_step_count_errors_name_the_definition_and_the_value(workspace):
    module = hilbert.load(workspace / "negative_step_count.hb")
    for bad, why in [(-1, "negative"), (2.5, "not whole"), (float("inf"), "not finite"),
                     (float("nan"), "not finite")]:
        with pytest.raises(hilbert.RuntimeHilbertError) as raised:
            module.run(bad, 0)
        assert raised.value.code == "E500"
        assert raised.value.message.startswith("count runs a counted loop")
        assert why in raised.value.message


def _place(path: Path, pattern: str) -> str:
    """`line:column` of `pattern`'s group 1 on the first line it matches, found by reading."""
    lines = path.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, start=1):
        found = re.search(pattern, line)
        if found:
            return f"{number}:{found.start(1) + 1}"
    raise AssertionError(pattern)


def test_an_error_inside_a_callee_names_the_calls_that_led_there(executor):
    # mean(x) ≔ total(x) / count(x) and total(x) ≔ einsum("i->", x): a matrix fails in total.
    statistics = ROOT / "prelude" / "Statistics.hb"
    spread = hilbert.compile_source("open Prelude.Statistics\nfn spread(x) ↦ mean(x) + 1\n",
                                    name="user.hb", executor=executor).spread
    with pytest.raises(hilbert.CheckError) as raised:
        spread(np.ones((2, 3)))
    defined = _place(statistics, r"^(def) total")
    called = _place(statistics, r"^def mean\(x\) ≔ (total)\(")
    assert raised.value.code == "E306"
    assert raised.value.notes == (
        f"in total, defined at prelude/Statistics.hb:{defined}",
        f"called from mean at prelude/Statistics.hb:{called}",
        "called from spread at user.hb:2:16",
        "while specialising spread(x: 2×3) for a call from Python")


def test_each_call_site_is_named_when_one_definition_is_called_twice(executor):
    text = ('def total(x) ≔ einsum("i->", x)\n'
            "fn both(v, m) ↦ total(v) + total(m)\n")
    both = hilbert.compile_source(text, name="twice.hb", executor=executor).both
    with pytest.raises(hilbert.CheckError) as raised:
        both(np.ones(3), np.ones((2, 2)))
    assert "called from both at twice.hb:2:28" in raised.value.notes  # the second call, of m


#: What each file of another language's spelling is told, the .hb way first.
HINTS = {
    "method_of_a_value.hb": 'x is a value, and .hb values have no attributes or methods '
                            '(x.sum): sum its entries with einsum, one letter per axis: '
                            'einsum("ij->", x)',
    "attribute_of_a_value.hb": 'x is a value, and .hb values have no attributes or methods '
                               '(x.T): transpose it with einsum: einsum("ij->ji", x)',
    "matrix_product_operator.hb": '.hb has no @: a matrix product is an einsum, as '
                                  'einsum("ij,jk->ik", x, w)',
    "power_operator.hb": ".hb has no **: a power is x ^ 2 (or x² for a square)",
}


@pytest.mark.parametrize("name", list(HINTS))
def test_other_languages_spellings_say_the_hb_way(workspace, name):
    with pytest.raises(hilbert.HilbertError) as raised:
        hilbert.load(workspace / name)
    assert raised.value.message.startswith(HINTS[name]), raised.value.message


def test_a_python_library_is_no_module():
    with pytest.raises(hilbert.NameResolutionError) as raised:
        hilbert.compile_source("fn f(x) ↦ np.sum(x)")
    assert raised.value.code == "E200"
    assert raised.value.message.startswith(".hb is not Python and has no module np: einsum")
