"""How many bytes a plan, or a run on the host, may hold: HILBERT_MEMORY_LIMIT, or half of RAM
(compiler/plan and the host runtime's loops, compiler/loops.py, both guard with it)."""

from __future__ import annotations

import os
from functools import lru_cache

from . import settings
from .settings import not_understood


def memory_limit() -> int:
    """Bytes a plan may use: HILBERT_MEMORY_LIMIT (e.g. 8G, 500M, 1e9) or half of RAM."""
    text = settings.text("HILBERT_MEMORY_LIMIT")
    if text:
        limit = size_in_bytes(text)
        if limit is None:
            raise not_understood("HILBERT_MEMORY_LIMIT", text,
                                 "a size in bytes such as 8G, 500M, 64K or 1e9")
        return limit
    return _half_of_memory()


def size_in_bytes(text: str) -> int | None:
    """A size written as 8G, 500M, 64K or 1e9, in bytes; None if it is not one (ASCII only:
    float reads other scripts' digits too)."""
    text = text.strip()
    if not text or not text.isascii():
        return None
    scale = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}.get(text[-1].upper(), 1)
    try:
        limit = float(text[:-1] if scale > 1 else text) * scale
    except ValueError:
        return None
    return int(limit) if limit > 0 and limit != float("inf") else None


@lru_cache(maxsize=1)
def _half_of_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2
    except (ValueError, OSError, AttributeError):
        return 8 * 2**30
