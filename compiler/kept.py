"""Built entries kept on disk: an entry point inlined, shared, masked and optimised
(compiler/entry.py) is kept as a pickle (compiler/pickles.py), so a new process that loads
the same modules reads it back instead of inlining again (a train block with ∂ costs most of
a warm start to inline). An entry is named by a hash of what building it reads: the
compiler's and the grammar's sources, every module the root module resolved (each by its key
and text), and which entry it is. IR nodes are pickled without their cached hashes, which
depend on the process's hash seed (compiler/ir/__init__.py)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable

from hilbert.compiler import pickles
from hilbert.compiler.entry import Entry
from hilbert.compiler.passes.resolve import Resolved

#: The folder of the cache directory that holds built entries.
FOLDER = "entries"


def kept_entry(resolved: Resolved, which: str, build: Callable[[], Entry]) -> Entry:
    """The entry `which` (a definition's key, or a model member's name) of the modules
    `resolved` holds: read back from the disk cache when this hilbert built it before from the
    same texts, else built now and kept."""
    digest = _digest(resolved, which)
    found = pickles.read(FOLDER, digest, Entry)
    if found is not None:
        return found
    entry = build()
    pickles.write(FOLDER, digest, entry)
    return entry


def _digest(resolved: Resolved, which: str) -> str:
    digest = hashlib.sha256(pickles.stamp("grammar", "compiler").encode())
    digest.update(b"\0" + which.encode("utf-8", "surrogatepass"))
    for key in sorted(resolved.scopes):
        source = resolved.scopes[key].module.syntax.span.source
        for part in (key, source.name, source.text):
            digest.update(b"\0" + part.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()[:32]
