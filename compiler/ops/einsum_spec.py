"""Parses and validates einsum specifications (NumPy's explicit form, letters only)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from hilbert.grammar.errors import CheckError
from hilbert.grammar.source import Span

_TERM = re.compile(r"[a-zA-Z]*")


@dataclass(frozen=True, slots=True)
class Spec:
    """A parsed specification: one string of letters per input, and the output letters."""

    inputs: tuple[str, ...]
    output: str

    def __str__(self) -> str:
        return ",".join(self.inputs) + "->" + self.output


def parse_spec(text: str) -> Spec:
    """Split an already-validated specification into its terms."""
    left, output = text.split("->")
    return Spec(tuple(left.split(",")), output)


def check_spec(text: str, operands: int, span: Span) -> str:
    """Validate `text` for `operands` operands; return it without spaces.

    >>> check_spec("np, pq -> nq", 2, None)
    'np,pq->nq'
    """
    compact = text.replace(" ", "")
    if "..." in compact or "." in compact:
        raise CheckError("E301", "einsum ellipsis (...) is not supported; name every axis with "
                         "a letter", span)
    if "->" not in compact:
        raise CheckError("E302", f'einsum "{text}" has no output; write it explicitly after ->, '
                         'as "ij,jk->ik"', span)
    if compact.count("->") > 1:
        raise CheckError("E300", f'einsum "{text}" has more than one ->', span)
    left, output = compact.split("->")
    inputs = left.split(",")
    for term in inputs + [output]:
        if not _TERM.fullmatch(term):
            bad = next(ch for ch in term if not ch.isascii() or not ch.isalpha())
            raise CheckError("E300", f'einsum "{text}" contains {bad!r}; axes are the letters '
                             "a–z and A–Z", span)
    if len(inputs) != operands:
        raise CheckError("E303", f'einsum "{text}" names {len(inputs)} operand(s) but is given '
                         f"{operands}", span)
    seen = set("".join(inputs))
    for letter in output:
        if letter not in seen:
            raise CheckError("E304", f'einsum "{text}": output letter {letter} is in no input',
                             span)
    if len(set(output)) != len(output):
        raise CheckError("E300", f'einsum "{text}" repeats a letter in its output', span)
    return compact
