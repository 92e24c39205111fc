"""The host runtime's core: IR evaluated on values the process holds, each op by its NumPy
meaning (compiler/ops/primitives.py), each einsum by a hook the runtime is given. The reference
executor (loops as Python loops), the numba executor's host tier and host steps, and the
planner's trip counts all evaluate IR through `Host`; the dask executor keeps a walk of its
own (its values are lazy, and each is guarded as it is made)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import opt_einsum
from hilbert.compiler import dtypes, ir
from hilbert.compiler.ops.einsum_spec import ELLIPSIS, numpy_spec, spelled_out
from hilbert.compiler.ops.primitives import BY_OP

#: How an einsum node is computed from its operands' values.
Einsum = Callable[[ir.Einsum, list], object]


def needs(node: ir.Node, memo: dict) -> tuple[ir.Node, ...]:
    """What `node` needs evaluated first; for an `if`, its condition, then one branch."""
    if isinstance(node, ir.Cond):
        if node.cond not in memo:
            return (node.cond,)
        return (node.then if memo[node.cond] != 0 else node.orelse,)
    return ir.children(node)


def evaluate(node: ir.Node, memo: dict, leaves: tuple, inputs, value):
    """The value of `node`: `inputs(n, memo)` says what n needs first (for an `if`, its
    condition, then one branch) and `value(n, memo, leaves)` computes it. An explicit stack,
    not Python recursion, walks the IR: inlining can make a chain thousands of nodes deep."""
    pending = [node]
    while pending:
        top = pending[-1]
        if top in memo:
            pending.pop()
            continue
        missing = [k for k in inputs(top, memo) if k not in memo]
        if missing:
            pending += reversed(missing)
            continue
        memo[top] = value(top, memo, leaves)
        pending.pop()
    return memo[node]


def numpy_einsum(node: ir.Einsum, operands: list):
    """An einsum as numpy.einsum computes it, in one call."""
    return einsum_in_one(node.spec, *operands)


def einsum_in_one(spec: str, *operands):
    """numpy.einsum of `spec`, in one call; over more than the 52 letters numpy.einsum can
    name, opt_einsum's contraction along its greedy path (pairwise, each step renamed)."""
    try:
        if ELLIPSIS in spec:
            spec = spelled_out(spec, [np.shape(o) for o in operands])
        numpy = numpy_spec(spec)
    except ValueError:
        return opt_einsum.contract(spec, *operands, optimize="greedy")
    return np.einsum(numpy, *operands)


class Host:
    """Evaluates IR with a memo per scope, so shared nodes are computed once and only the
    branch an `if` takes is evaluated: each op by its NumPy meaning, each einsum by `einsum`.
    Loops are a runtime's own (`loop`, `loop_grad`): this core has none."""

    def __init__(self, einsum: Einsum = numpy_einsum, dtype: str = "float64"):
        self.einsum = einsum
        self.dtype = dtype  # a constant is a number of its real dtype (dtypes.constant)

    def eval(self, node: ir.Node, memo: dict, leaves: tuple):
        """The value of `node` (memoised in `memo`)."""
        return evaluate(node, memo, leaves, self._inputs, self._value)

    def _inputs(self, node: ir.Node, memo: dict) -> tuple[ir.Node, ...]:
        return needs(node, memo)

    def _value(self, node: ir.Node, memo: dict, leaves: tuple):
        """The value of `node`, whose inputs are all in `memo`."""
        match node:
            case ir.Param(index=i) | ir.State(index=i):
                return leaves[i]
            case ir.Const(value=v):
                return dtypes.constant(v, self.dtype)
            case ir.Prim():
                return self.prim(node, [memo[a] for a in node.args])
            case ir.Einsum():
                return self.einsum(node, [memo[a] for a in node.args])
            case ir.Cond():
                return memo[node.then if memo[node.cond] != 0 else node.orelse]
            case ir.Loop():
                return self.loop(node, tuple(memo[a] for a in node.init), memo)
            case ir.LoopGrad():
                n = len(node.loop.init)
                values = tuple(memo[a] for a in ir.children(node))
                return self.loop_grad(node, values[:n], values[n:])
            case ir.Project():
                return memo[node.loop][node.index]
            case ir.Tuple():
                return tuple(memo[a] for a in node.items)
        raise AssertionError(f"cannot evaluate {node!r}")

    def prim(self, node: ir.Prim, args: list):
        """The op's NumPy meaning (compiler/ops/meanings.py) for these argument values."""
        meaning = BY_OP[node.op].meaning
        assert meaning is not None, f"{node.op} has no NumPy meaning"
        return meaning(node, args)

    def loop(self, loop: ir.Loop, state: tuple, memo: dict):
        raise AssertionError(f"this runtime runs no loops ({loop.name})")

    def loop_grad(self, node: ir.LoopGrad, init: tuple, seeds: tuple):
        raise AssertionError("this runtime runs no loops backwards")


def value_of(root: ir.Node, leaves: tuple):
    """The value of loop-free `root` over `leaves`, NumPy's warnings kept quiet (inf and NaN
    are values): what the planner reads a trip count with."""
    with np.errstate(all="ignore"):
        return Host().eval(root, {}, leaves)
