"""Kernels shared by every module that calls them (the product kernels, real and complex): each
written into a module of its own, its machine code made at level 3 (or loaded from the disk
cache) once per process and kept for the process's life, and called by its symbol."""

from __future__ import annotations

import threading

import llvmlite.binding as llvm
from llvmlite import ir

from . import compile

#: The kernels' machine code, by key (the product kernel's dtype; a complex kernel's dtype),
#: kept for the process's whole life (every module that multiplies calls it by its symbol).
KERNELS: dict[str, compile.Machine] = {}
_LOCK = threading.Lock()


def declared(key: str, name: str, kind: ir.FunctionType, module: ir.Module,
             write) -> ir.Function:
    """The function `name` of type `kind`, which `write(own)` writes into a module of its own,
    declared in `module`: its machine code made at level 3 (or loaded from the disk cache)
    once per process and kept (`KERNELS[key]`), its symbol registered with LLVM."""
    with _LOCK:
        if key not in KERNELS:
            own = ir.Module(name=f"hilbert_{name}")
            write(own)
            made = compile.compile_module(str(own), (name,), 3)
            llvm.add_symbol(name, made.addresses[name])
            KERNELS[key] = made
    found = module.globals.get(name)
    return found if found is not None else ir.Function(module, kind, name)
