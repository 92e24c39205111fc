"""Entrywise regions on dask arrays: each maximal region of entrywise work is one blockwise
map of the numba executor's generated code for the same region (one task per block, however
long the region), compiled by the LLVM back end; only its loop IR travels with a task."""

from __future__ import annotations

from dataclasses import dataclass

import dask.array as da
import numpy as np

from ...compiler import ir
from ...compiler.ops.primitives import having
from ...compiler.passes.shapes import ShapeTable
from .. import codegen, llvm, threads
from ..numba import cache

_ENTRYWISE = having("entrywise")


@dataclass(frozen=True)
class BlockKernel:
    """A fused entrywise region's generated function applied to one block of each input. Only
    its loop IR (`body`, of parameters `args`, each of `ranks`: 0 for a number) and source
    travel with a task: each worker process lowers and compiles it once (or loads its machine
    code from hilbert's disk cache), as the numba executor does; code that needs no compiling
    (`compiled` False) runs its source as Python."""

    source: str
    compiled: bool
    scalars: frozenset[int]
    body: tuple = ()
    args: tuple[str, ...] = ()
    ranks: tuple[int, ...] = ()

    def __call__(self, *blocks):
        run = _function(self)
        args = [np.float64(b) if i in self.scalars else _compiled_layout(b)
                for i, b in enumerate(blocks)]
        with np.errstate(all="ignore"):
            return run(*args)[0]

    def lowered(self):
        """The function the LLVM back end lowered (compiled at its first call), or
        llvm.Unsupported."""
        from ..llvm.types import Array

        params = [Array("float64", r) if r else "float64" for r in self.ranks]
        return llvm.lowered(list(self.body), list(self.args), params, "float64",
                            contiguous=True)  # (`_compiled_layout` makes every block C-ordered)


def _function(kernel: BlockKernel):
    """`kernel`'s function in this process, made once per source; in a process forked from one
    that ran parallel code on GNU OpenMP (threads.usable), lowered again, as its serial twin."""
    key = (kernel.source, threads.usable())
    found = _FUNCTIONS.get(key)
    if found is None:
        found = kernel.lowered() if kernel.compiled else cache.function(kernel.source)
        _FUNCTIONS[key] = found
    return found


#: Each kernel's function in this process, by its source (the same text, the same function)
#: and whether parallel code may run here.
_FUNCTIONS: dict[tuple[str, bool], object] = {}


def _compiled_layout(block) -> np.ndarray:
    """`block` as compiled code is compiled for (C-ordered, writable float64; it writes no
    input): copied only when it is not that already (a read-only or strided block)."""
    if (type(block) is np.ndarray and block.dtype == np.float64 and block.flags.c_contiguous
            and block.flags.writeable):
        return block
    return np.array(block, dtype=np.float64, order="C")


@dataclass(frozen=True)
class Kernel:
    """A region's kernel and the nodes whose values it takes, in order."""

    function: BlockKernel
    inputs: tuple[ir.Node, ...]


class Kernels:
    """The blockwise kernels of one signature's IR, by scope and root: made when first asked
    for, and shared by every run of one program (`made`)."""

    def __init__(self, table: ShapeTable, optimize: str, made: dict | None = None,
                 fast: bool = False, enabled: bool = True):
        self.table = table
        self.enabled = enabled  # False: no kernels (a dtype generated code is not written in)
        self.optimize = optimize
        self.fast = fast  # math="fast"
        self._made: dict[tuple, Kernel | None] = {} if made is None else made

    def fused(self, node: ir.Node, scope) -> bool:
        """True for the root of a blockwise kernel: an entrywise node with an array value
        whose region holds more than itself (one operation is as fast as dask's ufunc)."""
        return (self.enabled and isinstance(node, ir.Prim) and node.op in _ENTRYWISE
                and self.table.scopes[scope][node] != () and self.kernel(node, scope) is not None)

    def kernel(self, root: ir.Node, scope) -> Kernel | None:
        key = (scope, root)
        if key not in self._made:
            self._made[key] = self._make(root, scope)
        return self._made[key]

    def _make(self, root: ir.Node, scope) -> Kernel | None:
        """The entrywise region under `root`: every entrywise node it reads (constants inline),
        its inputs everything else; None for a region of one operation. Its code is the numba
        executor's for the same region."""
        shapes = self.table.scopes[scope]

        def inside(node: ir.Node) -> bool:  # (a constant is written inline)
            return isinstance(node, ir.Const) or (isinstance(node, ir.Prim)
                                                  and node.op in _ENTRYWISE)

        within, inputs = ir.region(root, inside, lambda node: reversed(ir.children(node)))
        operations = sum(isinstance(node, ir.Prim) for node in within)
        if operations < 2:
            return None
        generated = codegen.generate(codegen.Region(root, tuple(inputs), scope), self.table,
                                     self.optimize, fast=self.fast)
        scalars = frozenset(i for i, n in enumerate(inputs) if shapes[n] == ())
        kernel = BlockKernel(generated.source, generated.compiled, scalars,
                             tuple(generated.body), tuple(generated.args),
                             tuple(len(shapes[n]) for n in inputs))
        if generated.compiled:
            try:
                kernel.lowered()  # (LLVM IR only: compiled in the worker that first runs it)
            except llvm.Unsupported:
                return None  # (its operations run one by one, as dask's own)
        return Kernel(kernel, tuple(inputs))

    def blockwise(self, kernel: Kernel, values: list, shape: tuple[int, ...]):
        """The kernel on every block: arrays block by block (their chunks made to agree),
        scalars whole. On host values alone it runs once, on the client."""
        if not any(isinstance(v, da.Array) for v in values):
            return kernel.function(*values)
        index = tuple(range(len(shape)))
        args: list = []
        for v in values:
            if np.ndim(v) == 0:
                args += [v, () if isinstance(v, da.Array) else None]
            else:
                args += [da.asarray(v), index]
        return da.blockwise(kernel.function, index, *args, dtype=np.float64, token="hilbert-kernel",
                            meta=np.empty((0,) * len(shape)))
