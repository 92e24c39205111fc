"""LLVM IR to machine code: llvmlite's binding, a target machine for this CPU, the optimisation
level chosen per function, the object code kept on disk (kept.py), and the address a function
is called through.

A module is optimised and compiled to object code once (LLVM's code generator, as a file), and
that object code, freshly made or read from the disk cache, is loaded into an MCJIT engine of
its own (relocated and linked to what it calls: malloc, free, the symbols llvm.add_symbol
registered), kept alive by the `Machine` that the caller holds: the code stays mapped while
anything can call it. What runs is always the object code as kept, in the first process as in
the next."""

from __future__ import annotations

import functools
import threading
import weakref

import llvmlite.binding as llvm

from . import kept, unlocked

#: Statements above which a function with loops is optimised at level 2 instead of 3 (loops
#: vectorised, straight-line code not: the SLP vectoriser's time grows with the body, and
#: found nothing of worth in one measured), and above which at level 1 (its compile time
#: grows with its size, and past this most of it is straight-line code). Measured (2-core
#: machine, one run each): the circle classifier's step, 747 statements, 1.65 s of LLVM at
#: level 3 and 1.2 s at level 2, its warm step 161–165 µs at both (level 1: 0.85 s, but
#: 171–174 µs); the MLP's step (61) and the LSTM (114) compile in 0.2 s at level 3.
SLP_LARGE = 400
LARGE = 4000

#: How many rounds a function at level 3 with a parallel nest whose rows hold a loop inside a loop
#: (a short sum under each output) is optimised in (other functions: one). A second round runs the
#: function simplification passes and the whole pipeline again over the vectorised code: its loop
#: unswitching takes the tests the vectoriser wrote around a short inner loop (is the trip count
#: under 8? under 32? a whole number of vectors?) out of the loops around it, and the unroller then
#: unrolls the remainder loop whose trip count they bound, so a sum of a few vectors runs as
#: straight-line code at each entry, as in the code Numba's disk cache holds (Numba optimises a
#: parfor's kernel again when it links it into its caller). Measured (2-core Zen 5 under load, the
#: convolve at L = 100 000, K = 16, beside Numba's cached code in one process, medians of 20
#: alternating rounds, four runs): one round ×1.24–1.53 of Numba's time, two ×0.98–1.05; the
#: kernel's LLVM time 88 → 278 ms, paid once (its object code is kept). Only functions with such a
#: parallel nest pay it: the planner writes one for nests of about half a millisecond of work a
#: call and more (compiler/plan/threads.py), where a fifth of that is worth the compile; a nest of
#: rows with one loop level inside (an MLP's entrywise nests, a layer norm's rows) gains nothing
#: from it and keeps one round (its cold compile: start-mlp's step 0.36 s of optimiser in two
#: rounds against 0.17 s in one).
PARALLEL_ROUNDS = 2

#: Modules compile side by side in threads (LLVM releases the GIL: shared.py's kernels beside
#: their callers'): each is parsed into an LLVM context of its own, never LLVM's global one that
#: Numba compiles in, with a target machine of its own, so no compile touches another's state.
#: The lock guards only `COUNTS`.
_LOCK = threading.Lock()

#: Held while a module's parts are loaded and their symbols registered, and it is linked to them.
_LINK = threading.Lock()

#: How many modules this process compiled with LLVM's optimiser and code generator, and how
#: many it loaded as object code from the disk cache instead (read by the tests: a process
#: that finds every module kept compiles none).
COUNTS = {"compiled": 0, "loaded": 0}


def _host() -> tuple:
    """This CPU's target, name and features (as Numba's own target machine has them), found
    once (under the lock: the first compiles may begin in two threads at once)."""
    with _LOCK:
        return _found_host()


@functools.cache
def _found_host() -> tuple:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    return (llvm.Target.from_default_triple(), llvm.get_host_cpu_name(),
            llvm.get_host_cpu_features().flatten())


def _target_machine(level: int) -> llvm.TargetMachine:
    """A target machine for this CPU at `level`: a new one for each engine, which takes it
    over (and frees it with itself)."""
    target, cpu, features = _host()
    return target.create_target_machine(cpu=cpu, features=features, opt=level, jit=True)


def level(statements: int, loops: bool) -> int:
    """The optimisation level of a function of `statements` statements: 3 for one with loops
    (LLVM vectorises and unrolls them: where the time goes), 2 for a large one (`SLP_LARGE`:
    its loops vectorised, its straight-line code not), 1 for straight-line code (one pass
    over a few numbers: vectorising finds nothing, and level 1 compiles faster), and 1 for a
    very large function (`LARGE`), whose compile time would grow past its gain."""
    if not loops or statements > LARGE:
        return 1
    return 3 if statements <= SLP_LARGE else 2


def rounds(level: int, deep_parallel: bool) -> int:
    """The rounds of LLVM's pipeline for a function at `level` (`PARALLEL_ROUNDS` for one with
    a parallel nest holding a loop inside a loop, `deep_parallel`, at level 3, else 1)."""
    return PARALLEL_ROUNDS if deep_parallel and level == 3 else 1


class Machine:
    """Machine code of one module, in memory: its engine and the address of each function."""

    def __init__(self, engine, addresses: dict[str, int], level: int):
        # The engine (holding the code's memory, its module and the module's LLVM context) is
        # held by a finaliser, not by this object, and closed when this object goes: as garbage
        # in a reference cycle (a traceback holding a call's frame) the collector would clear
        # the objects in the cycle in any order, the context before the engine that frees the
        # module in it (a crash); what a finaliser holds is never part of the garbage.
        self._closed = weakref.finalize(self, engine.close)
        self.addresses = addresses
        self.level = level
        self.parts: tuple[Machine, ...] = ()  # (the parts it calls, kept while it lives)
        self.kept: list[str] = []  # (the names its parts' object code is kept under)


def compile_module(module_text: str, names: tuple[str, ...], level: int,
                   passes: int = 1, before_load=None) -> Machine:
    """`module_text` (LLVM IR as text) parsed, verified, optimised at `level` in `passes`
    rounds (`rounds`) and compiled for this CPU, or its object code read from the disk cache
    when a process compiled it before (kept.py); loaded (after `before_load()`, which makes
    what it links to), and the addresses of `names`."""
    code, _ = _code(module_text, level, passes)
    if before_load is not None:
        before_load()
    return _loaded(code, names, level)


def compile_described(description: str, write, names: tuple[str, ...], level: int) -> Machine:
    """`compile_module` of the module whose IR `write()` makes and `description` determines
    (kept.described): its object code looked for by the description, so a process that finds it
    kept never writes the IR (the block's entry from Python: 0.5 s of Python for 811 KiB)."""
    target, cpu, features = _host()
    name = kept.described(description, level, (target.triple, cpu, features))
    return _loaded(_kept_or_made(name, lambda: _object_code(write(), level)), names, level)


def compile_parts(parts: list[tuple[str | None, tuple[str, ...]]], names: tuple[str, ...],
                  level: int, passes: int = 1, before_load=None,
                  kept_as: list[str] | None = None) -> Machine:
    """A module in parts (parts.py: each its text and the symbols it defines for part 0 to
    call) compiled as `compile_module` compiles one, each further part on a thread of its own
    beside part 0; those parts loaded first and their symbols registered with LLVM (under a
    lock, so that part 0 links to its own parts' code), then part 0, which keeps them and the
    names its parts' object code is kept under (`kept`). `kept_as`: those names, where the
    texts are not at hand (None: a record's, records.py); a part not found under its name is
    a LookupError."""
    made: dict[int, tuple[bytes, str] | BaseException] = {}

    def make(k: int) -> None:
        try:
            text, name = parts[k][0], None if kept_as is None else kept_as[k]
            made[k] = _code(text, level, passes) if name is None else (_read(name), name)
        except BaseException as err:  # noqa: BLE001 (raised again below, in the caller)
            made[k] = err

    beside = [threading.Thread(target=make, args=(k,), name=f"hilbert-part-{k}", daemon=True)
              for k in range(1, len(parts))]  # (daemons: the exit waits for no build)
    for thread in beside:
        thread.start()
    make(0)
    for thread in beside:
        thread.join()
    codes = []
    for k in range(len(parts)):
        if isinstance(made[k], BaseException):
            raise made[k]  # type: ignore[misc]
        codes.append(made[k])
    if before_load is not None:
        before_load()
    with _LINK:
        loaded = []
        for (code, _), (_, symbols) in zip(codes[1:], parts[1:], strict=True):
            part = _loaded(code, symbols, level)
            for symbol in symbols:
                llvm.add_symbol(symbol, part.addresses[symbol])
            loaded.append(part)
        whole = _loaded(codes[0][0], names, level)
    whole.parts = tuple(loaded)
    whole.kept = [name for _, name in codes]
    return whole


def _read(name: str) -> bytes:
    """The object code kept as `name` (a record's part: records.py), or a LookupError."""
    code = kept.read(name)
    if code is None:
        raise LookupError(f"no object code kept as {name}")
    with _LOCK:
        COUNTS["loaded"] += 1
    return code


def _code(module_text: str, level: int, passes: int) -> tuple[bytes, str]:
    """The object code of `module_text` at `level` in `passes` rounds, read from the disk
    cache or compiled (`_object_code`) and kept there, and the name it is kept under."""
    target, cpu, features = _host()
    name = kept.key(module_text, level, (target.triple, cpu, features), passes)
    return _kept_or_made(name, lambda: _object_code(module_text, level, passes)), name


def _kept_or_made(name: str, make) -> bytes:
    """The object code kept as `name`, or `make()`'s, then kept as `name`; counted."""
    code = kept.read(name)
    made = code is None
    if code is None:
        code = make()
        kept.write(name, code)
    with _LOCK:
        COUNTS["compiled" if made else "loaded"] += 1
    return code


def _object_code(module_text: str, level: int, passes: int = 1) -> bytes:
    """`module_text` parsed, verified, optimised at `level` in `passes` rounds and compiled to
    an object file."""
    machine = _target_machine(level)
    parsed = llvm.parse_assembly(module_text, context=llvm.create_context())
    parsed.triple = machine.triple
    parsed.data_layout = str(machine.target_data)
    parsed.verify()
    _optimise(parsed, machine, level, passes)
    return unlocked.object_code(machine, parsed)


def _loaded(code: bytes, names: tuple[str, ...], level: int) -> Machine:
    """The object file `code` loaded into an engine of its own (whose module is empty: nothing
    is compiled), its code made executable; the addresses of `names`."""
    machine = _target_machine(level)
    empty = llvm.parse_assembly("", context=llvm.create_context())
    empty.triple = machine.triple
    empty.data_layout = str(machine.target_data)
    engine = llvm.create_mcjit_compiler(empty, machine)
    engine.add_object_file(llvm.ObjectFileRef.from_data(code))
    engine.finalize_object()
    return Machine(engine, {n: engine.get_function_address(n) for n in names}, level)


def _optimise(module, machine: llvm.TargetMachine, level: int, passes: int = 1) -> None:
    """`module` (parsed) through LLVM's standard pipeline at `level` (loops vectorised from 2
    on, straight-line code at 3: `level`'s rule), and in each further round of `passes`
    through the function simplification passes and the whole pipeline again (`rounds`)."""
    builder = _pipeline(machine, level)
    unlocked.run_passes(builder.getModulePassManager(), module, builder)
    for _ in range(passes - 1):
        for function in module.functions:
            if not function.is_declaration:
                builder = _pipeline(machine, level)
                unlocked.run_function_passes(builder.getFunctionPassManager(), function,
                                             builder)
        builder = _pipeline(machine, level)
        unlocked.run_passes(builder.getModulePassManager(), module, builder)


def _pipeline(machine: llvm.TargetMachine, level: int):
    """A pass builder for `machine` at `level`."""
    options = llvm.PipelineTuningOptions(speed_level=level)
    options.loop_vectorization = level >= 2
    options.slp_vectorization = level >= 3
    return llvm.create_pass_builder(machine, options)
