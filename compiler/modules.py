"""Finds, reads and parses the modules a program opens, never leaving the search path."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path

from hilbert.grammar.errors import NameResolutionError
from hilbert.grammar.parser import parse
from hilbert.grammar.syntax import Module, Open

PRELUDE = "Prelude"


@dataclass(frozen=True, slots=True)
class SourceModule:
    """A parsed module: its key (unique), the name it is qualified by, and where it came from."""

    key: str
    name: str
    syntax: Module
    directory: Path | None = field(compare=False)


def prelude_directory() -> Path:
    """The installed folder of Prelude .hb files."""
    return Path(str(resources.files("hilbert.prelude")))


def _inside(path: Path, root: Path) -> bool:
    try:
        Path(os.path.realpath(path)).relative_to(os.path.realpath(root))
    except ValueError:
        return False
    return True


class Loader:
    """Parses each module once; `open` resolves a module path against the search path."""

    def __init__(self, search_path: list[Path] | None = None):
        self.search_path = [Path(p) for p in (search_path or [])]
        self.modules: dict[str, SourceModule] = {}

    def from_text(self, text: str, name: str, directory: Path | None) -> SourceModule:
        key = name
        module = SourceModule(key, Path(name).stem if name.endswith(".hb") else name,
                              parse(text, name), directory)
        self.modules[key] = module
        return module

    def from_file(self, path: Path) -> SourceModule:
        text = path.read_text(encoding="utf-8")
        return self.from_text(text, str(path), path.parent)

    def open(self, decl: Open, opener: SourceModule) -> SourceModule:
        """The module `decl` names, as seen from `opener`."""
        key = ".".join(decl.path)
        if key in self.modules:
            return self.modules[key]
        for candidate, root in self._candidates(decl.path, opener):
            if candidate.is_file():
                if not _inside(candidate, root):
                    raise NameResolutionError(
                        "E204", f"module {key} resolves to {candidate}, which leads outside "
                        f"the search path {root}", decl.span)
                module = SourceModule(key, decl.path[-1],
                                      parse(_read(candidate, key, decl), _display(candidate)),
                                      candidate.parent)
                self.modules[key] = module
                return module
        searched = ", ".join(str(root) for _, root in self._candidates(decl.path, opener))
        raise NameResolutionError("E203", f"cannot find module {key} (looked in {searched})",
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


def _read(path: Path, key: str, decl: Open) -> str:
    """The text of a module file, or E208 if it cannot be read as UTF-8 text."""
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        why = "it is not UTF-8 text" if isinstance(err, UnicodeDecodeError) else err.strerror
        raise NameResolutionError("E208", f"module {key} is {_display(path)}, which cannot be "
                                  f"read: {why}", decl.span) from None


def _parse_file(path: Path) -> Module:
    """Parse a module file, once per process while the file is unchanged."""
    stat = path.stat()
    return _parse_cached(str(path), stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=256)
def _parse_cached(path: str, mtime_ns: int, size: int) -> Module:
    return parse(Path(path).read_text(encoding="utf-8"), _display(Path(path)))


def _display(path: Path) -> str:
    """A short, stable name for error messages: Prelude files as prelude/X.hb."""
    try:
        return "prelude/" + str(path.relative_to(prelude_directory()))
    except ValueError:
        return str(path)


