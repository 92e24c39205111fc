"""What a warm process needs of a compiled function without lowering it again: a record, kept in
the disk cache under its loop IR, of what lowering it told (its results' and raises' layout,
its parts' symbols, the shared kernels it calls) and where each part's object code is kept.

Why: a process whose cache holds a function's machine code still lowered its loop IR to LLVM
IR (and printed it) only to find the key the machine code is kept under: the transformer
block's step, 0.8 s of lowering and 0.3 s of printing in every warm process, most of its first
call. The record is found by a description of everything the LLVM IR follows from (the loop
IR, the parameters' types, the dtype, the layout, threads, the optimisation level and rounds:
`llvm.lowered` writes it) and the back end's sources (kept.described), so the same record
serves only the same IR. It is JSON (numbers and names, nothing that runs), read and written
through the cache's sealed files as the object code is (kept.py); one that cannot be read as
this module writes it is ignored, and the function is lowered."""

from __future__ import annotations

import json
import re

from . import compile, kept
from .lower import Result

#: A record's file in the cache's folder of machine code (kept.py), beside the object files.
SUFFIX = ".record"
#: The names a record may give: an object file's (kept.key's hash), a part's symbols.
_NAME = re.compile(r"[0-9a-f]{32}")
_SYMBOL = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")


def _name(description: str, level: int) -> str:
    target, cpu, features = compile._host()
    return kept.described(f"record {description}", level, (target.triple, cpu, features))


def read(description: str, level: int) -> dict | None:
    """The record kept for `description` (at `level`), or None: results (lower.Result), raises
    ((class name, argument types)), parts (each its kept object code's name and the symbols it
    defines), kernels (the shared kernels' symbols it calls)."""
    data = kept.read(_name(description, level), SUFFIX)
    if data is None:
        return None
    try:
        found = json.loads(data.decode())
        if not all(_NAME.fullmatch(name) and all(_SYMBOL.fullmatch(s) for s in symbols)
                   for name, symbols in found["parts"]):
            return None  # (names only ours make: never a path elsewhere, whatever the file)
        return {"results": [Result(str(k), str(d), int(r), int(i))
                            for k, d, r, i in found["results"]],
                "raises": [(str(n), tuple(str(t) for t in ts)) for n, ts in found["raises"]],
                "parts": [(str(name), tuple(str(s) for s in symbols))
                          for name, symbols in found["parts"]],
                "kernels": tuple(str(k) for k in found["kernels"])}
    except (ValueError, KeyError, TypeError):
        return None


def write(description: str, level: int, results: list, raises: list,
          parts: list[tuple[str, tuple[str, ...]]], kernels: tuple[str, ...]) -> None:
    """The record of a function compiled from `description` at `level` (`read`'s fields)."""
    record = {"results": [[r.kind, r.dtype, r.rank, r.index] for r in results],
              "raises": [[name, list(types)] for name, types in raises],
              "parts": [[name, list(symbols)] for name, symbols in parts],
              "kernels": list(kernels)}
    kept.write(_name(description, level), json.dumps(record, sort_keys=True).encode(), SUFFIX)
