"""One einsum spec as a compiled hilbert Function: the .hb module `contract` of it, made once
per process for each spec, executor and path optimiser (hilbert.contract and its slices use it)."""

from __future__ import annotations

import functools

from .api import Function
from .module import compile_source


@functools.lru_cache(maxsize=256)
def _module(spec: str, count: int, executor: str):
    names = ", ".join(f"x{k}" for k in range(count))
    return compile_source(f'fn contract({names}) ↦ einsum("{spec}", {names})\n',
                          name=f"<einsum {spec}>", executor=executor)


@functools.lru_cache(maxsize=256)
def compiled(spec: str, count: int, executor: str, optimize) -> Function:
    """The compiled contraction (once per process for each spec, executor and optimiser: a
    Function keeps its plans and compiled programs per set of shapes)."""
    base = _module(spec, count, executor).contract
    return Function(base.entry, base.module, executor, optimize)
