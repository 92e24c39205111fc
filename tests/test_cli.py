"""The `hilbert` command: check and run, argument forms, --help, exit codes, stderr."""

import errno
import json
import math
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from hilbert import cli
from hilbert.cli import main

HILBERT = Path(sys.executable).with_name("hilbert")

GOOD = """
fn add(x, y) ↦ x + y
fn total(a) ↦ einsum("ij->", a)
fn transpose(a) ↦ einsum("ij->ji", a)
def helper(x) ≔ 2 · x
"""


@pytest.fixture
def good(write_hb):
    return write_hb("Good.hb", GOOD)


@pytest.fixture
def bad(write_hb):
    return write_hb("Bad.hb", "fn f(x) ↦ x +\n")


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_check_ok(capsys, good):
    code, out, err = run(capsys, "check", good)
    assert code == 0 and err == ""
    assert out.startswith(f"{good}: ok")


def test_check_reports_every_file_and_fails_on_any_error(capsys, good, bad, tmp_path):
    code, out, err = run(capsys, "check", good, bad, tmp_path / "missing.hb")
    assert code == 1
    assert f"{good}: ok" in out
    assert f"{bad}:1:14: error[E100]: unexpected end of the text" in err
    assert "missing.hb: no such file" in err
    assert "error" not in out


def test_run_with_numbers(capsys, good):
    assert run(capsys, "run", good, "add", "1", "2.5") == (0, "3.5\n", "")
    assert run(capsys, "run", good, "add", "1", "-2") == (0, "-1.0\n", "")
    assert run(capsys, "run", good, "add", "1e3", "0") == (0, "1000.0\n", "")


def test_run_with_json_lists(capsys, good):
    code, out, err = run(capsys, "run", good, "transpose", "[[1, 2, 3], [4, 5, 6]]")
    assert code == 0 and err == ""
    assert json.loads(out) == [[1, 4], [2, 5], [3, 6]]
    assert run(capsys, "run", good, "total", "[[1,2],[3,4]]")[1] == "10.0\n"


def test_run_with_npy_and_csv_files(capsys, good, tmp_path):
    a = np.arange(6.0).reshape(2, 3)
    np.save(tmp_path / "a.npy", a)
    np.savetxt(tmp_path / "a.csv", a, delimiter=",")
    for path in (tmp_path / "a.npy", tmp_path / "a.csv"):
        code, out, _ = run(capsys, "run", good, "transpose", path)
        assert code == 0
        np.testing.assert_array_equal(json.loads(out), a.T)


TUPLES = """
fn pair(a, b) ↦ (einsum("ij,jk->ik", a, b), a)
fn twice(a) ↦ (a, 2 · a)
fn grads(a, b) ↦ ∂ einsum("ij,jk->", a, b) / ∂ (a, b)
fn nested(a, b) ↦ (∂ einsum("ij,jk->", a, b) / ∂ (a, b), 3)
"""
A_TEXT, B_TEXT = "[[1, 2], [3, 4]]", "[[1], [2]]"


def _tuple_cases():
    """What each function of TUPLES answers for A, B, worked out in NumPy: the gradients of
    sum(A·B) are ones·Bᵀ (for A) and Aᵀ·ones (for B)."""
    a, b = np.array(json.loads(A_TEXT), float), np.array(json.loads(B_TEXT), float)
    ones = np.ones((a.shape[0], b.shape[1]))
    grads = (ones @ b.T, a.T @ ones)
    return [("pair", [A_TEXT, B_TEXT], (a @ b, a)),
            ("twice", [A_TEXT], (a, 2 * a)),
            ("grads", [A_TEXT, B_TEXT], grads),
            ("nested", [A_TEXT, B_TEXT], (grads, 3.0))]


def _leaves(value, position=""):
    """(position as `run` labels it, array) for each component of a nested tuple."""
    if isinstance(value, tuple):
        return [leaf for i, part in enumerate(value) for leaf in _leaves(part, f"{position}[{i}]")]
    return [(position, np.asarray(value, float))]


def _assert_same_tree(got, want):
    if isinstance(want, tuple):
        assert isinstance(got, list) and len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            _assert_same_tree(g, w)
    else:
        assert np.shape(got) == np.shape(want)
        np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("name, args, want", _tuple_cases(), ids=[c[0] for c in _tuple_cases()])
def test_run_prints_a_tuple_one_component_a_line(capsys, write_hb, name, args, want):
    path = write_hb("Tuples.hb", TUPLES)
    code, out, err = run(capsys, "run", path, name, *args, "--executor", "reference")
    assert code == 0 and err == ""
    lines = out.splitlines()
    leaves = _leaves(want)
    assert len(lines) == len(leaves)  # never one stacked array, whatever the shapes
    for line, (position, array) in zip(lines, leaves, strict=True):
        label, _, text = line.partition(": ")
        assert label == position
        got = json.loads(text)
        assert np.shape(got) == array.shape
        np.testing.assert_allclose(got, array, rtol=1e-12)


@pytest.mark.parametrize("name, args, want", _tuple_cases(), ids=[c[0] for c in _tuple_cases()])
def test_run_json_gives_a_tuple_as_a_list_of_its_components(capsys, write_hb, name, args, want):
    path = write_hb("Tuples.hb", TUPLES)
    code, out, err = run(capsys, "run", "--json", path, name, *args, "--executor", "reference")
    assert code == 0 and err == ""
    _assert_same_tree(json.loads(out), want)


def test_run_json_of_one_value_is_that_value(capsys, good):
    a = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    code, out, _ = run(capsys, "run", "--json", good, "transpose", json.dumps(a.tolist()))
    assert code == 0 and json.loads(out) == a.T.tolist()
    assert run(capsys, "run", "--json", good, "add", "1", "nan")[1] == "NaN\n"  # JSON's spelling
    assert json.loads(run(capsys, "run", "--json", good, "total", json.dumps(a.tolist()))[1]) \
        == float(a.sum())


def test_run_reaches_definitions(capsys, good):
    assert run(capsys, "run", good, "helper", "4") == (0, "8.0\n", "")


def test_run_errors_go_to_stderr_with_exit_1(capsys, good):
    code, out, err = run(capsys, "run", good, "total", "[1, 2]")
    assert code == 1 and out == ""
    assert "error[E306]" in err and "argument a" in err
    code, out, err = run(capsys, "run", good, "add", "1", '"two"')
    assert code == 1 and out == "" and "error[E601]" in err


def test_compile_errors_exit_1(capsys, bad):
    code, out, err = run(capsys, "run", bad, "f", "1")
    assert code == 1 and out == "" and "error[E100]" in err


@pytest.mark.parametrize("argv, words", [
    (["run", "{good}", "nothing"], "no definition 'nothing'"),
    (["run", "{good}", "add", "1", "x"], "cannot read argument 'x'"),
    (["run", "{missing}", "add"], "no such file"),
    (["run", "{good}", "add", "{missing_npy}", "1"], "missing.npy"),
    (["bogus"], "invalid choice"),
    (["run"], "the following arguments are required"),
    ([], "the following arguments are required"),
])
def test_usage_errors_exit_2(capsys, good, tmp_path, argv, words):
    values = {"good": good, "missing": tmp_path / "missing.hb",
              "missing_npy": tmp_path / "missing.npy"}
    code, out, err = run(capsys, *[a.format(**values) for a in argv])
    assert code == 2 and out == ""
    assert words in err


@pytest.mark.parametrize("argv", [["--help"], ["check", "--help"], ["run", "--help"],
                                  ["plan", "--help"], ["bench", "--help"], ["demo", "--help"]])
def test_help_everywhere(capsys, argv):
    code, out, err = run(capsys, *argv)
    assert code == 0 and out.startswith("usage: hilbert") and err == ""


def test_console_script_exit_codes(good, bad):
    """The installed `hilbert` script, as a shell sees it."""
    ok = subprocess.run([HILBERT, "run", good, "add", "2", "3"], capture_output=True, text=True)
    assert (ok.returncode, ok.stdout, ok.stderr) == (0, "5.0\n", "")
    failed = subprocess.run([HILBERT, "check", bad], capture_output=True, text=True)
    assert failed.returncode == 1 and failed.stdout == "" and "error[E100]" in failed.stderr
    usage = subprocess.run([HILBERT, "frobnicate"], capture_output=True, text=True)
    assert usage.returncode == 2 and usage.stdout == "" and "usage:" in usage.stderr
    helped = subprocess.run([HILBERT, "--help"], capture_output=True, text=True)
    assert helped.returncode == 0 and "check" in helped.stdout


# -- what a shell can hand the command (issue 11, item 14) ----------------------------------------

@pytest.mark.parametrize("text, value", [
    ("Infinity", math.inf), ("-Infinity", -math.inf), ("NaN", math.nan), ("inf", math.inf),
    ("-inf", -math.inf), ("+inf", math.inf), ("nan", math.nan), ("-.5", -0.5), (".5", 0.5),
    ("-1e3", -1000.0), ("1E-2", 0.01), ("[Infinity, -Infinity, NaN]", None),
])
def test_run_reads_numbers_infinity_and_nan_in_every_spelling(capsys, good, text, value):
    code, out, err = run(capsys, "run", good, "add", text, "0")
    assert (code, err) == (0, "")
    if value is None:
        assert out == "[Infinity, -Infinity, NaN]\n"
    else:
        assert float(out) == value or (math.isnan(value) and math.isnan(float(out)))


@pytest.mark.parametrize("shape, words", [
    ("a=-2x3", "whole numbers ≥ 0 in the digits 0-9"),
    ("a=+3x3", "digits 0-9"), ("a= 3x3", "digits 0-9"), ("a=3_0x3", "digits 0-9"),
    ("a=٣x3", "digits 0-9"), ("a=３x3", "digits 0-9"), ("a=2x", "digits 0-9"),
    ("a=2.5x3", "digits 0-9"),
    (f"a={2**70}x3", "no array has that many elements"),
    (f"a={2**62}x{2**62}", "no array has that many elements"),
    ("a=" + "9" * 5000 + "x3", "no array has that many elements"),
    ("a", "write NAME=4x2"),
])
def test_plan_shapes_must_be_sizes_numpy_can_have(capsys, good, shape, words):
    code, out, err = run(capsys, "plan", good, "total", "--shape", shape)
    assert (code, out) == (2, "") and words in err and "Traceback" not in err


def test_plan_refuses_a_shape_given_twice(capsys, good):
    code, out, err = run(capsys, "plan", good, "total", "--shape", "a=2x3", "--shape", "a=4x5")
    assert (code, out) == (2, "") and "--shape given twice for a" in err


@pytest.mark.parametrize("text, words", [
    ("[" * 10_000 + "]" * 10_000, "nested too deeply"),
    ("1e309", "the number 1e309 is too large for float64"),
    ("-1e309", "too large for float64"),
    ("[1, 1e999]", "the number 1e999 is too large for float64"),
    ("1" * 5000, "too large for float64"),
    ("[" + "1" * 5000 + "]", "too large for float64"),
    ("1_000", "cannot read argument '1_000'"),
])
def test_run_refuses_values_float64_cannot_hold(capsys, good, text, words):
    code, out, err = run(capsys, "run", good, "add", text, "0")
    assert (code, out) == (2, "") and words in err


def write_bytes(folder: Path, name: str, data: bytes) -> Path:
    path = folder / name
    path.write_bytes(data)
    return path


def npy_header_only(folder: Path, name: str, shape) -> Path:
    """A .npy file whose header claims `shape` and which holds no data."""
    import io

    stream = io.BytesIO()
    np.lib.format.write_array_header_1_0(stream, {"descr": "<f8", "fortran_order": False,
                                                  "shape": shape})
    return write_bytes(folder, name, stream.getvalue())


@pytest.mark.parametrize("make, words", [
    (lambda d: write_bytes(d, "empty.csv", b""), "empty.csv: it holds no numbers"),
    (lambda d: write_bytes(d, "blank.csv", b"\n  \n# a comment\n"), "it holds no numbers"),
    (lambda d: write_bytes(d, "latin.csv", b"1,2\n\xe9,4\n"), "it is not UTF-8 text (byte 4 is 0xe9)"),
    (lambda d: write_bytes(d, "header.csv", b"a,b\n1,2\n"), "could not convert string 'a'"),
    (lambda d: write_bytes(d, "ragged.csv", b"1,2\n3\n"), "the number of columns changed"),
    (lambda d: (d / "folder.csv").mkdir() or d / "folder.csv", "folder.csv: is a directory"),
    (lambda d: (d / "folder.npy").mkdir() or d / "folder.npy", "folder.npy: is a directory"),
    (lambda d: write_bytes(d, "text.npy", b"hello"), "cannot read argument"),
    (lambda d: write_bytes(d, "cut.npy", npy_header_only(d, "x.npy", (4,)).read_bytes() + b"\0" * 9),
     "cannot read argument"),
    (lambda d: np.save(d / "objects.npy", np.array([1, None], dtype=object)) or d / "objects.npy",
     "cannot read argument"),
    (lambda d: npy_header_only(d, "huge.npy", (10**6, 10**6)), "over the memory limit"),
])
def test_run_reports_files_it_cannot_read(capsys, good, tmp_path, make, words):
    path = make(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning from NumPy is a leak too
        code, out, err = run(capsys, "run", good, "transpose", path)
    assert (code, out) == (2, "") and words in err and "Traceback" not in err


def test_run_reports_an_unreadable_file(capsys, good, tmp_path, monkeypatch):
    path = write_bytes(tmp_path, "secret.csv", b"1,2\n")
    real = Path.read_text

    def refuse(self, *args, **kwargs):
        if self == path:  # root reads anything, so the refusal is simulated
            raise PermissionError(13, "Permission denied", str(self))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", refuse)
    code, out, err = run(capsys, "run", good, "transpose", path)
    assert (code, out) == (2, "") and "secret.csv: Permission denied" in err


def test_run_reads_a_csv_with_a_byte_order_mark(capsys, good, tmp_path):
    path = write_bytes(tmp_path, "bom.csv", "\ufeff1,2\r\n3,4\r\n".encode())
    code, out, err = run(capsys, "run", good, "transpose", path)
    assert (code, err) == (0, "") and json.loads(out) == [[1, 3], [2, 4]]


def test_a_directory_is_not_a_program(capsys, tmp_path):
    code, out, err = run(capsys, "run", tmp_path, "f")
    assert (code, out) == (2, "") and f"{tmp_path}: is a directory, not a file" in err
    code, out, err = run(capsys, "check", tmp_path)
    assert (code, out) == (1, "") and "is a directory" in err


class _FullStdout:
    """A stdout whose every write fails, as writing to /dev/full or a closed pipe does."""

    def __init__(self, number: int):
        self.number = number

    def write(self, text: str) -> int:
        raise OSError(self.number, os.strerror(self.number))

    def flush(self) -> None:
        raise OSError(self.number, os.strerror(self.number))


@pytest.mark.parametrize("number, code, said", [
    (errno.ENOSPC, 1, "hilbert: cannot write the output: No space left on device\n"),
    (errno.EPIPE, 0, ""),  # output piped into `head` and closed early: not an error
])
def test_output_that_cannot_be_written(capsys, good, monkeypatch, number, code, said):
    monkeypatch.setattr(sys, "stdout", _FullStdout(number))
    assert main(["run", str(good), "add", "1", "2"]) == code
    assert capsys.readouterr().err == said


@pytest.mark.parametrize("raised, code, words", [
    (KeyboardInterrupt, 130, "hilbert: interrupted"),
    (MemoryError, 1, "hilbert: out of memory"),
])
def test_interrupts_and_exhaustion_end_without_a_traceback(capsys, good, monkeypatch, raised,
                                                          code, words):
    def command(args):
        raise raised

    monkeypatch.setitem(cli._COMMANDS, "run", command)
    got, out, err = run(capsys, "run", good, "add", "1", "2")
    assert (got, out) == (code, "") and err.startswith(words) and "Traceback" not in err


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_console_script_without_tracebacks(good, tmp_path):
    """The installed script, as a shell runs it, on what used to end in a traceback."""
    with open("/dev/full", "w") as full:
        done = subprocess.run([HILBERT, "run", good, "add", "2", "3"], stdout=full,
                              stderr=subprocess.PIPE, text=True)
    assert (done.returncode, done.stderr) == (1, "hilbert: cannot write the output: No space "
                                                 "left on device\n")
    for argv, code, out in [(["run", good, "add", "-Infinity", "1"], 0, "-inf\n"),
                            (["run", good, "total", "[" * 5000 + "]" * 5000], 2, ""),
                            (["plan", good, "total", "--shape", f"a={2**70}x3"], 2, ""),
                            (["run", good, "transpose", write_bytes(tmp_path, "e.csv", b"")], 2, "")]:
        done = subprocess.run([HILBERT, *map(str, argv)], capture_output=True, text=True)
        assert (done.returncode, done.stdout) == (code, out), done.stderr
        assert "Traceback" not in done.stderr and "Warning" not in done.stderr


def test_plan_build_compiles_for_the_shapes_given(capsys, good, monkeypatch):
    """`--build` compiles the code even where calls would never (HILBERT_COMPILE=never); the
    plan alone compiles nothing (the LLVM back end's compiles counted)."""
    from hilbert.executor.llvm import call

    compiled: list = []
    real = call.Lowered.compile
    monkeypatch.setattr(call.Lowered, "compile",
                        lambda self, *signature: compiled.append(self) or real(self, *signature))
    monkeypatch.setenv("HILBERT_COMPILE", "never")
    code, out, err = run(capsys, "plan", good, "total", "--shape", "a=4x3")
    assert code == 0 and err == "" and compiled == []
    code, out, err = run(capsys, "plan", good, "total", "--shape", "a=3x4", "--build")
    assert code == 0 and err == ""
    assert "built by llvm" in out and compiled
