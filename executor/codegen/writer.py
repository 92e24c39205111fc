"""Building a function's loop IR (loops.py) statement by statement, as the emitter walks the IR:
the blocks open, and how many loops deep they are (Python compiles at most NESTED_BLOCKS)."""

from __future__ import annotations

from contextlib import contextmanager

from ...compiler.plan.threads import NESTED_BLOCKS, flat
from .loops import Assign, Expr, Fmt, For, If, Stmt, Var, While


class Writer:
    """The function's statements (`body`), the block being written, and the loops open."""

    def __init__(self) -> None:
        self.body: list[Stmt] = []
        self._open: list[tuple[list[Stmt], bool]] = [(self.body, False)]  # (block, a loop?)
        self.loops = 0

    @property
    def current(self) -> list[Stmt]:
        return self._open[-1][0]

    def add(self, *stmts: Stmt) -> None:
        self.current.extend(stmts)

    def mark(self) -> tuple[list[Stmt], int]:
        """Where the next statement goes (`insert` puts statements there later)."""
        return self.current, len(self.current)

    @staticmethod
    def insert(mark: tuple[list[Stmt], int], stmts: list[Stmt]) -> None:
        block, position = mark
        block[position:position] = stmts

    # ---------------------------------------------------------------- blocks

    def _enter(self, block: list[Stmt], loop: bool) -> None:
        """Write into `block` (a body of the statement last added) until `close`."""
        self._open.append((block, loop))
        self.loops += loop

    def close(self) -> None:
        _, loop = self._open.pop()
        self.loops -= loop

    @contextmanager
    def _inside(self, block: list[Stmt], loop: bool = False):
        """Write into `block` within the `with`."""
        self._enter(block, loop)
        try:
            yield
        finally:
            self.close()

    def open_for(self, index: str, size: Expr, parallel: bool = False,
                 kernels: tuple[int, ...] = ()) -> None:
        stmt = For(index, size, [], parallel, kernels)
        self.add(stmt)
        self._enter(stmt.body, True)

    def if_(self, test: Expr):
        stmt = If(test, [])
        self.add(stmt)
        return self._inside(stmt.body)

    def else_(self):
        """The `else` of the `if` just closed."""
        stmt = self.current[-1]
        assert isinstance(stmt, If) and not stmt.orelse, "code generation: else without if"
        return self._inside(stmt.orelse)

    def for_(self, index: str, size: Expr):
        stmt = For(index, size, [])
        self.add(stmt)
        return self._inside(stmt.body, loop=True)

    def while_(self):
        stmt = While([])
        self.add(stmt)
        return self._inside(stmt.body, loop=True)

    # ---------------------------------------------------------------- nests

    def room(self) -> int:
        """How many more loop blocks may be nested here."""
        return NESTED_BLOCKS - self.loops

    def nest(self, dims, index: list[str], before=None, parallel: bool = False,
             kernel: int = 0) -> int:
        """Open one loop per axis (sizes `dims`, indices `index`); `before[k]` are statements
        to run before loop k; `parallel`: the outer loop is a prange; `kernel`: the fused nest's
        number in the schedule (rows.py). A nest deeper than Python allows runs its outer axes as one flat loop whose
        counter is split into their indices (those axes may have no `before`). Returns how
        many outer axes were merged so; `unnest` closes what this opened."""
        rank = len(dims)
        merged = self.merged(rank)
        for k in range(rank):
            assert not (0 < k < merged and before and before[k]), "code generation: flat nest"
            self.add(*(before[k] if before else ()))
            if k >= merged:
                self.open_for(index[k], dims[k], parallel and k == 0,
                              (kernel,) if kernel and k == 0 else ())
            elif k == 0:
                self._flat(dims[:merged], index[:merged])
        return merged

    def merged(self, rank: int) -> int:
        """How many outer axes a nest of `rank` loops opened here runs as one flat loop (as
        the plan counted it: compiler/plan/threads.py)."""
        return flat(rank, self.loops)

    def _flat(self, dims, index) -> None:
        flat, rest = f"{index[0]}_flat", f"{index[0]}_rest"
        self.open_for(flat, Fmt(" * ".join("{}" for _ in dims), tuple(dims)))
        self.add(Assign((rest,), (Var(flat),)))
        for k in reversed(range(1, len(dims))):
            self.add(Assign((index[k],), (Fmt("{} % {}", (Var(rest), dims[k])),)),
                     Assign((rest,), (Fmt("{} // {}", (Var(rest), dims[k])),)))
        self.add(Assign((index[0],), (Var(rest),)))

    def unnest(self, rank: int, merged: int, after=None) -> None:
        """Close the loops `nest` opened; `after[k]` are statements to run after loop k."""
        for k in reversed(range(rank)):
            assert not (0 < k < merged and after and after[k]), "code generation: flat nest"
            if k >= merged or k == 0:
                self.close()
            self.add(*(after[k] if after else ()))
