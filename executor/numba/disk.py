"""Numba's cache of hilbert's shared kernels, kept in the private
cache directory (compiler/directory.py, which checks it before anything in it is trusted).

Numba's cache files are pickles: they are read and written only through that directory's one
checked reader and writer (read_kept, write_kept), so a file someone else could have written,
or that the user's key did not seal, is never unpickled. A directory that cannot be used costs a
coded warning and an in-memory compilation, never a failure.
"""

from __future__ import annotations

import io
import pickle
import sys
from pathlib import Path

from numba.core import caching
from numba.core.dispatcher import Dispatcher

from ...compiler.directory import (  # noqa: F401 (the cache directory, as this module has always given it)
    ENVIRONMENT,
    NUMBA_FOLDER,
    cache_dir,
    private_dir,
    read_kept,
    replacing,
    untrusted,
    untrusted_folder,
    unusable,
    write_kept,
)


def keep(dispatcher, stamp: str):
    """`dispatcher` with its compiled code kept in the private cache directory (under `stamp`, a
    hash of everything its code depends on), or left in memory when there is none or under
    NUMBA_DISABLE_JIT. Returns the dispatcher."""
    if isinstance(dispatcher, Dispatcher):
        cache = cache_for(dispatcher.py_func, stamp)
        if cache is not None:
            dispatcher._cache = cache
    return dispatcher


def cache_for(function, stamp: str):
    """A disk cache for what is compiled from `function` (a dispatcher's, or a C function's:
    native.c_function), or None when there is no private cache directory or Numba's cache
    interface is not the one known."""
    directory = private_dir()
    if directory is None:
        return None
    try:
        return HilbertCache(function, directory / NUMBA_FOLDER, stamp)
    except (AttributeError, TypeError) as err:  # Numba's cache interface is not the one known
        unusable(directory, RuntimeError(f"this Numba's cache cannot be used: {err!r}"))
        return None


class _Locator(caching._CacheLocator):
    """Numba's files for one of hilbert's functions: in `folder`, fresh while `stamp` is (Numba
    itself would choose NUMBA_CACHE_DIR or the source file's own __pycache__)."""

    def __init__(self, py_func, folder: Path, stamp: str):
        self._py_file = py_func.__code__.co_filename  # (Numba's warnings name it)
        self._lineno = py_func.__code__.co_firstlineno
        self._folder = folder
        self._stamp = stamp

    def ensure_cache_path(self) -> None:
        """Called before every write: the folder must still be private."""
        why = untrusted(self._folder.parent) or untrusted_folder(self._folder)
        if why is not None:
            raise PermissionError(why)

    def get_cache_path(self) -> str:
        return str(self._folder)

    def get_source_stamp(self) -> str:
        return self._stamp

    def get_disambiguator(self) -> str:
        return str(self._lineno)


class _Impl(caching.CompileResultCacheImpl):
    """Numba's compile-result cache with hilbert's locator (CacheImpl.__init__ would search
    Numba's own locators, and NUMBA_CACHE_LOCATOR_CLASSES, instead)."""

    def __init__(self, py_func, locator: _Locator):
        self._lineno = py_func.__code__.co_firstlineno
        self._locator = locator
        module = Path(py_func.__code__.co_filename).stem
        self._filename_base = self.get_filename_base(f"{module}.{py_func.__qualname__}",
                                                     getattr(sys, "abiflags", ""))


class _Files(caching.IndexDataCacheFile):
    """Numba's index and code files, in Numba's layout (the index: Numba's version, then its
    source stamp and entries), read and written through the cache directory's checked reader
    and writer: a file someone else could have written is removed unread (W902) and, as if
    it were missing, compiled afresh and written anew."""

    def _load_index(self):
        data = read_kept(Path(self._index_path))
        if data is None:
            return {}
        stream = io.BytesIO(data)
        if pickle.load(stream) != self._version:  # noqa: S301 (sealed: written by hilbert)
            return {}
        stamp, overloads = pickle.loads(stream.read())  # noqa: S301 (as above)
        return overloads if stamp == self._source_stamp else {}

    def _save_index(self, overloads):
        version = pickle.dumps(self._version, protocol=-1)
        write_kept(Path(self._index_path), version + self._dump((self._source_stamp, overloads)))

    def _load_data(self, name):
        path = self._data_path(name)
        data = read_kept(Path(path))
        if data is None:
            raise FileNotFoundError(path)  # (Numba's load: no entry, compiled afresh)
        return pickle.loads(data)  # noqa: S301 (sealed: written by hilbert)

    def _save_data(self, name, data):
        write_kept(Path(self._data_path(name)), self._dump(data))


class HilbertCache(caching.Cache):
    """Numba's per-function disk cache, kept in hilbert's private folder. A cache entry that
    cannot be read is replaced (W902) so the next process starts warm; a write that fails turns
    the cache off for the function (W901). Errors from anything but the cache are not caught."""

    def __init__(self, py_func, folder: Path, stamp: str):
        # (the attributes Cache.__init__ sets, with hilbert's locator and files)
        self._name = repr(py_func)
        self._py_func = py_func
        self._impl = _Impl(py_func, _Locator(py_func, folder, stamp))
        self._cache_path = str(folder)
        self._cache_file = _Files(self._cache_path, self._impl.filename_base, stamp)
        self.enable()

    def load_overload(self, sig, target_context):
        target_context.refresh()  # (outside the guard below: a failure here is no entry's fault)
        try:
            return super().load_overload(sig, target_context)
        except Exception as err:  # noqa: BLE001 (all of it reads or rebuilds one cache entry)
            replacing(self._cache_file._index_path, f"it could not be read: {err!r}")
            try:
                self._cache_file.flush()  # an empty index: the entry is compiled and saved anew
            except OSError as again:
                unusable(Path(self._cache_path), again)
                self.disable()
            return None

    def save_overload(self, sig, data):
        try:
            super().save_overload(sig, data)
        except OSError as err:
            unusable(Path(self._cache_path), err)
            self.disable()
