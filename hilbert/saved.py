"""Reading a model back from the .npz file `save` wrote (`Model.load` and `model.load`): the
archive, the model's name, its arrays' kinds and shapes and the memory they need are checked
before any weight is read."""

from __future__ import annotations

import os
import threading
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from hilbert.compiler.models import CompiledModel, WeightDecl
from hilbert.grammar.errors import ModelError

from .weights import _check_shape, _guard_memory, _private, _shape

if TYPE_CHECKING:
    from .models import Learner


class _Load:
    """`Model.load(path)` makes a new model from a file `save` wrote; `model.load(path)` reads
    the file into that model (arguments and weights both) and returns it."""

    def __get__(self, instance: Learner | None, owner: type[Learner]):
        def load(path: str | os.PathLike) -> Learner:
            return _read(owner, path, instance)

        load.__doc__ = _Load.__doc__
        return load


# -- reading a saved model ---------------------------------------------------------------

#: The array kinds a saved argument or weight may have: booleans, integers and floats, read as
#: float64 like arguments from Python. Complex numbers, text, dates and objects are refused.
_NUMBER_KINDS = "biuf"
#: How a message names the kinds refused (NumPy's dtype.kind letters).
_KIND_WORDS = {"c": "complex numbers", "U": "text", "S": "bytes", "O": "Python objects",
               "M": "dates", "m": "time spans", "V": "records"}


def _read(cls: type[Learner], path, into: Learner | None) -> Learner:
    """The model saved at `path`, read into `into` (or a new instance). Everything is checked
    (the archive, the model's name, which arrays there are, their kinds and shapes, the
    memory they need) before any weight is read, and before `into` changes."""
    model = cls._model
    where = _file_name(model, path, "load from")
    with _reading(model, where):
        with zipfile.ZipFile(where) as archive:
            saved = _SavedModel(model, where, archive)
            dtype = saved.dtype()
            arguments = {p: _private(saved.read(f"argument.{p}"), dtype) for p in model.params}
            values = tuple(arguments[p] for p in model.params)
            shapes = {w.name: _shape(model, w, values) for w in model.weights}
            _guard_memory(model, {f"weight {n}": s for n, s in shapes.items()},
                          f"loading {model.name} from {where}", dtype)
            weights = {w.name: _private(saved.weight(w, shapes[w.name]), dtype)
                       for w in model.weights}
    target = into if into is not None else cls.__new__(cls)
    if into is None:
        target._lock = threading.RLock()
    with target._lock:
        target._arguments, target._weights, target._dtype = arguments, weights, dtype
    return target


def _file_name(model: CompiledModel, path, doing: str) -> Path:
    if isinstance(path, (str, os.PathLike)):
        try:
            return Path(path)
        except TypeError:  # a PathLike that gives bytes
            pass
    raise ModelError("E801", f"cannot {doing} {path!r:.60}: give a file name (a str or a "
                     "pathlib.Path)", model.span)


@contextmanager
def _reading(model: CompiledModel, path: Path) -> Iterator[None]:
    """What can go wrong reading a file, as E801: it is missing, a directory, unreadable, not
    a zip archive, truncated or corrupt, or holds arrays NumPy cannot read without pickles."""
    try:
        yield
    except (OSError, EOFError, ValueError, zipfile.BadZipFile, zlib.error,
            NotImplementedError, RuntimeError) as err:
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        if isinstance(err, zipfile.BadZipFile):
            reason = f"it is not a complete .npz archive ({err})"
        raise ModelError("E801", f"cannot read a saved {model.name} from {path}: {reason}",
                         model.span) from None


class _SavedModel:
    """An archive `save` wrote, checked from its arrays' headers: it names `model`, holds
    exactly its arguments and weights, and every one of them is numbers (no data read yet)."""

    def __init__(self, model: CompiledModel, path: Path, archive: zipfile.ZipFile):
        self.model = model
        self.path = path
        self.archive = archive
        self.members = {n.removesuffix(".npy"): n for n in archive.namelist() if n.endswith(".npy")}
        self.headers = {key: _header(archive, member) for key, member in self.members.items()}
        self.check_name()
        self.check_section("argument", model.params)
        self.check_section("weight", [w.name for w in model.weights])
        _guard_memory(model, {f"argument {k.split('.', 1)[1]}": self.headers[k][0]
                              for k in self.headers if k.startswith("argument.")},
                      f"loading {model.name} from {path}")

    def error(self, message: str) -> ModelError:
        return ModelError("E801", f"{self.path} {message}", self.model.span)

    def check_name(self) -> None:
        shape, dtype = self.headers.get("model", (None, None))
        if shape != () or dtype is None or dtype.kind != "U":
            raise self.error("is not a saved model: it has no model name (save writes one)")
        saved = str(self.read("model")[()])
        if saved != self.model.name:
            raise self.error(f"holds a saved {saved:.60}, not a {self.model.name}")

    def check_section(self, prefix: str, names) -> None:
        found = [k.split(".", 1)[1] for k in self.headers if k.startswith(prefix + ".")]
        if set(found) != set(names):
            raise self.error(f"has the {prefix}s {', '.join(sorted(found)) or 'none'}, but a "
                             f"{self.model.name} has {', '.join(names) or 'none'}")
        for name in found:
            dtype = self.headers[f"{prefix}.{name}"][1]
            if dtype.kind not in _NUMBER_KINDS:
                raise self.error(f"has {prefix} {name} holding {_KIND_WORDS.get(dtype.kind, 'data')} "
                                 f"({dtype}), but arguments and weights are real numbers "
                                 "(booleans, integers or floats)")

    def dtype(self) -> str:
        """The saved model's dtype: float32 when every weight was saved as float32 (a model
        made with dtype=np.float32), else float64."""
        kinds = [self.headers[k][1] for k in self.headers if k.startswith("weight.")]
        return "float32" if kinds and all(d == np.float32 for d in kinds) else "float64"

    def weight(self, w: WeightDecl, shape: tuple[int, ...]) -> np.ndarray:
        """Weight `w`, once its saved shape is the one its declaration gives."""
        _check_shape(self.model, w, shape, self.headers[f"weight.{w.name}"][0], f"in {self.path}")
        return self.read(f"weight.{w.name}")

    def read(self, key: str) -> np.ndarray:
        with self.archive.open(self.members[key]) as stream:
            return np.lib.format.read_array(stream, allow_pickle=False)


def _header(archive: zipfile.ZipFile, member: str) -> tuple[tuple[int, ...], np.dtype]:
    with archive.open(member) as stream:
        return npy_header(stream)


def npy_header(stream) -> tuple[tuple[int, ...], np.dtype]:
    """The shape and type the .npy header at the start of `stream` declares, read without
    reading the data (so a file that claims a huge array costs nothing); ValueError if the
    stream is not .npy in a version NumPy writes for numbers (1.0 or 2.0).

    >>> with open("a.npy", "rb") as f: npy_header(f)     # doctest: +SKIP
    ((2, 3), dtype('float64'))
    """
    fmt = np.lib.format
    version = fmt.read_magic(stream)
    if version not in ((1, 0), (2, 0)):
        raise ValueError(f".npy format version {version[0]}.{version[1]} is not one for numbers")
    read = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
    shape, _, dtype = read(stream)
    return tuple(shape), dtype
