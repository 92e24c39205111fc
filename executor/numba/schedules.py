"""The schedule a numba call's plan holds (compiler/plan/schedule.py): its code generated, not
compiled, with the units each generated function runs and the executor's account of them,
decided once, when the plan's schedule is first read; the build compiles this very code."""

from __future__ import annotations

from collections.abc import Callable

from ...compiler.plan import Plan
from ...compiler.plan.schedule import Decided
from ...compiler.plan.text import human_bytes
from ...grammar.errors import RuntimeHilbertError, first_line
from .. import threads
from . import row_blocks
from .row_blocks import RowBlocks
from .scope import ScopeRunner, regions_of
from .tier_notes import COMPLEX_HELD, HELD


def decide(generate: Callable[[], tuple[ScopeRunner, RowBlocks | None]],
           replan: Callable[[], Plan] | None, peak: int,
           complex_call: bool = False) -> tuple[Decided, str | None]:
    """(the schedule of the code `generate` gives: its runner and the blocks of rows the call
    runs as, if any; why its calls stay on the host though it is generated, or None). A
    compiled function the LLVM back end does not lower keeps the calls on the host tier, which
    computes the same answer (the plan says which function and why). Code that holds every
    value of a call until it ends is planned again as such (`replan`): over the memory limit,
    its calls stay on the host; within it, its peak is noted where it is not the plan's
    `peak`. Code that cannot be generated is noted so: the build raises the error, or its
    calls stay on the host (W903); a `complex_call`'s stay on the host, saying why."""
    try:
        runner, blocks = generate()
        regions = tuple(runner.schedule())
    except Exception as err:  # noqa: BLE001 (raised again by the build: see above)
        why = f"the code could not be generated ({type(err).__name__}: {first_line(err)})"
        if complex_call:
            held = COMPLEX_HELD.format(why=why)
            return ((), (f"numba: {held}",)), held
        return ((), (f"numba: {why}",)), None
    built = backends(runner)
    notes = [*notes_of(runner), *([row_blocks.note(blocks)] if blocks else []), *built]
    held = None
    left = [n for n in built if " is not compiled: " in n]
    if complex_call and runner.whole is None:  # (the host's walk would read a real value's
        left.append("the call is not one compiled function")  # complex array: one answers)
    if left:
        held = (COMPLEX_HELD if complex_call else HELD).format(why=left[0])
        notes.append(held)
    if holds_every_value(runner) and replan is not None:
        try:
            replanned = replan().peak_bytes
        except RuntimeHilbertError as err:
            if err.code != "E700":
                raise
            held = err.message
            notes.append(f"calls stay on the host: the generated code would hold every value "
                         f"of a call ({err.message})")
        else:
            if replanned != peak:
                notes.append("the generated code holds every value of a call until it ends: "
                             f"peak memory about {human_bytes(replanned)}")
    return (regions, tuple(f"numba: {line}" for line in notes)), held


def backends(runner: ScopeRunner) -> tuple[str, ...]:
    """What builds each compiled function (the LLVM back end), or why nothing does (a
    function it does not lower: llvm.Unsupported), decided with the schedule: each is lowered
    now (LLVM IR, nothing compiled), so the plan says it before the build as after."""
    found = []
    for number, region in enumerate(regions_of(runner), 1):
        if region.generated.compiled:
            if region.lowering is None:
                found.append(f"generated function {number} is not compiled: {region.backend}")
            else:
                found.append(f"generated function {number} built by {region.backend}")
    return tuple(found)


def holds_every_value(runner: ScopeRunner) -> bool:
    """Whether `runner`'s program keeps every value until the call ends: a host walk, or
    generated code that runs as Python (it holds its locals)."""
    return runner.whole is None or not runner.whole.generated.compiled


def notes_of(runner: ScopeRunner) -> tuple[str, ...]:
    """What compiled and what did not, and why nests run serially if they do."""
    serial = threads.why_serial()
    return (*runner.notes(), *((f"loop nests run serially: {serial}",) if serial else ()))
