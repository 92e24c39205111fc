"""IR lowered to JAX: the host runtime's walk (compiler/evaluate.py `Host`) run while `jax.jit`
traces, each op by its JAX meaning (executor/jax/meanings.py), each einsum along the plan's
path, loops as `lax.fori_loop` (counted) and `lax.while_loop` (conditional), an `if` on a
traced condition as `lax.cond` (only the branch taken runs), a loop run backwards (LoopGrad,
the reverse mode's own IR) as its loop forward writing each step's state to a tape, then
`lax.fori_loop` down the tape.

What the IR computes from shapes and constants alone (sizes, slice bounds, class counts, the
condition of an `if` on shapes) is computed on the host by its NumPy meaning while tracing, so
it stays a number the trace can use as a static size, as the other executors' plans do. A
loop's state that its step never changes is not carried: the body reads it as it was before
the loop (host numbers stay host numbers inside).

Every check the other executors make from values is noted in the call's `Ledger`, threaded
through loops and branches, and raised after the call (executor/jax/ledger.py). A tape has a
length fixed when the program is traced (`capacities`, one per loop run backwards); a loop
that runs more steps than its tape holds notes it as its failure, and the program is traced
again with a longer tape (executor/jax/executor.py)."""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ...compiler import dtypes, ir
from ...compiler.counting import NOTHING, Counting
from ...compiler.evaluate import Host, einsum_in_one
from ...compiler.ops.einsum_spec import numpy_spec
from ...compiler.ops.primitives import BY_OP
from ...compiler.plan import Plan, contraction
from ...grammar.errors import HilbertError
from ..numerics import quietly
from .ledger import Checks, Ledger
from .loops import Loops
from .meanings import MEANINGS, is_host

#: Ops computed by their NumPy meaning whatever their arguments: they read shapes only.
_SHAPES = frozenset({"rows", "columns"})


def loops_run_backwards(root: ir.Node) -> dict[ir.Node, int]:
    """Each distinct loop run backwards in `root` (bodies included) to its tape's number."""
    sites: dict[ir.Node, int] = {}
    for node in ir.everything(root):
        if isinstance(node, ir.LoopGrad) and node not in sites:
            sites[node] = len(sites)
    return sites


def gaussian_draws(root: ir.Node) -> bool:
    """True when `root` makes gaussian draws (a call computes them on the host)."""
    return any(isinstance(n, ir.Prim) and n.op == "keyedgaussian" for n in ir.everything(root))


def contract(spec: str, operands: list, path) -> jnp.ndarray:
    """`spec` on `operands` along `path` (opt_einsum's pairs of positions), each step a
    `jnp.einsum` (a dot_general where it is a product) at full precision."""
    path = [tuple(p) for p in path]
    if any(len(p) > 2 for p in path):  # (jnp.einsum contracts two operands a step)
        path = [(0, 1)] * (len(operands) - 1) or [(0,)]
    try:
        spec = numpy_spec(spec)
    except ValueError:  # past 52 letters: opt_einsum's own symbols
        pass
    return jnp.einsum(spec, *operands, optimize=path, precision=lax.Precision.HIGHEST)


class Lowering(Loops, Host):
    """One trace of a program: `trace(root, args)` gives its value and its Ledger as traced
    values. `capacities[k]` is the tape length of loop run backwards number k (`sites`).
    `exported`: a program for another runtime, with no host after it: no checks, and
    gaussian draws computed on the device (a call's call back to the host)."""

    def __init__(self, plan: Plan, optimize, sites: dict[ir.Node, int],
                 capacities: tuple[int, ...], exported: bool = False,
                 counting: Counting = NOTHING):
        super().__init__(self._einsum, plan.dtype, counting)
        self.plan = plan
        self.optimize = optimize
        self.complex = dtypes.is_complex(plan.dtype)
        self.sites = sites
        self.capacities = capacities
        self.exported = exported
        self.on_host = not exported  # (gaussian draws: executor/jax/draws.py)
        self.checks = Checks()
        #: each tape's loop and state shapes, as traced (what a longer tape would hold)
        self.tapes: dict[int, tuple[ir.Loop, list[tuple]]] = {}
        self.ledger: Ledger | None = None  # (the traced account: made by `trace`)

    def trace(self, root: ir.Node, args: tuple):
        """(value of `root`, Ledger) for the traced `args` (an exported program keeps no
        ledger: None)."""
        self.ledger = None if self.exported else Ledger.empty()
        # (64-bit types on in the trace, whatever the caller's setting: counted values are
        # float64 and step counters int64, compiler/counting.py; a float32 call's data stays
        # float32, its constants being float32)
        with jax.enable_x64(True):
            value = self.answer(self.eval(root, {}, tuple(args)))
            out = tuple(map(jnp.asarray, value)) if isinstance(value, tuple) else \
                jnp.asarray(value)
        return out, self.ledger

    # ------------------------------------------------------------ checks

    def check(self, bad, value, raiser: Callable) -> None:
        """Note that `raiser(value)` must raise where `bad` holds (a host or traced bool)."""
        if self.exported or is_host(bad) and not bad:
            return
        assert self.ledger is not None
        self.ledger = self.ledger.noted(jnp.asarray(bad), self.checks.add(raiser), value)

    def _counted(self, steps) -> None:
        if self.ledger is not None:
            self.ledger = self.ledger.counted(steps)

    def _enter(self, ledger: Ledger | None) -> Ledger | None:
        saved, self.ledger = self.ledger, ledger
        return saved

    def _leave(self, saved: Ledger | None) -> Ledger | None:
        ledger, self.ledger = self.ledger, saved
        return ledger

    # ------------------------------------------------------------ values

    def _inputs(self, node: ir.Node, memo) -> tuple[ir.Node, ...]:
        if isinstance(node, ir.Cond) and node.cond in memo and not is_host(memo[node.cond]):
            return ()  # a traced condition: lax.cond evaluates the branches itself
        return super()._inputs(node, memo)

    def _value(self, node: ir.Node, memo, leaves: tuple):
        if isinstance(node, ir.Cond) and not is_host(memo[node.cond]):
            return self._branch(node, memo, leaves)
        return super()._value(node, memo, leaves)

    def prim(self, node: ir.Prim, args: list):
        """The op's value: by its NumPy meaning on the host when it reads shapes only or only
        host numbers (a value the trace may use as a size), else by its JAX meaning."""
        row = BY_OP[node.op]
        if node.op in _SHAPES or (row.meaning is not None and all(
                is_host(a) and np.ndim(a) == 0 for a in args)):
            try:
                return quietly(row.meaning, node, args)
            except HilbertError:
                if node.op in _SHAPES:
                    raise
                # a host run would fail here if it came here: noted, raised only if it does
                args = [jnp.asarray(a) for a in args]
        return MEANINGS[node.op](node, args, self)

    def _einsum(self, node: ir.Einsum, operands: list):
        if all(is_host(o) and np.ndim(o) == 0 for o in operands):
            return quietly(einsum_in_one, node.spec, *operands)
        shapes = tuple(tuple(np.shape(o)) for o in operands)
        found = self.plan.paths.get((node.spec, shapes))
        path = found[0] if found is not None else contraction(node.spec, shapes, self.optimize)[0]
        return contract(node.spec, [jnp.asarray(o) for o in operands], path)

    # ------------------------------------------------------------ if

    def _branch(self, node: ir.Cond, memo, leaves: tuple):
        """`if` on a traced condition: lax.cond, each branch evaluated over the scope's values
        computed so far (what it computes itself stays inside it)."""
        def way(branch: ir.Node):
            def run(ledger: Ledger | None):
                saved = self._enter(ledger)
                value = self.eval(branch, ChainMap({}, memo), leaves)
                return value, self._leave(saved)
            return run

        ways = [way(node.then), way(node.orelse)]
        kind = np.dtype(np.float64) if self.narrow and node in self.counted else \
            self._common([lambda w=w: w(self.ledger)[0] for w in ways])

        def typed(run):
            def cast(ledger):
                value, ledger = run(ledger)
                return jnp.asarray(value).astype(kind), ledger
            return cast

        value, self.ledger = lax.cond(memo[node.cond] != 0, typed(ways[0]), typed(ways[1]),
                                      self.ledger)
        return value

    def _common(self, branches: list[Callable]) -> np.dtype:
        """The dtype both branches' values take: the call's real dtype in a real call; in a
        complex call, their promotion (one branch may be real, the other complex)."""
        if not self.complex:
            return np.dtype(dtypes.real(self.plan.dtype))
        saved = self.ledger
        try:
            kinds = [jax.eval_shape(b).dtype for b in branches]
        finally:
            self.ledger = saved
        return np.dtype(jnp.promote_types(*kinds))
