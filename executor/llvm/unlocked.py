"""llvmlite's two long calls, LLVM's optimiser and its code generator, made without llvmlite's
lock, so that two modules compile on two cores at once.

llvmlite serialises every call into LLVM behind one process-wide lock (llvmlite.binding.ffi's
`_LLVMLock`), since LLVM's global context and its global state are not safe to share between
threads. A module of ours is parsed into an LLVM context of its own and compiled by a target
machine of its own (compile.py), and running LLVM's pass pipeline or its code generator over
one module and its context touches nothing another thread's module uses: what LLVM itself
allows, and what its own parallel code generation does. So these two calls go straight to the
functions llvmlite wraps (each wrapper's `_cfn`: ctypes releases the GIL); every other call
(parsing, verifying, loading) still takes the lock. Where llvmlite's wrapper has no `_cfn`
(other internals than the 0.50 this was written against), the locked calls are made instead:
the same machine code, one module at a time."""

from __future__ import annotations

import ctypes

import llvmlite.binding as llvm
from llvmlite.binding import ffi


def _raw(name: str):
    """The ctypes function llvmlite wraps as `ffi.lib.<name>`, or None where it is not there."""
    try:
        return getattr(ffi.lib, name)._cfn
    except AttributeError:
        return None


def run_passes(manager, module, builder) -> None:
    """`manager` (a new-pass-manager ModulePassManager) run over `module` (parsed in a context
    of its own) with `builder`'s analyses."""
    raw = _raw("LLVMPY_RunNewModulePassManager")
    if raw is None:
        manager.run(module, builder)
        return
    raw(manager, module, builder)


def run_function_passes(manager, function, builder) -> None:
    """`manager` (a FunctionPassManager) run over `function` of a module of its own."""
    raw = _raw("LLVMPY_RunNewFunctionPassManager")
    if raw is None:
        manager.run(function, builder)
        return
    raw(manager, function, builder)


def object_code(machine: llvm.TargetMachine, module) -> bytes:
    """`module` (parsed in a context of its own) compiled by `machine` (its own) to an object
    file."""
    raw = _raw("LLVMPY_TargetMachineEmitToMemory")
    if raw is None:
        return machine.emit_object(module)
    with ffi.OutputString() as error:
        buffer = raw(machine, module, 1, error)
        if not buffer:
            raise RuntimeError(str(error))
    start, size = ffi.lib.LLVMPY_GetBufferStart(buffer), ffi.lib.LLVMPY_GetBufferSize(buffer)
    try:
        return ctypes.string_at(start, size)
    finally:
        ffi.lib.LLVMPY_DisposeMemoryBuffer(buffer)
