"""The background thread that builds queued programs one after another, and waits at exit
for the builds of programs with loops whose code the disk cache does not hold yet."""

from __future__ import annotations

import atexit
import queue
import sys
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hilbert.executor.numba.tiers import TieredProgram


class Builder:
    """The background thread that builds queued programs one after another (Numba compiles one
    function at a time whatever the threads), started with the first program queued. It is a
    daemon, but a process does not end while it builds a program with loops: at exit `finish`
    waits for those (Ctrl-C skips the wait), so that the next process finds their machine code
    in the disk cache and moves to it as soon as it is loaded, instead of compiling it again.
    Queued loop-free programs are dropped at exit (their first calls cost the host's
    milliseconds anyway), but the build under way is let end first (`_stop`); what a build was writing to the disk cache is written whole or not at
    all (executor/numba/disk.py)."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[TieredProgram] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._pending: list[TieredProgram] = []  # programs with loops queued or being built
        self._exiting = False
        self._stopped = False  # at exit, once the last build needed is done: build no more
        self._busy = False  # a build is under way (it may hold Numba's and LLVM's locks)
        self._done = threading.Condition(self._lock)

    def submit(self, program: TieredProgram) -> None:
        with self._lock:
            if program.looped:
                self._pending.append(program)
            self._queue.put(program)
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name="hilbert-compile",
                                                daemon=True)
                self._thread.start()
                atexit.register(self.finish)

    def _work(self) -> None:
        while True:
            program = self._queue.get()
            with self._lock:
                if self._stopped:
                    return
                self._busy = True
            try:
                if not self._exiting or (program.looped and not program.kept()):
                    program.build_quietly()
            finally:
                with self._lock:
                    self._busy = False
                    if program in self._pending:
                        self._pending.remove(program)
                    self._done.notify_all()

    def finish(self) -> None:
        """At exit: wait until every queued program with loops whose code the disk cache does
        not hold yet is built, saying so on a terminal once the wait has lasted a second."""
        from hilbert.progress import BUILD_LINE_DELAY_S, wanted

        self._exiting = True
        with self._lock:
            needed = [p for p in self._pending if not p.kept()]
        waited = 0.0
        try:
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

    def _stop(self) -> None:
        """Let the build under way end, and start no other. The thread is a daemon: frozen
        mid-build when the interpreter finalises, it would keep LLVM's lock forever, and the
        main thread, freeing LLVM objects then, would wait for it and never exit."""
        with self._lock:
            self._stopped = True
            while self._busy:
                self._done.wait()


#: The one builder of the process.
BUILDER = Builder()
