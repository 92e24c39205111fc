"""Pygments lexers for .hb source and for hilbert's plans and diagnostics, and the terminal
colouring `hilbert` applies with them. Registered under the `pygments.lexers` entry point, so
`pygmentize -l hb`, Sphinx and MkDocs highlight ```hb blocks.

>>> from pygments import highlight; from pygments.formatters import TerminalFormatter   # doctest: +SKIP
>>> print(highlight('fn twice(x) ↦ 2 · x', HilbertLexer(), TerminalFormatter()))       # doctest: +SKIP
"""

from __future__ import annotations

import os
from typing import TextIO

from pygments import highlight
from pygments.formatters import TerminalFormatter
from pygments.lexer import RegexLexer, bygroups, default, using, words
from pygments.token import (
    Comment,
    Generic,
    Keyword,
    Name,
    Number,
    Operator,
    Punctuation,
    String,
    Text,
    Whitespace,
)

from hilbert.compiler.ops.primitives import PRIMITIVES as OP_TABLE

#: A name, as the grammar has it: a letter (any script), then letters, digits and `_`; the
#: superscript ² is the square operator, never part of a name.
NAME = r"[^\W\d²][^\W²]*"
_END = r"(?![^\W²])"  # a keyword or primitive ends where a name could not go on
#: Every primitive a .hb program can call by name: the op table's (compiler/ops/primitives.py),
#: the contraction, and grad, the ASCII spelling of ∂.
PRIMITIVES = ("einsum", "grad", *OP_TABLE)
KEYWORDS = ("if", "then", "else", "let", "in", "from", "match", "rename")
NUMBER = r"(\d+(\.\d+)?|\.\d+)([eE][+\-−]?\d+)?"


class HilbertLexer(RegexLexer):
    """.hb source: comments, declarations, keywords, primitives, einsum specifications,
    numbers, and every operator in its Unicode and ASCII spellings."""

    name = "Hilbert"
    aliases = ["hb", "hilbert"]
    filenames = ["*.hb"]
    mimetypes = ["text/x-hilbert"]

    tokens = {
        "root": [
            (r"\s+", Whitespace),
            (r"--[^\n]*", Comment.Single),
            (rf"(open)(\s+)({NAME}(?:\.{NAME})*)",
             bygroups(Keyword.Namespace, Whitespace, Name.Namespace)),
            (rf"(def|fn)(\s+)({NAME})", bygroups(Keyword.Declaration, Whitespace, Name.Function)),
            (rf"(model)(\s+)({NAME})", bygroups(Keyword.Declaration, Whitespace, Name.Class)),
            (rf"(law)(\s+)({NAME})", bygroups(Keyword.Declaration, Whitespace, Name.Function)),
            (r"where(?=\s)", Keyword),  # (a keyword only where a law's conditions start)
            (rf"(weight|state|group)(\s+)({NAME})",
             bygroups(Keyword.Declaration, Whitespace, Name.Variable)),
            (rf"(like)(\s+)({NAME})", bygroups(Keyword, Whitespace, Name.Variable)),
            (words(KEYWORDS, suffix=_END), Keyword),
            # (a match's arm words are keywords only where an arm starts: names elsewhere)
            (r"when(?=\s*(?:[−\-]?[\d.]|\"))", Keyword),
            (r"other(?=\s*(?:↦|\|->))", Keyword),
            # (a Frame's `fill c with …`: keywords only there)
            (rf"(fill)(\s+)({NAME})(\s+)(with)\b",
             bygroups(Keyword, Whitespace, Name.Variable, Whitespace, Keyword)),
            (words(("Learner", "Tensor", "Frame", "Scalar", "Text"), suffix=_END), Keyword.Type),
            (words(PRIMITIVES, suffix=_END), Name.Builtin),
            (r'"[^"\n]*"', String),
            (NUMBER, Number.Float),
            (r"≔|:=|↦|\|->|<=>|->|!=|<=|>=|[+\-−·*/^²=≠<>≤≥∂|⇔∉×′→]", Operator),
            (r"[()\[\]{},:.]", Punctuation),
            (NAME, Name),
        ],
    }


class HilbertOutputLexer(RegexLexer):
    """What `hilbert` prints: diagnostics (`file:line:col: error[E306]: …`, the source line
    highlighted as .hb, its caret line and notes) and plans (headings, einsum
    specifications, sizes, BLAS kernels and source locations)."""

    name = "Hilbert output"
    aliases = ["hb-output", "hilbert-output"]
    filenames: list[str] = []

    tokens = {
        "root": [
            (r"^(\S[^\n]*?:\d+:\d+)(: )(error|warning)(\[[EW]\d{3}\])(: )([^\n]*\n?)",
             bygroups(Name.Label, Text, Generic.Error, Generic.Strong, Text, Generic.Emph),
             "diagnostic"),
            (r"^(plan of|einsum \d+|loops|generated code for|total|step|loop)\b",
             Generic.Heading),
            (r"^(\s+)(executor|numba:|reference:)", bygroups(Whitespace, Keyword)),
            (r'"[^"\n]*"', String),
            (r"\[[^\]\n]*\]", Comment),
            (r"\S+\.hb:\d+:\d+", Name.Label),
            (r"\b(GEMM|GEMV/EINSUM|DOT|TDOT|OUTER/EINSUM)\b", Name.Builtin),
            (r"[^\W\d]\w*", Text),  # a word, digits and all (w1 is a name, not w and 1)
            (rf"{NUMBER}( ?(k|M|G|el|B|KiB|MiB|GiB|TiB|ns|µs|ms|s)\b)?", Number),
            (r"\s+", Whitespace),
            (r"[^\s\"\[\d]+", Text),
            (r".", Text),
        ],
        "diagnostic": [
            (r"^( +)(note: )([^\n]*\n?)", bygroups(Whitespace, Generic.Subheading, Text)),
            (r"^ +[\^~]+ *\n?", Generic.Error),
            (r"^(  )([^\n]*\n?)", bygroups(Whitespace, using(HilbertLexer))),
            default("#pop"),
        ],
    }


def wanted(stream: TextIO, choice: str = "auto") -> bool:
    """Whether to colour text for `stream`: `choice` "always" or "never", or for "auto" when
    the stream is a terminal and NO_COLOR (https://no-color.org) is not set."""
    if choice != "auto":
        return choice == "always"
    if os.environ.get("NO_COLOR"):
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def colour(text: str, stream: TextIO, choice: str = "auto") -> str:
    """`text` (a plan, a diagnostic) with terminal colours when `wanted`, else as it is."""
    if not wanted(stream, choice):
        return text
    painted = highlight(text, HilbertOutputLexer(), TerminalFormatter())
    return painted if text.endswith("\n") else painted.removesuffix("\n")
