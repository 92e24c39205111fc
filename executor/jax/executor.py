"""The jax executor: a call's planned IR (the optimised IR the numba executor runs, its einsums
along the plan's paths) lowered to JAX (executor/jax/lowering.py) and compiled by `jax.jit` for
one device, the first JAX has unless `device=` names another (docs/jax-executor.md).

Every call computes under `jax.enable_x64(True)`, a scope that ends with the call: float64 and
complex128 calls compute in 64 bits and the draws' uint64 arithmetic is exact, while the
process's own `jax_enable_x64` setting is left as the user set it. What the other executors
check from values (a counted loop's step count, E500; x[t]'s position, E510; oneHot's labels,
E511; a draw's key and step, E512) is checked inside the jitted call and raised after it, as
the host raises it; a tape over the memory limit (E700) is refused before the call where its
step count is known from the arguments, else when the call finds it needs it."""

from __future__ import annotations

import threading
from dataclasses import replace

import jax
import numpy as np

from ...compiler import ir
from ...compiler.counting import COUNTED, counting_in
from ...compiler.driver import Entry, Specialised, plan_entry
from ...compiler.evaluate import Host
from ...compiler.loops import (
    guard_tapes,
    moving_components,
    step_count,
    tape_guard,
    tapes_at_the_call,
)
from ...compiler.plan import Plan, memory_limit
from ...grammar.errors import ArgumentError, RuntimeHilbertError
from ...grammar.source import Span
from ..numerics import quietly
from .kept import kept_compilations
from .ledger import TapeTooShort, unpacked
from .lowering import Lowering, gaussian_draws, loops_run_backwards

#: The options `Function.using(executor="jax", …)` takes.
OPTIONS = ("device",)
#: A tape whose step count is not known before the call starts this long, and grows.
FIRST_TAPE = 16
#: What a plan for JAX's CPU says of subnormal numbers: XLA's CPU runtime runs every program
#: with the processor's flush-to-zero and denormals-are-zero modes set, and no flag of XLA's
#: clears them (`--xla_cpu_ftz=false` changes only how LLVM compiles; jax 0.10.2).
FLUSHED = ("subnormal numbers are zeros on cpu: read as ±0 and made as ±0 (XLA's CPU runtime "
           "flushes them; docs/jax-executor.md)")


def prepare(entry: Entry, shapes, optimize: str = "auto", values=None, math: str = "exact",
            dtype: str = "float64", device: str | None = None) -> JaxProgram:
    """Specialise and plan `entry` for `shapes` and `dtype`; the program that runs it jitted
    on `device` (a JAX platform, optionally with an index: "cpu", "gpu:1"; None: JAX's
    default device). `math` changes nothing: XLA's functions are within both modes' bounds."""
    ready = plan_entry(entry, shapes, optimize, "jax", values, dtype=dtype)
    return JaxProgram(ready, optimize, resolve_device(device, entry.definition.span),
                      entry.name)


def check_options(options: dict, span: Span) -> None:
    """An ArgumentError unless `device` names a device JAX has (or is None)."""
    resolve_device(options.get("device"), span)


def resolve_device(name, span: Span):
    """The JAX device `name` names ("cpu", "gpu", "gpu:1"; None: JAX's default), or E600."""
    if name is None:
        return jax.devices()[0]
    platform, _, index = str(name).partition(":") if isinstance(name, str) else ("", "", "")
    try:
        devices = jax.devices(platform) if platform else []
    except RuntimeError:
        devices = []
    if not index.isdigit() and index:
        devices = []
    position = int(index) if index else 0
    if position >= len(devices):
        have = ", ".join(label(d) for d in jax.devices())
        raise ArgumentError("E600", f"device={name!r:.40} is not a device JAX has here (it has "
                            f"{have}; write a platform such as \"cpu\" or \"gpu\", or "
                            "\"gpu:1\")", span)
    return devices[position]


def label(device) -> str:
    """A device as plans name it: platform:index (cpu:0, gpu:1)."""
    return f"{device.platform}:{device.id}"


def _room(steps: int, per_step: int) -> int:
    """A tape's length for `steps` steps: the next power of two (so other counts reuse the
    program), or `steps` itself where that power would pass the memory limit."""
    room = 1 << max(0, steps - 1).bit_length()
    return steps if room * per_step > memory_limit() else max(room, 1)


class JaxProgram:
    """A callable for one signature: the entry's planned IR jitted for one device. `plan`
    says how (its notes name the device), `__call__(values)` runs it and hands back NumPy
    values, `loop_steps` counts the loop iterations its calls ran, `stablehlo()` is the
    lowered program as StableHLO text (hilbert/export.py)."""

    def __init__(self, ready: Specialised, optimize, device, name: str):
        self.body = ready.body
        self.states = ready.table.states
        self.optimize = optimize
        self.device = device
        self.name = name
        self.sites = loops_run_backwards(self.body)
        self.at_the_call = [t for t in tapes_at_the_call(self.body) if t in self.sites]
        self._base = ready.plan
        self.counting = counting_in(self.body, ready.plan.dtype)  # (compiler/counting.py)
        # each parameter's dtype: the call's, float64 for one read as a whole number
        self.dtypes = tuple(np.dtype(COUNTED if i in self.counting.params else ready.plan.dtype)
                            for i in range(len(ready.plan.signature)))
        self._plan = _noted(ready.plan, device, self.body, bool(self.sites))
        self._rooms = [FIRST_TAPE] * len(self.sites)  # the longest tape each needed so far
        self._programs: dict[tuple, tuple] = {}
        self._lock = threading.Lock()
        self._steps = 0
        self._traceable: tuple | None = None  # (traceable() without values, once made)

    @property
    def plan(self) -> Plan:
        return self._plan

    @property
    def loop_steps(self) -> int:
        return self._steps

    def __call__(self, values):
        values = tuple(v if v.dtype == d else v.astype(d)
                       for v, d in zip(values, self.dtypes, strict=True))
        with jax.enable_x64(True):
            rooms = self._rooms_for(values)
            while True:
                compiled, lowering = self._compiled(rooms)
                # (NumPy arguments: the executable moves them to its device itself, at a
                # sixth of jax.device_put's cost; each value comes back by np.asarray, a tenth
                # of jax.device_get's cost for a small answer)
                out, packed = compiled(*values)
                error, value, steps = unpacked(np.asarray(packed))
                try:
                    lowering.checks.settle(error, value)
                except TapeTooShort as short:
                    rooms = self._longer(rooms, short, lowering)
                    continue
                self._steps += steps
                return tuple(map(np.array, out)) if isinstance(out, tuple) else np.array(out)

    def traceable(self, values: tuple | None = None):
        """The program as a function of JAX arrays, to be traced into another program (the
        caller's jit, grad or vmap: hilbert.jax) or transformed by JAX itself (jax.jvp): no
        checks, gaussian draws on the device. Each tape is as long as `values` need; without
        values, as the step counts written in the program say, and None when a loop run
        backwards takes its steps from the call's values. Trace it within
        `jax.enable_x64(True)` for a 64-bit dtype (the trace itself turns 64-bit types on
        within it, whatever the caller's setting: what it counts is float64)."""
        if values is None and self._traceable is not None:
            return self._traceable[0]
        with jax.enable_x64(True):
            if values is not None:
                rooms = self._rooms_for(tuple(values))
            else:
                try:
                    rooms = self._export_rooms(self.body.span)
                except ArgumentError:
                    self._traceable = (None,)
                    return None
        lowering = Lowering(self._base, self.optimize, self.sites, rooms, exported=True,
                            counting=self.counting)

        def traced(*args):
            return lowering.trace(self.body, args)[0]

        if values is None:
            self._traceable = (traced,)
        return traced

    def stablehlo(self, span: Span) -> str:
        """The program as StableHLO text, for shapes and dtype alone: no checks (it cannot
        raise), gaussian draws computed on the device; a loop run backwards needs its step
        count known from shapes (E600 otherwise: its tape's length is fixed in the text)."""
        with jax.enable_x64(True):
            rooms = self._export_rooms(span)
            lowering = Lowering(self._base, self.optimize, self.sites, rooms, exported=True,
                                counting=self.counting)

            def exported(*args):
                return lowering.trace(self.body, args)[0]

            exported.__name__ = _symbol(self.name)
            # (a parameter read as a whole number takes a float64, as a call's does)
            specs = [jax.ShapeDtypeStruct(s, d)
                     for s, d in zip(self._base.signature, self.dtypes, strict=True)]
            return jax.jit(exported).lower(*specs).as_text()

    # ------------------------------------------------------------ tapes

    def _rooms_for(self, values: tuple) -> tuple[int, ...]:
        """Each tape's length for this call: known from the arguments where the loop's step
        count is (E700 before anything runs when that tape passes the memory limit), else
        the longest that loop has needed so far."""
        rooms = list(self._rooms)
        if not self.at_the_call:
            return tuple(rooms)
        host, memo = Host(dtype=self._base.dtype, counting=self.counting), dict[ir.Node, object]()

        def count(node: ir.Node):
            return host.eval(node, memo, values)

        quietly(guard_tapes, self.at_the_call, self.states, count)
        for node in self.at_the_call:
            loop = node.loop
            try:
                steps = step_count(loop, quietly(count, loop.init[loop.counter]))
            except RuntimeHilbertError:
                continue  # (the call raises it, as the loop would)
            shapes = self.states.get((loop,), ())
            per_step = 8 * sum(int(np.prod(shapes[i])) for i in moving_components(loop)
                               if i < len(shapes))
            rooms[self.sites[node]] = _room(steps, per_step)
        return tuple(rooms)

    def _longer(self, rooms: tuple, short: TapeTooShort, lowering: Lowering) -> tuple:
        """`rooms` with tape `short.site` long enough for `short.steps` (E700 when that
        passes the memory limit, as loops.tape_guard says it)."""
        loop, shapes = lowering.tapes[short.site]
        moving = moving_components(loop)
        tape_guard(loop, [np.broadcast_to(np.float64(0), s) for s in shapes], moving, short.steps)
        per_step = 8 * sum(int(np.prod(shapes[i])) for i in moving)
        longer = list(rooms)
        longer[short.site] = _room(short.steps, per_step)
        with self._lock:
            self._rooms[short.site] = max(self._rooms[short.site], longer[short.site])
        return tuple(longer)

    def _export_rooms(self, span: Span) -> tuple[int, ...]:
        rooms = []
        for node in self.sites:
            count = node.loop.init[node.loop.counter] if node.loop.counter is not None else None
            known = (node in self.at_the_call and count is not None
                     and not any(isinstance(n, ir.Param) for n in ir.topological(count)))
            if not known:
                raise ArgumentError(
                    "E600", f"{node.loop.name} runs backwards here, and its steps are known "
                    "only from the call's values: an exported program fixes the length of the "
                    "tape of its states, so export a definition whose step count is a number "
                    "written in it", span)
            rooms.append(max(1, step_count(node.loop, quietly(
                Host(dtype=self._base.dtype, counting=self.counting).eval, count, {}, ()))))
        return tuple(rooms)

    def _compiled(self, rooms: tuple[int, ...]):
        """(the executable for these tape lengths, the lowering that traced it)."""
        found = self._programs.get(rooms)
        if found is None:
            with self._lock:
                found = self._programs.get(rooms)
                if found is None:
                    found = self._programs[rooms] = self._compile(rooms)
        return found

    def _compile(self, rooms: tuple[int, ...]):
        lowering = Lowering(self._base, self.optimize, self.sites, rooms,
                            counting=self.counting)

        def run(*args):
            out, ledger = lowering.trace(self.body, args)
            return out, ledger.packed()

        run.__name__ = _symbol(self.name)
        placed = jax.sharding.SingleDeviceSharding(self.device)
        specs = [jax.ShapeDtypeStruct(s, d, sharding=placed)
                 for s, d in zip(self._base.signature, self.dtypes, strict=True)]
        lowered = jax.jit(run).lower(*specs)
        with kept_compilations():  # (read from, and kept in, the cache directory: kept.py)
            return lowered.compile(), lowering


def _symbol(name: str) -> str:
    """A definition's name as the jitted function's (and the StableHLO module's) name."""
    return name if name.isascii() and name.isidentifier() else "hilbert_function"


def _noted(plan: Plan, device, body: ir.Node, tapes: bool) -> Plan:
    """`plan` with this executor's notes: the device, 64-bit types, what is checked, subnormal
    numbers on the CPU, where gaussian draws are made, how loops run backwards keep their
    states."""
    lines = [f"jitted for {label(device)} (XLA); 64-bit types on within hilbert's calls only "
             "(jax.enable_x64 in scope, the global setting untouched)",
             "step counts, positions, labels and draw keys checked in the jitted call, raised "
             "after it (E500, E510, E511, E512)"]
    if device.platform == "cpu":
        lines.append(FLUSHED)
    if gaussian_draws(body):
        lines.append("gaussian draws made on the host (a callback), bit for bit the other "
                     "executors'")
    if tapes:
        lines.append("loops run backwards keep their states on a tape whose length is fixed "
                     "when traced: known from the arguments where the step count is, else "
                     "traced again, longer, when a call needs more")
    return replace(plan, notes=plan.notes + tuple(f"jax: {line}" for line in lines))
