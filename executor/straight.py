"""A loop-free program's walk laid out once per signature as straight-line steps: each node a
step (its function, the slots it reads, the slot it writes, the slots let go after it), in the
order the host runtime's walk (compiler/evaluate.py) computes them, written out as one Python
function of the call's values: no walk of the IR, no memo keyed by nodes, no look-up of an
op's meaning or of an einsum's kernel per node (the host tier's cost per op was its walk: a
small MLP's Adam step took six to eight times a hand-written NumPy step's time). The function
is made of the steps' own names (`v3 = f2([v0, v1])`): no text of the program reaches it."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..compiler import dtypes, ir
from ..compiler.evaluate import Host, as_data, data_operands
from ..compiler.ops.primitives import BY_OP


@dataclass(frozen=True)
class Step:
    """One node's work: `run(values)` of the values in slots `reads` goes to slot `writes`;
    then the slots `frees` (values read for the last time) are let go."""

    run: Callable
    reads: tuple[int, ...]
    writes: int
    frees: tuple[int, ...]


class Straight:
    """The walk of `body` (loop-free, with no `if`: `laid_out` says) as steps; `einsum(node)`
    gives the function of its operands that computes an einsum node (looked up once, at its
    first call: a signature fixes every operand's shape). `host`: the host runtime whose walk
    this replaces, whose counting (compiler/counting.py) the steps keep in a float32 call:
    counted values in float64, converted where they meet data and in the result."""

    def __init__(self, body: ir.Node, einsum: Callable, dtype: str, host: Host | None = None):
        order = walk_order(body)
        self.host = host if host is not None and host.narrow else None
        counted = self.host.counted if self.host is not None else frozenset()
        meets = self.host.meets if self.host is not None else frozenset()
        self.slot = {node: k for k, node in enumerate(order)}
        self.template: list = [None] * len(order)
        self.params: list[tuple[int, int, str]] = []  # (slot, index, how it is read)
        for node, k in self.slot.items():
            if isinstance(node, ir.Param):
                read = "counted" if node in counted else "data" if node in meets else ""
                self.params.append((k, node.index, read))
            elif isinstance(node, ir.Const):
                self.template[k] = np.float64(node.value) if node in counted else \
                    dtypes.constant(node.value, dtype)
        last = _last_readers(order, body)
        self.steps = [self._step(node, einsum, last.get(node, ())) for node in order
                      if not isinstance(node, (ir.Param, ir.Const))]
        self.root = self.slot[body]
        self.run = self._written()

    def _step(self, node: ir.Node, einsum: Callable, frees: tuple[ir.Node, ...]) -> Step:
        reads = tuple(self.slot[k] for k in ir.children(node))
        work = _work(node, einsum)
        if self.host is not None and node in self.host.meets and work is not tuple:
            work = _Meeting(node, work, self.host)
        return Step(work, reads, self.slot[node], tuple(self.slot[k] for k in frees))

    def __call__(self, leaves: tuple):
        return self.run(leaves)

    def _written(self) -> Callable:
        """The steps as one Python function of the call's values: each value a local, each
        step's function a name bound to it, each value let go (`del`) after its last reader."""
        names = {slot: f"v{slot}" for slot, _, _ in self.params}
        namespace: dict = {"__name__": "hilbert_straight"}
        if self.host is not None:  # (a float32 call: compiler/counting.py)
            namespace.update(counted=self.host.as_counted, answer=self.host.answer,
                             data=functools.partial(as_data, real=self.host.data))
        for slot, value in enumerate(self.template):
            if value is not None:
                names[slot] = f"c{slot}"
                namespace[f"c{slot}"] = value
        lines = ["def run(leaves):"] + [f"    v{slot} = {read}(leaves[{index}])" if read
                                        else f"    v{slot} = leaves[{index}]"
                                        for slot, index, read in self.params]
        for number, step in enumerate(self.steps):
            names[step.writes] = f"v{step.writes}"
            reads = ", ".join(names[k] for k in step.reads)
            if step.run is tuple:
                lines.append(f"    v{step.writes} = ({reads},)")
            else:
                namespace[f"f{number}"] = step.run
                lines.append(f"    v{step.writes} = f{number}([{reads}])")
            lines += [f"    del v{k}" for k in step.frees]
        root = names[self.root]
        lines.append(f"    return answer({root})" if self.host is not None else
                     f"    return {root}")
        exec(compile("\n".join(lines) + "\n", "<hilbert straight>", "exec"),  # noqa: S102
             namespace)
        return namespace["run"]


def laid_out(body: ir.Node) -> bool:
    """Whether `body` can run as straight-line steps: no `if` (a branch's values are computed
    only when it is taken, which the walk decides at each call) and nothing but ops, einsums
    and the root's tuple."""
    return all(isinstance(n, (ir.Param, ir.Const, ir.Prim, ir.Einsum, ir.Tuple))
               for n in ir.topological(body))


def walk_order(body: ir.Node) -> list[ir.Node]:
    """The nodes in the order compiler/evaluate.py's `evaluate` computes them (for IR without
    an `if`): depth first, each node's children in their order, each node once."""
    order: list[ir.Node] = []
    done: set[ir.Node] = set()
    pending = [body]
    while pending:
        top = pending[-1]
        if top in done:
            pending.pop()
            continue
        missing = [k for k in ir.children(top) if k not in done]
        if missing:
            pending += reversed(missing)
            continue
        done.add(top)
        order.append(top)
        pending.pop()
    return order


def _last_readers(order: list[ir.Node], body: ir.Node) -> dict[ir.Node, tuple[ir.Node, ...]]:
    """For each node, the values it is the last reader of (never a parameter, a constant or
    the root, which the call holds to its end): what the walk lets go after computing it."""
    last: dict[ir.Node, ir.Node] = {}
    for node in order:
        for kid in ir.children(node):
            if not isinstance(kid, (ir.Param, ir.Const)) and kid is not body:
                last[kid] = node
    freed: dict[ir.Node, list[ir.Node]] = {}
    for kid, reader in last.items():
        freed.setdefault(reader, []).append(kid)
    return {reader: tuple(kids) for reader, kids in freed.items()}


def _work(node: ir.Node, einsum: Callable) -> Callable:
    """The function of its inputs' values that computes `node`."""
    match node:
        case ir.Prim():
            meaning = BY_OP[node.op].meaning
            assert meaning is not None, f"{node.op} has no NumPy meaning"
            return functools.partial(meaning, node)
        case ir.Einsum():
            return _Einsum(node, einsum)
        case ir.Tuple():
            return tuple
    raise AssertionError(f"no straight-line step for {node!r}")


class _Meeting:
    """The step of a node of data that reads counted values, in a float32 call: its operands
    as the host runtime hands them to it (compiler/evaluate.py `data_operands`), its value
    made data."""

    def __init__(self, node: ir.Node, work: Callable, host: Host):
        self.work = work
        self.data = functools.partial(as_data, real=host.data)
        # the operands data_operands converts, found once (it marks them here: None)
        marked = data_operands(node, list(range(len(ir.children(node)))), host.counted,
                               host.counting, lambda _: None)
        self.converted = tuple(k for k, mark in enumerate(marked) if mark is None)

    def __call__(self, operands: list):
        data = self.data
        for k in self.converted:  # (a list made for this call: `Straight._written`)
            operands[k] = data(operands[k])
        return data(self.work(operands))


class _Einsum:
    """An einsum node's step: its kernel found at the first call, then called directly."""

    def __init__(self, node: ir.Einsum, einsum: Callable):
        self.node = node
        self.find = einsum
        self.kernel: Callable | None = None

    def __call__(self, operands: list):
        kernel = self.kernel
        if kernel is None:
            kernel = self.kernel = self.find(self.node, operands)
        return kernel(*operands)
