"""Every code block of the README and the docs runs, as its language tag says (docs/testing.md):

- ```python blocks of a page run in order in one namespace, in a scratch folder where
  `examples/` is reachable. A block with `>>>` lines is a doctest: its outputs must match
  (ELLIPSIS and NORMALIZE_WHITESPACE on); any other block runs as a script.
- ```hb blocks are whole .hb modules: each compiles and every definition in it builds. A block
  that says `-- error: CODE at LINE:COL` (and maybe `-- call: NAME ARG …`), as the files of
  tests/errors/ do, must raise that code there instead.
- ```text (output, sketches, tables of syntax) and ```sh (shell commands) are skipped on
  purpose. Any other tag, or none, fails, so no block is skipped by accident.

The pages of docs/errors/ are run by test_error_docs.py, against their own rules.
"""

from __future__ import annotations

import doctest
import io
import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from hilbert.compiler.ops.primitives import PRIMITIVES

import hilbert

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
         ROOT / "benchmarks" / "README.md"]
RUN, SKIP = {"python", "hb"}, {"text", "sh"}
#: Pages whose blocks need optional packages: without them the page is skipped.
NEEDS = {"interop.md": ("torch", "jax"), "jax-executor.md": ("jax",), "frames.md": ("pyarrow",),
         "onnx.md": ("onnx", "onnxruntime")}
_FENCE = re.compile(r"^( *)```(\S*)\s*$")
_ERROR = re.compile(r"^-- error: (E\d{3}) at (\d+):(\d+)\s*$", re.M)
_CALL = re.compile(r"^-- call: (\S+)((?: \S+)*)\s*$", re.M)


@dataclass(frozen=True)
class Block:
    """A fenced code block: its page, the line of its opening fence, its tag and its text."""

    page: Path
    line: int
    tag: str
    text: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of a Markdown page, dedented by their fence's indentation."""
    found, lines = [], page.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        indent, tag = len(opening.group(1)), opening.group(2)
        end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
        text = "\n".join(line[indent:] for line in lines[i + 1:end]) + "\n"
        found.append(Block(page, i + 1, tag, text))
        i = end + 1
    return found


def _id(page: Path) -> str:
    return str(page.relative_to(ROOT))


@pytest.fixture
def scratch(tmp_path, monkeypatch):
    """A scratch working folder where `examples/…` resolves (files a page writes land here)."""
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_every_block_has_a_tag_the_runner_knows():
    unknown = [f"{b.where}: ```{b.tag}" for page in PAGES for b in blocks(page)
               if b.tag not in RUN | SKIP]
    assert unknown == [], "tag these blocks python, hb, text or sh:\n" + "\n".join(unknown)


@pytest.mark.parametrize("page", PAGES, ids=_id)
def test_page_blocks_run(page, scratch):
    for module in NEEDS.get(page.name, ()):
        pytest.importorskip(module)
    namespace: dict = {"__name__": "__docs__"}
    for block in blocks(page):
        if block.tag == "python":
            run_python(block, namespace)
        elif block.tag == "hb":
            run_hb(block, scratch)


def run_python(block: Block, namespace: dict) -> None:
    """A doctest when the block has `>>>` prompts, else a script."""
    if ">>>" not in block.text:
        exec(compile(block.text, block.where, "exec"), namespace)  # noqa: S102 - our own docs
        return
    test = doctest.DocTestParser().get_doctest(_blank_lines_kept(block.text), namespace,
                                               block.where, str(block.page), block.line)
    report = io.StringIO()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test, out=report.write, clear_globs=False)
    namespace.update(test.globs)  # a DocTest works on a copy: later blocks see its names
    assert runner.failures == 0, f"{block.where}\n{report.getvalue()}"


def _blank_lines_kept(text: str) -> str:
    """A blank line between two lines of expected output is output (doctest would end the
    output there): it becomes <BLANKLINE>, so pages show plans as they print."""
    lines, state = text.split("\n"), None  # None, "source" (a prompt) or "output"
    for i, line in enumerate(lines):
        stripped = line.lstrip()
        if stripped.startswith(">>>") or (state == "source" and stripped.startswith("...")):
            state = "source"
        elif stripped:
            state = "output" if state else None
        elif state == "output":
            after = next((later for later in lines[i + 1:] if later.strip()), ">>>")
            if after.lstrip().startswith(">>>"):
                state = None
            else:
                lines[i] = "<BLANKLINE>"
    return "\n".join(lines)


def run_hb(block: Block, folder: Path) -> None:
    """Compile the block as a module and build every definition, or raise what it expects."""
    path = folder / "block.hb"
    path.write_text(block.text, encoding="utf-8")
    expected = _ERROR.search(block.text)
    if expected is None:
        module = hilbert.load(path, search_path=[ROOT / "examples"])
        for name in module.definitions:
            module.function(name)  # entries are built on first use: build them all
        return
    code, line, column = expected.group(1), int(expected.group(2)), int(expected.group(3))
    with pytest.raises(hilbert.HilbertError) as raised:
        module = hilbert.load(path)
        call = _CALL.search(block.text)
        if call is not None:
            module.function(call.group(1))(*[_argument(a) for a in call.group(2).split()])
    err = raised.value
    assert (err.code, err.span.line, err.span.column) == (code, line, column), block.where


def _argument(token: str):
    if token.startswith("ones:"):
        dims = token[len("ones:"):]
        return np.ones(tuple(int(d) for d in dims.split("x")) if dims else ())
    return json.loads(token)


# -- the handbook is whole ---------------------------------------------------------------------


def test_the_readme_links_the_language_reference_inside_the_repository():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "](docs/language.md)" in readme
    for page in PAGES:
        assert "../shared" not in page.read_text(encoding="utf-8"), _id(page)


def test_every_relative_link_of_the_handbook_leads_to_a_file():
    broken = []
    for page in PAGES:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            if "://" not in target and not (page.parent / target).exists():
                broken.append(f"{_id(page)} → {target}")
    assert broken == []


def test_the_language_reference_names_every_primitive_and_keyword():
    text = (ROOT / "docs" / "language.md").read_text(encoding="utf-8")
    for name in [*PRIMITIVES, "einsum", "grad", "open", "def", "fn", "model", "weight", "from",
                 "if", "then", "else", "let", "in"]:
        assert f"`{name}" in text or f" {name}" in text, name
