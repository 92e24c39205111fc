"""The reference executor: a plain NumPy interpreter of inlined IR, the oracle for the rest."""

from __future__ import annotations

import math

import numpy as np

from hilbert.compiler import ir
from hilbert.compiler.primitives import BY_OP
from hilbert.grammar.errors import RuntimeHilbertError


def step_count(loop: ir.Loop, value) -> int:
    """The trip count of a counted loop, or a HilbertError naming the loop and the value."""
    number = float(value)
    if not math.isfinite(number) or number < 0 or not number.is_integer():
        why = "not finite" if not math.isfinite(number) else "negative" if number < 0 else "not whole"
        raise RuntimeHilbertError(
            "E500", f"{loop.name} runs a counted loop, so its step count must be a non-negative "
            f"whole number, but it was given {number:g} ({why})", loop.span)
    return int(number)


class Reference:
    """Evaluates IR recursively with a memo per scope, so shared nodes are computed once and
    only the branch an `if` takes is evaluated. Loops are Python loops over a state tuple."""

    def __init__(self, einsum=None):
        self.einsum = einsum or (lambda node, operands: np.einsum(node.spec, *operands))
        self.loop_steps = 0  # loop iterations run so far (an instrument for tests and plans)

    def run(self, root: ir.Node, args: tuple[np.ndarray, ...]):
        with np.errstate(all="ignore"):
            return self.eval(root, {}, args)

    def eval(self, node: ir.Node, memo: dict, leaves: tuple):
        try:
            return memo[node]
        except KeyError:
            pass
        match node:
            case ir.Param(index=i) | ir.State(index=i):
                value = leaves[i]
            case ir.Const(value=v):
                value = np.float64(v)
            case ir.Prim():
                value = self.prim(node, [self.eval(a, memo, leaves) for a in node.args])
            case ir.Einsum():
                value = self.einsum(node, [self.eval(a, memo, leaves) for a in node.args])
            case ir.Cond():
                chosen = node.then if self.eval(node.cond, memo, leaves) != 0 else node.orelse
                value = self.eval(chosen, memo, leaves)
            case ir.Loop():
                value = self.loop(node, tuple(self.eval(a, memo, leaves) for a in node.init))
            case ir.Project():
                value = self.eval(node.loop, memo, leaves)[node.index]
            case _:
                raise AssertionError(f"cannot evaluate {node!r}")
        memo[node] = value
        return value

    def prim(self, node: ir.Prim, args: list):
        prim = BY_OP[node.op]
        match prim.kind:
            case "unary" | "binary":
                return prim.numpy(*args)
            case "compare":
                return prim.numpy(*args).astype(np.float64)
            case "reduce":
                return prim.numpy(args[0], axis=node.attrs[0])
            case "size":
                return np.float64(np.shape(args[0])[prim.axis])
            case "positions":
                return np.arange(np.shape(args[0])[node.attrs[0]], dtype=np.float64)
        raise AssertionError(f"the reference executor cannot run {node.op}")

    def loop(self, loop: ir.Loop, state: tuple):
        moving = [i for i, s in enumerate(loop.step) if s != ir.State(i, None) and i != loop.counter]
        state = list(state)
        if loop.counter is not None:
            remaining = step_count(loop, state[loop.counter])
            self.loop_steps += remaining
            for left in range(remaining, 0, -1):
                memo: dict = {}
                state[loop.counter] = np.float64(left)
                frozen = tuple(state)
                for i in moving:
                    state[i] = self.eval(loop.step[i], memo, frozen)
            state[loop.counter] = np.float64(0)
            return tuple(state)
        while True:
            memo = {}
            frozen = tuple(state)
            if self.eval(loop.until, memo, frozen) != 0:
                return frozen
            self.loop_steps += 1
            for i in moving:
                state[i] = self.eval(loop.step[i], memo, frozen)


class ReferenceProgram:
    """The reference executor's callable for one signature (unfused IR, plain numpy.einsum)."""

    def __init__(self, entry, shapes, plan):
        self.body = entry.body
        self.plan = plan
        self.evaluator = Reference()

    def __call__(self, values):
        return self.evaluator.run(self.body, values)

    @property
    def loop_steps(self) -> int:
        return self.evaluator.loop_steps


def prepare(entry, shapes, optimize: str = "auto", values=None) -> ReferenceProgram:
    """Specialise `entry` to `shapes` and return the program that runs it."""
    from hilbert.compiler.driver import plan_entry, specialise

    specialise(entry, shapes)  # the unfused IR this executor runs must pass the shape rules too
    _, plan = plan_entry(entry, shapes, optimize, "reference", values)
    return ReferenceProgram(entry, shapes, plan)
