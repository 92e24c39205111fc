"""Reading the `hilbert` command's arguments: values (numbers, JSON lists, .npy and .csv files)
and shapes (NAME=4x2)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np

from .cli_errors import OutputError, UsageError

#: A number as a bare argument: decimal (1, -2.5, .5, 1e3) or infinity and NaN spelled as
#: JSON does (Infinity, -Infinity, NaN) or as Python and NumPy do (inf, -inf, nan).
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?|[+-]?(inf|infinity|nan)", re.IGNORECASE)
#: A size in --shape: ASCII digits only (int() would also take "+3", " 3", "3_0" and "٣").
_SIZE = re.compile(r"[0-9]+")
#: No NumPy array has this many elements or more (sizes are signed 64-bit).
_MOST_ELEMENTS = 2**63


def _not_a_file(path: Path) -> str | None:
    """Why `path` is not a file to read, or None."""
    if path.is_dir():
        return f"{path}: is a directory, not a file"
    return None if path.is_file() else f"{path}: no such file"


def parse_value(text: str):
    """A command-line argument: a number (also inf, -inf, nan, Infinity, NaN), a JSON list,
    or a .npy / .csv path. UsageError says what is wrong with anything else."""
    if text.endswith((".npy", ".csv")):
        path = Path(text)
        missing = _not_a_file(path)
        if missing:
            raise UsageError(f"cannot read argument {missing}")
        return _read_npy(path) if text.endswith(".npy") else _read_csv(path)
    if _NUMBER.fullmatch(text):
        return _number(text)
    try:
        return json.loads(text, parse_int=_number, parse_float=_number)
    except json.JSONDecodeError:
        raise UsageError(f"cannot read argument {text!r:.80}: give a number, a JSON list, or a "
                         ".npy/.csv path") from None
    except RecursionError:
        raise UsageError(f"cannot read argument {text:.20}…: its lists are nested too deeply "
                         "(an array has at most 64 axes)") from None


def _number(text: str) -> float:
    """A number written in decimal, as float64; refused if it is too large for float64 (float()
    would make it infinity silently, and int() of thousands of digits would fail)."""
    number = float(text)
    if math.isinf(number) and "inf" not in text.lower():
        raise UsageError(f"the number {text:.20}{'…' if len(text) > 20 else ''} is too large for "
                         "float64 (the largest is about 1.8e308); write Infinity for ∞")
    return number


def _read_npy(path: Path) -> np.ndarray:
    """A .npy file as numpy.save writes it: its header is checked against the memory limit
    before its data is read, and it may hold no pickled objects."""
    from hilbert.compiler.plan import memory_limit
    from hilbert.compiler.plan.text import human_bytes

    from .models import npy_header

    try:
        with path.open("rb") as stream:
            shape, dtype = npy_header(stream)
            size = math.prod(shape) * max(dtype.itemsize, 8)
            if size > memory_limit():
                raise UsageError(f"cannot read argument {path}: it holds a "
                                 f"{'×'.join(map(str, shape))} array ({human_bytes(size)} as "
                                 f"float64), over the memory limit of "
                                 f"{human_bytes(memory_limit())} (set HILBERT_MEMORY_LIMIT)")
            stream.seek(0)
            return np.lib.format.read_array(stream, allow_pickle=False)
    except (OSError, ValueError, EOFError) as err:
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        raise UsageError(f"cannot read argument {path}: {reason} (give a .npy file as "
                         "numpy.save writes it, of numbers)") from None


def _read_csv(path: Path) -> np.ndarray:
    """A .csv file of numbers, UTF-8 (with or without a byte-order mark), comma-separated;
    blank lines and lines starting with # are skipped. At least one number."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as err:
        raise UsageError(f"cannot read argument {path}: it is not UTF-8 text (byte "
                         f"{err.start} is {err.object[err.start]:#04x})") from None
    except OSError as err:
        raise UsageError(f"cannot read argument {path}: {err.strerror or err}") from None
    rows = [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    if not rows:
        raise UsageError(f"cannot read argument {path}: it holds no numbers")
    try:
        return np.loadtxt(rows, delimiter=",", ndmin=2)
    except ValueError as err:
        raise UsageError(f"cannot read argument {path}: {err}") from None


def parse_shape(text: str) -> tuple[str, tuple[int, ...]]:
    """NAME=4x2 (or NAME=scalar) as a name and a shape: sizes are whole numbers ≥ 0 in ASCII
    digits, and together no more elements than a NumPy array can have."""
    name, equals, dims = text.partition("=")
    if not name or not equals:
        raise UsageError(f"--shape {text!r}: write NAME=4x2")
    if dims in ("", "scalar"):
        return name, ()
    parts = dims.replace("×", "x").split("x")
    if not all(_SIZE.fullmatch(part) for part in parts):
        raise UsageError(f"--shape {text!r}: sizes must be whole numbers ≥ 0 in the digits 0-9, "
                         "as 4x2")
    # a size of 20 digits or more is past the limit; int() of thousands of digits would fail
    if any(len(part.lstrip("0")) >= 20 for part in parts) or \
            math.prod(int(part) for part in parts) >= _MOST_ELEMENTS:
        raise UsageError(f"--shape {text!r:.80}: no array has that many elements (at most "
                         "2**63 − 1)")
    return name, tuple(int(part) for part in parts)


def _named_value(text: str) -> tuple[str, object]:
    name, equals, value = text.partition("=")
    if not name or not equals or not value:
        raise UsageError(f"--value {text!r}: write NAME=VALUE, as NAME=100 or NAME=[1, 2]")
    return name, parse_value(value)


def _write_text(path: Path, text: str | bytes) -> None:
    """`text` written to `path` (UTF-8; bytes as they are), or an OutputError."""
    try:
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text, encoding="utf-8")
    except OSError as err:
        raise OutputError(f"cannot write {path}: {err.strerror or err}") from None
