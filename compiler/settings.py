"""Every environment setting hilbert reads, in one table, read in one place (`text`), and the
snapshot of them that cache keys carry (`Settings`). Each setting is parsed where it is used,
so a setting that cannot be understood is a coded E600 at the moment it matters (numbers:
ASCII digits only, anything else an E600)."""

from __future__ import annotations

import os
from dataclasses import dataclass

#: Every setting, by variable, and what it says (docs/settings.md lists them for users).
SETTINGS: dict[str, str] = {
    "HILBERT_COMPILE": "when a call's generated code is built: eager (the default), never, "
                       "background, or the call of a signature from which it is built in the "
                       "background",
    "HILBERT_THREADS": "how many threads a large loop nest may use (a whole number, or auto)",
    "HILBERT_NUMBA_HOST": "ops (or einsum) the numba executor runs on the host, comma-separated",
    "HILBERT_MEMORY_LIMIT": "the bytes a plan may use (8G, 500M, 1e9); half of RAM by default",
    "HILBERT_MAX_PROGRAMS": "how many argument signatures a function keeps a program for",
    "HILBERT_CACHE_DIR": "where machine code, Numba's cache and parsed modules are kept",
    "HILBERT_PROGRESS": "1 draws progress bars, 0 hides them; by default, on a terminal or in a "
                        "notebook only",
    "HILBERT_DUMP": "passes after which the IR is printed, comma-separated (inline, share, "
                    "masks, hoist, fuse, windows, and parse and plan)",
    "HILBERT_MATH": "the maths of modules loaded without math=: exact (the default) or fast",
    "HILBERT_VERIFY": "1 verifies the IR after every pass (the test suite sets it)",
    "HILBERT_BENCH_LIFTED": "set by the benchmark suite in the process it starts with an "
                            "OpenBLAS pin lifted: the variables taken out, as JSON",
}

#: The settings that change the code generated for a plan (so are part of its cache key).
CODE_SETTINGS = ("HILBERT_THREADS", "HILBERT_NUMBA_HOST")


def text(variable: str) -> str:
    """The setting `variable` (one of SETTINGS) as written, stripped; "" when unset."""
    assert variable in SETTINGS, f"{variable} is not a setting of compiler/settings.py"
    return os.environ.get(variable, "").strip()


def names(variable: str) -> frozenset[str]:
    """A comma-separated setting as a set of names (HILBERT_DUMP, HILBERT_NUMBA_HOST)."""
    return frozenset(filter(None, (part.strip() for part in text(variable).split(","))))


@dataclass(frozen=True)
class Settings:
    """The text of some settings at one moment: part of a cache key, so that what was made
    under one setting is never served under another."""

    texts: tuple[tuple[str, str], ...]


def current(variables: tuple[str, ...] = CODE_SETTINGS) -> Settings:
    """The settings `variables` (by default those that change generated code) as they are now."""
    return Settings(tuple((v, text(v)) for v in variables))


def whole_number(variable: str, meaning: str, smallest: int = 0) -> int | None:
    """The environment variable `variable` as a whole number ≥ `smallest`, None when it is
    unset or blank, or an ArgumentError (E600) naming it. Only ASCII digits count: `²`, `①`
    or `٣` are not numbers here, though str.isdigit says they are digits.

    >>> os.environ["HILBERT_MAX_PROGRAMS"] = "8"; whole_number("HILBERT_MAX_PROGRAMS", "a count")
    8
    """
    written = text(variable)
    if not written:
        return None
    if written.isascii() and written.isdigit() and int(written) >= smallest:
        return int(written)
    raise not_understood(variable, written, meaning)


def not_understood(variable: str, text: str, meaning: str):
    """The ArgumentError (E600) for a setting `variable`=`text` that is not `meaning`."""
    from ..grammar.errors import ArgumentError
    from ..grammar.source import nowhere

    return ArgumentError("E600", f"{variable}={text!r} is not understood: write {meaning}",
                         nowhere(variable))
