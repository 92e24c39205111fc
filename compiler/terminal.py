"""Whether progress lines are drawn on a stream (HILBERT_PROGRESS, else whether it is a
terminal), and how long a wait lasts before one shows: for every layer that draws them (the
compiler's path search, the executor's builds, hilbert's bars in hilbert/progress.py)."""

from __future__ import annotations

from typing import TextIO

from .settings import text

#: The environment variable that forces bars on ("1") or off ("0").
ENVIRONMENT = "HILBERT_PROGRESS"
#: A build (or a path search) shows its line only once it has lasted this long (most are
#: quicker).
BUILD_LINE_DELAY_S = 1.0


def wanted(stream: TextIO) -> bool:
    """Whether to draw a bar on `stream`: as HILBERT_PROGRESS says, else when it is a terminal."""
    setting = text(ENVIRONMENT)
    if setting in ("0", "1"):
        return setting == "1"
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or unusual stream: no bar
        return False
