"""Security: `open` never leaves the search path, no .hb text can run Python, and nothing in
the disk cache runs unless only the user could have written it (docs/security.md).

Nothing is eval'ed from user text; code generated for the compiled executor is built from
validated identifiers only. These tests try the obvious attacks and prove they fail
harmlessly: each ends in a HilbertError (or an ordinary result) and leaves no trace.
"""

import hashlib
import hmac
import os
import pickle
import stat
import subprocess
import warnings

import numba
import numpy as np
import pytest
import test_cache
from conftest import EXECUTORS
from hilbert.compiler import directory as private
from hilbert.executor.numba import disk
from test_cache import copy_of, files, run_cached

import hilbert

primed = test_cache.primed  # (the fixture: a cache directory after one cold process)


@pytest.fixture
def sentinel(tmp_path, monkeypatch):
    """A file that an attack would create; the tests assert it never appears. While a test
    runs, os.system and subprocess refuse to start anything, so an attack fails loudly."""
    monkeypatch.chdir(tmp_path)

    def refuse(*args, **kwargs):
        raise AssertionError(f"an attempt to run a command: {args!r}")

    monkeypatch.setattr(os, "system", refuse)
    monkeypatch.setattr(os, "popen", refuse)
    monkeypatch.setattr(subprocess, "Popen", refuse)
    path = tmp_path / "PWNED"
    yield path
    assert not path.exists()


# open cannot leave the search path


@pytest.fixture
def tree(tmp_path):
    """project/ (the search path) and secret/ beside it, outside it."""
    project, secret = tmp_path / "project", tmp_path / "secret"
    project.mkdir()
    secret.mkdir()
    (secret / "Secret.hb").write_text("def secret(x) ≔ 42 · x\n", encoding="utf-8")
    (secret / "Inner").mkdir()
    (secret / "Inner" / "Deep.hb").write_text("def deep(x) ≔ x\n", encoding="utf-8")
    return project, secret


def test_a_symlinked_file_out_of_the_search_path_is_refused(tree):
    project, secret = tree
    (project / "Secret.hb").symlink_to(secret / "Secret.hb")
    main = project / "Main.hb"
    main.write_text("open Secret\nfn f(x) ↦ secret(x)\n", encoding="utf-8")
    with pytest.raises(hilbert.NameResolutionError) as raised:
        hilbert.load(main)
    assert raised.value.code == "E204" and (raised.value.span.line, raised.value.span.column) == (1, 1)


def test_a_symlinked_directory_out_of_the_search_path_is_refused(tree):
    project, secret = tree
    (project / "Linked").symlink_to(secret / "Inner", target_is_directory=True)
    main = project / "Main.hb"
    main.write_text("open Linked.Deep\nfn f(x) ↦ deep(x)\n", encoding="utf-8")
    with pytest.raises(hilbert.NameResolutionError) as raised:
        hilbert.load(main)
    assert raised.value.code == "E204"


def test_a_symlink_on_the_extra_search_path_is_refused(tree, tmp_path):
    project, secret = tree
    library = tmp_path / "library"
    library.mkdir()
    (library / "Secret.hb").symlink_to(secret / "Secret.hb")
    main = project / "Main.hb"
    main.write_text("open Secret\nfn f(x) ↦ secret(x)\n", encoding="utf-8")
    with pytest.raises(hilbert.NameResolutionError) as raised:
        hilbert.load(main, search_path=[library])
    assert raised.value.code == "E204"


def test_symlinks_inside_the_search_path_are_fine(tree):
    project, _ = tree
    (project / "Real.hb").write_text("def real(x) ≔ x + 1\n", encoding="utf-8")
    (project / "Alias.hb").symlink_to(project / "Real.hb")
    main = project / "Main.hb"
    main.write_text("open Alias\nfn f(x) ↦ real(x)\n", encoding="utf-8")
    assert hilbert.load(main).f(1.0) == 2.0


@pytest.mark.parametrize("path", ["..secret.Secret", "../secret/Secret", "/etc/passwd",
                                  "Secret/../../x", "~.secret", "secret.*", "C:.Secret"])
def test_paths_that_leave_cannot_even_be_spelled(tree, path):
    project, _ = tree
    main = project / "Main.hb"
    main.write_text(f"open {path}\nfn f(x) ↦ x\n", encoding="utf-8")
    with pytest.raises(hilbert.ParseError) as raised:
        hilbert.load(main)
    assert raised.value.code == "E100"


@pytest.mark.parametrize("name", ["..", "../secret", "/etc/passwd", "os.path..x", "a/b",
                                  "Prelude/../../etc", "Prelude.\x00"])
def test_hilbert_open_refuses_paths(name):
    with pytest.raises(hilbert.HilbertError) as raised:
        hilbert.open(name)
    assert raised.value.code == "E204"


def test_open_of_a_python_module_name_finds_no_python():
    for name in ("os", "sys", "Prelude.os", "subprocess"):
        with pytest.raises(hilbert.NameResolutionError) as raised:
            hilbert.compile_source(f"open {name}\nfn f(x) ↦ x")
        assert raised.value.code == "E203"


# No .hb text runs Python


INJECTIONS = [
    # einsum specifications carrying Python
    'fn f(x) ↦ einsum("__import__(\'os\').system(\'touch PWNED\')", x)',
    'fn f(x) ↦ einsum("i->i\'); __import__(\'os\').system(\'touch PWNED\'); (\'", x)',
    'fn f(x) ↦ einsum("i->i" + __import__("os").system("touch PWNED"), x)',
    'fn f(x) ↦ einsum("i->i\\"); open(\'PWNED\', \'w\'); (\\"", x)',
    'fn f(x) ↦ einsum("i->i\n__import__(\'os\').system(\'touch PWNED\')", x)',
    'fn f(x) ↦ einsum("i->{__import__(\'os\').system(\'touch PWNED\')}", x)',
    'fn f(x) ↦ einsum("i->i#", x) \n# __import__("os").system("touch PWNED")',
    # identifiers and calls that look like Python
    'fn f(x) ↦ __import__("os").system("touch PWNED")',
    'fn f(x) ↦ os.system("touch PWNED")',
    'fn f(x) ↦ eval("open(\'PWNED\', \'w\')")',
    'fn f(x) ↦ exec("open(\'PWNED\', \'w\')")',
    'fn f(x) ↦ open("PWNED")',
    'fn f(x) ↦ x.__class__.__bases__[0].__subclasses__()',
    'fn f(x) ↦ getattr(x, "__class__")',
    "fn f(x) ↦ x; import os; os.system('touch PWNED')",
    'fn f(x) ↦ x\nimport os\nos.system("touch PWNED")',
    'fn f(x) ↦ (lambda: __import__("os").system("touch PWNED"))()',
    'fn f(x) ↦ x # ")\n__import__("os").system("touch PWNED")',
    "fn f(x) ↦ x\\\n__import__('os')",
    'fn f(x) ↦ max(x, __import__("os"))',
    'open os\nfn f(x) ↦ system("touch PWNED")',
    'model M(a) : Learner { weight w : Tensor[__import__("os").system("touch PWNED")] from 0 }',
    'model M(a) : Learner { weight w : Tensor[1] from system("touch PWNED") }',
]


@pytest.mark.parametrize("text", INJECTIONS)
def test_python_in_hb_text_fails_harmlessly(sentinel, text):
    with pytest.raises(hilbert.HilbertError) as raised:
        module = hilbert.compile_source(text)
        module.function("f")(np.ones(2))  # only reached if the text compiled
    assert raised.value.code.startswith(("E1", "E2", "E3", "E8"))
    assert not sentinel.exists()


PYTHONIC_NAMES = """
def __import__(os) ≔ os + 1
def system(command) ≔ command · 2
def eval(exec) ≔ exec − 1
def builtins(input, compile, globals) ≔ input + compile + globals
def __class__(__init__) ≔ __init__
def print(x) ≔ x
def np(K, steps) ≔ K + steps
def ι(α, βeta) ≔ α · βeta
fn run(os, sys, exec, self, cls, args, kwargs) ↦
  __import__(os) + system(sys) + eval(exec) + builtins(self, cls, args)
  + __class__(os) + print(sys) + np(args, kwargs) + ι(os, sys)
fn loop(t, print, exec) ↦ spin(t, print, exec)
def spin(t, print, exec) ≔ if t = 0 then print else spin(t − 1, print + exec, exec)
"""


@pytest.mark.parametrize("executor", EXECUTORS)
def test_identifiers_that_are_python_builtins_are_just_names(sentinel, executor):
    mod = hilbert.compile_source(PYTHONIC_NAMES, executor=executor)
    args = (1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0)
    os_, sys_, exec_, self_, cls, args_, kwargs = args
    expected = ((os_ + 1) + sys_ * 2 + (exec_ - 1) + (self_ + cls + args_)
                + os_ + sys_ + (args_ + kwargs) + os_ * sys_)
    assert mod.run(*args) == expected
    assert mod.run(1.0, 2.0, 3.0, 4.0, cls=5.0, args=6.0, kwargs=7.0) == expected
    np.testing.assert_array_equal(mod.loop(3, np.zeros(2), np.ones(2)), [3.0, 3.0])


@pytest.mark.parametrize("executor", EXECUTORS)
def test_parameters_named_like_python_keywords(sentinel, executor):
    mod = hilbert.compile_source("""
def lambda(class, None, True) ≔ class + None + True
fn f(import, return, yield, await) ↦ lambda(import, return, yield) · await
def spin(t, lambda, class) ≔ if t = 0 then lambda else spin(t − 1, lambda + class, class)
fn loop(t, lambda, class) ↦ spin(t, lambda, class)
""", executor=executor)
    assert mod.f(1.0, 2.0, 3.0, 4.0) == 24.0
    np.testing.assert_array_equal(mod.loop(3, np.zeros(2), np.ones(2)), [3.0, 3.0])


def test_a_parameter_named_self_can_be_passed_by_keyword():
    f = hilbert.compile_source("fn f(self, x) ↦ self + x").f
    assert f(self=1.0, x=2.0) == 3.0


def test_pythonic_names_are_not_attributes_of_the_module():
    mod = hilbert.compile_source("fn __init__(x) ↦ x\nfn __class__(x) ↦ x\nfn names(x) ↦ x")
    assert isinstance(mod, hilbert.Module)  # the module's own machinery is untouched
    assert mod.function("__init__")(2.0) == 2.0
    assert mod.names == ("__init__", "__class__", "names")
    assert mod.function("names")(1.0) == 1.0


def test_python_at_the_boundary_is_data_or_an_error(sentinel):
    mod = hilbert.compile_source("fn f(x) ↦ x + 1")
    for value in ["__import__('os').system('touch PWNED')", "1; import os", b"os.system('x')"]:
        with pytest.raises(hilbert.ArgumentError):
            mod.f(value)

    class Sneaky:
        def __array__(self, dtype=None, copy=None):
            return np.ones(2)

        def __float__(self):
            raise AssertionError("never converted through __float__")

    np.testing.assert_array_equal(mod.f(Sneaky()), [2.0, 2.0])


def test_cli_arguments_are_data_not_code(sentinel, tmp_path):
    from hilbert.cli import main

    path = tmp_path / "F.hb"
    path.write_text("fn f(x) ↦ x + 1\n", encoding="utf-8")
    assert main(["run", str(path), "f", "__import__('os').system('touch PWNED')"]) == 2
    assert main(["run", str(path), "f", '"__import__"']) == 1
    assert main(["run", str(path), "__import__", "1"]) == 2


def test_numpy_files_never_unpickle(sentinel, tmp_path):
    from hilbert.cli import main

    path = tmp_path / "F.hb"
    path.write_text("fn f(x) ↦ x + 1\n", encoding="utf-8")
    np.save(tmp_path / "objects.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    assert main(["run", str(path), "f", str(tmp_path / "objects.npy")]) == 2


# The disk cache runs only what the user wrote


class Planted:
    """What an attacker's cache file holds: unpickling it creates the file `marker`."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (exec, (f"open({self.marker!r}, 'w').close()",))


def plant_pickles(paths, marker) -> None:
    """Numba index (.nbi) and code (.nbc) files that create `marker` when they are read."""
    for path in paths:
        head = pickle.dumps(numba.__version__) if path.suffix == ".nbi" else b""
        path.write_bytes(head + pickle.dumps(Planted(marker)))


def test_a_cache_dir_others_can_write_is_never_read_nor_written(primed, tmp_path):
    directory, marker = copy_of(primed, tmp_path), tmp_path / "PWNED"
    plant_pickles((directory / "numba").iterdir(), marker)
    for level in (directory, directory / "numba"):
        os.chmod(level, 0o777)
    before = files(directory)
    report = run_cached(directory)  # (the right values: run_cached checks them)
    assert not marker.exists() and files(directory) == before
    assert set(report["warnings"]) == {"W900"} and report["compiles"] > 0  # in memory


def test_numba_files_others_could_write_are_never_unpickled(primed, tmp_path):
    directory, marker = copy_of(primed, tmp_path), tmp_path / "PWNED"
    planted = sorted((directory / "numba").glob("kernels.*"))
    plant_pickles(planted, marker)
    for path in planted:
        os.chmod(path, 0o666)
    report = run_cached(directory)
    assert not marker.exists() and set(report["warnings"]) == {"W902"}
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in planted)  # replaced, privately
    again = run_cached(directory)
    assert again["warnings"] == [] and again["compiles"] == 0 and not marker.exists()


@pytest.fixture
def cache_in(tmp_path, monkeypatch):
    """cache_in(path) points HILBERT_CACHE_DIR at tmp_path/path and returns it."""

    def point(relative: str):
        monkeypatch.setenv(disk.ENVIRONMENT, str(tmp_path / relative))
        return tmp_path / relative

    return point


def refusal() -> str | None:
    """The W900 message for the cache directory HILBERT_CACHE_DIR names, or None if it is used."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        used = disk.private_dir()
    codes = [getattr(w.message, "code", None) for w in caught]
    assert codes == ([] if used is not None else ["W900"]), codes
    return None if used is not None else str(caught[0].message)


def test_a_cache_dir_of_another_user_is_refused(cache_in, monkeypatch):
    directory = cache_in("cache")
    directory.mkdir(mode=0o700)
    someone_else = directory.stat().st_uid + 1
    monkeypatch.setattr(os, "geteuid", lambda: someone_else)
    assert f"{directory} belongs to" in refusal()
    assert not (directory / "numba").exists()  # nothing is made inside it


@pytest.mark.parametrize("mode, refused", [(0o700, False), (0o750, False), (0o770, True),
                                           (0o707, True), (0o1777, True)])
def test_a_cache_dir_others_can_write_is_refused(cache_in, monkeypatch, mode, refused):
    directory = cache_in("cache")
    directory.mkdir()
    os.chmod(directory, mode)
    monkeypatch.setattr(private, "_own_group", lambda gid: True)  # even for one's private group
    assert (refusal() is not None) == refused


@pytest.mark.parametrize("mode, own_group, refused", [
    (0o755, False, False), (0o1777, False, False), (0o777, False, True), (0o775, False, True),
    (0o775, True, False), (0o1770, False, False)])
def test_directories_above_the_cache_dir_must_not_be_writable_by_others(
        cache_in, monkeypatch, mode, own_group, refused):
    directory = cache_in("above/cache")
    directory.parent.mkdir()
    os.chmod(directory.parent, mode)
    monkeypatch.setattr(private, "_own_group", lambda gid: own_group)
    why = refusal()
    assert (why is not None) == refused
    assert why is None or f"{directory.parent} can be written by other users" in why
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700  # made by hilbert, for the user alone


def test_a_symlinked_cache_dir_is_checked_where_it_leads(cache_in, tmp_path):
    public = tmp_path / "public"
    public.mkdir()
    os.chmod(public, 0o777)
    (public / "cache").mkdir(mode=0o700)
    cache_in("link").symlink_to(public / "cache")
    assert f"{public} can be written by other users" in refusal()


# Parsed modules, entries, plans and paths: read only when the user's and sealed by the user's key

#: The folders of hilbert's own pickles (compiler/pickles.py).
PICKLE_FOLDERS = ("parsed", "entries", "plans")


def sealed(directory, path, data: bytes, key: bytes | None = None) -> bytes:
    """`data` as a file kept at `path` is written (the format of docs/security.md): the
    HMAC-SHA256 of its folder, name and contents under the directory's key, a newline, the
    contents."""
    key = (directory / "key").read_bytes() if key is None else key
    where = f"{path.parent.name}/{path.name}".encode()
    return hmac.new(key, where + b"\0" + data, hashlib.sha256).hexdigest().encode() + b"\n" + data


def plant(directory, path, marker, how: str, elsewhere) -> None:
    """Replace the pickle at `path` with one whose unpickling creates `marker`, `how` says."""
    data = pickle.dumps(Planted(marker))
    if how == "others can write it":  # (sealed right: only the check of its mode stops it)
        path.write_bytes(sealed(directory, path, data))
        os.chmod(path, 0o660 if path.parent.name == "plans" else 0o606)
    elif how == "a symbolic link":  # (to a file sealed right, elsewhere)
        target = elsewhere / f"{path.parent.name}-{path.name}"
        target.write_bytes(sealed(directory, path, data))
        os.chmod(target, 0o600)
        path.unlink()
        path.symlink_to(target)
    else:  # sealed with a key that is not the directory's
        path.write_bytes(sealed(directory, path, data, key=bytes(32)))
        os.chmod(path, 0o600)


@pytest.mark.parametrize("how", ["others can write it", "a symbolic link", "sealed by another key"])
def test_planted_pickles_are_never_unpickled(primed, tmp_path, how):
    directory, marker = copy_of(primed, tmp_path), tmp_path / "PWNED"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    planted = [p for name in PICKLE_FOLDERS for p in sorted((directory / name).glob("*.pickle"))]
    assert {p.parent.name for p in planted} == set(PICKLE_FOLDERS)
    for path in planted:
        plant(directory, path, marker, how, elsewhere)
    report = run_cached(directory)  # (the right values: run_cached checks them)
    assert not marker.exists() and set(report["warnings"]) == {"W902"}
    key = (directory / "key").read_bytes()
    for path in planted:  # each deleted unread and made again, privately and sealed
        assert not path.is_symlink() and stat.S_IMODE(path.stat().st_mode) == 0o600
        data = path.read_bytes()
        assert data == sealed(directory, path, data.partition(b"\n")[2], key)
    again = run_cached(directory)
    assert again["warnings"] == [] and again["compiles"] == 0 and not marker.exists()


def test_cache_folders_others_can_write_are_never_used(primed, tmp_path):
    directory, marker = copy_of(primed, tmp_path), tmp_path / "PWNED"
    for name in PICKLE_FOLDERS:
        for path in (directory / name).glob("*.pickle"):
            path.write_bytes(sealed(directory, path, pickle.dumps(Planted(marker))))
        os.chmod(directory / name, 0o777)
    before = files(directory)
    report = run_cached(directory)
    assert not marker.exists() and set(report["warnings"]) == {"W900"}
    assert files(directory) == before  # nothing read from them nor written to them


@pytest.fixture
def kept_in(cache_in):
    """A private cache directory (HILBERT_CACHE_DIR), with its key, and its folder `parsed`."""
    directory = cache_in("cache")
    folder = private.private_folder("parsed")
    assert folder == directory / "parsed"
    private.write_kept(folder / "first.pickle", pickle.dumps(None))
    return directory, folder


def warned(action) -> list[str]:
    """The codes of the warnings `action()` gives."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        action()
    return [getattr(w.message, "code", str(w.message)) for w in caught]


@pytest.mark.parametrize("how", ["a symbolic link", "not a directory", "others can write it"])
def test_a_cache_folder_not_private_is_refused(kept_in, sentinel, how):
    from hilbert.compiler import pickles

    directory, _ = kept_in
    folder = directory / "entries"
    if how == "a symbolic link":
        (directory / "real").mkdir(mode=0o700)
        folder.symlink_to(directory / "real", target_is_directory=True)
    elif how == "not a directory":
        folder.write_bytes(b"")
    else:
        folder.mkdir(mode=0o700)
        os.chmod(folder, 0o770)
    if folder.is_dir():
        (folder / "planted.pickle").write_bytes(sealed(directory, folder / "planted.pickle",
                                                       pickle.dumps(Planted(sentinel))))
    assert warned(lambda: pickles.read("entries", "planted", object)) == ["W900"]
    pickles.write("entries", "made", 1.0)
    assert not os.path.lexists(directory / "real" / "made.pickle")
    assert not os.path.lexists(folder / "made.pickle")


def test_a_kept_file_of_another_user_is_removed_unread(kept_in, sentinel, monkeypatch):
    _, folder = kept_in
    path = folder / "planted.pickle"
    private.write_kept(path, pickle.dumps(Planted(sentinel)))
    someone_else = path.stat().st_uid + 1
    monkeypatch.setattr(os, "geteuid", lambda: someone_else)
    caught = []
    assert warned(lambda: caught.append(private.read_private(path))) == ["W902"]
    assert caught == [None] and not path.exists()


def test_a_kept_file_is_sealed_for_its_own_name(kept_in):
    directory, folder = kept_in
    private.write_kept(folder / "a.pickle", b"what a holds")
    assert stat.S_IMODE((folder / "a.pickle").stat().st_mode) == 0o600
    assert stat.S_IMODE((directory / "key").stat().st_mode) == 0o600
    assert private.read_kept(folder / "a.pickle") == b"what a holds"
    (folder / "b.pickle").write_bytes((folder / "a.pickle").read_bytes())
    os.chmod(folder / "b.pickle", 0o600)
    found = []
    assert warned(lambda: found.append(private.read_kept(folder / "b.pickle"))) == ["W902"]
    assert found == [None] and not (folder / "b.pickle").exists()


def test_a_key_others_can_read_is_replaced_and_nothing_it_sealed_is_read(kept_in):
    directory, folder = kept_in
    private.write_kept(folder / "a.pickle", b"sealed by the first key")
    first = (directory / "key").read_bytes()
    os.chmod(directory / "key", 0o640)
    found = []
    assert warned(lambda: found.append(private.read_kept(folder / "a.pickle"))) == ["W902"]
    assert found == [None] and not (directory / "key").exists()
    private.write_kept(folder / "b.pickle", b"sealed by the second key")
    assert (directory / "key").read_bytes() != first
    assert not (folder / "a.pickle").exists()  # (what no key can check any more is removed)
    assert private.read_kept(folder / "b.pickle") == b"sealed by the second key"


def test_kept_paths_are_private_sealed_and_checked(cache_in, sentinel):
    from hilbert.compiler.plan import hyper

    cache_in("cache")
    search = hyper.Search(((0, 1), (0, 1)), trees=3, seconds=0.5, flops=96, width=2.0)
    shapes = ((2, 3), (3, 4), (4, 2))
    hyper._write("k" * 32, search)
    (path,) = (private.cache_dir() / "paths").iterdir()
    assert path.name == "k" * 32 + ".json" and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert hyper._read("k" * 32, "ij,jk,kl->il", shapes) == search
    elsewhere = sentinel.parent / "path.json"
    elsewhere.write_bytes(path.read_bytes())
    path.unlink()
    path.symlink_to(elsewhere)
    found = []
    assert warned(lambda: found.append(hyper._read("k" * 32, "ij,jk,kl->il", shapes))) == ["W902"]
    assert found == [None] and not os.path.lexists(path)


