"""Environment settings read as numbers: ASCII digits only, anything else a coded E600."""

from __future__ import annotations

import os


def whole_number(variable: str, meaning: str, smallest: int = 0) -> int | None:
    """The environment variable `variable` as a whole number ≥ `smallest`, None when it is
    unset or blank, or an ArgumentError (E600) naming it. Only ASCII digits count: `²`, `①`
    or `٣` are not numbers here, though str.isdigit says they are digits.

    >>> os.environ["HILBERT_MAX_PROGRAMS"] = "8"; whole_number("HILBERT_MAX_PROGRAMS", "a count")
    8
    """
    text = os.environ.get(variable, "").strip()
    if not text:
        return None
    if text.isascii() and text.isdigit() and int(text) >= smallest:
        return int(text)
    raise not_understood(variable, text, meaning)


def not_understood(variable: str, text: str, meaning: str):
    """The ArgumentError (E600) for a setting `variable`=`text` that is not `meaning`."""
    from hilbert.grammar.errors import ArgumentError
    from hilbert.grammar.source import nowhere

    return ArgumentError("E600", f"{variable}={text!r} is not understood: write {meaning}",
                         nowhere(variable))
