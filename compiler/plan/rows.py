"""Which calls run as independent blocks of rows: a proof over the IR, and the plan's rule.

A recurrence over a batch (h_t+1 = tanh(h_t W + x_t w), one sequence per row) steps every row
of its state on its own: row r of the result depends on row r of x and h0 and on the weights
whole, never on another row. Such a call on rows a:b of x and h0 gives rows a:b of its result,
so an executor may run it as blocks of rows, one per thread, each block the whole loop with no
exchange between threads. A step of 64 rows is too little work to share out (starting threads
costs more than the step); 200 steps of it are not.

The proof is an abstract interpretation of the call's IR. Each value is

- FREE: it reads no row of the split arguments (the weights, a step count, `columns x`);
- an axis k: its entries at position r along axis k depend only on rows r of the split
  arguments (and on FREE values), and its other entries on nothing else;
- MIXED: anything else (a sum over the rows, a row count, a draw from a generator).

Each op has a rule; an op without one is MIXED as soon as any argument is not FREE. A loop's
state is found by iteration: each component keeps the axis its initial value has or the call
is not split; its stopping condition must be FREE (every block stops after the same steps).
A loop that reads no row of the split arguments (a network trained on other data before its
predictions for the split rows) would run whole in every block, its work done once per
thread: such a call is not split either. Operands of entrywise operations have one shape or
are scalars, so a FREE operand that is not a scalar would have to be split too: MIXED. The
same holds for a FREE einsum operand that carries the rows' letter.

`row_blocks` is the plan's rule over the proof: a call is split when its code is compiled
serial loops for any sizes, there are threads, its work pays for handing blocks to them, and
each block gets ROWS rows (executor/numba/row_blocks.py runs the blocks as it says).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import TYPE_CHECKING

from .. import ir
from ..ops.einsum_spec import ELLIPSIS, parse_spec
from ..ops.primitives import BY_OP
from ..passes.shapes import Scope, Shape, ShapeTable

if TYPE_CHECKING:
    from . import Plan

#: A value that reads no row of the split arguments.
FREE = None
#: A value whose entries depend on several rows (or on how many rows there are).
MIXED = -1

#: The most parameters as long as the result that `row_split` tries sets of (2^6 − 1 sets).
CANDIDATES = 6
#: The least work (FLOPs by the plan's count, loops' steps included) of a call split into
#: blocks: handing blocks to threads and back costs about 30 µs, a call of 2^22 FLOPs
#: (a 64-row recurrence of 32 units over 30 steps) about 0.8 ms.
WORK = 1 << 22
#: The steps a loop is taken to run when its plan does not know (its count is a value).
GUESSED_STEPS = 64
#: The fewest rows of a block (the register-tiled products take rows four at a time).
ROWS = 8

_ENTRYWISE_KINDS = frozenset({"unary", "binary", "compare"})
#: Ops whose first argument's axis attrs[0] is dropped from the result (a reduction, a read).
_DROPPING_KINDS = frozenset({"reduce", "take", "shift"})


def row_split(body: ir.Node, table: ShapeTable, signature: tuple[Shape, ...]) -> tuple[int, ...]:
    """The parameters whose first axis a call of `body` (shapes `table`, parameter shapes
    `signature`) may be split along, each block of rows giving the same rows of the result
    (of each item of a tuple result); () when no split is proven. Tried with the parameters
    whose first axis is as long as the result's, all of them first, then fewer (a square
    weight matrix as long as the batch is one of them, and is not split): the first set that
    is proven, of at most CANDIDATES parameters."""
    results = _results(body, table)
    lengths = {shape[0] for shape in results if shape}
    if not all(results) or len(lengths) != 1 or min(lengths) < 2:
        return ()
    rows = lengths.pop()
    candidates = tuple(i for i, shape in enumerate(signature) if shape and shape[0] == rows)
    if len(candidates) > CANDIDATES:
        return ()
    for size in range(len(candidates), 0, -1):
        for split in itertools.combinations(candidates, size):
            if _rows_follow(body, table, frozenset(split)):
                return split
    return ()


def row_blocks(plan: Plan, serial_loops: bool, threads: int,
               prove: Callable[[], tuple[int, ...]]) -> tuple[tuple[int, ...], int]:
    """(the parameters a call planned as `plan` is split along, how many blocks of rows), or
    ((), 0) when it runs whole: its code is compiled for any sizes (not a tiny program's) with
    loops and no nest on threads (`serial_loops`: a loop-free call's nests and products use
    the threads already), there are `threads` (two or more), the call has WORK (each loop of
    unknown length taken to run GUESSED_STEPS), `prove` (called last: it walks the IR, as
    `row_split`) gives parameters to split, and each block has at least ROWS rows.

    >>> row_blocks(None, serial_loops=False, threads=4, prove=lambda: (0,))
    ((), 0)
    """
    if not serial_loops or threads < 2:
        return (), 0
    work = plan.flops if plan.flops is not None else (
        GUESSED_STEPS * sum(p.flops_per_step for p in plan.loops))
    split = prove() if work >= WORK else ()
    blocks = min(threads, plan.signature[split[0]][0] // ROWS) if split else 0
    return (split, blocks) if blocks >= 2 else ((), 0)


def _results(body: ir.Node, table: ShapeTable) -> tuple[Shape, ...]:
    items = body.items if isinstance(body, ir.Tuple) else (body,)
    return tuple(table.of(item) for item in items)


def _rows_follow(body: ir.Node, table: ShapeTable, split: frozenset[int]) -> bool:
    """Whether every result of `body` has its rows along its first axis when the parameters
    `split` are split along theirs."""
    leaf = lambda node: 0 if node.index in split else FREE  # noqa: E731
    rows = _Rows(table)
    result = rows.scope((body,), (), leaf)[body]
    return not rows.free_loop and all(
        axis == 0 for axis in (result if isinstance(result, tuple) else (result,)))


class _Rows:
    """The abstract interpretation (see the module's doc), scope by scope."""

    def __init__(self, table: ShapeTable):
        self.table = table
        self.free_loop = False  # a loop reads no row: every block would run all of it again

    def scope(self, roots: tuple[ir.Node, ...], scope: Scope, leaf) -> dict:
        values: dict = {}
        for node in ir.topological(*roots):
            values[node] = self.value(node, values, scope, leaf)
        return values

    def value(self, node: ir.Node, values: dict, scope: Scope, leaf):
        match node:
            case ir.Param() | ir.State():
                return leaf(node)
            case ir.Const():
                return FREE
            case ir.Tuple():
                return tuple(values[item] for item in node.items)
            case ir.Item():
                of = values[node.of]
                return of[node.index] if isinstance(of, tuple) else MIXED
            case ir.Loop():
                return self.loop(node, tuple(values[a] for a in node.init), scope)
            case ir.Project() if isinstance(node.loop, ir.Loop):
                state = values[node.loop]
                return state[node.index] if isinstance(state, tuple) else MIXED
            case ir.Cond():
                then, orelse = values[node.then], values[node.orelse]
                return then if values[node.cond] is FREE and then == orelse else MIXED
            case ir.Einsum():
                return self.einsum(node, [values[a] for a in node.args])
            case ir.Prim():
                return self.prim(node, [values[a] for a in node.args], scope)
        return MIXED  # a call, a derivative, a loop run backwards: not proven

    def loop(self, loop: ir.Loop, init: tuple, scope: Scope):
        """The loop's final state, component by component: each keeps its initial value's axis
        through a step (else it is MIXED, and the steps are looked at again)."""
        state = tuple(MIXED if isinstance(a, tuple) else a for a in init)
        inner = scope + (loop,)
        for _ in range(len(state) + 1):
            current = state
            body = self.scope((loop.until, *loop.step), inner,
                              lambda leaf, current=current: current[leaf.index])
            if body[loop.until] is not FREE:  # the blocks could stop after different steps
                return tuple(MIXED for _ in state)
            state = tuple(a if body[step] == a else MIXED
                          for a, step in zip(current, loop.step, strict=True))
            if state == current:
                self.free_loop |= all(a is FREE for a in state)
                return state
        return tuple(MIXED for _ in state)  # (not reached: each round fixes one more)

    @staticmethod
    def einsum(node: ir.Einsum, args: list):
        if all(a is FREE for a in args):
            return FREE
        if MIXED in args or ELLIPSIS in node.spec:
            return MIXED
        spec = parse_spec(node.spec)
        letters = {term[axis] for term, axis in zip(spec.inputs, args, strict=True)
                   if axis is not FREE}
        if len(letters) != 1:
            return MIXED
        letter = letters.pop()
        for term, axis in zip(spec.inputs, args, strict=True):
            if term.count(letter) > (0 if axis is FREE else 1):
                return MIXED  # a FREE operand along the rows, or a diagonal of them
        return spec.output.index(letter) if spec.output.count(letter) == 1 else MIXED

    def prim(self, node: ir.Prim, args: list, scope: Scope):
        row = BY_OP[node.op]
        if row.kind == "draw":
            return MIXED  # each block would draw again from the generator
        if all(a is FREE for a in args):
            return FREE
        if MIXED in args:
            return MIXED
        kind, x, rest = row.kind, args[0], args[1:]
        if kind in _ENTRYWISE_KINDS:
            shapes = self.table.scopes[scope]
            axes = {a for a in args if a is not FREE}
            scalars = all(not shapes[n] for n, a in zip(node.args, args, strict=True) if a is FREE)
            return axes.pop() if len(axes) == 1 and scalars else MIXED
        if any(a is not FREE for a in rest) and kind not in ("scan", "concat"):
            return MIXED  # a position, a count, a window that depends on the rows
        if kind == "size":
            return MIXED if row.axis == x else FREE
        if kind == "positions":
            return MIXED if node.attrs[0] == x else FREE
        if kind in _DROPPING_KINDS:
            along = node.attrs[0]
            return MIXED if along == x else x - (along < x)
        if kind in ("scan", "concat"):
            same = all(a == x for a in args[:2]) and all(a is FREE for a in args[2:])
            return x if same and node.attrs[0] != x else MIXED
        if kind == "index":
            return MIXED if x == 0 else x - 1
        if kind == "slice":
            return MIXED if x == 0 else x
        if kind in ("onehot", "coordinate"):
            return x if kind == "onehot" or node.attrs[0] != x else MIXED
        return MIXED
