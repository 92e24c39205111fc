"""The background thread that builds queued programs one after another, the threads that build
what the main thread waits for (so that Ctrl-C reaches it at once), and what the exit does about
builds: it waits for none (the LLVM back end's builds take seconds; a program still wanted is
built by the next process that calls it)."""

from __future__ import annotations

import atexit
import contextvars
import queue
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from .tiers import TieredProgram

T = TypeVar("T")

#: How often (seconds) a thread waiting for a build wakes: a signal's handler runs at the
#: latest then, should the wait itself not be interrupted by it.
WAKE_S = 0.1


class Builder:
    """The background thread that builds queued programs one after another, started with the
    first program queued; a daemon. At exit (`finish`) it starts no other build and waits for
    none under way: a program still wanted is built by the next process that calls it (a
    build under way writes its object code to the disk cache whole or not at all:
    executor/llvm/kept.py)."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[TieredProgram] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._stopped = False  # at exit: build no more
        self._registered = False  # `finish` is registered to run at exit

    def submit(self, program: TieredProgram) -> None:
        """Queue `program`'s build."""
        with self._lock:
            self._queue.put(program)
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
        inside LLVM, so built in the caller it would be raised only when LLVM returns. The
        build itself cannot be stopped: it goes on, what it makes is kept for the calls that
        follow (files of the disk cache are written whole or not at all, executor/llvm/kept.py),
        and the process's exit does not wait for it. Once the exit has begun, `build()` runs in
        the caller."""
        outcome: list = []  # [(True, result)] or [(False, the exception it raised)]
        context = contextvars.copy_context()  # (the caller's np.errstate and other contexts)

        def work() -> None:
            try:
                outcome.append((True, context.run(build)))
            except BaseException as err:  # noqa: BLE001 (raised in the waiting thread)
                outcome.append((False, err))

        worker = threading.Thread(target=work, name="hilbert-compile-now", daemon=True)
        with self._lock:
            exiting = self._stopped
            if not exiting:
                self._at_exit()
        if exiting:
            return build()
        worker.start()
        while worker.is_alive():
            worker.join(WAKE_S)
        made, value = outcome[0]
        if not made:
            raise value
        return value

    def _work(self) -> None:
        while True:
            program = self._queue.get()
            with self._lock:
                if self._stopped:
                    return
            program.build_quietly()

    def finish(self) -> None:
        """At exit: start no other build and wait for none under way. The build threads are
        daemons, and llvmlite frees nothing while the interpreter shuts down, so a thread left
        inside LLVM holds up nothing."""
        with self._lock:
            self._stopped = True


#: The one builder of the process.
BUILDER = Builder()
