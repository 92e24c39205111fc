"""Parses and validates einsum specifications (NumPy's explicit form, letters only: any
alphabet's, `ij` or `αβ`)."""

from __future__ import annotations

import string
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache, lru_cache

from ...grammar.errors import CheckError
from ...grammar.source import Span

#: The ellipsis, `...` in a specification as written: it stands for the axes of an operand no
#: letter names, the same axes in every operand that has it. Specifications hold it as this one
#: character, which every pass treats as a letter, until shapes are known and monomorphise
#: (compiler/passes/monomorphise.py) names those axes with letters of their own.
ELLIPSIS = "…"


def spelled_out(spec: str, shapes) -> str:
    """`spec` with its ellipsis (if any) written as letters not in it, one per axis it stands
    for, given the operands' shapes (as many as an operand holding it has axes its letters do
    not name).

    >>> spelled_out("…v,v->…", [(2, 3, 4), (4,)])
    'abv,v->ab'
    """
    if ELLIPSIS not in spec:
        return spec
    inputs = spec.split("->")[0].split(",")
    term, shape = next((t, s) for t, s in zip(inputs, shapes, strict=True) if ELLIPSIS in t)
    fresh = (ch for ch in letters() if ch not in spec)
    return spec.replace(ELLIPSIS, "".join(next(fresh) for _ in range(len(shape) - len(term) + 1)))


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
    compact = text.replace(" ", "").replace("...", ELLIPSIS)
    if "." in compact:
        raise CheckError("E301", f'einsum "{text}" has a "." outside an ellipsis: the ellipsis '
                         'is three dots, "...", standing for the axes no letter names', span)
    if "->" not in compact:
        raise CheckError("E302", f'einsum "{text}" has no output; write it explicitly after ->, '
                         'as "ij,jk->ik"', span)
    if compact.count("->") > 1:
        raise CheckError("E300", f'einsum "{text}" has more than one ->', span)
    left, output = compact.split("->")
    inputs = left.split(",")
    for term in inputs + [output]:
        if term.count(ELLIPSIS) > 1:
            raise CheckError("E301", f'einsum "{text}" has two ellipses in one term; a term has '
                             "at most one", span)
        bad = next((ch for ch in term if not ch.isalpha() and ch != ELLIPSIS), None)
        if bad is not None:
            raise CheckError("E300", f'einsum "{text}" contains {bad!r}; axes are letters '
                             "(a–z, A–Z, or any alphabet's: α, ж)", span)
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


#: How many distinct letters numpy.einsum can name (a–z, A–Z).
NUMPY_LETTERS = len(string.ascii_letters)


@lru_cache(maxsize=4096)
def numpy_spec(spec: str) -> str:
    """`spec` as numpy.einsum takes it: its letters renamed a–z, A–Z when any is not ASCII
    (numpy.einsum knows no others); a ValueError past 52 distinct letters.

    >>> numpy_spec("αβ,βγ->αγ")
    'ab,bc->ac'
    """
    return spec if spec.isascii() else lettered(spec, limit=NUMPY_LETTERS)


def lettered(spec: str, limit: int | None = None) -> str:
    """`spec` (terms, commas and `->`) with each index symbol renamed a, b, …, z, A, …, Z and then
    the further letters of `letters`, in order of first appearance; a ValueError past `limit`
    distinct symbols."""
    renamed: dict[str, str] = {}
    fresh = letters()
    for ch in spec:
        if ch not in ",->" and ch not in renamed:
            if limit is not None and len(renamed) == limit:
                raise ValueError(f"more than {limit} distinct indices")
            renamed[ch] = next(fresh)
    return "".join(renamed.get(ch, ch) for ch in spec)


def letters() -> Iterator[str]:
    """Axis letters in the order hilbert names new axes: a–z, A–Z, then `_more_letters`."""
    yield from string.ascii_letters
    yield from _more_letters()


@cache
def _more_letters() -> str:
    """Letters past a–z, A–Z (À, Á, …, then Greek, Cyrillic, … and CJK: tens of thousands), for
    einsums over more axes than 52: each a letter to .hb (str.isalpha) and a Python identifier
    on its own, and unchanged by NFKC normalisation (which Python applies to identifiers: no
    two of them ever read as one name)."""
    return "".join(ch for ch in map(chr, range(0xC0, 0x10000))
                   if ch.isalpha() and ch.isidentifier()
                   and unicodedata.normalize("NFKC", ch) == ch)
