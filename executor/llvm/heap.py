"""The C library's heap settled for the arrays compiled code makes and frees at every call.

Compiled code takes its arrays from `malloc` and gives them back with `free` (runtime.py).
glibc serves a block over its mmap threshold (128 KiB at first) with a fresh mapping, and
gives the top of its heap back to the system past its trim threshold (128 KiB at first), so
a call that makes and frees a few blocks of a megabyte pays a page fault for every 4 KiB of
them, every call: the transformer block's train step took 12 ms compiled first, against 4 ms
in a process whose NumPy calls had happened to free large blocks first (glibc raises both
thresholds, up to 32 and 64 MiB, when a mapped block is freed). `settle` sets the thresholds
where glibc's own rule would take them, once, before any compiled code runs, unless the user
set either (MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_, or glibc's tunables). Elsewhere
(another C library, another system) nothing is changed."""

from __future__ import annotations

import ctypes
import functools
import os
import sys

#: mallopt's parameters (malloc.h).
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
#: glibc's ceiling for the mmap threshold it raises itself on 64-bit systems, and the trim
#: threshold it sets beside it (twice the mmap threshold).
MMAP_THRESHOLD = 32 << 20
TRIM_THRESHOLD = 2 * MMAP_THRESHOLD
#: The environment through which a user sets glibc's malloc: then it is left as set.
USER_SETTINGS = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES")


@functools.cache
def settle() -> bool:
    """Set glibc's mmap and trim thresholds (once a process); whether they were set."""
    if not sys.platform.startswith("linux") or any(v in os.environ for v in USER_SETTINGS):
        return False
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018 (glibc's own: another C library is left alone)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and \
        bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
