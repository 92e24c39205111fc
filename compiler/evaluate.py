"""The host runtime's core: IR evaluated on values the process holds, each op by its NumPy
meaning (compiler/ops/primitives.py), each einsum by a hook the runtime is given, loops run
step by step (compiler/loops.py). The reference executor, the dask executor (its values lazy,
through `Host`'s hooks), the numba executor's host tier and host steps, and the planner's trip
counts all evaluate IR through `Host`."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import opt_einsum

from . import dtypes, ir
from .counting import NOTHING, Counting
from .loops import Stepping, run_loop, run_loop_grad
from .ops.einsum_spec import ELLIPSIS, numpy_spec, spelled_out
from .ops.primitives import BY_OP

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


class Host(Stepping):
    """Evaluates IR with a memo per scope, so shared nodes are computed once and only the
    branch an `if` takes is evaluated: each op by its NumPy meaning (`prim`), each einsum by
    `einsum`, loops step by step (compiler/loops.py, `loop_steps` counting the steps run).

    A runtime changes what it must through hooks: `_inputs` (what a node needs first),
    `_value` (how a node's value is made), `prim`, `einsum`, `loop` and `loop_grad`, and
    Stepping's `settle` and `known` (how a loop's values are made between steps).

    Counted values (compiler/counting.py: sizes, positions, counters) are float64 in every
    call: in a call of another dtype, `counting` says which nodes count in each scope, and an
    op whose value is data reads its counted operands converted to the call's dtype (its
    `counts` operands, positions, as they are). `scope` is the scope being evaluated (the
    call's, `()`, or a loop body's path); a loop body is evaluated `within` its scope."""

    def __init__(self, einsum: Einsum = numpy_einsum, dtype: str = "float64",
                 counting: Counting = NOTHING, scope: tuple = ()):
        self.einsum = einsum
        self.dtype = dtype  # a constant is a number of its real dtype (dtypes.constant)
        self.counting = counting
        self.loop_steps = 0  # loop iterations run so far (an instrument for tests and plans)
        self.scope = scope
        owner = scope[-1] if scope else None
        self.counted = counting.at(owner)  # the counted nodes of the scope being evaluated
        self.meets = counting.meeting(owner)  # its nodes of data that read counted ones
        # (in a float64 or complex128 call a counted value is already of the data's type)
        self.narrow = dtypes.real(dtype) != "float64"
        self.data = np.dtype(dtypes.real(dtype)).type

    def eval(self, node: ir.Node, memo: dict, leaves: tuple):
        """The value of `node` (memoised in `memo`)."""
        return evaluate(node, memo, leaves, self._inputs, self._value)

    def within(self, owner, evaluate: Callable) -> Callable:
        """`evaluate(node, memo, leaves)` run in the scope `owner` owns (a Loop's body, a
        LoopGrad's vjp terms) inside the scope being evaluated, with its counted nodes."""
        entered = (self.scope + (owner,), self.counting.at(owner), self.counting.meeting(owner))

        def run(node: ir.Node, memo: dict, leaves: tuple):
            saved = self.scope, self.counted, self.meets
            self.scope, self.counted, self.meets = entered
            try:
                return evaluate(node, memo, leaves)
            finally:
                self.scope, self.counted, self.meets = saved
        return run

    def _inputs(self, node: ir.Node, memo: dict) -> tuple[ir.Node, ...]:
        return needs(node, memo)

    def _value(self, node: ir.Node, memo: dict, leaves: tuple):
        """The value of `node`, whose inputs are all in `memo`."""
        if self.narrow:
            return self._counted_value(node, memo, leaves)
        return self._computed(node, memo, leaves)

    def _computed(self, node: ir.Node, memo: dict, leaves: tuple):
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

    def _counted_value(self, node: ir.Node, memo: dict, leaves: tuple):
        """`_computed` in a call whose dtype is not float64: a counted node computed in
        float64 from its counted inputs, any other from its inputs converted to the call's
        dtype (but the positions an op reads, its `counts`, and a loop's counted state)."""
        counted = self.counted
        if node in counted:
            match node:
                case ir.Param(index=i):
                    return self.as_counted(leaves[i])
                case ir.Const(value=v):
                    return np.float64(v)
            return self._computed(node, memo, leaves)
        if node not in self.meets:  # (data from data: nothing to convert)
            return self._computed(node, memo, leaves)
        data = self._as_data
        if not isinstance(node, (ir.Prim, ir.Einsum, ir.Loop, ir.LoopGrad)):
            value = self._computed(node, memo, leaves)
            return value if isinstance(node, ir.Tuple) else data(value)
        values = data_operands(node, [memo[k] for k in ir.children(node)], counted,
                               self.counting, data)
        match node:
            case ir.Prim():
                return data(self.prim(node, values))
            case ir.Einsum():
                return data(self.einsum(node, values))
            case ir.Loop():
                return self.loop(node, tuple(values), memo)
        n = len(node.loop.init)  # (a LoopGrad: its loop's start, then its seeds)
        return self.loop_grad(node, tuple(values[:n]), tuple(values[n:]))

    def as_counted(self, value):
        """A parameter read as a whole number (compiler/counting.py), in float64."""
        return as_counted(value)

    def answer(self, value):
        """A call's result (or a tuple of them) in the call's dtype: a counted result, such
        as `rows(x)`, is converted as data is."""
        if not self.narrow:
            return value
        if isinstance(value, tuple):
            return tuple(self._as_data(v) for v in value)
        return self._as_data(value)

    def _as_data(self, value):
        return as_data(value, self.data)

    def prim(self, node: ir.Prim, args: list):
        """The op's NumPy meaning (compiler/ops/meanings.py) for these argument values."""
        meaning = BY_OP[node.op].meaning
        assert meaning is not None, f"{node.op} has no NumPy meaning"
        return meaning(node, args)

    def loop(self, loop: ir.Loop, state: tuple, memo: dict):
        """The final state of `loop` from `state`, run step by step, its body `within` it."""
        final, steps = run_loop(loop, state, self.within(loop, self.eval), stepping=self)
        self.loop_steps += steps
        return final

    def loop_grad(self, node: ir.LoopGrad, init: tuple, seeds: tuple):
        """The adjoints of a loop run backwards: forward from `init` with a tape, then every
        step's vjp terms in reverse from `seeds`."""
        adjoints, steps = run_loop_grad(node, init, seeds, self.within(node.loop, self.eval),
                                        self.within(node, self.eval), stepping=self)
        self.loop_steps += steps
        return adjoints


def as_counted(value):
    """A parameter read as a whole number (compiler/counting.py), in float64 (complex128 for
    a complex call's: a complex count is refused where it is read, E500)."""
    kind = getattr(value, "dtype", None)
    if kind is None:
        return np.float64(value)
    wide = np.complex128 if kind.kind == "c" else np.float64
    return value if kind == wide else value.astype(wide)


_FLOAT64, _COMPLEX128 = np.dtype(np.float64), np.dtype(np.complex128)


def as_data(value, real: type):
    """A value of a call whose real dtype is `real` (float32): a float64 (complex128) value,
    counted, made float32 (complex64). Values of other dtypes and Python numbers as they are.
    (NumPy's, JAX's and dask's dtypes of these are NumPy's one object: compared by identity,
    not by `==`, which costs a microsecond.)"""
    kind = getattr(value, "dtype", None)
    if kind is _FLOAT64:
        return value.astype(real)
    if kind is _COMPLEX128:
        return value.astype(np.complex64)
    return value


def data_operands(node: ir.Node, values: list, counted: frozenset, counting: Counting,
                  as_data: Callable) -> list:
    """`values`, those of `node`'s children in order, as `node` reads them in a call whose
    dtype is not float64 when its own value is data (compiler/counting.py): a counted value
    made data by `as_data`, but the positions an op reads (its `counts`) and the starting
    value of a state component a loop counts, which stay counted."""
    match node:
        case ir.Prim(op=op):
            kept = BY_OP[op].counts
        case ir.Loop() | ir.LoopGrad(loop=ir.Loop()):
            kept = tuple(counting.components.get(getattr(node, "loop", node), ()))
        case _:
            kept = ()
    return [as_data(v) if k in counted and p not in kept else v
            for p, (k, v) in enumerate(zip(ir.children(node), values, strict=True))]


def value_of(root: ir.Node, leaves: tuple):
    """The value of loop-free `root` over `leaves`, NumPy's warnings kept quiet (inf and NaN
    are values): what the planner reads a trip count with."""
    with np.errstate(all="ignore"):
        return Host().eval(root, {}, leaves)
