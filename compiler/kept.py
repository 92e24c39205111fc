"""Built entries kept on disk: an entry point inlined, shared, masked and optimised
(compiler/entry.py) is kept as a pickle (compiler/pickles.py), so a new process that loads
the same modules reads it back instead of inlining again (a train block with ∂ costs most of
a warm start to inline). An entry is named by a hash of what building it reads: the
compiler's and the grammar's sources, every module the root module resolved (each by its key
and text), and which entry it is. IR nodes are pickled without their cached hashes, which
depend on the process's hash seed (compiler/ir/__init__.py).

So are an entry's plans for a signature (compiler/driver.py's plan_entry: the derivatives'
ops written as einsums, the passes run again, the shapes and the plan), named by the entry's
name on disk and everything else plan_entry keys them by: a transformer block's train step
spent 0.56 of its 0.7 s warm start there."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import replace

from . import pickles
from .entry import Entry
from .passes.resolve import Resolved

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
    entry = replace(build(), kept_as=digest)
    pickles.write(FOLDER, digest, entry)
    return entry


#: The folder of the cache directory that holds specialised entries (body, shapes, plan).
PLANS = "plans"


def kept_plan(entry: Entry, key: tuple, make: Callable[[], tuple],
              check: Callable[[tuple], None]) -> tuple:
    """What `make` gives for `entry` planned as `key` says (plan_entry's key without the
    entry: a tuple of plain values), read back from disk when this hilbert made it before
    (and then passed to `check`: the memory guard of the time, which `make` applies itself);
    else made now and kept. An entry not kept on disk has its plans made every time."""
    if not entry.kept_as:
        return make()
    digest = hashlib.sha256(f"{entry.kept_as}\0{key!r}".encode()).hexdigest()[:32]
    found = pickles.read(PLANS, digest, tuple)
    if found is not None:
        check(found)
        return found
    made = make()
    pickles.write(PLANS, digest, made)
    return made


def _digest(resolved: Resolved, which: str) -> str:
    digest = hashlib.sha256(pickles.stamp("grammar", "compiler").encode())
    digest.update(b"\0" + which.encode("utf-8", "surrogatepass"))
    for key in sorted(resolved.scopes):
        source = resolved.scopes[key].module.syntax.span.source
        for part in (key, source.name, source.text):
            digest.update(b"\0" + part.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()[:32]
