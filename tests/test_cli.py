"""The `hilbert` command: check and run, argument forms, --help, exit codes, stderr."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

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
