"""The builder (executor/numba/builder.py): a build the caller waits for runs in a thread of its
own; at exit, the builder lets the builds under way in this process end and starts no other,
so that a process never ends with a daemon thread frozen inside Numba or LLVM holding their
locks (the main thread, freeing LLVM objects as the interpreter finalised, then waited for it
forever: a warm process hung at exit about one run in two). Builds in processes of their own
(the default, executor/numba/build_process.py) are waited for by no exit: those under way are
left to finish, those of loops still queued handed to one last child. That is Numba's front
end's exit (HILBERT_CODEGEN=numba, pinned here); under the LLVM back end the exit waits for no
build (tests/test_one_answer.py)."""

from __future__ import annotations

import threading

import pytest
from hilbert.executor.numba import build_process
from hilbert.executor.numba.builder import Builder

pytestmark = pytest.mark.usefixtures("numba_front_end")


class _Program:
    """A stand-in for a TieredProgram whose build lasts until `release` is set."""

    looped = False

    def __init__(self, started: threading.Event, release: threading.Event, built: list):
        self._started, self._release, self._built = started, release, built

    def kept(self) -> bool:
        return True

    def wait(self, timeout: float | None = None) -> bool:
        return True

    def build_quietly(self) -> None:
        self._built.append(self)
        self._started.set()
        self._release.wait(60)


def test_exit_lets_the_build_under_way_end_and_starts_no_other():
    started, release, built = threading.Event(), threading.Event(), []
    builder = Builder()
    first, second = _Program(started, release, built), _Program(started, release, built)
    builder.submit(first)
    builder.submit(second)
    assert started.wait(60)
    finishing = threading.Thread(target=builder.finish)
    finishing.start()
    finishing.join(0.2)
    assert finishing.is_alive()  # it cannot end before the build under way does
    release.set()
    finishing.join(60)
    assert not finishing.is_alive()
    assert built == [first]  # the program still queued at exit was never built


class _SameCode:
    """A stand-in for programs of one generated code: once either is built, the disk cache
    holds the code of both (what two models with the same train block give)."""

    looped = True

    def __init__(self, cache: set, built: list):
        self._cache, self._built = cache, built
        self._done = threading.Event()

    def kept(self) -> bool:
        return "code" in self._cache

    def wait(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout)

    def build_quietly(self) -> None:
        self._built.append(self)
        self._cache.add("code")
        self._done.set()


def test_exit_does_not_wait_for_a_program_whose_code_another_build_kept():
    # Both are queued and not yet kept when exit begins; the first build keeps the code of
    # both, so the thread skips the second. Exit used to wait for the second's own build,
    # which never came: the process hung at exit.
    cache: set = set()
    built: list = []
    builder = Builder()
    gate = threading.Event()
    first, second = _SameCode(cache, built), _SameCode(cache, built)
    original_build, original_kept = first.build_quietly, second.kept

    def asked() -> bool:  # exit asks second's last: only then may the first build end
        kept = original_kept()
        if threading.current_thread().name == "finishing":
            gate.set()
        return kept

    first.build_quietly = lambda: (gate.wait(60), original_build())  # type: ignore[method-assign]
    second.kept = asked  # type: ignore[method-assign]
    builder.submit(first)
    builder.submit(second)
    finishing = threading.Thread(target=builder.finish, name="finishing", daemon=True)
    finishing.start()
    finishing.join(60)
    assert not finishing.is_alive()
    assert built == [first]


def test_a_build_the_caller_waits_for_runs_in_another_thread_and_gives_its_result():
    builder = Builder()
    assert builder.build_waiting(lambda: threading.current_thread().name) == "hilbert-compile-now"

    def failing():
        raise ValueError("generated code that cannot be built")

    try:
        builder.build_waiting(failing)
    except ValueError as err:
        assert "cannot be built" in str(err)
    else:
        raise AssertionError("the build's error was not raised in the caller")


def test_exit_waits_for_a_build_its_caller_stopped_waiting_for():
    """A Ctrl-C ends the caller's wait, not the build (tests/test_interrupt.py): at exit,
    `finish` lets that build end, as it does the background thread's, and builds no other."""
    started, release = threading.Event(), threading.Event()
    builder = Builder()

    def build():
        started.set()
        release.wait(60)
        return "built"

    def caller():
        waiting = threading.Thread(target=builder.build_waiting, args=(build,), daemon=True)
        waiting.start()
        assert started.wait(60)  # (the caller gives up here: the build goes on)

    caller()
    finishing = threading.Thread(target=builder.finish)
    finishing.start()
    finishing.join(0.2)
    assert finishing.is_alive()  # it cannot end before the build under way does
    release.set()
    finishing.join(60)
    assert not finishing.is_alive()
    assert builder.build_waiting(lambda: "after exit") == "after exit"  # (run in the caller)


class _Apart:
    """A stand-in for a TieredProgram with loops whose child process compiles until `release`
    is set (`built_apart`, waited for in the builder's thread)."""

    looped = True

    def __init__(self, started: threading.Event, release: threading.Event):
        self._started, self._release = started, release

    def job(self) -> str:
        return f"job of {id(self)}"

    def kept(self) -> bool:  # (never asked: the exit looks up no cache for these)
        raise AssertionError("the exit asked whether a program built apart was kept")

    def start_apart(self) -> str:
        return f"child of {id(self)}"

    def built_apart(self, child: str) -> bool:
        self._started.set()
        return self._release.wait(60)

    def build_quietly(self) -> None:
        raise AssertionError("a program built apart was built in this process")


def test_exit_waits_for_no_build_in_a_process_of_its_own(monkeypatch):
    """One program's child is compiling (it never ends here) and another with loops is still
    queued when the exit begins: `finish` hands the queued one to one last child, started
    and not waited for, and returns while the first child still compiles."""
    started: list = []
    monkeypatch.setattr(build_process, "usable", lambda: True)
    monkeypatch.setattr(build_process, "start", started.append)
    running, release = threading.Event(), threading.Event()
    first, second = _Apart(running, release), _Apart(threading.Event(), release)
    builder = Builder()
    builder.submit(first, apart=True)
    assert running.wait(60)
    builder.submit(second, apart=True)
    finishing = threading.Thread(target=builder.finish, name="finishing", daemon=True)
    finishing.start()
    finishing.join(60)
    try:
        assert not finishing.is_alive() and not release.is_set()  # (the first still compiles)
        assert started == [[second.job()]]
    finally:
        release.set()


def test_a_child_reads_only_sealed_jobs_of_the_cache_s_own_folder(tmp_path, monkeypatch):
    """A child process (build_child.main) unpickles its jobs only from the cache directory's
    `builds/` folder and only when sealed with the cache's key: a forged file there is removed
    unread (W902); a path elsewhere is neither read nor removed. Either way nothing is built."""
    import warnings

    from hilbert.compiler.directory import private_folder, write_kept
    from hilbert.executor.numba import build_child

    monkeypatch.setenv("HILBERT_CACHE_DIR", str(tmp_path / "cache"))
    folder = private_folder(build_process.FOLDER)
    write_kept(folder / "sealed.pickle", b"")  # (makes the cache's key)
    forged = folder / "forged.pickle"
    forged.write_bytes(b"0" * 64 + b"\n" + b"cos\nsystem\n(S'echo PWNED'\ntR.")
    forged.chmod(0o600)
    elsewhere = tmp_path / "jobs.pickle"
    elsewhere.write_bytes(b"")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert build_child.main(str(forged)) == 1
        assert build_child.main(str(elsewhere)) == 1
    assert [getattr(w.message, "code", None) for w in caught] == ["W902"]
    assert not forged.exists() and elsewhere.exists()
