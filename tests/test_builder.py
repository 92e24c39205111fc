"""The builder (executor/numba/builder.py): a build the caller waits for runs in a thread of its
own; at exit, the builder lets the builds under way end and starts no other, so that a process
never ends with a daemon thread frozen inside Numba or LLVM holding their locks (the main
thread, freeing LLVM objects as the interpreter finalised, then waited for it forever: a warm
process hung at exit about one run in two)."""

from __future__ import annotations

import threading

from hilbert.executor.numba.builder import Builder


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
