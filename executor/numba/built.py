"""Which programs have their machine code in the disk cache, known without loading Numba: a
marker per program in the private cache directory (compiler/directory.py), named by a hash of
its generated sources and of what their machine code depends on, written once a build has
compiled or loaded them. A process that ends while its program with loops is being built
waits for the build only when no marker says the next process will find the code
(executor/numba/builder.py, Builder.finish)."""

from __future__ import annotations

import contextlib
import functools
import hashlib
from importlib import metadata
from pathlib import Path

import numpy as np

from ...compiler.directory import private_folder

#: The folder of the cache directory that holds the markers (empty files).
FOLDER = "built"


@functools.cache
def _stamp() -> str:
    """What compiled code depends on besides its source, as far as can be read without Numba:
    Numba's and NumPy's versions and the shared kernels' sources."""
    here = Path(__file__).resolve().parent
    kernels = b"".join((here / name).read_bytes() for name in ("kernels.py", "vmath.py"))
    return f"{metadata.version('numba')} {np.__version__} {hashlib.sha256(kernels).hexdigest()}"


def _marker(sources: list[str]) -> Path | None:
    folder = private_folder(FOLDER)
    if folder is None:
        return None
    return folder / hashlib.sha256("\0".join([_stamp(), *sources]).encode()).hexdigest()[:32]


def kept(sources: list[str]) -> bool:
    """Whether a build of these generated sources has been kept in the disk cache."""
    marker = _marker(sources)
    return marker is not None and marker.exists()


def keep(sources: list[str]) -> None:
    """Say that a build of these generated sources is in the disk cache (nothing when it
    cannot be said: the next process then waits for its own build, as before)."""
    marker = _marker(sources)
    if marker is None:
        return
    with contextlib.suppress(OSError):
        marker.touch(mode=0o600)
