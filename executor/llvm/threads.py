"""Parallel nests on threads: the rows of a `prange` nest outlined into an LLVM function of
their own and run in chunks on Numba's threading layer, the pool Numba-built code runs on.

What runs them. Numba's `parallel_for` (of the layer executor/threads.py chooses: workqueue
unless the user chose another), the function Numba's own parallel loops call, reached by name:
the layer's start puts it in LLVM's symbol table (executor/workqueue.py for workqueue, without
importing Numba; Numba's `_launch_threads` for another layer), and the machine code names it
(no address in the IR: the text, and so the cache's keys, are the same in every process). Why:
hilbert's LLVM code, its Numba-built code and a user's Numba code then share one pool, so
threads never outnumber the cores from two pools; workqueue's idle threads sleep on a
condition variable (they never spin, and load no OpenMP: executor/threads.py's notes on
torch); and what that module decides stays true: the layer, the launch lock on workqueue
(`launched`: it ends the process when two threads launch at once), GNU OpenMP's fork rule.
A pool of our own would need those answers again; a pool of Python threads (as row blocks'
below) takes the GIL for every chunk.

Each nest becomes two functions in the module:

    int64 rows(int8 *captured, int64 *raised, int64 start, int64 stop)
    void  chunks(int8 **args, int64 *dims, int64 *steps, int8 *data)

`rows` runs the nest's rows start … stop − 1, reading the values the nest reads from the
function around it (`captured`: arrays as their data's address, shape, and strides unless
C-ordered; numbers as bits); it answers 0, or the number of the `raise` that stopped it with
its arguments at `raised` (lower.py's ABI). `chunks` is the kernel `parallel_for` calls (the
shape of a NumPy gufunc's inner loop, as Numba's parfors): `args[0]` points at its first
chunk's record, `dims[0]` says how many records, each `start, stop, answer, raise's
arguments…`. The function around it makes one chunk a thread (as many as Numba's threads for
this thread, `get_num_threads`, capped by HILBERT_THREADS, and no more than the rows), of
even runs of rows, and calls `chunks` itself when one chunk is all there is.

Errors: a chunk stops at its first raise; after the threads have joined, the first chunk in
row order that raised is the call's error, which is the raise of the first failing row, the
one serial code raises. Ctrl-C: the loops around a nest read the stop flag at each step, as
before (a nest's rows reading it read the captured flag). Serial twin: where threads may not
run (HILBERT_THREADS 0 or 1, one core, a child forked from a process that ran parallel code
on GNU OpenMP: threads.count) a nest is lowered as a plain loop, and a nest inside another's
rows always is (Numba's layers do not nest).

Row blocks (executor/numba/row_blocks.py) need nothing here: their pool of Python threads
calls the lowered function through ctypes, which lets go of the GIL for the call, so the
blocks run at once; only serial code is split into blocks."""

from __future__ import annotations

import dataclasses
import threading

from llvmlite import ir

from .. import threads as pool
from ..codegen.loops import Assign, For, Update, Var, exprs, names, statements
from ..numba.loading import load
from .runtime import I8P, I64, LLVM, _declared
from .scalars import from_words, least, to_words
from .scalars import words as number_words
from .types import Array
from .unsupported import Unsupported
from .views import c_strides

I32 = ir.IntType(32)
#: `rows` and `chunks` (the module's doc), and Numba's `parallel_for` and `get_num_threads`.
ROWS = ir.FunctionType(I64, [I8P, I64.as_pointer(), I64, I64])
CHUNKS = ir.FunctionType(ir.VoidType(), [I8P.as_pointer(), I64.as_pointer(), I64.as_pointer(),
                                         I8P])
PARALLEL_FOR = ir.FunctionType(ir.VoidType(), [I8P, I8P.as_pointer(), I64.as_pointer(),
                                               I64.as_pointer(), I8P, I64, I64, I32])
NUM_THREADS = ir.FunctionType(I32, [])
#: A chunk's record: start, stop, answer, then the raise's arguments.
HEAD = 3
#: What a Lowering holds of the one function it writes (the rest is the module's): set aside
#: while a nest's rows are written into a function of their own.
OWN = ("function", "_entry", "builder", "slots", "arrays", "held", "scratch", "_depth",
       "_breaks", "_returned")


def on() -> bool:
    """Whether parallel nests lowered now run on threads (else each is its serial twin)."""
    return pool.count() >= 2


def nest(lowering, loop: For) -> None:
    """The parallel `loop` written into `lowering` (lower.py's): its rows on threads, or a plain
    loop where they may not run."""
    if not on() or getattr(lowering, "_in_rows", False):
        lowering._for(loop.index, loop.size, loop.body)
        return
    rows = lowering.cast(*lowering.value(loop.size), "int64")
    captured = [(name, *lowering.value(Var(name))) for name in sorted(_reads(loop))]
    first = len(lowering.raises)
    outlined = _outlined(lowering, loop, captured)
    width = HEAD + max((len(types) for _, types in lowering.raises[first:]), default=0)
    _launch(lowering, rows, _chunks(lowering.module, outlined, width), _packed(lowering, captured),
            width, len(lowering.raises) > first)


def check(body: list) -> None:
    """Unsupported unless each parallel nest of `body` keeps its values to itself: nothing it
    assigns is read outside it (its rows' values are private to their thread), but the index
    of another loop (which that loop assigns before its rows read it), and nothing it reads
    before assigning is assigned by it (a value carried from row to row)."""
    found = statements(body)
    for loop in (s for s in found if isinstance(s, For) and s.parallel):
        inside = {id(s) for s in statements([loop])}
        outside = [s for s in found if id(s) not in inside]
        indices = {s.index for s in outside if isinstance(s, For)}
        read = {n for s in outside for n in _gets(s)}
        if (_private(loop) & read) - indices:
            raise Unsupported("a parallel nest whose value is read outside it")


def _sets(stmt) -> tuple[str, ...]:
    match stmt:
        case Assign(targets=targets):
            return targets
        case Update(name=name) | For(index=name):
            return (name,)
    return ()


def _gets(stmt) -> set[str]:
    found = {n for e in exprs(stmt) for n in names(e)}
    return found | {stmt.name} if isinstance(stmt, Update) else found


def _private(loop: For) -> set[str]:
    """The locals `loop`'s rows assign (its index among them); Unsupported for one read in a
    row before the row assigns it."""
    assigned = {n for s in statements(loop.body) for n in _sets(s)}
    defined = {loop.index}
    for stmt in statements(loop.body):
        if (_gets(stmt) & assigned) - defined:
            raise Unsupported("a parallel nest carrying a value from row to row")
        defined.update(_sets(stmt))
    return assigned | {loop.index}


def _reads(loop: For) -> set[str]:
    """The locals of the function around `loop` that its rows read."""
    return {n for s in statements(loop.body) for n in _gets(s)} - _private(loop)


def _words(b: ir.IRBuilder, value, t) -> list[ir.Value]:
    """A captured value as words: an array's data address, shape and (unless C-ordered)
    strides, a number's bits."""
    if isinstance(t, Array):
        return [b.ptrtoint(value.data, I64), *value.shape,
                *([] if value.ordered else value.strides)]
    if not isinstance(t, str):
        raise Unsupported(f"a parallel nest reading a {t}")
    return to_words(b, value, t)


def _packed(lowering, captured: list) -> ir.Value:
    """The captured values written to a block of words on the stack; its address."""
    b = lowering.builder
    words = [w for _, value, t in captured for w in _words(b, value, t)]
    block = _stack(lowering, I64, max(len(words), 1))
    for at, word in enumerate(words):
        b.store(word, b.gep(block, [ir.Constant(I64, at)]))
    return b.bitcast(block, I8P)


def _stack(lowering, kind: ir.Type, count: int) -> ir.Value:
    """`count` values of `kind` on the stack, made once in the function's entry block (a nest
    inside a loop reuses them)."""
    b = lowering.builder
    with b.goto_block(lowering._entry):
        b.position_at_start(lowering._entry)
        return b.alloca(kind, size=count)


def _outlined(lowering, loop: For, captured: list, prefix: str = "hb_rows") -> ir.Function:
    """`rows` of `loop` (the module's doc): the rows written by `lowering` into a function of
    their own, the module's (its maths, its raises' numbers) shared with the function around
    (which alone frees the arrays it made: a raise in the rows frees none)."""
    module = lowering.module
    rows = ir.Function(module, ROWS, f"{prefix}{sum(1 for _ in module.functions)}")
    rows.linkage = "internal"
    for attribute in sorted(lowering.function.attributes):  # (nounwind, the vector width)
        set.add(rows.attributes, attribute)
    saved = {name: getattr(lowering, name) for name in OWN}
    try:
        lowering.function, lowering._in_rows = rows, True
        lowering._entry = rows.append_basic_block("entry")
        lowering.builder = ir.IRBuilder(lowering._entry)
        lowering.slots, lowering.arrays, lowering.held, lowering.scratch = {}, {}, {}, {}
        lowering._depth, lowering._breaks, lowering._returned = 0, [], False
        _unpacked(lowering, rows.args[0], captured)
        start, stop = rows.args[2], rows.args[3]
        b = lowering.builder

        def row(at: ir.Value) -> None:
            lowering.builder.store(lowering.builder.add(start, at), lowering._slot(loop.index))
            lowering._depth += 1
            lowering._block(loop.body)
            lowering._depth -= 1

        lowering._loop(loop.index, b.sub(stop, start), row)
        lowering.builder.ret(ir.Constant(I64, 0))
    finally:
        for name, value in saved.items():
            setattr(lowering, name, value)
        lowering._in_rows = False
    return rows


def _unpacked(lowering, data: ir.Value, captured: list) -> None:
    """The captured values read back in `rows`: arrays (their strides from their shapes where
    C-ordered, so LLVM sees a unit stride and vectorises), numbers into their slots."""
    b, at = lowering.builder, 0
    words = b.bitcast(data, I64.as_pointer())

    def word() -> ir.Value:
        nonlocal at
        at += 1
        return b.load(b.gep(words, [ir.Constant(I64, at - 1)]))

    for name, value, t in captured:
        if isinstance(t, Array):
            pointer = b.inttoptr(word(), LLVM[t.dtype].as_pointer())
            shape = [word() for _ in value.shape]
            strides = (c_strides(lowering.builder, shape) if value.ordered
                       else [word() for _ in value.strides])
            lowering.arrays[name] = dataclasses.replace(
                value, data=pointer, shape=shape, strides=strides, fresh=False, param=-1,
                owned=False, sources=frozenset())
        else:
            b.store(from_words(b, [word() for _ in range(number_words(t))], t),
                    lowering._slot(name))


def _chunks(module: ir.Module, rows: ir.Function, width: int) -> ir.Function:
    """`chunks` (the module's doc): `rows` of each of its records, the answer written back."""
    chunks = ir.Function(module, CHUNKS, f"{rows.name}.chunks")
    chunks.linkage = "internal"
    chunks.attributes.add("nounwind")
    b = ir.IRBuilder(chunks.append_basic_block("entry"))
    args, dims, _, data = chunks.args
    records = b.bitcast(b.load(args), I64.as_pointer())

    def chunk(k: ir.Value) -> None:
        record = b.gep(records, [b.mul(k, ir.Constant(I64, width))])
        start, stop = (b.load(b.gep(record, [ir.Constant(I64, j)])) for j in (0, 1))
        answer = b.call(rows, [data, b.gep(record, [ir.Constant(I64, HEAD)]), start, stop])
        b.store(answer, b.gep(record, [ir.Constant(I64, 2)]))

    _each(b, b.load(dims), chunk)
    b.ret_void()
    return chunks


def _launch(lowering, rows: ir.Value, chunks: ir.Function, data: ir.Value, width: int,
            raises: bool) -> None:
    """The nest's `rows` rows as chunks, one a thread, on Numba's layer; a raise in one of
    them raised by the function (the first chunk's in row order)."""
    b, module, cap = lowering.builder, lowering.module, pool.count()
    records = _stack(lowering, I64, cap * width)
    args, dims, steps = (_stack(lowering, kind, 1) for kind in (I8P, I64, I64))
    with b.if_then(b.icmp_signed(">", rows, ir.Constant(I64, 0))):
        threads = b.sext(b.call(_declared(module, "get_num_threads", NUM_THREADS), []), I64)
        count = least(b, least(b, threads, ir.Constant(I64, cap)), rows)
        count = b.select(b.icmp_signed("<", count, ir.Constant(I64, 1)), ir.Constant(I64, 1),
                         count)

        def record(k: ir.Value) -> None:
            at = b.gep(records, [b.mul(k, ir.Constant(I64, width))])
            edges = [b.sdiv(b.mul(rows, j), count) for j in (k, b.add(k, ir.Constant(I64, 1)))]
            for j, value in enumerate([*edges, ir.Constant(I64, 0)]):
                b.store(value, b.gep(at, [ir.Constant(I64, j)]))

        _each(b, count, record)
        b.store(b.bitcast(records, I8P), args)
        b.store(count, dims)
        b.store(ir.Constant(I64, 8 * width), steps)
        with b.if_else(b.icmp_signed(">", count, ir.Constant(I64, 1))) as (threaded, alone):
            with threaded:
                b.call(_declared(module, "numba_parallel_for", PARALLEL_FOR),
                       [b.bitcast(chunks, I8P), args, dims, steps, data,
                        ir.Constant(I64, 0), ir.Constant(I64, 1), b.trunc(count, I32)])
            with alone:
                b.call(chunks, [args, dims, steps, data])
        if raises:
            _raised(lowering, records, count, width)


def _raised(lowering, records: ir.Value, count: ir.Value, width: int) -> None:
    """The first chunk's raise, if one raised: its arguments copied to the ABI's `results`,
    the arrays made so far freed, its number answered (as lower.py's `_raise`)."""
    b, function = lowering.builder, lowering.function
    out = function.args[1]

    def chunk(k: ir.Value) -> None:
        at = b.gep(records, [b.mul(k, ir.Constant(I64, width))])
        answer = b.load(b.gep(at, [ir.Constant(I64, 2)]))
        failed = function.append_basic_block("rows.raised")
        fine = function.append_basic_block("rows.fine")
        b.cbranch(b.icmp_signed("!=", answer, ir.Constant(I64, 0)), failed, fine)
        b.position_at_end(failed)
        for j in range(width - HEAD):
            b.store(b.load(b.gep(at, [ir.Constant(I64, HEAD + j)])),
                    b.gep(out, [ir.Constant(I64, j)]))
        lowering.release_unless(set(), [])
        b.ret(answer)
        b.position_at_end(fine)

    _each(b, count, chunk)


def _each(b: ir.IRBuilder, count: ir.Value, do) -> None:
    """`do(k)` for k = 0 … count − 1 (a counter in a register)."""
    function = b.function
    before = b.block
    test = function.append_basic_block("each.test")
    inside = function.append_basic_block("each.body")
    after = function.append_basic_block("each.end")
    b.branch(test)
    b.position_at_end(test)
    k = b.phi(I64)
    k.add_incoming(ir.Constant(I64, 0), before)
    b.cbranch(b.icmp_signed("<", k, count), inside, after)
    b.position_at_end(inside)
    do(k)
    k.add_incoming(b.add(k, ir.Constant(I64, 1)), b.block)
    b.branch(test)
    b.position_at_end(after)


_started = False
_START = threading.Lock()
#: The thread that starts the layer beside a compile (`start_beside`), while it runs.
_starting: threading.Thread | None = None


def start() -> None:
    """Numba's threading layer, the one executor/threads.py chooses, loaded and its threads
    started (once): its functions are then in LLVM's symbol table, where the machine code that
    names them finds them. Waits for a start begun beside a compile (`start_beside`); one that
    failed there is tried again here, where its error reaches the caller."""
    global _started
    starting = _starting
    if starting is not None and starting is not threading.current_thread():
        starting.join()
    with _START:
        if not _started:
            if not pool.launch_unloaded():  # (else Numba is imported, and asked)
                pool.layer()
                load("numba.np.ufunc.parallel")._launch_threads()
            pool.own()
            _started = True


def start_beside() -> None:
    """`start` begun on a thread of its own, once: the layer's start (workqueue's library
    loaded and its threads launched, a few milliseconds) then runs beside LLVM's compile of the
    first function that needs it, which waits for it only before its machine code is loaded
    (a non-daemon thread: an exit waits for it)."""
    global _starting
    with _START:
        # (another layer is started in the compiling thread: OpenMP's settings are a thread's)
        if _started or _starting is not None or pool.expected_layer() != "workqueue":
            return
        _starting = threading.Thread(target=_quietly_started, name="hilbert-threads-start")
        _starting.start()


def _quietly_started() -> None:
    try:
        start()
    except Exception:  # noqa: BLE001 (`start` in the caller's thread raises it again)
        pass


class Threaded:
    """A lowered function (call.Lowered) with nests on threads: the layer started before its
    machine code is loaded, and each call under the launch lock where the layer needs it
    (threads.launched, decided at the first call). Everything else is the function's own."""

    def __init__(self, lowered) -> None:
        self.lowered = lowered
        self._call = None

    def compile(self, *signature) -> None:
        start_beside()
        self.lowered.compile(*signature, before_load=start)
        start()  # (nothing to do once started: its machine code may have been loaded before)

    def __call__(self, *args):
        if self._call is None:
            self.compile()
            self._call = pool.launched(self.lowered)
        return self._call(*args)

    def __getattr__(self, name: str):
        return getattr(self.lowered, name)
