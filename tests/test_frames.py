"""Frame models (docs/frames.md): a CSV file read into typed columns, fills, derived columns
computed row by row, `match` over Text columns; each bad file's E805 and each bad
declaration's E804; a frame's columns feeding a Learner. Expected values are NumPy written
here, from the same cells as the file."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest
from hilbert.grammar.errors import HilbertError
from hilbert.grammar.parser import parse
from hilbert.grammar.printer import print_module
from hilbert.grammar.syntax import Frame

import hilbert

HOUSE = """
-- Houses, one per row.
model House(path) : Frame(path) {
  quality : Scalar from "Overall Qual"
  zone : Text from "MS Zoning"
  lot : Scalar from "Lot Area"
  price : Scalar from "SalePrice"
  year : Scalar from "Year Built"
  fill quality with median
  fill lot with mean
  fill year with value 1950
  def density ≔ match zone { when "RL" ↦ 1  when "RM" | "RH" ↦ 2  other ↦ 0 }
  def perArea ≔ price / lot · (quality > 6)
  def logPrice ≔ ln(price) − max(density, 1)
  def older ≔ if year < 1960 then 2026 − year else match quality { when 7 ↦ −1  other ↦ 0 }
  def residential ≔ zone ≠ "FV, north"
}
"""

#: The cells of the file, row by row (None and "": an empty cell; "NA" is missing too).
ROWS = [
    ("1", "7", "RL", "8450", "208500", "2003"),
    ("2", "6", "RL", None, "181500", "1976"),
    ("3", None, "RM", "11250", "223500", "NA"),
    ("4", " 7 ", '"RH"', "9550", "140000", "1915"),
    ("5", "8", '"FV, north"', "NA", "250000", "2000"),
    ("6", "NA", "", "14115", "143000", "1993"),
    ("7", "5", "RL", "10084", "307000", ""),
]
HEADER = ("Id", "Overall Qual", "MS Zoning", "Lot Area", "SalePrice", "Year Built")


def write_csv(folder, rows=ROWS, header=HEADER, name="houses.csv"):
    path = folder / name
    lines = [",".join(header)] + [",".join("" if c is None else c for c in r) for r in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def pyarrow():
    return pytest.importorskip("pyarrow")


@pytest.fixture
def house(tmp_path, pyarrow):
    return hilbert.compile_source(HOUSE, "house.hb").House(write_csv(tmp_path))


def _numbers(index: int) -> np.ndarray:
    return np.array([math.nan if r[index] in (None, "", "NA") else float(r[index]) for r in ROWS])


def test_read_columns_with_fills_equal_numpy(house):
    quality, lot, price, year = _numbers(1), _numbers(3), _numbers(4), _numbers(5)
    quality[np.isnan(quality)] = np.median(quality[~np.isnan(quality)])
    lot[np.isnan(lot)] = np.mean(lot[~np.isnan(lot)])
    year[np.isnan(year)] = 1950
    assert house.rows == 7
    np.testing.assert_array_equal(house.quality, quality)
    np.testing.assert_array_equal(house.lot, lot)
    np.testing.assert_array_equal(house.price, price)
    np.testing.assert_array_equal(house.year, year)
    assert house.quality.dtype == np.float64 and not house.quality.flags.writeable


def test_text_columns_are_strings_and_codes(house):
    zone = ["RL", "RL", "RM", "RH", "FV, north", "", "RL"]
    assert house.zone.tolist() == zone
    assert house.categories("zone") == ("RL", "RM", "RH", "FV, north", "")
    assert house.codes("zone").tolist() == [0, 0, 1, 2, 3, 4, 0]
    with pytest.raises(HilbertError) as err:
        house.codes("quality")
    assert err.value.code == "E600"


def test_derived_columns_and_text_match_equal_numpy(house):
    zone = np.array(["RL", "RL", "RM", "RH", "FV, north", "", "RL"])
    quality, lot, price, year = house.quality, house.lot, house.price, house.year  # (checked above)
    density = np.select([zone == "RL", (zone == "RM") | (zone == "RH")], [1.0, 2.0], 0.0)
    np.testing.assert_array_equal(house.density, density)
    np.testing.assert_array_equal(house.perArea, price / lot * (quality > 6))
    np.testing.assert_array_equal(house.logPrice, np.log(price) - np.maximum(density, 1))
    older = np.where(year < 1960, 2026 - year, np.where(quality == 7, -1.0, 0.0))
    np.testing.assert_array_equal(house.older, older)
    np.testing.assert_array_equal(house.residential, (zone != "FV, north").astype(float))
    assert house.columns == ("quality", "zone", "lot", "price", "year", "density", "perArea",
                             "logPrice", "older", "residential")


def test_a_derived_column_may_read_one_declared_after_it(tmp_path, pyarrow):
    text = """model H(p) : Frame(p) {
  def b ≔ a · 2
  def a ≔ price / 1000
  price : Scalar from "SalePrice"
}"""
    h = hilbert.compile_source(text).H(write_csv(tmp_path))
    np.testing.assert_array_equal(h.b, _numbers(4) / 1000 * 2)


def test_unfilled_missing_cells_are_nan_and_propagate(tmp_path, pyarrow):
    text = 'model H(p) : Frame(p) {\n lot : Scalar from "Lot Area"\n def twice ≔ lot · 2\n}'
    h = hilbert.compile_source(text).H(write_csv(tmp_path))
    np.testing.assert_array_equal(h.lot, _numbers(3))
    np.testing.assert_array_equal(h.twice, _numbers(3) * 2)


# Bad files: E805, naming the row and column


@pytest.mark.parametrize("make, says, line", [
    (lambda f: f / "absent.csv", "absent.csv', which is not a file", 3),
    (lambda f: f, "which is not a file (it is a folder)", 3),
    (lambda f: (f / "e.csv").write_text("") or f / "e.csv", "e.csv is empty", 3),
    (lambda f: write_csv(f, rows=[]), "has column names but no rows", 3),
    (lambda f: write_csv(f, header=("Id", "Overall Qual", "Zone", "Lot Area", "SalePrice",
                                    "Year Built")), 'has no column "MS Zoning" (it has "Id"', 5),
    (lambda f: write_csv(f, rows=ROWS[:4] + [("5", "8", "FV", "lots", "1", "2")] + ROWS[5:]),
     'row 5 (after the header), column "Lot Area": \'lots\' is not a number', 6),
    (lambda f: write_csv(f, rows=[("1", "7,5", "RL", "1", "1", "1")]), "is not a CSV file", 3),
])
def test_bad_files_are_E805_naming_row_and_column(tmp_path, pyarrow, make, says, line):
    house = hilbert.compile_source(HOUSE, "house.hb").House
    with pytest.raises(HilbertError) as err:
        house(make(tmp_path))
    assert err.value.code == "E805" and says in err.value.message, str(err.value)
    assert err.value.span.line == line


def test_a_fill_by_median_of_a_column_with_no_values_is_E805(tmp_path, pyarrow):
    rows = [(r[0], None, *r[2:]) for r in ROWS]
    with pytest.raises(HilbertError) as err:
        hilbert.compile_source(HOUSE, "house.hb").House(write_csv(tmp_path, rows=rows))
    assert err.value.code == "E805" and "no median" in err.value.message


def test_without_pyarrow_reading_is_E600(tmp_path, monkeypatch):
    house = hilbert.compile_source(HOUSE, "house.hb").House
    for name in ("pyarrow", "pyarrow.csv", "pyarrow.compute"):
        monkeypatch.setitem(sys.modules, name, None)  # (an import of it then fails)
    with pytest.raises(HilbertError) as err:
        house(write_csv(tmp_path))
    assert err.value.code == "E600" and "hilbert[frames]" in err.value.message


# Declarations: E804 (checked when the module loads, without reading any file)


@pytest.mark.parametrize("members, says", [
    ('z : Text from "Z"\n def x ≔ z + 1', "z is a Text column: compare it with a text"),
    ('z : Text from "Z"\n def x ≔ z < "RL"', "z is a Text column"),
    ('q : Scalar from "Q"\n def x ≔ match q { when "RL" ↦ 1  other ↦ 0 }',
     'the text "RL" can only be compared with (or matched against) a Text column'),
    ('q : Scalar from "Q"\n def x ≔ qq + 1', "x reads qq, which is not a column of H; did you "
                                              "mean q?"),
    ('q : Scalar from "Q"\n def x ≔ y\n def y ≔ x · q', "reads itself"),
    ('q : Text from "Q"\n fill q with median', "fill q: q is a Text column"),
    ('q : Scalar from "Q"\n fill q with mean\n fill q with median', "q is filled twice"),
    ('q : Scalar from "Q"\n def x ≔ einsum("i->", q)', "x is computed row by row"),
    ('q : Scalar from "Q"\n def x(t) ≔ q · t', "takes no parameters"),
    ('q : Scalar from "Q"\n q : Scalar from "R"', "the column name q is declared twice"),
    ('rows : Scalar from "Q"', "the column name rows is taken"),
    ('q : Tensor from "Q"', "a Frame's column is a Scalar or a Text"),
])
def test_bad_declarations_are_E804(members, says):
    with pytest.raises(HilbertError) as err:
        hilbert.compile_source(f"model H(p) : Frame(p) {{\n {members}\n}}")
    assert err.value.code == "E804" and says in err.value.message, str(err.value)


@pytest.mark.parametrize("text, code, says", [
    ("model H(p) : Frame(q) { }", "E804", "q is not one of its parameters"),
    ("model H(p, n) : Frame(p) { }", "E804", "a Frame model has one parameter"),
    ("model H(p) : Frame(p, q) { }", "E100", "the one parameter that is its file's path"),
    ("model H(p) : Frame(p) { fill x with bogus }", "E100", "fill x with median, with mean"),
    ("def H(x) ≔ x\nmodel H(p) : Frame(p) { }", "E205", "H is defined twice"),
    ("model H(p) : Table(p) { }", "E104", ".hb has no type Table(…)"),
    ("model H(p) : Frame { }", "E800", "write `model H(path) : Frame(path) { … }`"),
    ("model H : Table { }", "E800", "a model is a Learner (or a Frame(path) over a CSV file)"),
])
def test_the_frame_declaration_itself_is_checked(text, code, says):
    with pytest.raises(HilbertError) as err:
        hilbert.compile_source(text)
    assert err.value.code == code and says in err.value.message, str(err.value)


def test_a_text_in_a_match_outside_a_frame_is_E316_and_numbers_still_match():
    with pytest.raises(HilbertError) as err:
        hilbert.compile_source('fn f(k) ↦ match k { when 1 ↦ 2  when "RL" ↦ 1  other ↦ 0 }')
    assert err.value.code == "E316" and "only with a Text column" in err.value.message
    assert (err.value.span.line, err.value.span.column) == (1, 38)
    f = hilbert.compile_source("fn f(k) ↦ match k { when 1 ↦ 2  other ↦ 0 }").f
    assert (f(1.0), f(3.0)) == (2.0, 0.0)


def test_fill_and_with_are_names_outside_a_frame():
    (decl,) = parse("def fill(with) ≔ with + 1").decls
    assert decl.params == ("with",)


def test_a_frame_prints_as_source_that_parses_to_it():
    module = parse(HOUSE)
    (frame,) = module.decls
    assert isinstance(frame, Frame) and frame.doc == "Houses, one per row."
    assert parse(print_module(module)) == module
    assert parse(print_module(module, unicode=True)) == module


# A frame's columns feed a Learner

LINE = """
model Line : Learner {
  weight a : Tensor[] from 0
  weight b : Tensor[] from 0
  def train(x, y, rate) {
    a ≔ a − rate · ∂ loss(x, y) / ∂ a
    b ≔ b − rate · ∂ loss(x, y) / ∂ b
  }
  def loss(x, y) ≔ einsum("n->", (a · x + b − y)²) / rows(x)
}

model Sales(path) : Frame(path) {
  quality : Scalar from "Overall Qual"
  price : Scalar from "SalePrice"
  fill quality with median
  def centred ≔ quality − 7
  def thousands ≔ price / 1000
}
"""


def test_frame_columns_feed_a_linear_fit(tmp_path, pyarrow):
    module = hilbert.compile_source(LINE, "line.hb")
    sales = module.Sales(write_csv(tmp_path))
    line = module.Line()
    line.train(sales.centred, sales.thousands, 0.2, steps=2000)
    quality = _numbers(1)
    quality[np.isnan(quality)] = np.median(quality[~np.isnan(quality)])
    x, y = quality - 7, _numbers(4) / 1000
    slope, intercept = np.linalg.lstsq(np.stack([x, np.ones_like(x)], 1), y, rcond=None)[0]
    np.testing.assert_allclose([line.a, line.b], [slope, intercept], rtol=1e-9)
    assert line.loss(sales.centred, sales.thousands) == pytest.approx(
        np.mean((slope * x + intercept - y) ** 2), rel=1e-9)


def test_a_long_chain_in_a_derived_column_is_walked_without_recursion(tmp_path, pyarrow):
    chain = " + ".join(["price"] * 5000)
    text = f'model H(p) : Frame(p) {{\n price : Scalar from "SalePrice"\n def many ≔ {chain}\n}}'
    h = hilbert.compile_source(text).H(write_csv(tmp_path))
    np.testing.assert_allclose(h.many, _numbers(4) * 5000, rtol=1e-12)


def test_every_public_attribute_of_a_frame_is_a_reserved_column_name():
    from hilbert.compiler.frames import RESERVED

    from hilbert.frames import Frame as FrameClass

    public = {n for n in dir(FrameClass) if not n.startswith("_")}
    public |= set(FrameClass.__annotations__) - {n for n in FrameClass.__annotations__
                                                 if n.startswith("_")}
    assert public <= RESERVED, public - RESERVED
