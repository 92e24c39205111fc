"""The LLVM back end (issue 48, stage 1): a generated function's loop IR lowered to LLVM IR and
compiled by llvmlite in milliseconds, where Numba's front end takes seconds.

    types.py        each local's type, inferred from the parameters' as Numba infers them
    templates.py    an Fmt's template read once by Python's ast (the one place that reads them)
    lower.py        statements to llvmlite.ir, and the fixed C ABI the function takes
    expressions.py  expressions to llvmlite.ir: locals, arrays, templates, calls
    views.py        transposes, reshapes and slices of arrays as views, without copies
    entries.py      counted loops over every entry: fills and copies
    held.py         array locals a loop reassigns (its state, its step's buffers), in slots,
                    and scratch rows and a turn's copies made inside a loop
    remade.py       which arrays made inside a block are dead when made again (liveness):
                    a loop's buffers made at each turn of the loop around it
    threads.py      parallel nests: their rows outlined, run in chunks on Numba's threads
    outline.py      a large function's runs of nests outlined as functions of their own
                    (LLVM's loop passes take longer per loop in a larger function)
    scalars.py      numbers: literals, conversions, arithmetic with Numba's types
    complex.py      complex numbers: {re, im} structures, NumPy's arithmetic, C's cexp, …
    runtime.py      the kernels and NumPy functions it calls, as LLVM IR
    draws.py        counter-based draws (Philox-4x32-10), the host's bits; permutations' sort
    pairwise.py     column sums' pushes and totals (pairwise.py's), the same additions
    products.py     matrix products (K.gemm, the small products) as calls of the two below
    shared.py       kernels made once per process and called by their symbol (products')
    product_kernel.py  blas.py's product kernel (tiles, BLAS) and small-product loops in LLVM IR
    complex_products.py  complex matrices' products: tiles in vectors of parts, or zgemm
    maths.py        vmath.py's exp, log and tanh (and math="fast"'s), operation for operation
    maths32.py      vmath32.py's float32 exp, log, tanh and erf, typed as Numba types them
    parts.py        a large module in two parts, compiled side by side and linked by symbol
    compile.py      llvmlite's binding: target machine, optimisation level, object code, addresses
    unlocked.py     LLVM's optimiser and code generator called past llvmlite's lock
    kept.py         object code in the disk cache, under a hash of the IR and what else it depends on
    records.py      what a warm process needs to load a function without lowering it again
    call.py         the Python side of the ABI: packing, calling, memory handed back
    cpython.py      the entry from Python as machine code: objects read, values made
    unsupported.py  the signal that a function is not lowered (its calls stay on the host tier)

Loops (`while True`, `break`, the Ctrl-C check of the `stop` flag, the step count) and the
coded runtime errors they raise (answered by number through the ABI, raised by call.py as
Numba-built code raises them) are lowered, and parallel nests, on the threads of Numba's
threading layer (threads.py says why those).

It is the numba executor's one code generator (issue 48 item 3 removed the path through
Numba's front end). A function outside what it lowers raises `Unsupported` while it is lowered,
before anything compiles: the call's plan then keeps its calls on the host tier, saying why
(executor/numba/schedules.py)."""

from __future__ import annotations

import threading

from .unsupported import Unsupported

# (nothing else at import: the numba executor imports this package on its first call, which
# the code generator and llvmlite must not slow down; `lowered` imports them)
__all__ = ["Unsupported", "begin_kernels", "lowered"]


def begin_kernels(dtype: str | None) -> None:
    """The product kernel that calls of `dtype` (None: float64, NumPy's default) multiply with,
    begun on a thread of its own where code is compiled (shared.py; not under NUMBA_DISABLE_JIT,
    which keeps every call on the host tier): a module's load calls
    this before its front half runs, which the kernel's LLVM compile then runs beside (the
    product kernel is the same in every program, and most programs multiply). A process that
    never multiplies pays a core's 0.2–0.3 s for it, once a cache (its machine code is kept);
    one with the cache warm, 20 ms of one thread. Nothing here fails a load: an error is the
    build's, raised where a module that calls the kernel is linked."""
    from ..numba.loading import python_mode

    chosen = dtype or "float64"
    try:
        if chosen not in ("float64", "float32") or python_mode():
            return
    except Exception:  # noqa: BLE001 (a setting not understood: the call reports it)
        return
    from . import products

    products.begin(chosen)


def lowered(body: list, names: list[str], params: list, code: str, contiguous: bool = False):
    """The function whose loop IR is `body`, of parameters `names` of types `params`, in code
    of dtype `code`, lowered to LLVM IR (a call.Lowered, compiled at its first use), or
    Unsupported. `contiguous`: its array parameters are C-ordered (their strides follow from
    their shapes: LLVM then vectorises without checking them at run time), as the numba
    executor's regions convert them; otherwise their strides are read. Where the disk cache
    holds its record (records.py: a process compiled it before), it is not lowered: the
    record says where its machine code is kept."""
    from ..codegen.loops import For, While, statements
    from . import compile, threads
    from .types import Array

    if len(names) == len(params) + 1 and names[-1] == "stop":  # (loops' Ctrl-C flag)
        params = [*params, Array("int64", 1)]
    found = statements(body)
    parallel = any(isinstance(s, For) and s.parallel for s in found)
    if parallel:
        threads.check(body)
    loops = any(isinstance(s, (For, While)) for s in found)
    level = compile.level(len(found), loops)
    passes = compile.rounds(level, any(isinstance(s, For) and s.parallel and _deep(s)
                                       for s in found))
    threaded = parallel and threads.on()
    # (everything its LLVM IR follows from: one function for it in a process, as Numba keeps
    # one dispatcher per source, and its record's name on disk)
    description = repr((body, names, params, code, contiguous, threaded, level, passes))
    with _LOCK:
        if description not in _MADE:
            def fresh():
                return _fresh(body, names, params, code, contiguous, level, passes,
                              description)

            made = _recorded(description, params, level, contiguous, passes, fresh) or fresh()
            _MADE[description] = threads.Threaded(made) if threaded else made
        return _MADE[description]


def _fresh(body: list, names: list[str], params: list, code: str, contiguous: bool, level: int,
           passes: int, description: str):
    """`lowered`'s function, lowered (lower.py) and put in parts (parts.py)."""
    from . import call, lower, parts, shared

    made = lower.Lowering(body, list(zip(names, params, strict=True)), code, contiguous)
    text, functions = parts.written(made.module)
    split = parts.split(lower.NAME, [f.name for f in made.outlined], text, functions,
                        {f.name: f.ftype for f in made.module.functions})
    return call.Lowered(text, params, made.results, level, contiguous, made.raises, passes,
                        split, shared.called(text), description)


def _recorded(description: str, params: list, level: int, contiguous: bool, passes: int,
              fresh):
    """`lowered`'s function as its record on disk says (records.py), or None where there is
    none; `fresh()` lowers it where its machine code is gone after all."""
    from . import call, records

    record = records.read(description, level)
    if record is None:
        return None
    return call.Lowered(None, params, record["results"], level, contiguous, record["raises"],
                        passes, [(None, symbols) for _, symbols in record["parts"]],
                        record["kernels"], description,
                        kept_as=[name for name, _ in record["parts"]], fresh=fresh)


def _deep(loop) -> bool:
    """Whether a nest's rows hold a loop inside a loop (the convolve's taps under its outputs:
    what a second round of LLVM's pipeline straightens, compile.rounds)."""
    from ..codegen.loops import For, statements

    return any(isinstance(s, For) and any(isinstance(t, For) for t in statements(s.body))
               for s in statements(loop.body))


#: Every function lowered in this process, by what its IR follows from (`lowered`'s
#: description): the same code at other sizes (its sizes are arguments) is the same function,
#: compiled once.
_MADE: dict[str, object] = {}
_LOCK = threading.Lock()
