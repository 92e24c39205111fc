"""The builder (executor/numba/builder.py): a build the caller waits for runs in a thread of its
own, and gives its result or raises its error in the caller; at exit, the builder starts no
other build and waits for none under way (the LLVM back end's builds take seconds: a program
still wanted is built by the next process; tests/test_one_answer.py checks a real process's
exit)."""

from __future__ import annotations

import threading

from hilbert.executor.numba.builder import Builder


class _Program:
    """A stand-in for a TieredProgram whose build lasts until `release` is set."""

    looped = False

    def __init__(self, started: threading.Event, release: threading.Event, built: list):
        self._started, self._release, self._built = started, release, built

    def build_quietly(self) -> None:
        self._built.append(self)
        self._started.set()
        self._release.wait(60)


def test_exit_waits_for_no_build_under_way_and_starts_no_other():
    started, release, built = threading.Event(), threading.Event(), []
    builder = Builder()
    first, second = _Program(started, release, built), _Program(started, release, built)
    builder.submit(first)
    builder.submit(second)
    assert started.wait(60)
    finishing = threading.Thread(target=builder.finish)
    finishing.start()
    finishing.join(60)
    try:
        assert not finishing.is_alive() and not release.is_set()  # (the first still builds)
    finally:
        release.set()
    builder._thread.join(60)  # (the first build ends; the thread builds nothing more)
    assert not builder._thread.is_alive()
    assert built == [first]  # the program still queued at exit was never built


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


def test_exit_waits_for_no_build_its_caller_stopped_waiting_for():
    """A Ctrl-C ends the caller's wait, not the build (tests/test_interrupt.py): at exit,
    `finish` waits for that build no more than for the background thread's, and after it a
    build the caller waits for runs in the caller."""
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
    finishing.join(60)
    try:
        assert not finishing.is_alive() and not release.is_set()  # (the build still runs)
    finally:
        release.set()
    here = threading.current_thread().name
    assert builder.build_waiting(lambda: threading.current_thread().name) == here
