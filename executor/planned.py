"""The planned executor: fused IR on the host, each einsum along its planned path as NumPy/BLAS
pairwise steps, entrywise work in NumPy. It is the numba executor's first tier (a call that
runs at once, with nothing to compile) and its way of running what has no compiled form."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np

from ..compiler import ir
from ..compiler.counting import counting_in
from ..compiler.driver import Entry, plan_entry
from ..compiler.evaluate import Host, einsum_in_one, evaluate, needs
from ..compiler.ops.einsum_spec import numpy_spec, parse_spec
from ..compiler.plan import ContractStep, Plan, contraction
from .numerics import detached, quietly
from .straight import Straight, laid_out

#: Below this many FLOPs a pairwise step that BLAS could do runs as numpy.einsum instead: a
#: tensordot costs a few microseconds of reshapes and transposes before its product.
BLAS_FLOPS = 8192


class PlannedProgram:
    """A callable for one signature of loop-free IR: `plan` says how, `__call__(values)` does
    it. Each value is let go after its last reader, as compiled code does, so a call holds what
    the plan's peak counts (`keeps_all=False`), not every value it made."""

    def __init__(self, body: ir.Node, plan: Plan):
        assert not plan.loops, "the planned executor runs loop-free IR"
        self.plan = plan
        self.body = body
        # made here, as a contract_expression is built before its first call: how many nodes
        # read each value, and the pairwise steps of every einsum the plan has shapes for
        self._readers = _readers(body)
        self._kernels: dict[tuple, Callable] = {
            (e.spec, tuple(map(tuple, e.shapes))): einsum_kernel(e.spec, e.shapes, plan.optimize,
                                                                  plan.paths)
            for e in plan.einsums}
        self._host = Host(lambda node, operands: self.einsum(node.spec, operands), plan.dtype,
                          counting_in(body, plan.dtype))
        # (one einsum of the parameters, as hilbert.einsum's functions are: no walk needed)
        self._one = body if isinstance(body, ir.Einsum) and all(
            isinstance(a, ir.Param) for a in body.args) else None
        # (the walk laid out once as straight-line steps, where it has no `if`)
        self._straight = Straight(body, lambda node, operands: self.kernel(node.spec, operands),
                                  plan.dtype, self._host) \
            if self._one is None and laid_out(body) else None

    def __call__(self, values):
        return detached(quietly(self._run, tuple(values)), values)

    @property
    def loop_steps(self) -> int:
        return 0

    def _run(self, leaves: tuple):
        if self._one is not None:
            return self.einsum(self._one.spec, [leaves[a.index] for a in self._one.args])
        if self._straight is not None:
            return self._straight(leaves)
        left = dict(self._readers)  # readers still to come, per value
        memo: dict = {}

        def value(node: ir.Node, memo: dict, leaves: tuple):
            result = self._host._value(node, memo, leaves)
            for kid in _read(node, memo):
                count = left.get(kid)
                if count is not None:
                    if count == 1:
                        del left[kid], memo[kid]  # its last reader has read it
                    else:
                        left[kid] = count - 1
            return result

        return self._host.answer(evaluate(self.body, memo, leaves, needs, value))

    def einsum(self, spec: str, operands: list):
        """`spec` on `operands` along the plan's path for their shapes."""
        return self.kernel(spec, operands)(*operands)

    def kernel(self, spec: str, operands: list) -> Callable:
        """The function computing `spec` on operands of these shapes, along the plan's path."""
        key = (spec, tuple(np.shape(o) for o in operands))
        kernel = self._kernels.get(key)
        if kernel is None:
            kernel = self._kernels[key] = einsum_kernel(spec, key[1], self.plan.optimize,
                                                        self.plan.paths)
        return kernel


def _readers(body: ir.Node) -> dict[ir.Node, int]:
    """How many distinct nodes read each computed value of `body` (its root, parameters and
    constants are never let go, so they are not counted)."""
    readers: dict[ir.Node, int] = {}
    for node in ir.topological(body):
        for kid in set(ir.children(node)):
            if not isinstance(kid, (ir.Param, ir.Const)):
                readers[kid] = readers.get(kid, 0) + 1
    readers.pop(body, None)
    return readers


def _read(node: ir.Node, memo: dict) -> set[ir.Node]:
    """The children `node` read when it was computed: an `if` reads its condition and the
    branch taken (a value only the other branch reads is held to the end of the call)."""
    if isinstance(node, ir.Cond):
        return {node.cond, node.then if memo[node.cond] != 0 else node.orelse}
    return set(ir.children(node))


def einsum_kernel(spec: str, shapes: tuple, optimize, paths: dict | None = None) -> Callable:
    """A function of the operands computing `spec` along the path a plan took for `shapes`
    (`paths`: Plan.paths) or else the one `optimize` finds (the planner's cached search):
    pairwise steps as opt_einsum's contract_expression runs them, tensordot where BLAS pays
    and numpy.einsum for the rest."""
    shapes = tuple(tuple(s) for s in shapes)
    path, steps = (paths or {}).get((spec, shapes)) or contraction(spec, shapes, optimize)
    sizes = _sizes(spec, shapes)
    if len(steps) == 1 and len(path[0]) == len(shapes):
        return _step(spec, steps[0], sizes)  # one step over every operand: the spec itself
    functions = [_step(step.spec, step, sizes) for step in steps]
    order = [sorted(positions, reverse=True) for positions in path]

    def run(*operands):
        pending = list(operands)
        for positions, function in zip(order, functions, strict=True):
            taken = [pending.pop(i) for i in positions]
            pending.append(function(*taken))
        return pending[0]

    return run


def _sizes(spec: str, shapes: tuple) -> dict[str, int] | None:
    """Each letter's size, or None where the spec does not spell every axis out."""
    inputs = parse_spec(spec).inputs
    if len(inputs) != len(shapes) or any(len(t) != len(s) for t, s in zip(inputs, shapes,
                                                                         strict=True)):
        return None
    return {ch: n for term, shape in zip(inputs, shapes, strict=True)
            for ch, n in zip(term, shape, strict=True)}


def _step(spec: str, step: ContractStep, sizes: dict[str, int] | None = None) -> Callable:
    """One pairwise (or single-operand) step: a tensordot when opt_einsum would call BLAS and
    the step is large enough for it to pay, else numpy.einsum."""
    blas = step.blas and "EINSUM" not in step.blas and step.flops >= BLAS_FLOPS
    parsed = parse_spec(spec)
    if _broadcast_product(parsed.inputs, parsed.output):
        return np.multiply  # (numpy.einsum's one product per entry, without its set-up)
    summed = _summed_axes(parsed)
    if summed:  # (NumPy's sum adds pairwise along a row; numpy.einsum's reduction does not:
        # a row sum of 10⁶ entries was 1e-12 off, 5e-16 so)
        return functools.partial(np.sum, axis=summed)
    if not blas or len(parsed.inputs) != 2:
        try:  # (renamed for numpy.einsum once, not at every call)
            return functools.partial(np.einsum, numpy_spec(spec))
        except ValueError:  # (over numpy.einsum's 52 letters)
            return functools.partial(einsum_in_one, spec)
    left, right = parsed.inputs
    removed = sorted(set(left + right) - set(parsed.output), key=left.find)
    result = "".join(ch for ch in left + right if ch not in removed)
    order = tuple(result.index(ch) for ch in parsed.output)
    if sizes is not None:
        return _tensordot(left, right, removed, order, sizes)
    axes = (tuple(left.find(ch) for ch in removed), tuple(right.find(ch) for ch in removed))
    if result == parsed.output:
        return lambda a, b: np.tensordot(a, b, axes=axes)
    return lambda a, b: np.tensordot(a, b, axes=axes).transpose(order)


def _tensordot(left: str, right: str, removed: list[str], order: tuple[int, ...],
               sizes: dict[str, int]) -> Callable:
    """np.tensordot over the `removed` letters, then the result's axes in `order`, with its
    transposes and reshapes worked out now for these sizes (np.tensordot works them out at
    every call, in Python): the same views and the same np.dot, so the same numbers."""
    kept_a = [ch for ch in left if ch not in removed]
    kept_b = [ch for ch in right if ch not in removed]
    to_a = tuple(left.index(ch) for ch in kept_a + removed)
    to_b = tuple(right.index(ch) for ch in removed + kept_b)
    inner = math.prod(sizes[ch] for ch in removed)
    shape_a = (math.prod(sizes[ch] for ch in kept_a), inner)
    shape_b = (inner, math.prod(sizes[ch] for ch in kept_b))
    shape = tuple(sizes[ch] for ch in kept_a + kept_b)
    moved_a = to_a != tuple(range(len(left)))
    moved_b = to_b != tuple(range(len(right)))
    reordered = order != tuple(range(len(order)))
    dot = np.dot

    def run(a, b):
        a = (a.transpose(to_a) if moved_a else a).reshape(shape_a)
        b = (b.transpose(to_b) if moved_b else b).reshape(shape_b)
        c = dot(a, b).reshape(shape)
        return c.transpose(order) if reordered else c

    return run


def _summed_axes(parsed) -> tuple[int, ...]:
    """The axes a one-operand step sums when it is a plain sum (its output the operand's
    letters in order, some dropped, none repeated), else ()."""
    if len(parsed.inputs) != 1:
        return ()
    term = parsed.inputs[0]
    kept = [ch for ch in term if ch in parsed.output]
    if len(set(term)) != len(term) or "".join(kept) != parsed.output:
        return ()
    return tuple(k for k, ch in enumerate(term) if ch not in parsed.output)


def prepare(entry: Entry, shapes, optimize: str = "auto", values=None,
            dtype: str = "float64") -> PlannedProgram:
    """Specialise and plan `entry` for `shapes` (loop-free); return the program that runs it."""
    ready = plan_entry(entry, shapes, optimize, "numba", values, dtype=dtype)
    return PlannedProgram(ready.body, ready.plan)


def _broadcast_product(inputs: tuple[str, ...], output: str) -> bool:
    """Whether a step is an entrywise product NumPy broadcasts as it is: two operands, each
    the output's trailing letters (a scalar has none), one of them the whole output
    (",ij->ij", "j,ij->ij", "ij,ij->ij"): nothing summed, nothing moved."""
    return (len(inputs) == 2 and output in inputs
            and all(output.endswith(term) for term in inputs))
