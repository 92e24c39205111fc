"""Names that look alike: a name's skeleton, compared as Unicode's confusable check (UTS #39)
and Rust's `confusable_idents` lint compare identifiers."""

from __future__ import annotations

import unicodedata

#: Letters of other scripts drawn exactly like a Latin letter in common fonts: the Cyrillic
#: and Greek rows of UTS #39's confusables table that map to one ASCII letter. (Greek letters
#: a mathematician tells apart, such as α, ι or κ, are left out: `α` beside `a` is on purpose.)
_LOOK_ALIKES = str.maketrans({
    # Cyrillic, small and capital
    "а": "a", "е": "e", "і": "i", "ј": "j", "о": "o", "р": "p", "с": "c", "ѕ": "s", "у": "y",
    "х": "x", "ԁ": "d", "ԛ": "q", "ԝ": "w", "һ": "h", "ӏ": "l",
    "А": "A", "В": "B", "Е": "E", "І": "I", "Ј": "J", "К": "K", "М": "M", "Н": "H", "О": "O",
    "Р": "P", "С": "C", "Ѕ": "S", "Т": "T", "Х": "X", "Ү": "Y", "Ԛ": "Q", "Ԝ": "W",
    # Greek capitals, and the small letters drawn like Latin ones
    "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M", "Ν": "N",
    "Ο": "O", "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X", "ο": "o", "ν": "v",
})


def skeleton(name: str) -> str:
    """What `name` looks like: compatibility forms folded (NFKC, so `ｘ` is `x`) and look-alike
    letters replaced by the Latin letter they are drawn as. Two different names with one
    skeleton cannot be told apart on the page."""
    return unicodedata.normalize("NFKC", name).translate(_LOOK_ALIKES)


def spelled(name: str) -> str:
    """`name`, followed by the code points of its non-ASCII characters, for a message."""
    if name.isascii():
        return name
    points = ", ".join(f"U+{ord(c):04X} {unicodedata.name(c, 'unnamed')}"
                       for c in dict.fromkeys(name) if not c.isascii())
    return f"{name} ({points})"
