"""Where each node of a call runs on the numba executor: in compiled code, or on the host,
and why (the plan's notes say it). A node runs on the host if its op has no compiled form (the
op table's `compiled` trait) or is forced there (HILBERT_NUMBA_HOST), a loop if anything in
its body does, an `if` if anything in a branch does, and either when it nests too deep."""

from __future__ import annotations

from ...compiler import ir
from ...compiler.ops.primitives import BY_OP, SPELLING
from ...compiler.passes.shapes import Scope, ShapeTable

#: Environment variable naming ops (or "einsum") to run on the host, for tests and debugging.
HOST_ENVIRONMENT = "HILBERT_NUMBA_HOST"
#: The deepest ifs and loops one generated function nests: Python refuses more than 20 nested
#: loop blocks (and 100 levels of indentation), and the code generator recurses per level. An
#: `if` or loop nesting deeper runs on the host, its inner ones compiled as functions of their
#: own (docs/semantics.md, "Limits").
NESTED_IFS = 40
NESTED_LOOPS = 6


class Placement:
    """Which nodes compile. A node runs on the host if its op has no compiled form (or is
    forced there), a loop if anything in its body does, an `if` if anything in a branch does.
    `host_only`: nothing compiles (the host tier of a call with loops)."""

    def __init__(self, table: ShapeTable, forced: frozenset[str], host_only: bool = False):
        self.table = table
        self.forced = forced
        self.host_only = host_only
        self._reasons: dict[tuple[Scope, ir.Node], str | None] = {}
        self._nesting: dict[ir.Node, tuple[int, int]] = {}

    def reason(self, node: ir.Node, scope: Scope) -> str | None:
        """Why `node` (in `scope`) cannot be compiled, or None if it can."""
        key = (scope, node)
        if key not in self._reasons:
            self._reasons[key] = self._reason(node, scope)
        return self._reasons[key]

    def _reason(self, node: ir.Node, scope: Scope) -> str | None:
        if self.host_only:
            return "the host tier runs while the compiled code is built"
        match node:
            case ir.Prim(op=op):
                if op in self.forced:
                    return f"{op} is forced to the host by {HOST_ENVIRONMENT}"
                if "compiled" not in BY_OP[op].traits:
                    return f"{SPELLING.get(op, op)} has no compiled form"
            case ir.Einsum() if "einsum" in self.forced:
                return f"einsum is forced to the host by {HOST_ENVIRONMENT}"
            case ir.Loop():
                loops = self.nesting(node)[1] + 1
                if loops > NESTED_LOOPS:
                    return (f"it nests loops {loops} deep, and one compiled function holds at "
                            f"most {NESTED_LOOPS} (the inner ones compile on their own)")
                inner = self.first_host(ir.topological(node.until, *node.step), scope + (node,))
                if inner is not None:
                    return f"its body runs {describe(inner[0])} on the host ({inner[1]})"
            case ir.LoopGrad():
                return "a loop run backwards keeps a tape of its states on the host"
            case ir.Cond():
                ifs = self.nesting(node)[0] + 1
                if ifs > NESTED_IFS:
                    return (f"it nests ifs {ifs} deep, and one compiled function holds at most "
                            f"{NESTED_IFS} (the inner ones compile on their own)")
                inner = self.first_host(ir.topological(node.then, node.orelse), scope)
                if inner is not None:
                    return f"a branch runs {describe(inner[0])} on the host ({inner[1]})"
            case ir.Project():
                if self.reason(node.loop, scope) is not None:
                    return "it reads a loop that runs on the host"
        return None

    def nesting(self, root: ir.Node) -> tuple[int, int]:
        """How deep ifs and loops nest inside `root`'s branches (an `if`) or body (a loop),
        counted along the longest chain each: every `if` whose branch, and every loop whose
        body, reaches another counts one. (An `if`'s condition and a loop's start are computed
        outside it, so they do not nest.) Computed on an explicit stack, once per node."""
        memo = self._nesting
        stack = [(root, False)]
        while stack:
            node, ready = stack.pop()
            if node in memo:
                continue
            inside = _nested_in(node)
            if not ready:
                stack.append((node, True))
                stack.extend((kid, False) for kid in inside if kid not in memo)
                continue
            ifs = loops = 0
            for kid in inside:
                below_ifs, below_loops = memo[kid]
                ifs = max(ifs, below_ifs + isinstance(kid, ir.Cond))
                loops = max(loops, below_loops + isinstance(kid, ir.Loop))
            memo[node] = (ifs, loops)
        return memo[root]

    def first_host(self, nodes, scope):
        for n in nodes:
            why = self.reason(n, scope)
            if why is not None:
                return n, why
        return None


def _nested_in(node: ir.Node) -> tuple[ir.Node, ...]:
    """What `node`'s code nests: an `if`'s branches, a loop's body, else what it reads."""
    match node:
        case ir.Cond():
            return (node.then, node.orelse)
        case ir.Loop():
            return (node.until, *node.step)
    return ir.children(node)


def describe(node: ir.Node) -> str:
    match node:
        case ir.Prim(op=op):
            what = SPELLING.get(op, op)
        case ir.Loop(name=name):
            what = f"loop {name}"
        case ir.Cond():
            what = "an if"
        case _:
            what = type(node).__name__.lower()
    return f"{what} at {node.span}" if node.span is not None else what
