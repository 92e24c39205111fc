"""How a tiered program (executor/numba/tiers.py) is built in a process of its own
(build_process.py starts it, build_child.py is it): the job it is given, the wait for it in the
builder's thread, and the load of what it built from the disk cache in the caller."""

from __future__ import annotations

import time

from ...compiler.driver import Specialised
from . import build_process
from .builder import WAKE_S


class BuildsApart:
    """TieredProgram's part that hands its build to a process of its own. It reads the
    program's `_tiers`, `_apart` (set once a child built the code) and `_done` (set once the
    build has ended), and calls its `build_quietly`."""

    def start_apart(self):
        """A process of its own building this program's code (build_process), started now;
        None where none can serve (the caller then builds it itself)."""
        if not self._tiers.compiles or not build_process.usable():
            return None
        return build_process.start([self.job()])

    def built_apart(self, child) -> bool:
        """Wait for `child` (start_apart's) to end, here (the builder's thread, which holds no
        lock of Numba's or LLVM's meanwhile); once it has built the code, the next call or
        step boundary loads it from the disk cache (`build_quietly`). Whether it built it (else the
        caller builds it itself, which reports what failed)."""
        if not build_process.ended_well(child):
            return False
        self._apart.set()
        return True

    def job(self) -> build_process.Job:
        """What a process of its own needs to generate and compile this program's code."""
        tiers, ready = self._tiers, self._tiers._ready
        return build_process.Job(Specialised(ready.body, ready.table, ready.plan),
                                 tiers._optimize, tiers._forced, tiers.fast)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until a build started (by a call, or `build`) has ended; whether it has. Code a
        child process built is loaded here, in the caller."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._done.is_set():
            if self._apart.is_set():
                self.build_quietly()
                continue
            left = WAKE_S if deadline is None else min(WAKE_S, deadline - time.monotonic())
            if left <= 0:
                return False
            self._apart.wait(left)  # (the build's end sets `_done` too: seen within WAKE_S)
        return True
