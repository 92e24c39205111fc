"""docs/errors/: a page per error code, each of whose examples raises that code, as shown.

A page's ```hb block is written to example.hb in a fresh folder. If the page has a ```python
block, that runs (with `hilbert`, `np`, `example` and `folder` defined) and must raise the
code; otherwise `hilbert.load(example)` must. The first line of the page's ```text block must
be the error's first line, with the folder left out of paths and `…` standing for any text.
"""

import re
from pathlib import Path

import numpy as np
import pytest
from hilbert.grammar.errors import CODES, WARNING_CODES

import hilbert

DOCS = Path(__file__).resolve().parent.parent / "docs" / "errors"
PAGES = sorted(DOCS.glob("E*.md"))


def block(text: str, language: str) -> str | None:
    found = re.search(rf"^```{language}\n(.*?)^```$", text, re.M | re.S)
    return found.group(1) if found else None


def test_every_code_has_a_page_and_an_index_entry():
    assert {p.stem for p in PAGES} == set(CODES)
    warnings = {p.stem for p in DOCS.glob("W*.md")}
    assert warnings == set(WARNING_CODES)
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    for code, title in (CODES | WARNING_CODES).items():
        assert f"| [{code}]({code}.md) | {title} |" in index
        page = (DOCS / f"{code}.md").read_text(encoding="utf-8")
        assert page.startswith(f"# {code}: {title}\n")


@pytest.mark.parametrize("code", sorted(CODES))
def test_page_example_raises_its_code(code, tmp_path):
    page = (DOCS / f"{code}.md").read_text(encoding="utf-8")
    assert page.startswith(f"# {code}: {CODES[code]}\n")
    for heading in ("## What it means", "## Example", "## The message", "## How to fix it"):
        assert heading in page
    folder = tmp_path / "example"
    folder.mkdir()
    example = folder / "example.hb"
    example.write_text(block(page, "hb"), encoding="utf-8")
    python = block(page, "python")
    with pytest.raises(hilbert.HilbertError) as raised:
        if python is None:
            hilbert.load(example)
        else:
            exec(python, {"hilbert": hilbert, "np": np, "example": example, "folder": folder})
    assert raised.value.code == code, str(raised.value)
    shown = block(page, "text").splitlines()[0]
    actual = str(raised.value).splitlines()[0].replace(f"{folder}/", "").replace(str(folder), ".")
    pattern = "".join(".*" if part == "…" else re.escape(part) for part in re.split("(…)", shown))
    assert re.fullmatch(pattern, actual), f"\ndocs:   {shown}\nactual: {actual}"
