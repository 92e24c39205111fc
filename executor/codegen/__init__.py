"""Code generation: a region of fused, shape-checked IR -> the Python source of one function.

    emitter.py      writes the function's schedule (compiler/plan/scheduler.py, decided before
                    anything is written: each block's units, stored axis orders, contraction
                    layouts, compiled or not, threads) block by block and builds its loop IR,
                    handing each unit to entrywise.py (loop nests, scalars), products.py
                    (contractions, laid out as compiler/plan/layout.py decided) or control.py
                    (loops, branches, views, oneHot)
    forms.py        the lowering of each form of op (the op table's `form`), registered by
                    the modules above; the emitter dispatches on a row's form, never its name
    writer.py       the statement builder it writes through (blocks, nests, Python's limits)
    loops.py        the loop IR: statements and expressions, as data; every literal typed
    op_code.py      the op table's lowerings (compiler/ops/loop_code.py) as loop IR
    spelling.py     how generated Python spells each function of the lowerings, per tier
    loop_types.py   every local's and expression's dtype and rank; ops typed after emitting
    division.py     rewrite: division by a row's divisor without dividing (in emit_group)
    sums.py         long sums added pairwise above blocks (in emit_group)
    rows.py         rewrite: consecutive nests over the same rows run as one loop
    tidy.py         rewrites: unread sizes dropped, arrays let go (host code)
    verify_loops.py the loop IR's verifier, run after each rewrite under HILBERT_VERIFY
    precision.py    how a literal of each dtype is written; the kernels each dtype binds
    render.py       the loop IR printed as Python: printing only
"""

from .emitter import TINY, Generated, Region, generate, is_tiny

__all__ = ["TINY", "Generated", "Region", "generate", "is_tiny"]
