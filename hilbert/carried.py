"""Compiling a module again from the texts a pickle carries: which module each `open` gave when
it was first compiled, and a Loader that gives those modules again without reading a file."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from hilbert.compiler.modules import PRELUDE, Loader, SourceModule
from hilbert.compiler.parsed import parse_module
from hilbert.grammar.syntax import Open

if TYPE_CHECKING:
    from .models import ModuleSource


def _opened(module: SourceModule, targets: list[SourceModule]) -> tuple[str, ...]:
    """The key of the module each `open` of `module` gave, in order. `targets` are those
    modules once each, in the order first opened (as resolve keeps them), so each open gave
    the next of them or, opening one again, one it gave before: the one whose path its own
    path ends with (the same path opens the same module)."""
    gave: dict[tuple[str, ...], SourceModule] = {}
    keys: list[str] = []
    fresh = 0
    for decl in (d for d in module.syntax.decls if isinstance(d, Open)):
        target = gave.get(decl.path)
        if target is None:
            new = targets[fresh] if fresh < len(targets) else None
            again = [t for t in targets[:fresh] if _could_open(decl, t)]
            if new is not None and (_could_open(decl, new) or not again):
                target, fresh = new, fresh + 1
            else:
                target = again[0] if again else targets[-1]
        gave[decl.path] = target
        keys.append(target.key)
    return tuple(keys)


def _could_open(decl: Open, module: SourceModule) -> bool:
    """Whether `module`'s file is where `decl`'s path leads (`open A.B` is …/A/B.hb, and
    `open Prelude` is the Prelude's _.hb)."""
    path = decl.path[1:] if decl.path[0] == PRELUDE else decl.path
    tail = path or ("_",)
    return any(Path(where).with_suffix("").parts[-len(tail):] == tail
               for where in (module.label, module.key))


class _CarriedLoader(Loader):
    """A Loader that reads no file: its modules are those a ModuleSource carries, and each
    `open` gives the module it gave when the source was first compiled."""

    def __init__(self, source: ModuleSource):
        super().__init__()
        self.opens: dict[str, tuple[str, ...]] = {}
        for t in source.texts:
            directory = None if t.directory is None else Path(t.directory)
            self.modules[t.key] = SourceModule(t.key, t.name, parse_module(t.text, t.label), directory,
                                               t.label)
            self.opens[t.key] = t.opens

    def open(self, decl: Open, opener: SourceModule) -> SourceModule:
        opens = [d for d in opener.syntax.decls if isinstance(d, Open)]
        position = next(i for i, d in enumerate(opens) if d is decl)
        return self.modules[self.opens[opener.key][position]]
