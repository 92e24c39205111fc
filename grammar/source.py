"""Source texts and the spans that point into them."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Source:
    """A named text: a file's path (or a label such as `<string>`) and its contents."""

    name: str
    text: str

    def line(self, number: int) -> str:
        """The text of 1-based line `number`, without its line break ('' if out of range)."""
        lines = self.text.split("\n")  # as the parser counts lines: \r or \f do not end one
        return lines[number - 1].rstrip("\r") if 1 <= number <= len(lines) else ""


@dataclass(frozen=True, slots=True)
class Span:
    """A region of a source: 1-based line and column of its start and end.

    Spans never take part in equality, so two nodes that say the same thing compare equal
    wherever they were written (which is what lets the compiler share identical work).
    """

    source: Source = field(compare=False, repr=False)
    line: int
    column: int
    end_line: int
    end_column: int

    def __str__(self) -> str:
        return f"{self.source.name}:{self.line}:{self.column}"

    def caret(self) -> str:
        """The source line and a caret line under the span's first line."""
        text = self.source.line(self.line)
        width = (self.end_column - self.column) if self.end_line == self.line else len(text) - self.column + 1
        width = max(1, width)
        return f"  {text}\n  {' ' * (self.column - 1)}{'^' * width}"


def nowhere(label: str = "<python>") -> Span:
    """A span for things that come from Python rather than from .hb text."""
    return Span(Source(label, ""), 1, 1, 1, 1)
