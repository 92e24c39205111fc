"""Finds, reads and parses the modules a program opens, never leaving the search path."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path

from ..grammar.errors import NameResolutionError
from ..grammar.syntax import Definition, Module, Open
from .parsed import parse_module

PRELUDE = "Prelude"


@dataclass(frozen=True, slots=True)
class SourceModule:
    """A parsed module: its key (unique: a file's real path, or a text's name), the name it is
    qualified by (`Util` in `Util.f`), its label in messages, and where it came from."""

    key: str
    name: str
    syntax: Module
    directory: Path | None = field(compare=False)
    label: str = field(default="", compare=False)

    def __str__(self) -> str:
        return self.label or self.name


def prelude_directory() -> Path:
    """The installed folder of Prelude .hb files."""
    return Path(str(resources.files("hilbert.prelude")))


def _inside(path: Path, root: Path) -> bool:
    try:
        Path(os.path.realpath(path)).relative_to(os.path.realpath(root))
    except ValueError:
        return False
    return True


def search_paths(search_path: str | Path | Iterable[str | Path] | None) -> list[Path]:
    """The search path as a list of folders: one folder (a str or Path) or several."""
    if search_path is None:
        return []
    if isinstance(search_path, (str, os.PathLike)):
        return [Path(search_path)]
    return [Path(p) for p in search_path]


class Loader:
    """Parses each module file once, keyed by its real path (two files both called Util.hb are
    two modules; one file opened by two names is one); `open` resolves a module path against
    the opening file's folder, then the search path."""

    def __init__(self, search_path: str | Path | Iterable[str | Path] | None = None):
        self.search_path = search_paths(search_path)
        self.modules: dict[str, SourceModule] = {}

    def from_text(self, text: str, name: str, directory: Path | None,
                  file: Path | None = None) -> SourceModule:
        """A module from text: `file` is where it was read from, if anywhere (so that a module
        opening that file again is this module)."""
        key = os.path.realpath(file) if file is not None else name
        module = SourceModule(key, Path(name).stem if name.endswith(".hb") else name,
                              parse_module(text, name), directory, name)
        self.modules[key] = module
        return module

    def open(self, decl: Open, opener: SourceModule) -> SourceModule:
        """The module `decl` names, as seen from `opener`."""
        dotted = ".".join(decl.path)
        for candidate, root in self._candidates(decl.path, opener):
            if candidate.is_file():
                if not _inside(candidate, root):
                    raise NameResolutionError(
                        "E204", f"module {dotted} resolves to {candidate}, which leads outside "
                        f"the search path {root}", decl.span)
                key = os.path.realpath(candidate)
                if key not in self.modules:
                    label = _display(candidate)
                    self.modules[key] = SourceModule(
                        key, decl.path[-1], parse_module(_read(candidate, dotted, decl), label),
                        candidate.parent, label)
                return self.modules[key]
        searched = ", ".join(str(root) for _, root in self._candidates(decl.path, opener))
        raise NameResolutionError("E203", f"cannot find module {dotted} (looked in {searched})",
                                  decl.span)

    def _candidates(self, path: tuple[str, ...], opener: SourceModule):
        if path[0] == PRELUDE:
            root = prelude_directory()
            yield root.joinpath(*path[1:]).with_suffix(".hb") if len(path) > 1 else root / "_.hb", root
            return
        relative = Path(*path).with_suffix(".hb")
        roots = ([opener.directory] if opener.directory else []) + self.search_path
        for root in roots:
            yield root / relative, root


@lru_cache(maxsize=1)
def prelude_index() -> dict[str, tuple[str, ...]]:
    """Every name the Prelude defines, and the Prelude modules that define it (read once, and
    only when a message needs it: an unknown name that a Prelude module has)."""
    index: dict[str, list[str]] = {}
    root = prelude_directory()
    for path in sorted(root.rglob("*.hb")):
        dotted = ".".join((PRELUDE, *path.relative_to(root).with_suffix("").parts))
        for decl in parse_module(path.read_text(encoding="utf-8"), _display(path)).decls:
            if isinstance(decl, Definition):
                index.setdefault(decl.name, []).append(dotted)
    return {name: tuple(modules) for name, modules in index.items()}


def _read(path: Path, dotted: str, decl: Open) -> str:
    """The text of a module file, or E208 if it cannot be read as UTF-8 text."""
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        why = "it is not UTF-8 text" if isinstance(err, UnicodeDecodeError) else err.strerror
        raise NameResolutionError("E208", f"module {dotted} is {_display(path)}, which cannot be "
                                  f"read: {why}", decl.span) from None


def _display(path: Path) -> str:
    """A short, stable name for error messages: Prelude files as prelude/X.hb."""
    try:
        return "prelude/" + str(path.relative_to(prelude_directory()))
    except ValueError:
        return str(path)


