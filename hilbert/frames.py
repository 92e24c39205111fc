"""Frame models from Python: `House("houses.csv")` reads the CSV file into typed columns.

>>> house = mod.House("houses.csv")          # doctest: +SKIP
>>> house.rows, house.quality[:3]            # doctest: +SKIP
(5, array([7., 6., 7.]))

The file is read with pyarrow.csv (the `frames` extra): its parser is strict and typed, keeps
quoted commas and newlines inside cells, reads large files in parallel, and brings no pandas.
Every column is read as text, then each Scalar column is converted on its own, so a cell that
is not a number is found and named by its row and column. A cell that is empty or `NA` is
missing: NaN in a Scalar column until a `fill` fills it; a Text column keeps its text, ""
for an empty cell. Text columns are arrays of str (`house.zone`); `house.codes("zone")` and
`house.categories("zone")` give them as category codes, the order in which they first appear.
"""

from __future__ import annotations

import inspect
import os
from typing import Any, ClassVar

import numpy as np

from hilbert.compiler.frames import SCALAR, FrameModel, Texts, derive
from hilbert.grammar.errors import ArgumentError, ModelError
from hilbert.grammar.source import nowhere

from .weights import _read_only

#: The texts that mark a Scalar column's cell as missing (after surrounding spaces go).
MISSING = ("", "NA")


class FrameFileError(ModelError, ValueError):
    """E805: a Frame's file cannot be read as its declaration says (no such file, an empty
    file, a missing column, a cell that is not a number), naming the row and column."""


def frame_class(frame: FrameModel) -> type[Frame]:
    """The Python class of a checked Frame declaration: constructed from a file's path."""
    namespace: dict[str, Any] = {
        "_frame": frame,
        "__doc__": frame.doc or f"model {frame.name}({frame.path}) : Frame({frame.path})",
        "__qualname__": frame.name,
        "__signature__": inspect.Signature(
            [inspect.Parameter(frame.path, inspect.Parameter.POSITIONAL_OR_KEYWORD)]),
    }
    names = [c.name for c in frame.columns] + [d.name for d in frame.derived]
    for name in names:
        namespace[name] = property(lambda self, n=name: _read_only(self._values[n]),
                                   doc=f"column {name} of {frame.name} (a read-only array)")
    return type(frame.name, (Frame,), namespace)


class Frame:
    """The base of every Frame model's class: `rows`, and each column as a NumPy array (one
    entry per row: float64 for Scalar and derived columns, str for Text columns)."""

    _frame: ClassVar[FrameModel]
    _values: dict[str, np.ndarray]
    _texts: dict[str, Texts]
    rows: int
    path: str

    def __init__(self, path: str | os.PathLike):
        frame = self._frame
        self.path = os.fspath(path)
        self.rows, read = _read(frame, self.path)
        self._texts = {n: v for n, v in read.items() if isinstance(v, Texts)}
        values = {n: v for n, v in read.items() if isinstance(v, np.ndarray)}
        for name, fill in frame.fills.items():
            values[name] = _filled(values[name], fill, frame, self.path)
        derived = derive(frame, {**values, **self._texts}, self.rows)
        texts = {n: np.array(t.categories or [""], dtype=str)[t.codes]
                 for n, t in self._texts.items()}
        self._values = {**values, **texts, **derived}

    @property
    def columns(self) -> tuple[str, ...]:
        """The names of the columns, as declared: read ones, then derived ones."""
        return tuple(c.name for c in self._frame.columns) + tuple(
            d.name for d in self._frame.derived)

    def codes(self, name: str) -> np.ndarray:
        """A Text column as whole numbers: row i holds `categories(name)[codes(name)[i]]`."""
        return _read_only(self._text(name).codes)

    def categories(self, name: str) -> tuple[str, ...]:
        """A Text column's distinct texts, in the order they first appear."""
        return self._text(name).categories

    def _text(self, name: str) -> Texts:
        if name not in self._texts:
            raise ArgumentError("E600", f"{name!r} is not a Text column of {self._frame.name} "
                                f"(its Text columns: {', '.join(self._texts) or 'none'})",
                                nowhere(f"{self._frame.name}.codes"))
        return self._texts[name]

    def __repr__(self) -> str:
        return f"<{self._frame.name} of {self.path}: {self.rows} rows, {', '.join(self.columns)}>"


def _filled(values: np.ndarray, fill, frame: FrameModel, path: str) -> np.ndarray:
    missing = np.isnan(values)
    if not missing.any():
        return values
    if fill.how == "value":
        by = fill.value
    elif missing.all():
        raise FrameFileError("E805", f"{path}: column {fill.column} has no values at all, so "
                             f"it has no {fill.how} to fill its missing cells with", fill.span)
    else:
        by = float(np.median(values[~missing]) if fill.how == "median"
                   else np.mean(values[~missing]))
    return np.where(missing, by, values)


def _pyarrow():
    try:
        import pyarrow
        import pyarrow.compute
        import pyarrow.csv
    except ImportError:
        raise ArgumentError("E600", "reading a Frame model's file needs pyarrow, which is not "
                            "installed (pip install 'hilbert[frames]')",
                            nowhere("Frame")) from None
    return pyarrow, pyarrow.compute, pyarrow.csv


def _read(frame: FrameModel, path: str) -> tuple[int, dict[str, np.ndarray | Texts]]:
    """The file's rows and each declared column: float64 with NaN where missing (Scalar), or
    category codes (Text)."""
    if not os.path.isfile(path):
        raise FrameFileError("E805", f"{frame.name} reads {path!r}, which is not a file"
                             + (" (it is a folder)" if os.path.isdir(path) else ""), frame.span)
    pa, compute, csv = _pyarrow()
    headers = sorted({c.header for c in frame.columns})
    options = csv.ConvertOptions(column_types={h: pa.string() for h in headers},
                                 include_columns=headers, strings_can_be_null=False)
    try:
        table = csv.read_csv(path, convert_options=options)
    except pa.ArrowKeyError:
        raise _missing_column(frame, path, csv) from None
    except (pa.ArrowInvalid, UnicodeDecodeError) as err:
        empty = "Empty CSV file" in str(err)
        raise FrameFileError("E805", f"{path} is empty: a Frame's file starts with a line of "
                             "column names" if empty else f"{path} is not a CSV file pyarrow "
                             f"can read: {err}", frame.span) from None
    if table.num_rows == 0:
        raise FrameFileError("E805", f"{path} has column names but no rows", frame.span)
    values: dict[str, np.ndarray | Texts] = {}
    for c in frame.columns:
        cells = table[c.header].combine_chunks()
        if c.type_name == SCALAR:
            values[c.name] = _numbers(cells, c, path, pa, compute)
        else:
            encoded = compute.dictionary_encode(cells)
            values[c.name] = Texts(tuple(encoded.dictionary.to_pylist()),
                                   encoded.indices.to_numpy(zero_copy_only=False).astype(np.intp))
    return table.num_rows, values


def _numbers(cells, column, path: str, pa, compute) -> np.ndarray:
    """A Scalar column's cells as float64, NaN where missing; E805 at the first cell that is
    not a number (found by halving: pyarrow's conversion error names no row)."""
    text = compute.utf8_trim_whitespace(cells)
    text = compute.if_else(compute.is_in(text, value_set=pa.array(MISSING)), None, text)
    try:
        return compute.cast(text, pa.float64()).to_numpy(zero_copy_only=False)
    except pa.ArrowInvalid:
        low, high = 0, len(text)
        while high - low > 1:
            middle = (low + high) // 2
            try:
                compute.cast(text.slice(low, middle - low), pa.float64())
                low = middle
            except pa.ArrowInvalid:
                high = middle
        raise FrameFileError("E805", f"{path}, row {low + 1} (after the header), column "
                             f'"{column.header}": {cells[low].as_py()!r} is not a number, and '
                             f"{column.name} is a Scalar column", column.span) from None


def _missing_column(frame: FrameModel, path: str, csv) -> FrameFileError:
    with csv.open_csv(path) as reader:
        names = reader.schema.names
    column = next(c for c in frame.columns if c.header not in names)
    shown = ", ".join(f'"{n}"' for n in names[:12]) + (", …" if len(names) > 12 else "")
    return FrameFileError("E805", f'{path} has no column "{column.header}" (it has {shown})',
                          column.span)


__all__ = ["Frame", "FrameFileError", "frame_class"]
