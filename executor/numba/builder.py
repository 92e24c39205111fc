"""The background thread that builds queued programs one after another (each in a process of its
own by default, executor/numba/build_process.py), the threads that build what the main thread
waits for (so that Ctrl-C reaches it at once), and what the exit does about builds: under the
LLVM back end it waits for none; under Numba's front end it leaves those of processes of their
own to finish, and waits for those in this process."""

from __future__ import annotations

import atexit
import contextvars
import queue
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from .. import llvm
from . import build_process

if TYPE_CHECKING:
    from .tiers import TieredProgram

T = TypeVar("T")

#: How often (seconds) a thread waiting for a build wakes: a signal's handler runs at the
#: latest then, should the wait itself not be interrupted by it.
WAKE_S = 0.1


class Builder:
    """The background thread that builds queued programs one after another (Numba compiles one
    function at a time whatever the threads), started with the first program queued; a daemon.

    By default (HILBERT_BUILDS=process) each program is built by a child process while the
    thread waits for it, holding no lock of Numba's or LLVM's (`TieredProgram.built_apart`), and
    the next call loads the code from the disk cache. At exit (`finish`) a child still compiling
    is left to finish on its own, and the programs with loops still queued are handed to a
    last child: the exit waits for no build of theirs, and the next process finds the code.

    Under HILBERT_BUILDS=thread, or where a child cannot serve (`build_process.usable`), the
    thread builds in this process, and a process does not end while it builds a program with
    loops: `finish` waits for those (Ctrl-C skips the wait), so that the next process finds
    their machine code in the disk cache. Queued loop-free programs are dropped at exit (their
    first calls cost the host's milliseconds anyway), but the builds under way in this process,
    `build_waiting`'s included, are let end first (`_stop`: a thread frozen inside LLVM as the
    interpreter finalises would hang it); what a build was writing to the disk cache is written
    whole or not at all (executor/numba/disk.py)."""

    def __init__(self) -> None:
        # (each program with whether it is built in a process of its own)
        self._queue: queue.SimpleQueue[tuple[TieredProgram, bool]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._pending: list[TieredProgram] = []  # programs with loops queued or being built
        self._apart: list[TieredProgram] = []  # those of `_pending` built in a process of their own
        self._handed: list[TieredProgram] = []  # those of `_apart` a child process was started for
        self._exiting = False
        self._stopped = False  # at exit, once the last build needed is done: build no more
        self._busy = 0  # builds under way (each may hold Numba's and LLVM's locks)
        self._starting = 0  # child processes being started (`finish` lets them start)
        self._done = threading.Condition(self._lock)
        self._registered = False  # `finish` is registered to run at exit

    def submit(self, program: TieredProgram, apart: bool = False) -> None:
        """Queue `program`'s build: in a process of its own when `apart` (else in this one)."""
        with self._lock:
            if program.looped:
                self._pending.append(program)
                if apart:
                    self._apart.append(program)
            self._queue.put((program, apart))
            self._at_exit()
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name="hilbert-compile",
                                                daemon=True)
                self._thread.start()

    def _at_exit(self) -> None:
        """Have `finish` run at exit (once). Called holding the lock."""
        if not self._registered:
            self._registered = True
            atexit.register(self.finish)

    def build_waiting(self, build: Callable[[], T]) -> T:
        """`build()`'s result, computed in a thread of its own while the calling thread waits
        for it. A Ctrl-C raises KeyboardInterrupt in the caller at once: Python runs a signal's
        handler between two bytecodes of the main thread only, and a build spends seconds
        inside LLVM, so built in the caller it would be raised when Numba returns (or inside
        it, where Numba drops it). The build itself cannot be stopped: it goes on, what it
        makes is kept for the calls that follow (files of the disk cache are written whole or
        not at all, executor/numba/disk.py), and the process's exit waits for it (`_stop`).
        Once the exit has begun, `build()` runs in the caller."""
        outcome: list = []  # [(True, result)] or [(False, the exception it raised)]
        context = contextvars.copy_context()  # (the caller's np.errstate and other contexts)

        def work() -> None:
            try:
                outcome.append((True, context.run(build)))
            except BaseException as err:  # noqa: BLE001 (raised in the waiting thread)
                outcome.append((False, err))
            finally:
                self._ended()

        worker = threading.Thread(target=work, name="hilbert-compile-now", daemon=True)
        with self._lock:
            exiting = self._stopped
            if not exiting:
                self._busy += 1
                self._at_exit()
        if exiting:
            return build()
        try:
            worker.start()
        except BaseException:
            if worker.ident is None:  # (a Ctrl-C before the thread began: it never will)
                self._ended()
            raise
        while worker.is_alive():
            worker.join(WAKE_S)
        made, value = outcome[0]
        if not made:
            raise value
        return value

    def _ended(self) -> None:
        """A build under way has ended."""
        with self._lock:
            self._busy -= 1
            self._done.notify_all()

    def _work(self) -> None:
        while True:
            program, apart = self._queue.get()
            with self._lock:
                if self._stopped:
                    return
                if program in self._handed or apart and self._exiting:  # (the exit's child's)
                    continue
                if apart:
                    self._handed.append(program)
                    self._starting += 1
            if apart and self._built_apart(program):
                self._forget(program)
                continue
            with self._lock:
                if self._stopped:
                    return
                self._busy += 1
            try:
                if not self._exiting or (program.looped and not program.kept()):
                    program.build_quietly()
            finally:
                with self._lock:
                    self._busy -= 1
                self._forget(program)

    def _built_apart(self, program: TieredProgram) -> bool:
        """Whether a process of its own built `program` (waited for here)."""
        try:
            child = program.start_apart()
        finally:
            with self._lock:
                self._starting -= 1
                self._done.notify_all()
        return child is not None and program.built_apart(child)

    def _forget(self, program: TieredProgram) -> None:
        """`program`'s build has ended (or its child process has built it: its next call loads
        it)."""
        with self._lock:
            for held in (self._pending, self._apart, self._handed):
                if program in held:
                    held.remove(program)
            self._done.notify_all()

    def finish(self) -> None:
        """At exit: hand the queued programs with loops that are to be built in a process of
        their own to one last child (without waiting for it, nor for the children under way);
        wait until every other queued program with loops whose code the disk cache does not
        hold yet is built, saying so on a terminal once the wait has lasted a second."""
        from ...compiler.terminal import BUILD_LINE_DELAY_S, wanted

        if llvm.wanted():
            self._abandon()
            return
        try:
            self._hand_over()
            with self._lock:
                needed = [p for p in self._pending if p not in self._apart and not p.kept()]
            waited = 0.0
            with self._lock:
                # A queued program leaves `_pending` when the thread has built it, or skipped
                # it because the disk cache came to hold its code meanwhile (another program
                # of the same code was built first): wait for that, not for its own build.
                while any(p in self._pending for p in needed):
                    if not self._done.wait(BUILD_LINE_DELAY_S):
                        waited += BUILD_LINE_DELAY_S
                        if waited == BUILD_LINE_DELAY_S and wanted(sys.stderr):
                            print("hilbert: finishing the compilation of loops for the disk "
                                  "cache (Ctrl-C skips it)", file=sys.stderr, flush=True)
            self._stop()
        except KeyboardInterrupt:
            pass

    def _abandon(self) -> None:
        """At exit, under the LLVM back end: start no other build and wait for none under way.
        Its builds take seconds, so a program still wanted is built by the next process that
        calls it (a build under way writes its object code to the disk cache whole or not at
        all: executor/llvm/kept.py). The build threads are daemons, and llvmlite frees nothing
        while the interpreter shuts down, so a thread left inside LLVM holds up nothing."""
        with self._lock:
            self._exiting = self._stopped = True
            self._done.notify_all()

    def _hand_over(self) -> None:
        """At exit: let the children being started start, hand the programs with loops still
        queued for a process of their own to one last child, and leave every child to finish
        on its own."""
        with self._lock:
            self._exiting = True
            left = [p for p in self._apart if p not in self._handed]
            self._handed.extend(left)
            while self._starting:  # (a child being started: milliseconds)
                self._done.wait(WAKE_S)
        if left and build_process.usable():
            build_process.start([p.job() for p in left])
        build_process.leave()

    def _stop(self) -> None:
        """Let the builds under way end, and start no other, saying so on a terminal once the
        wait has lasted a second. Their threads are daemons: one frozen mid-build when the
        interpreter finalises would keep LLVM's lock forever, and the main thread, freeing
        LLVM objects then, would wait for it and never exit."""
        from ...compiler.terminal import BUILD_LINE_DELAY_S, wanted

        with self._lock:
            self._stopped = True
            told = False
            while self._busy:
                if not self._done.wait(BUILD_LINE_DELAY_S) and not told and wanted(sys.stderr):
                    told = True
                    print("hilbert: waiting for the compilation under way to end (Numba "
                          "cannot stop mid-build; Ctrl-C skips it)", file=sys.stderr, flush=True)


#: The one builder of the process.
BUILDER = Builder()
