"""Kernels shared by every module that calls them (the product kernels, real and complex): each
written into a module of its own, its machine code made at level 3 (or loaded from the disk
cache) once per process and kept for the process's life, and called by its symbol.

A kernel's machine code is made on a thread of its own (`_Build`), begun when a module first
declares it: LLVM releases the GIL, so the kernel compiles beside the rest of its caller's
lowering and beside its caller's own compile, on another core (start-mlp's 80 KiB product
kernel and its 37 KiB step compiled side by side, not one after the other). A module that
declares a kernel waits for it only before it is loaded (`awaited`), where its calls are
linked to the kernel's symbol."""

from __future__ import annotations

import atexit
import threading
import time

import llvmlite.binding as llvm
from llvmlite import ir

from . import compile

#: The kernels' machine code, by key (the product kernel's dtype; a complex kernel's dtype),
#: kept for the process's whole life (every module that multiplies calls it by its symbol).
KERNELS: dict[str, compile.Machine] = {}
#: The kernels whose machine code is being made, by symbol (until a module waits for it).
_BUILDS: dict[str, _Build] = {}
#: Every kernel begun in this process: its key in KERNELS, by symbol.
_KEYS: dict[str, str] = {}
_LOCK = threading.Lock()


class _Build(threading.Thread):
    """A kernel's machine code made (`KERNELS[key]`) and its symbol registered with LLVM, on a
    thread of its own; an error is kept for the module that waits for it. A daemon, as every
    build's thread (executor/numba/builder.py): the exit waits for none; a build under way
    writes its object code to the disk cache whole or not at all (kept.py)."""

    def __init__(self, key: str, symbol: str, text: str):
        super().__init__(name=f"hilbert-kernel-{symbol}", daemon=True)
        self.key, self.symbol, self.text = key, symbol, text
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            made = compile.compile_module(self.text, (self.symbol,), 3)
            llvm.add_symbol(self.symbol, made.addresses[self.symbol])
            KERNELS[self.key] = made
        except BaseException as err:  # noqa: BLE001 (raised again where it is waited for)
            self.error = err


def declared(key: str, name: str, kind: ir.FunctionType, module: ir.Module,
             write) -> ir.Function:
    """The function `name` of type `kind`, which `write(own)` writes into a module of its own,
    declared in `module`: its machine code made at level 3 (or loaded from the disk cache)
    once per process, on a thread of its own (`awaited` waits for it), and kept
    (`KERNELS[key]`), its symbol registered with LLVM."""
    begin(key, name, write)
    found = module.globals.get(name)
    return found if found is not None else ir.Function(module, kind, name)


def begin(key: str, name: str, write) -> None:
    """The build of the kernel `name` (`write(own)` writes it into a module of its own) begun
    on a thread of its own, unless its machine code is made or being made."""
    with _LOCK:
        _KEYS[name] = key
        if not _BUILDS and not KERNELS:
            atexit.register(_settled)
        if key not in KERNELS and name not in _BUILDS:
            own = ir.Module(name=f"hilbert_{name}")
            write(own)
            build = _BUILDS[name] = _Build(key, name, str(own))
            build.start()


def called(module_text: str) -> tuple[str, ...]:
    """The kernels that `module_text` declares (of those begun in this process: a module's
    lowering begins every kernel it declares)."""
    return tuple(sorted(n for n in _KEYS if f'@"{n}"' in module_text))


def awaited(symbols: tuple[str, ...]) -> None:
    """Every kernel of `symbols` (each begun: `begin`) has its machine code and its symbol
    registered: builds under way waited for (their errors raised here). A build whose thread is
    gone without a result (a process forked while it ran) is made again in this thread."""
    for name in symbols:
        build = _BUILDS.get(name)
        if build is None:
            continue
        if build.is_alive():
            build.join()
        with _LOCK:
            if _BUILDS.get(name) is not build:
                continue  # (another caller waited for it first)
            if build.error is None and build.key not in KERNELS:
                build.run()
            del _BUILDS[name]
        if build.error is not None:
            raise build.error


#: How long the exit waits, at most, for kernels' builds under way (0.2–0.3 s each).
EXIT_WAIT_S = 0.8


def _settled() -> None:
    """At exit, the kernels' builds under way waited for, `EXIT_WAIT_S` at most together: a
    process that ends while LLVM's code generator runs in another thread can abort inside it
    (its global state torn down under it), and a kernel begun at load (`begin`) by a process
    that never multiplies is often still being built when its last line has run."""
    deadline = time.monotonic() + EXIT_WAIT_S
    for build in list(_BUILDS.values()):
        build.join(max(0.0, deadline - time.monotonic()))


def begun(name: str) -> bool:
    """Whether the kernel `name` was begun in this process."""
    return name in _KEYS
