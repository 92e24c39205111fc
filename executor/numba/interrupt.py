"""Ctrl-C inside compiled loops: a call stops within one loop step and raises KeyboardInterrupt.

Compiled code runs without the GIL and cannot run Python's signal handlers, so while the main
thread is inside it a Ctrl-C only marks Python's handler pending. Generated functions that
contain loops therefore take a one-entry `stop` array and leave every loop when `stop[0]` is
set. Setting it is the job of a watcher thread: while a compiled call runs in the main thread,
Python's wakeup file descriptor (`signal.set_wakeup_fd`, to which the C-level handler writes
each signal's number the moment it arrives) is a pipe the watcher reads. For the same window
SIGINT's Python handler is one that only records the signal: Python may run it while Numba
turns the result into Python objects, where an exception would be lost. After the call, a
recorded Ctrl-C raises KeyboardInterrupt and what the call computed is thrown away, so nothing
the caller holds changes (a model's weights are replaced only when a train call returns).

Only calls in the main thread whose SIGINT handler is Python's default are watched (Python
delivers KeyboardInterrupt to nothing else); calls without loops never come here, so their
fast path pays nothing, and a watched call pays about 2 µs.
"""

from __future__ import annotations

import os
import signal
import threading
from contextlib import contextmanager

import numpy as np

try:
    from _signal import signal as _set_handler  # signal.signal costs 5 µs (enum lookups)
except ImportError:  # pragma: no cover (other Pythons)
    _set_handler = signal.signal

#: What compiled loops in the main thread read before each step.
_STOP = np.zeros(1, dtype=np.int64)
#: What every other call reads: never set.
_NEVER = np.zeros(1, dtype=np.int64)


class _Watcher:
    """A daemon thread reading the pipe that is Python's wakeup fd during compiled calls: a
    SIGINT sets _STOP[0]; every signal's byte is passed on to the wakeup fd the program had
    before (asyncio's, say), which would otherwise have received it."""

    def __init__(self) -> None:
        self.read, self.write = os.pipe()
        os.set_blocking(self.write, False)  # set_wakeup_fd requires it
        self.forward = -1
        threading.Thread(target=self._watch, name="hilbert-interrupts", daemon=True).start()

    def _watch(self) -> None:
        while True:
            try:
                received = os.read(self.read, 256)
            except OSError:
                return
            if not received:
                return
            if signal.SIGINT in received:
                _STOP[0] = 1
            if self.forward >= 0:
                try:
                    os.write(self.forward, received)
                except OSError:
                    pass  # a full or closed pipe drops a wakeup byte, as Python's handler would

    def arm(self) -> tuple | None:
        """Watch the call about to start: the pipe becomes Python's wakeup fd and SIGINT's
        handler records instead of raising. What `disarm` needs to undo that, or None (no
        watching: a handler of the program's own, or not the main interpreter)."""
        global _caught
        _STOP[0] = 0
        handler = _set_handler(signal.SIGINT, _record)
        if handler is not signal.default_int_handler and handler is not _record:
            _set_handler(signal.SIGINT, handler)
            return None
        if handler is not _record:  # (inside a host loop, a Ctrl-C it recorded still counts)
            _caught = False
        try:
            previous = signal.set_wakeup_fd(self.write)
        except ValueError:
            _set_handler(signal.SIGINT, handler)
            return None
        self.forward = previous
        return handler, previous

    @staticmethod
    def disarm(armed: tuple) -> None:
        handler, previous = armed
        signal.set_wakeup_fd(previous)
        _set_handler(signal.SIGINT, handler)


_caught = False  # a SIGINT arrived while a call was watched


def _record(signum, frame) -> None:
    """SIGINT's handler while a compiled call is watched."""
    global _caught
    _caught = True


_watcher: _Watcher | None = None
_MAIN = threading.main_thread().ident


def _forget_watcher() -> None:
    """In a forked child the watcher thread is gone (its pipe is closed; a new one starts)."""
    global _watcher
    if _watcher is not None:
        for fd in (_watcher.read, _watcher.write):
            os.close(fd)
    _watcher = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_watcher)


def _main_thread_watcher() -> _Watcher | None:
    global _watcher
    if os.name != "posix" or threading.get_ident() != _MAIN:
        return None
    if _watcher is None:
        _watcher = _Watcher()
    return _watcher


def call(region, args: list):
    """`region(args + [stop])` (a CompiledRegion whose function has loops), stopped by Ctrl-C
    within one loop step: then KeyboardInterrupt is raised and the result thrown away."""
    watcher = _main_thread_watcher()
    while True:
        armed = None if watcher is None else watcher.arm()
        if armed is None:
            return region([*args, _NEVER])
        try:
            result = region([*args, _STOP])
        except Exception:
            _run_pending_handlers()
            if not (_STOP[0] or _caught):
                raise
            result = None  # the stop came first: what failed on the partial state is moot
        finally:
            _run_pending_handlers()
            watcher.disarm(armed)
        if _caught:
            raise KeyboardInterrupt
        if not _STOP[0]:
            return result
        # Stopped, yet no SIGINT came while watched: the byte was from a Ctrl-C Python had
        # handled before this call began, so it was stopped for nothing. Run it again.


@contextmanager
def host_loop():
    """Around a loop run on the host whose steps call compiled code (a loop with host work, a
    loop run backwards): Ctrl-C is recorded, never raised inside a compiled call (where Numba,
    turning the result into Python objects, would end in SystemError), and `stepped` raises
    KeyboardInterrupt at the next step's end. Only in the main thread, under Python's default
    SIGINT handler; elsewhere it does nothing."""
    global _caught
    if os.name != "posix" or threading.get_ident() != _MAIN:
        yield
        return
    handler = _set_handler(signal.SIGINT, _record)
    if handler is not signal.default_int_handler:  # the program's own, or already in one
        _set_handler(signal.SIGINT, handler)
        yield
        return
    _caught = False
    try:
        yield
    finally:
        _set_handler(signal.SIGINT, handler)
    if _caught:  # (the last step's end came before the handler ran)
        raise KeyboardInterrupt


def stepped(evaluate):
    """`evaluate` (a loop body's), raising KeyboardInterrupt after it when a Ctrl-C was
    recorded (`host_loop`)."""

    def run(*args):
        value = evaluate(*args)
        _run_pending_handlers()
        if _caught:
            raise KeyboardInterrupt
        return value

    return run


def _run_pending_handlers() -> None:
    """Nothing, except that entering a Python function is where CPython runs the signal
    handlers that are pending (here, `_record`)."""
