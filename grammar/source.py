"""Source texts and the spans that point into them."""

from __future__ import annotations

from dataclasses import dataclass, field


def quickly_unpickled(cls):
    """`cls` (a frozen, slotted dataclass) read back from a pickle by its field names, known
    once: dataclass's own __setstate__ looks up the fields for every object, and an entry kept
    on disk holds thousands of spans (compiler/kept.py)."""
    names = tuple(cls.__dataclass_fields__)

    def __setstate__(self, state, set_=object.__setattr__):
        for name, value in zip(names, state, strict=True):
            set_(self, name, value)

    cls.__setstate__ = __setstate__
    return cls


@quickly_unpickled
@dataclass(frozen=True, slots=True)
class Source:
    """A named text: a file's path (or a label such as `<string>`) and its contents."""

    name: str
    text: str
    _lines: list[str] | None = field(default=None, init=False, compare=False, repr=False)

    @property
    def lines(self) -> list[str]:
        """The text split into lines (once: carets and doc comments read many lines)."""
        if self._lines is None:
            # as the parser counts lines: \r or \f do not end one
            object.__setattr__(self, "_lines", self.text.split("\n"))
        return self._lines  # type: ignore[return-value]

    def line(self, number: int) -> str:
        """The text of 1-based line `number`, without its line break ('' if out of range)."""
        lines = self.lines
        return lines[number - 1].rstrip("\r") if 1 <= number <= len(lines) else ""


@quickly_unpickled
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
    #: Where the text was called from, when the inliner wrote a definition out at a call: the
    #: chain of call sites that explains an error inside a callee. Never part of equality.
    via: CallSite | None = field(default=None, compare=False, repr=False)

    def __str__(self) -> str:
        return f"{self.source.name}:{self.line}:{self.column}"

    def at(self, via: CallSite | None) -> Span:
        """This region, reached through the call chain `via`."""
        return Span(self.source, self.line, self.column, self.end_line, self.end_column, via)

    def caret(self) -> str:
        """The source line and a caret line under the span's first line."""
        text = self.source.line(self.line)
        width = (self.end_column - self.column) if self.end_line == self.line else len(text) - self.column + 1
        width = max(1, width)
        return f"  {text}\n  {' ' * (self.column - 1)}{'^' * width}"


@quickly_unpickled
@dataclass(frozen=True, slots=True)
class CallSite:
    """A call the inliner wrote out: the definition that made it (`caller`) and the call's
    span, whose own `via` continues the chain towards what the user called."""

    caller: str
    span: Span

    def chain(self) -> list[CallSite]:
        """This site and every site it was reached through, innermost first."""
        sites: list[CallSite] = []
        site: CallSite | None = self
        while site is not None:
            sites.append(site)
            site = site.span.via
        return sites


def nowhere(label: str = "<python>") -> Span:
    """A span for things that come from Python rather than from .hb text."""
    return Span(Source(label, ""), 1, 1, 1, 1)
