"""The numba executor: a call compiled whole into one function (loops inside, contractions
through BLAS, entrywise work in fused loop nests), with a per-node fallback to the host.

What cannot be compiled (a primitive with no compiled form, or one forced to the host by
HILBERT_NUMBA_HOST=op,op) runs as the planned NumPy executor would; every maximal compilable
part around it still runs compiled, and the plan's notes say which nodes ran where and why.

Compiled code is the LLVM back end's (executor/llvm), built before a call's first run by
default (HILBERT_COMPILE=eager), so every process gives the same bits. A generated function the
back end does not lower keeps its call on the host tier, as the plan says. Calls can also run
in tiers (docs/architecture.md, "Tiers"; HILBERT_COMPILE=background or N): a call without loops
runs at once as the planned executor (executor/planned.py) runs it, on the host, while its code
is built in a background thread, then swapped in; a call with loops runs its steps on the host
(each step's work in NumPy) while its code is built; a loop that starts from the call's
parameters (a model's train block, a self-recursive definition) moves to the compiled code at
the next step boundary once it is built, its state carried over.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, contextmanager

from ...compiler.driver import Entry, plan_entry
from ...compiler.plan import Plan
from ...compiler.settings import names
from .. import threads
from .placement import HOST_ENVIRONMENT
from .regions import CompiledRegion
from .scope import ScopeRunner, regions_of, resume_points
from .tiers import (
    COMPILE_AFTER,
    COMPILE_ENVIRONMENT,
    TieredProgram,
    compile_when,
    generated_ir,
    tiers_of,
)

__all__ = ["COMPILE_AFTER", "COMPILE_ENVIRONMENT", "HOST_ENVIRONMENT", "CompiledRegion",
           "ScopeRunner", "TieredProgram", "build", "compile_when", "first_call",
           "generated_ir", "prepare", "regions_of", "resume_points"]


def prepare(entry: Entry, shapes, optimize: str = "auto", values=None, math: str = "exact",
            dtype: str = "float64"):
    """Specialise and plan `entry` for `shapes` and `dtype`; return the program that runs it,
    built when HILBERT_COMPILE says (nothing is generated or compiled here); a call in a dtype
    the code generator does not write stays on the host tier (the plan says so).
    `math`: "exact" or "fast" (compiled code within a few ulp of NumPy: the plan says so)."""
    ready = plan_entry(entry, shapes, optimize, "numba", values, dtype=dtype)
    forced = names(HOST_ENVIRONMENT)
    threads.checked()  # HILBERT_THREADS read here, on the caller's thread (E600 if unreadable)

    def replan() -> Plan:  # host walks and generated code run as Python hold every value
        return plan_entry(entry, shapes, optimize, "numba", values, keeps_all=True,
                          dtype=dtype).plan

    looped = bool(ready.plan.loops)  # (every loop is planned, however deep)
    return TieredProgram(tiers_of(ready, optimize, forced, math == "fast", replan),
                         len(entry.params), compile_when(looped))


def build(program, label: str = "", progress: Progress | None = None) -> None:
    """Compile `program` (one `prepare` made) now, so that its first call waits for no
    compiler: a loop-free program's second tier is built and swapped in (unless the memory
    guard keeps it on the host, as its plan then says); a program with loops has every one of
    its compiled regions compiled (loaded from the disk cache when it holds them). `progress`,
    the caller's, is told of it (hilbert.Function gives hilbert.progress.compiling, a line
    `compiling LABEL` on a terminal); None: nothing is told."""
    if not program.compiles:  # (a dtype the code generator does not write: its plan says so)
        return
    with (progress or _untold)(label, len(regions_of(program.runner))) as advance:
        program.build(advance)


#: What `build` reports to: `progress(label, functions)` is a context around the build that
#: yields `advance()`, called as each of its functions is compiled.
Progress = Callable[[str, int], AbstractContextManager[Callable[[], None]]]


@contextmanager
def _untold(label: str, total: int):
    """A `Progress` that tells nobody."""
    yield lambda: None


def first_call(program, label: str, progress: Progress | None = None) -> None:
    """Before the first call of a new signature: what that call would wait for, built now under
    `build`'s `progress` (under HILBERT_COMPILE=eager only: otherwise the first call starts on
    the host tier at once)."""
    if isinstance(program, TieredProgram) and program.eager:
        build(program, label, progress)
