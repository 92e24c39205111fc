"""Calls in tiers (docs/architecture.md, "Tiers"): the host tier (NumPy along the plan), and the
generated code, built before the first call by default (HILBERT_COMPILE=eager) or in the
background while the first calls run on the host, then swapped in; a running loop moves to the
compiled code at a step boundary where it can (`resume_points`). Calls stay on the host where
nothing is compiled (the plan says why: a dtype, a function the LLVM back end does not lower,
memory, NUMBA_DISABLE_JIT)."""

from __future__ import annotations

import copy
import dataclasses
import functools
import threading
import time
from collections.abc import Callable

import numpy as np

from ...compiler import ir, passes, settings
from ...compiler.driver import Specialised
from ...compiler.dtypes import is_complex
from ...compiler.passes.shapes import ShapeTable, infer_shapes
from ...compiler.plan import Plan
from ...compiler.plan.rows import row_split
from ...compiler.plan.schedule import Decided, Schedule
from ...compiler.settings import whole_number
from ...grammar.errors import HilbertError, first_line, warn
from ..planned import PlannedProgram
from . import row_blocks, schedules
from .builder import BUILDER, WAKE_S
from .placement import Placement
from .programs import HostProgram, WholeProgram
from .regions import CompiledRegion, OnHost
from .row_blocks import RowBlocks
from .scope import ScopeRunner, only_loop, regions_of, resume_points
from .tier_notes import (
    COMPILE_AFTER,
    COMPILE_ENVIRONMENT,
    COMPILED_FIRST,
    FAST_MATHS,
    RESTARTED,
    RESUMED,
    compiled,
    host_only,
)

#: A call whose loop the host would finish sooner than this (seconds, at the pace of its first
#: steps), or whose loop cannot move to compiled code, starts its build when it ends, not at
#: its first step boundary: a build beside it would only slow its steps down. Its next calls
#: run compiled.
SHORT_LOOP_S = 0.5


class Tiers:
    """What every program of one signature shares, made once per plan (and kept with it): the
    host tier's program (the planned program; for a call with loops, a walk of the IR on the
    host with every loop stepped in Python), where a running loop may move to the second tier
    (`resumes`), and the runner of the second tier (made when first asked for), with the code
    it generates). Its plan holds the schedule of that code, decided when first read
    (`_decide`), which the build then runs. `replan`: the plan again, for generated code that
    holds every value of a call until it ends."""

    def __init__(self, ready: Specialised, optimize: str, forced: frozenset[str],
                 fast: bool = False, replan: Callable[[], Plan] | None = None):
        self.looped = bool(ready.plan.loops)
        self.compiles = compiled(ready.plan.dtype)  # else calls stay on the host
        self.counter = None  # the state component that counts a resumable loop's steps left
        self.resumes = resume_points(ready.body) if self.looped else None
        if self.resumes is not None:
            self.counter = only_loop(ready.body).counter  # type: ignore[union-attr]
        looped = "" if not self.looped else RESTARTED if self.resumes is None else RESUMED
        note = (COMPILED_FIRST.format(looped=looped) if self.compiles
                else host_only(ready.plan.dtype))
        plan = _noted(ready.plan, (note, *_maths(fast)),
                      Schedule(self._decide) if self.compiles else Schedule())
        if self.looped:
            walk = ScopeRunner([ready.body], (), ready.table, plan, optimize,
                               Placement(ready.table, forced, host_only=True))
            self.host: HostProgram | PlannedProgram = HostProgram(walk, plan)
        else:
            self.host = PlannedProgram(ready.body, plan)
        self.note = note
        self._replan = replan
        self._held: str | None = None  # why the generated code may not run (`_decide`)
        self._ready = ready
        self._optimize = optimize
        self._forced = forced
        self.fast = fast
        self._runner: ScopeRunner | None = None
        self._lock = threading.Lock()

    def blocks(self) -> RowBlocks | None:
        """The call as blocks of rows on several threads (row_blocks.py), when its generated
        code is one function a split of rows is proven for (compiler/plan/rows.py)."""
        whole, ready = self.runner.whole, self._ready
        if whole is None:
            return None
        return row_blocks.blocks_for(
            whole, ready.plan, lambda: row_split(*generated_ir(ready), ready.plan.signature))

    def _decide(self) -> Decided:
        """The schedule of the generated code (schedules.decide): generated now, compiled by
        the build."""
        decided, self._held = schedules.decide(lambda: (self.runner, self.blocks()),
                                               self._replan, self._ready.plan.peak_bytes,
                                               is_complex(self._ready.plan.dtype))
        return decided

    def stays_on_host(self) -> str | None:
        """Why the calls stay on the host though code is generated for them (the generated
        code would hold more than the memory limit), from the schedule (decided now if it was
        not yet); None when they move to it once it is built."""
        self.host.plan.schedule.decided()
        return self._held

    @property
    def runner(self) -> ScopeRunner:
        with self._lock:
            if self._runner is None:
                body, table = generated_ir(self._ready)
                self._runner = ScopeRunner([body], (), table, self._ready.plan, self._optimize,
                                           Placement(table, self._forced), self.fast)
            return self._runner


def generated_ir(ready: Specialised) -> tuple[ir.Node, ShapeTable]:
    """The IR generated code runs, and its shapes: the plan's, with each sliding dot product
    split (masks.split_windowed_dots), which one compiled nest sums window by window. The host
    tier and the plan (its memory count included) keep the dot, which NumPy runs on the stored
    windows in one matrix-vector product. Made once per plan."""
    made = ready.prepared.generated
    if made is None:
        body = passes.run(passes.GENERATE, ready.body)
        table = ready.table if body is ready.body else infer_shapes(body, ready.plan.signature)
        with _PREPARING:  # (threads that made it at once all take the first one kept)
            if ready.prepared.generated is None:
                ready.prepared.generated = (body, table)
            made = ready.prepared.generated
    return made


#: Held while a generated IR is kept with its plan.
_PREPARING = threading.Lock()


def tiers_of(ready: Specialised, optimize: str, forced: frozenset[str],
             fast: bool = False, replan: Callable[[], Plan] | None = None) -> Tiers:
    key = (optimize, forced, fast)
    made = ready.prepared.tiers.get(key)
    if made is None:
        made = ready.prepared.tiers.setdefault(key, Tiers(ready, optimize, forced, fast, replan))
    return made


def _maths(fast: bool) -> tuple[str, ...]:
    return (FAST_MATHS,) if fast else ()


def compile_when(looped: bool = False) -> int | None:
    """HILBERT_COMPILE as the call of a signature from which its code is built (0: eager, at
    the first call before it runs; None: never), or an ArgumentError (E600). By default every
    call is built before it runs: the LLVM back end's builds take seconds, and only the
    compiled code then computes results, so every process gives the same bits whenever its
    builds finish (docs/semantics.md, "Tiers"). Under `background` a call with loops is built
    from its first call (its steps are worth compiling), one without from the
    COMPILE_AFTER-th."""
    text = settings.text(COMPILE_ENVIRONMENT).lower()
    if text in ("", "eager"):
        return 0
    if text == "background":
        return 1 if looped else COMPILE_AFTER
    if text == "never":
        return None
    return whole_number(COMPILE_ENVIRONMENT, "eager, never, background, or the call from which "
                        "to compile in the background (a whole number ≥ 1)", smallest=1)


def _noted(plan: Plan, lines, schedule: Schedule | None = None) -> Plan:
    """`plan` with `lines` added to its notes (and given a `schedule`, that schedule)."""
    return dataclasses.replace(plan, notes=plan.notes + tuple(f"numba: {line}" for line in lines),
                               schedule=plan.schedule if schedule is None else schedule)


def _second_tier(runner: ScopeRunner, plan: Plan, arity: int, blocks: RowBlocks | None):
    """The program of generated code for `runner`: one function of the parameters (run as
    `blocks` of rows, if given), or a host walk calling compiled regions."""
    if runner.whole is not None:
        return WholeProgram(runner.whole, plan, arity, blocks)
    return HostProgram(runner, plan)


class TieredProgram:
    """A call in two tiers. The first, from the first call, needs nothing compiled: the
    planned program on the host (executor/planned.py), or for a call with loops a walk of it
    on the host that steps each loop in Python. The second: the generated code (one compiled
    function, or plain NumPy calls when nothing needs compiling), built when HILBERT_COMPILE
    says (`compile_when`) and swapped in once built, so a call never waits for a build unless
    asked to (HILBERT_COMPILE=eager, the default); a call in the middle of a loop whose start
    the second tier can take (`resume_points`) moves to it at the next step boundary. `tier`
    is the tier the latest call ran on ("host" or "compiled"); both give the same results but
    for the last bits' rounding (docs/semantics.md, "Tiers")."""

    # (both tiers detach what they return, and a call moved at a step boundary returns the
    # second tier's result detached from the values it resumed with, which hold every argument
    # the call did not replace by loop state)
    detaches = True

    def __init__(self, tiers: Tiers, arity: int, when: int | None):
        self.host = tiers.host
        self.host_calls = 0  # calls run on the host so far (counted loosely under threads)
        self.moved = 0  # calls that moved to the compiled code at a step boundary
        self._resumes = tiers.resumes
        self._counter = tiers.counter
        self.looped = tiers.looped
        self._host_steps = 0  # steps host calls ran before they moved
        self._tiers = tiers
        self._arity = arity
        self._when = when if tiers.compiles else None
        self._plan = self.host.plan
        self._second: WholeProgram | HostProgram | None = None  # generated, not yet built
        self._fast: WholeProgram | HostProgram | None = None  # built and swapped in
        self._lock = threading.RLock()  # (build holds it while it generates the code)
        self._done = threading.Event()  # set when the build has ended, built or not
        self.queued = False  # handed to the background builder
        self._error: BaseException | None = None

    @property
    def plan(self) -> Plan:
        """The plan: how calls run (the tiers), and the schedule of the generated code, the
        same before and after the build (the build runs what it says)."""
        return self._plan

    def __call__(self, values):
        fast = self._fast
        if fast is not None:
            try:
                return fast.run(values)
            except OnHost:  # (values compiled code does not take as the host does)
                return self.host(values)
        return self._first_tier(values)

    @property
    def tier(self) -> str | None:
        """The tier calls run on now ("host" or "compiled"), None before the first call: the
        tier of the latest call, but for one that ran while the code was being swapped in."""
        if self._fast is not None:
            return "compiled"
        return "host" if self.host_calls else None

    @property
    def eager(self) -> bool:
        """Whether its code is built before its first call runs (HILBERT_COMPILE=eager)."""
        return self._when == 0

    @property
    def compiles(self) -> bool:
        """Whether this program has a compiled tier at all (its dtype is one the code
        generator writes: COMPILED_DTYPES)."""
        return self._tiers.compiles

    @property
    def built(self) -> bool:
        """Whether the generated code is built and calls run on it."""
        return self._fast is not None

    def _first_tier(self, values):
        if self._error is not None:  # the build failed: as a call that compiles would
            if self._when == 0 or isinstance(self._error, HilbertError):
                raise _fresh(self._error) from self._error  # (never one object raised again)
            self._stay_on_host(self._error)
        when = self._when
        if when == 0 and not self._done.is_set():
            if self.build() is not None:
                return self(values)
        self.host_calls += 1
        if not self.looped:
            self._start_when_due()
            return self.host(values)
        try:
            value = self.host(values, functools.partial(self._boundary, values,
                                                        time.perf_counter()))
        except _Moved as moved:
            return moved.value
        self._start_when_due()
        return value

    def sources(self) -> list[str]:
        """The generated sources of its compiled regions (generated now if they were not)."""
        return [r.source for r in regions_of(self.runner) if r.generated.compiled]

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until a build started (by a call, or `build`) has ended; whether it has (waking
        every WAKE_S, so that a Ctrl-C reaches the waiting thread)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._done.is_set():
            left = WAKE_S if deadline is None else min(WAKE_S, deadline - time.monotonic())
            if left <= 0:
                return False
            self._done.wait(left)
        return True

    def _start_when_due(self) -> None:
        """Queue the build once this signature has had the calls HILBERT_COMPILE asks for. A
        call with loops queues it at a step boundary when it could move to it (`_boundary`),
        else at its end: its first step, and a one-step train call, run before the build competes
        with them for the interpreter."""
        when = self._when
        if when is not None and self.host_calls >= when and not self.queued \
                and not self._done.is_set():
            self._start()

    def _boundary(self, values, began: float, state: tuple, steps: int) -> None:
        """At a step boundary of a host call's loop (begun at `began`): the build is queued
        when due if this call can use it (`_worth_moving`; else it is queued when the call
        ends, so a build beside the steps does not slow them down); once it is built,
        the rest of the call runs on the compiled code from `state` when its loop can move
        (raised as _Moved, with its result)."""
        if not self.queued and _worth_moving(self._resumes, self._counter, began, state, steps):
            self._start_when_due()
        fast = self._fast
        if fast is None or self._resumes is None:
            return
        moved = list(values)
        for component, parameter in self._resumes:
            moved[parameter] = state[component]
        try:
            value = fast.run(moved)
        except OnHost:  # (the host goes on)
            return
        self._host_steps += steps
        self.moved += 1
        raise _Moved(value)

    def _stay_on_host(self, err: BaseException) -> None:
        """After a background build failed for a reason of hilbert's own (a bug): calls go on
        on the host tier, which gives the same results, and the user is told once (W903)."""
        self._error = None
        self._when = None
        self._plan = _noted(self.host.plan, (f"calls stay on the host: the compiled code could "
                                             f"not be built ({type(err).__name__}: {err})",))
        warn("W903", f"the compiled code of a call could not be built ({type(err).__name__}: "
             f"{first_line(err)}); its calls go on on the host tier, with the same results. "
             "This is a bug in hilbert: please report it with the .hb source", stacklevel=6)

    def _start(self) -> None:
        with self._lock:
            if self.queued or self._done.is_set():
                return
            self.queued = True
        BUILDER.submit(self)

    def build_quietly(self) -> None:
        """`build`, its error kept for the next call to raise (the background thread's way)."""
        try:
            self.build()
        except Exception:  # noqa: BLE001, S110 (kept in self._error: the next call raises it)
            pass

    def build(self, advance=None):
        """Generate the code, compile it for this signature and swap it in (the background
        thread calls this; so may anyone who wants the compiled tier now). Returns the program
        calls now run on, or None when they stay on the host (the generated code would hold
        more memory than the limit allows; the plan's notes say so). A build that fails raises
        here, and at every later call (as a call that compiles would). The main thread waits
        while another thread builds (BUILDER.build_waiting), so that a Ctrl-C raises
        KeyboardInterrupt at once: the build goes on, and the calls that follow run on it
        (the next call that builds waits for it)."""
        if self._done.is_set():
            return self._fast
        if threading.current_thread() is threading.main_thread():
            return BUILDER.build_waiting(functools.partial(self._build_here, advance))
        return self._build_here(advance)

    def _build_here(self, advance=None):
        """`build`, in this thread."""
        with self._lock:
            if self._done.is_set():
                return self._fast
            if not self._tiers.compiles:  # (its plan says why)
                self._done.set()
                return None
            try:
                fast = self._built(advance)
            except Exception as err:
                self._error = err
                self._done.set()
                raise
            self._done.set()
            return fast

    def _built(self, advance=None):
        if self._tiers.stays_on_host() is not None:  # (its plan's schedule says why)
            return None
        second = self.generated()
        runner = self._tiers.runner
        for region in regions_of(runner):
            region.compile()
            if advance is not None:
                advance()
        self._fast = second
        return second

    def generated(self) -> WholeProgram | HostProgram:
        """The second tier's program (its code generated now if it was not yet; nothing is
        compiled here)."""
        with self._lock:
            if self._second is None:
                runner, blocks = self._tiers.runner, self._tiers.blocks()
                self._second = _second_tier(runner, self.host.plan, self._arity, blocks)
            return self._second

    @property
    def region(self) -> CompiledRegion:
        """The generated function of a call that is one (as WholeProgram's), generated now if it
        was not yet."""
        second = self.generated()
        assert isinstance(second, WholeProgram), "a call with host work has no one region"
        return second.region

    @property
    def runner(self) -> ScopeRunner:
        return self._tiers.runner

    @property
    def loop_steps(self) -> int:
        """Loop steps its calls have run so far, on either tier."""
        steps = self.host.loop_steps + self._host_steps
        second = self._second
        return steps + (second.loop_steps if second is not None else 0)



def _worth_moving(resumes, counter: int | None, began: float, state: tuple, steps: int) -> bool:
    """Whether a call could move to the compiled code before its loop ends: the loop can move
    (`resumes`, resume_points) and, when it is counted, its steps left (its counter in
    `state`) would take the host at least SHORT_LOOP_S at the pace of the `steps` run so far."""
    if resumes is None:
        return False
    if counter is None or not steps:
        return True
    pace = (time.perf_counter() - began) / steps
    return pace * float(np.real(state[counter])) >= SHORT_LOOP_S

class _Moved(Exception):  # noqa: N818 (not an error: how a host call hands over its result)
    """Raised at a step boundary of a host call once the compiled code has finished it."""

    def __init__(self, value) -> None:
        super().__init__()
        self.value = value


def _fresh(err: BaseException) -> BaseException:
    """A new exception like `err`, to raise again without growing `err`'s traceback."""
    try:
        return copy.copy(err)
    except Exception:  # noqa: BLE001 (an exception whose arguments cannot be given again)
        return RuntimeError(f"{type(err).__name__}: {err}")
