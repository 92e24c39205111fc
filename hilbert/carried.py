"""Compiling a module again from the texts a pickle carries: which module each `open` gave when
it was first compiled, and a Loader that gives those modules again without reading a file."""

from __future__ import annotations

import dataclasses
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path

from hilbert.compiler.driver import CompiledModule, compile_module
from hilbert.compiler.modules import PRELUDE, Loader, SourceModule
from hilbert.compiler.parsed import parse_module
from hilbert.grammar.syntax import Open


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


# -- a compiled module's source, as pickles carry it ------------------------------------------

@dataclass(frozen=True)
class CarriedText:
    """One module of a compiled module, as a pickle carries it: its key (a file's real path,
    or a text's name), the name it is qualified by, its label in messages (the name it was
    parsed under), its folder, its text, and the key of the module each of its `open`s gave,
    in order."""

    key: str
    name: str
    label: str
    directory: str | None
    text: str
    opens: tuple[str, ...]


@dataclass(frozen=True)
class ModuleSource:
    """Everything a compiled module was made from: how messages name it, its root module's
    key, and the text of every module it was compiled from (the Prelude's included), with the
    module each `open` gave. Compiling it again reads no file and searches no path, so it
    gives the same module in any process, wherever its files are."""

    key: str
    root: str
    texts: tuple[CarriedText, ...]
    exported: tuple[str, ...]


#: Compiled modules by the source they were made from, so that one process compiles a source
#: once however many pickles of it it loads (weak: a module nothing uses any more is not kept);
#: the lock also guards hilbert/models.py's classes by source.
_COMPILED: weakref.WeakValueDictionary[ModuleSource, CompiledModule] = weakref.WeakValueDictionary()
_SOURCES_LOCK = threading.Lock()


def module_source(compiled: CompiledModule) -> ModuleSource:
    """The source of `compiled`: the text of its root module and of every module it opened,
    however they were found (next to a file, on a search path, in the Prelude).

    >>> source = module_source(hilbert.load("examples/Perceptron.hb")._compiled)  # doctest: +SKIP
    >>> [t.label for t in source.texts]                                          # doctest: +SKIP
    ['examples/Perceptron.hb', 'prelude/Networks.hb']
    """
    scopes = list(compiled.resolved.scopes.values())  # the root first: resolve starts there
    texts = tuple(CarriedText(
        s.module.key, s.module.name, s.module.label,
        None if s.module.directory is None else str(s.module.directory),
        s.module.syntax.span.source.text, _opened(s.module, [o.module for o in s.opened]))
        for s in scopes)
    source = ModuleSource(compiled.key, scopes[0].module.key, texts, compiled.exported)
    with _SOURCES_LOCK:  # compiling it again in this process gives this module
        _COMPILED.setdefault(source, compiled)
    return source


def compiled_from(source: ModuleSource) -> CompiledModule:
    """`source` compiled (once per process: a source compiled already is given again)."""
    with _SOURCES_LOCK:
        compiled = _COMPILED.get(source)
        if compiled is None:
            loader = _CarriedLoader(source)
            compiled = dataclasses.replace(compile_module(loader, loader.modules[source.root]),
                                           key=source.key, exported=source.exported)
            _COMPILED[source] = compiled
    return compiled
