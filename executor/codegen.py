"""Code generation: a region of fused, shape-checked IR -> the Python source of one function.

The function takes the region's inputs (arrays, or NumPy scalars) and returns its value and
the number of loop steps it ran. Its code is generic in sizes (they are read from the inputs),
so programs that differ only in sizes share one source, one compilation and one disk-cache
entry. Every identifier in it is made here from counters, and every number is printed from a
float: nothing from .hb source text (names, specs) reaches the generated text.
"""

from __future__ import annotations

import math
import re
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
from hilbert.compiler import ir
from hilbert.compiler.einsum_spec import parse_spec
from hilbert.compiler.primitives import BY_OP
from hilbert.compiler.shapes import Scope, ShapeTable

from . import division, fusion, products, reference, rows, threads
from .division import Division

#: Each entrywise op's expression is its row's `code` in the op table (exp, ln and tanh are
#: executor/vmath.py's: arithmetic LLVM vectorises, not calls to libm), or its `host_code` in
#: uncompiled code (NumPy's own: a compiled function called from Python costs more, and
#: NumPy float64 scalars already give x ^ y and x / 0 their meaning).
REDUCE = {"maximum": ("K.fmax", "-np.inf"), "minimum": ("K.fmin", "np.inf")}
#: The largest step count a counted loop accepts (what the reference executor accepts too):
#: past 2^53 a float64 count cannot go down by one exactly.
LARGEST_COUNT = getattr(reference, "_EXACT", 2.0 ** 53)


#: Shift coefficients and offsets below this are written as integers when whole.
_WHOLE = 2.0 ** 31


def number(value: float) -> str:
    """A float as Python source (inf and nan included)."""
    value = float(value)
    if math.isnan(value):
        return "np.nan"
    if math.isinf(value):
        return "np.inf" if value > 0 else "(-np.inf)"
    return repr(value)


@dataclass(frozen=True)
class Region:
    """What one generated function computes: `root` (in IR scope `scope`) from `inputs`, the
    nodes it is given as arguments."""

    root: ir.Node
    inputs: tuple[ir.Node, ...]
    scope: Scope


@dataclass
class Generated:
    """The source of one function, and what it holds."""

    source: str
    compiled: bool  # False: plain NumPy calls only, so it runs uncompiled (no call overhead)
    loops: list[ir.Loop]  # by the number compiled code names a loop with in StepCountError
    reads: list[ir.Prim]  # by the number compiled code names an x[t] or a oneHot in its errors
    kernels: int  # fused loop nests
    products: int  # contractions that reach a matrix product
    copies: int = 0  # operands (or results) a product copies into another axis order
    looped: int = 0  # products run as a loop of products over views (batch letters and others)


@dataclass
class Block:
    """Where emission is within one block's schedule: its nodes, the position of the last unit
    reading each stored value, and the position of the unit being emitted (so a kernel may
    write over an input nothing reads after it)."""

    nodes: set = field(default_factory=set)
    last_read: dict = field(default_factory=dict)
    position: int = -1


@dataclass
class Frame:
    """Code-generation state of one IR scope (the call's, or a loop body's)."""

    shapes: dict
    scope: Scope = ()  # where in the IR's loops this frame is (ShapeTable's key)
    dims: dict = field(default_factory=dict)
    blocks: list[dict] = field(default_factory=lambda: [{}])
    hoist: list[str] | None = None  # allocations of the enclosing loop, made once before it
    destinations: dict = field(default_factory=dict)  # loop steps written straight to state
    states: dict = field(default_factory=dict)  # loop -> names of its state variables
    owned: dict = field(default_factory=dict)  # node -> the buffer it alone holds
    recomputed: set = field(default_factory=set)  # members kernels compute again, not read back
    fixed: set = field(default_factory=set)  # loop state this loop never changes
    copied: dict = field(default_factory=dict)  # copies of fixed state, made before the loop
    gathered: dict = field(default_factory=dict)  # node -> axis its readers take slices along
    layouts: dict = field(default_factory=dict)  # node -> its buffer's axis order, if not its own


#: Python compiles at most 20 nested `for`/`while`/`with` blocks in one function.
NESTED_BLOCKS = 20


class Writer:
    """Lines of Python at an indentation depth, counting the loop blocks open (`loops`)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 1
        self.loops = 0
        self._open: list[str] = []  # headers of the blocks open, innermost last

    def line(self, text: str) -> None:
        self.lines.append("    " * self.depth + text)

    def open(self, header: str) -> None:
        """Start a block; `close` ends it."""
        self.line(header)
        self.depth += 1
        self.loops += header.startswith(("for ", "while ", "with "))
        self._open.append(header)

    def close(self) -> None:
        header = self._open.pop()
        self.depth -= 1
        self.loops -= header.startswith(("for ", "while ", "with "))

    @contextmanager
    def block(self, header: str):
        self.open(header)
        try:
            yield
        finally:
            self.close()

    def room(self) -> int:
        """How many more loop blocks may be nested here."""
        return NESTED_BLOCKS - self.loops

    def nest(self, dims: tuple[str, ...] | list[str], index: list[str], before=None,
             parallel: bool = False) -> int:
        """Open one loop per axis (sizes `dims`, indices `index`); `before[k]` are lines to
        run before loop k; `parallel`: the outer loop is a prange. A nest deeper than Python
        allows runs its outer axes as one flat loop whose counter is split into their indices
        (those axes may have no `before`). Returns how many outer axes were merged so;
        `unnest` closes what this opened."""
        rank = len(dims)
        merged = self.merged(rank)
        for k in range(rank):
            assert not (0 < k < merged and before and before[k]), "code generation: flat nest"
            for text in (before[k] if before else ()):
                self.line(text)
            if k >= merged:
                loop = "prange" if parallel and k == 0 else "range"
                self.open(f"for {index[k]} in {loop}({dims[k]}):")
            elif k == 0:
                self._flat(dims[:merged], index[:merged])
        return merged

    def merged(self, rank: int) -> int:
        """How many outer axes a nest of `rank` loops opened here runs as one flat loop."""
        return 0 if rank <= self.room() else min(rank, rank - self.room() + 1)

    def _flat(self, dims, index) -> None:
        flat, rest = f"{index[0]}_flat", f"{index[0]}_rest"
        self.open(f"for {flat} in range({' * '.join(dims)}):")
        self.line(f"{rest} = {flat}")
        for k in reversed(range(1, len(dims))):
            self.line(f"{index[k]} = {rest} % {dims[k]}")
            self.line(f"{rest} = {rest} // {dims[k]}")
        self.line(f"{index[0]} = {rest}")

    def unnest(self, rank: int, merged: int, after=None) -> None:
        """Close the loops `nest` opened; `after[k]` are lines to run after loop k."""
        for k in reversed(range(rank)):
            assert not (0 < k < merged and after and after[k]), "code generation: flat nest"
            if k >= merged or k == 0:
                self.close()
            for text in (after[k] if after else ()):
                self.line(text)


#: A nest runs its outer loop on several threads from this much work (entries × cost per
#: entry, counting a line of the body as 1 and a call of a kernel, such as K.exp, as
#: CALL_COST): about half a millisecond on one core, against the tens of microseconds that
#: waking sleeping threads may take.
PARALLEL_WORK = 1 << 20
CALL_COST = 8


#: Calls of vmath's exp, log and tanh: a function making them asks for 512-bit vectors
#: (vmath.wide_vectors), which run them about 1.5× faster where the CPU has AVX-512 (an exp
#: 0.14 → 0.094 ms over 123k entries). Other nests keep LLVM's 256-bit choice: at 8 lanes
#: unrolled 4 times, a loop needs 32 entries before its vector body runs at all (a 16-tap
#: sliding dot ran 40% slower, a layer norm's rows 20%).
_VECTOR_MATHS = re.compile(r"K\.(exp|log|tanh)\(")


#: A program with loops none of whose values holds more entries than this is written for its
#: exact sizes (generate).
TINY = 256


def generate(region: Region, table: ShapeTable, optimize: str, exact: bool = False) -> Generated:
    """The function computing `region`: compiled code, or plain NumPy calls when that is all
    it needs (a lone contraction, say), which runs fastest uncompiled. `exact`: the code runs
    only on the table's own shapes, so a tiny program with loops (no array over TINY entries)
    may be written with its sizes as constants; LLVM then unrolls and vectorises its loops
    (the seed's 4×2 fit runs several times faster). A program without loops gains little
    (one pass, its time in the call) and keeps code that serves every size. Code shared by
    other shapes (dask's blocks) must not ask for it."""
    exact = exact and bool(table.states) and is_tiny(table)
    first = Emitter(table, optimize, host=False, exact=exact).function(region)
    if first.compiled:
        return first
    return Emitter(table, optimize, host=True).function(region)


def is_tiny(table: ShapeTable) -> bool:
    """Whether no value of the program, in any scope, holds more than TINY entries."""
    return all(math.prod(shape) <= TINY for shapes in table.scopes.values()
               for shape in shapes.values())


def _sliced(order: list[ir.Node], read_later: set, shapes) -> dict[ir.Node, int]:
    """The arrays of `order` whose every reader takes one constant slice along the same axis,
    the last (and which nothing after this block reads): that axis, each. A slice along a
    middle axis is already contiguous along the last, which nests run innermost."""
    readers: dict[ir.Node, set[ir.Node]] = {}
    for node in order:
        for kid in ir.children(node):
            readers.setdefault(kid, set()).add(node)
    found = {}
    for node in order:
        axes = {fusion.slice_axis(r, node) for r in readers.get(node, ())}
        last = len(shapes[node]) - 1
        if node not in read_later and last > 0 and axes == {last}:
            found[node] = last
    return found


def _placed(index: list[str], layout: tuple[int, ...] | None) -> list[str]:
    """An element's index in a buffer whose axes are in `layout` order (None: its own)."""
    return index if layout is None else [index[k] for k in layout]


def _released(lines: list[str]) -> list[str]:
    """Uncompiled code with each array it makes let go after its last reader (`del`), as
    compiled code and the host tier do: NumPy then reuses that memory for the next product
    instead of touching fresh pages (AO→MO at N = 40: four 20 MB intermediates per call,
    21 → 16 ms). Code with a block is left as it is (a value's last reader may run again)."""
    top = "    "
    if any(not line.startswith(top) or line.startswith(top + " ") for line in lines):
        return lines
    last: dict[str, int] = {}
    for number, line in enumerate(lines):
        for name in rows.NAME.findall(line):
            last[name] = number
    dropped: dict[int, list[str]] = {}
    for line in lines:
        made = re.match(r"^ *([vb]\d+) = ", line)
        if made and not lines[last[made[1]]].lstrip().startswith("return"):
            dropped.setdefault(last[made[1]], []).append(made[1])
    out = []
    for number, line in enumerate(lines):
        out.append(line)
        if number in dropped:
            out.append(f"{top}del {', '.join(dropped[number])}")
    return out


def _without_unused_sizes(lines: list[str]) -> list[str]:
    """Drop the `nK = aJ.shape[i]` lines of sizes nothing reads (uncompiled code pays for them)."""
    text = "\n".join(lines)
    kept = []
    for line in lines:
        name, _, rest = line.strip().partition(" = ")
        if rest.endswith("]") and ".shape[" in rest and len(re.findall(rf"\b{name}\b", text)) == 1:
            continue
        kept.append(line)
    return kept


class Emitter:
    """Writes one function. `host`: emit NumPy calls for contractions (no compiled kernels)."""

    def __init__(self, table: ShapeTable, optimize: str, host: bool, exact: bool = False):
        self.table = table
        self.optimize = optimize
        self.host = host
        self.exact = exact  # sizes written as constants (generate: a tiny program)
        self.out = Writer()
        self.count = 0
        self.needs_compile = False
        self.loops: list[ir.Loop] = []
        self.reads: list[ir.Prim] = []
        self.kernels = 0
        self.products = 0
        self.copies = 0
        self.looped = 0
        self.numbers: dict[str, int] = {}  # the letter sizes of the einsum being emitted
        self.frame = Frame({})
        self.identity: list[str] = []
        self.pending: list[str] = []  # statements an expression needs first (shift positions)
        # a compiled nest's divisions, while emit_group writes its lines (executor/division.py)
        self.divisions: list[Division] | None = None
        self.block = Block()

    # ---------------------------------------------------------------- the function

    def function(self, region: Region) -> Generated:
        args = [f"a{k}" for k in range(len(region.inputs))]
        self.frame = Frame(self.table.scopes[region.scope], region.scope)
        self.out.line("steps = 0")
        for name, node in zip(args, region.inputs, strict=True):
            self.bind(node, name)
            rank = len(self.frame.shapes[node])
            dims = tuple(self.fresh("n") for _ in range(rank))
            for axis, dim in enumerate(dims):
                size = self.frame.shapes[node][axis] if self.exact else f"{name}.shape[{axis}]"
                self.out.line(f"{dim} = {size}")
            self.frame.dims[node] = dims
        self.ensure([region.root])
        self.out.line(f"return {self.value(region.root)}, steps")
        lines = self.out.lines if self.host else rows.fuse_rows(self.out.lines)
        if self.products or self.loops:
            # OpenMP's threads spin a while after a parallel nest, and a BLAS product started
            # meanwhile loses a core to them: an MLP fit, whose steps alternate products and
            # nests, ran ten times slower so (with torch imported, whose OpenMP settings then
            # hold). A function with products or loops keeps its nests serial.
            lines = [line.replace(" in prange(", " in range(") for line in lines]
        body = _without_unused_sizes(lines)
        if self.needs_compile:
            if any(_VECTOR_MATHS.search(line) for line in body):
                body = ["    K.wide_vectors()", *body]
        else:
            body = _released(body)
        # (uncompiled code computes on NumPy scalars, which warn on x/0: its callers run it
        # under numerics.quietly, as they run every other NumPy call on the host)
        if self.loops:  # loops leave when stop[0] is set (executor/interrupt.py: Ctrl-C)
            args.append("stop")
        source = "\n".join([f"def run({', '.join(args)}):", *body]) + "\n"
        return Generated(source, self.needs_compile, self.loops, self.reads, self.kernels,
                         self.products, self.copies, self.looped)

    # ---------------------------------------------------------------- names and shapes

    def fresh(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def bind(self, node: ir.Node, name: str) -> None:
        owned = self.frame.owned
        if name in owned.values() and owned.get(node) != name:
            for other in [n for n, b in owned.items() if b == name]:
                del owned[other]  # an alias (an identity einsum): no longer safe to write over
        self.frame.blocks[-1][node] = name

    def lookup(self, node: ir.Node) -> str | None:
        for block in reversed(self.frame.blocks):
            if node in block:
                return block[node]
        return None

    def value(self, node: ir.Node) -> str:
        """The expression holding `node`'s (already computed) value."""
        if isinstance(node, ir.Const):
            return number(node.value)
        name = self.lookup(node)
        assert name is not None, f"code generation: {node!r} used before it is computed"
        return name

    def shape(self, node: ir.Node):
        return self.frame.shapes[node]

    def dims_of(self, node: ir.Node) -> tuple[str, ...]:
        """Each axis size of `node` as an expression over the inputs' sizes."""
        dims = self.frame.dims
        stack = [(node, False)]
        while stack:  # inputs already have their sizes: do not walk below them
            n, ready = stack.pop()
            if n in dims:
                continue
            if ready:
                dims[n] = self._dims_rule(n)
                continue
            stack.append((n, True))
            stack.extend((k, False) for k in ir.children(n) if k not in dims)
        return dims[node]

    def _dims_rule(self, node: ir.Node) -> tuple[str, ...]:
        dims = self.frame.dims
        match node:
            case ir.Const() | ir.Loop():
                return ()
            case ir.Cond():
                return dims[node.then]
            case ir.Project():
                return dims[node.loop.init[node.index]]
            case ir.Tuple():
                return ()
            case ir.Prim(op="index", args=(x, _)):
                return dims[x][1:]
            # (a class count and a slice's bounds are known from shapes alone: their numbers,
            # not the values computed from them, which a buffer made before a loop would read
            # before the loop computes them)
            case ir.Prim(op="oneHot", args=(labels, _)):
                return dims[labels] + (str(self.frame.shapes[node][-1]),)
            case ir.Prim(op="slice", args=(x, _, _)):
                return (str(self.frame.shapes[node][0]),) + dims[x][1:]
            case ir.Einsum(spec=spec):
                parsed = parse_spec(spec)
                sizes = {ch: d for term, a in zip(parsed.inputs, node.args, strict=True)
                         for ch, d in zip(term, dims[a], strict=True)}
                return tuple(sizes[ch] for ch in parsed.output)
            case ir.Prim(op=op, args=args, attrs=attrs):
                kind = BY_OP[op].kind
                if kind == "reduce":
                    return dims[args[0]][:attrs[0]] + dims[args[0]][attrs[0] + 1:]
                if kind == "positions":
                    return (dims[args[0]][attrs[0]],)
                if kind == "shift":
                    x = dims[args[0]]
                    return x[:attrs[0]] + x[attrs[0] + 1:] + tuple(dims[w][0] for w in args[1:])
                if kind == "take":
                    x = dims[args[0]]
                    return x[:attrs[0]] + x[attrs[0] + 1:]
                if kind == "size":
                    return ()
                return next((dims[a] for a in args if dims[a]), ())
        raise AssertionError(f"code generation: no shape rule for {node!r}")

    def alloc(self, node: ir.Node | None, dims: tuple[str, ...]) -> str:
        """A new C-ordered buffer for `node` (made once before the enclosing loop, if any), or
        the state buffer a loop step should land in."""
        if node is not None and node in self.frame.destinations:
            return self.frame.destinations.pop(node)
        name = self.fresh("b")
        text = f"{name} = K.empty(({''.join(d + ', ' for d in dims)}))"
        if self.frame.hoist is not None:
            self.frame.hoist.append(text)
        else:
            self.out.line(text)
        if node is not None:
            self.frame.owned[node] = name
        return name

    def reuse(self, node: ir.Node, dims: tuple[str, ...], inputs: list[ir.Node]) -> str:
        """A buffer for `node`, a kernel output: the buffer of one of `inputs` (which the kernel
        reads only at its own index, before it writes) if nothing reads that input later, else
        a new one."""
        if node not in self.frame.destinations:
            block = self.block
            for x in inputs:
                if (x in self.frame.owned and x in block.nodes and self.dims_of(x) == dims
                        and block.last_read.get(x, -1) == block.position):
                    name = self.frame.owned.pop(x)
                    self.frame.owned[node] = name
                    return name
        return self.alloc(node, dims)

    # ---------------------------------------------------------------- blocks

    def ensure(self, roots: list[ir.Node], final: bool = True) -> None:
        """Emit, in the current block, the code that computes every node of `roots`. Not
        `final`: more code of this block will follow and may read what this computes (so no
        buffer of it may be written over)."""
        order = self._needed(roots)
        if not order:
            return
        branch_reads = self._read_by_branches(order)
        read_later = list(roots) + [n for nodes in branch_reads.values() for n in nodes]
        plan = fusion.schedule(order, self.frame.shapes, read_later, branch_reads)
        last = {n: i for i, reads in enumerate(plan.reads) for n in reads} if final else {}
        last.update((n, len(plan.units)) for n in read_later)
        saved = self.block
        self.frame.recomputed |= plan.recomputed
        if final:
            self.frame.gathered.update(_sliced(order, set(read_later), self.frame.shapes))
        inside = set(order)  # once: a set per unit made long chains quadratic
        for position, unit in enumerate(plan.units):
            self.block = Block(inside, last, position)
            self.emit(unit)
        self.block = saved

    def _needed(self, roots: list[ir.Node]) -> list[ir.Node]:
        """Nodes not yet computed that `roots` need unconditionally, inputs first."""
        order: list[ir.Node] = []
        seen: set[ir.Node] = set()
        stack = [(r, False) for r in reversed(roots)]
        while stack:
            node, done = stack.pop()
            if done:
                order.append(node)
                continue
            if node in seen or isinstance(node, ir.Const) or self.lookup(node) is not None:
                continue
            seen.add(node)
            stack.append((node, True))
            stack.extend((k, False) for k in reversed(fusion.value_kids(node)))
        return order

    def _read_by_branches(self, order: list[ir.Node]) -> dict[ir.Node, list[ir.Node]]:
        """For each `if` of this block, the nodes of the block its branches read (they must be
        stored, and computed before the `if`)."""
        inside = set(order)
        reads: dict[ir.Node, list[ir.Node]] = {}
        for cond in (n for n in order if isinstance(n, ir.Cond)):
            found: list[ir.Node] = []
            seen: set[ir.Node] = set()
            stack = [cond.then, cond.orelse]
            while stack:
                node = stack.pop()
                if node in seen:
                    continue
                seen.add(node)
                if node in inside:
                    found.append(node)
                elif self.lookup(node) is None:
                    stack.extend(ir.children(node))
            reads[cond] = found
        return reads

    def emit(self, unit: fusion.Unit) -> None:
        if unit.group is not None:
            self.emit_group(unit.group)
            return
        node = unit.node
        assert node is not None
        match fusion.role(node, self.frame.shapes):
            case "scalar":
                self.emit_scalar(node)
            case "size":
                prim = BY_OP[node.op]
                self.bind(node, f"np.float64({self.dims_of(node.args[0])[prim.axis]})")
            case "generator":
                self.emit_group(fusion.Group(node, [node], [], {node}))
            case "contraction":
                products.emit_einsum(self, node)
            case "cond":
                self.emit_cond(node)
            case "loop":
                self.emit_loop(node)
            case "project":
                self.bind(node, self.frame.states[node.loop][node.index])
            case "view":
                self.emit_view(node)
            case "onehot":
                self.emit_one_hot(node)
            case "tuple":
                self.bind(node, f"({''.join(self.value(i) + ', ' for i in node.items)})")
            case other:
                raise AssertionError(f"code generation: cannot emit a {other} alone")

    def emit_view(self, node: ir.Prim) -> None:
        """x[t] (checked: a whole number in range, before the read) or x[a:b], as a view of
        x; nothing may then write over x's buffer, which the view shares."""
        x = node.args[0]
        self.frame.owned.pop(x, None)
        name = self.fresh("v")
        if node.op == "index":
            t = self.value(node.args[1])
            size = self.dims_of(x)[0]
            number = len(self.reads)
            self.reads.append(node)
            with self.out.block(f"if not ({t} >= 0.0 and {t} < {size} and np.floor({t}) == {t}):"):
                self.out.line(f"raise K.PositionError({number}, {t}, {size})")
            self.out.line(f"{name} = {self.value(x)}[int({t})]")
        else:
            start, stop = (self.value(a) for a in node.args[1:])
            self.out.line(f"{name} = {self.value(x)}[int({start}):int({stop})]")
        self.bind(node, name)

    def emit_one_hot(self, node: ir.Prim) -> None:
        """oneHot(labels, k): every label checked to be a whole number 0 … k − 1 (or the
        reference executor's E511 is raised), then a row of zeros with one 1 per label."""
        labels, classes = node.args
        number = len(self.reads)
        self.reads.append(node)
        k = self.fresh("k")
        self.out.line(f"{k} = int({self.value(classes)})")
        dims = self.dims_of(node)
        out = self.alloc(node, dims)
        count = " * ".join(dims[:-1]) or "1"
        flat_labels = self.fresh("l")
        self.out.line(f"{flat_labels} = {self._flat(labels)}")
        flat_out = f"{out}.reshape(({count}, {k}))"
        i, v = self.fresh("i"), self.fresh("v")
        with self.out.block(f"for {i} in range({count}):"):
            self.out.line(f"{v} = {flat_labels}[{i}]")
            with self.out.block(f"if not ({v} >= 0.0 and {v} < {k} and np.floor({v}) == {v}):"):
                self.out.line(f"raise K.LabelError({number}, {v}, {k})")
            self.out.line(f"{flat_out}[{i}, :] = 0.0")
            self.out.line(f"{flat_out}[{i}, int({v})] = 1.0")
        self.bind(node, out)

    def _flat(self, node: ir.Node) -> str:
        """`node`'s value as a vector of its entries (a scalar as a vector of one)."""
        if not self.shape(node):
            return f"np.full(1, {self.value(node)})"
        size = " * ".join(self.dims_of(node))
        return f"{self.value(node)}.reshape(({size},))"

    # ---------------------------------------------------------------- entrywise code

    def emit_scalar(self, node: ir.Prim) -> None:
        if all(isinstance(a, ir.Const) for a in node.args):  # fold: no Python-float x/0
            with np.errstate(all="ignore"):
                folded = BY_OP[node.op].numpy(*(np.float64(a.value) for a in node.args))
            self.bind(node, number(folded))
            return
        name = self.fresh("v")
        self.pending = []
        text = self.expr(node, [], {})
        for line in self.pending:  # the position a scalar take or shift reads
            self.out.line(line)
        self.out.line(f"{name} = {text}")
        self.bind(node, name)

    def expr(self, node: ir.Node, index: list[str], temps: dict) -> str:
        """An expression for `node`'s value at `index` (its own axes), reading inputs there."""
        match node:
            case ir.Prim(op="positions"):
                return f"np.float64({index[0]})"
            case ir.Prim(op="shift"):
                return self._shifted(node, index, temps)
            case ir.Prim(op="take"):
                return self._taken(node, index, temps)
            case ir.Prim() if fusion.is_ones(node):
                return "1.0"
            case ir.Prim(op="pow", args=(base, ir.Const(value=2.0))):
                x = self.at(base, index, temps)
                return f"({x} * {x})"
            case ir.Prim(op="div", args=(a, b)) if self.divisions is not None:
                numerator, divisor = self.at(a, index, temps), self.at(b, index, temps)
                split = Division(*(self.fresh(p) for p in ("quo", "num", "den", "rec")))
                self.pending += [f"{split.numerator} = {numerator}",
                                 f"{split.divisor} = {divisor}", split.fast]
                self.divisions.append(split)
                return split.quotient
            case ir.Prim(op=op, args=args) if BY_OP[op].code is not None:
                row = BY_OP[op]
                template = (row.host_code or row.code) if self.host else row.code
                return template.format(*(self.at(a, index, temps) for a in args))
            case ir.Einsum(spec=spec, args=args):
                parsed = parse_spec(spec)
                where = {ch: i for ch, i in zip(parsed.output, index, strict=True)}
                factors = [self.at(a, [where[ch] for ch in term], temps)
                           for a, term in zip(args, parsed.inputs, strict=True)]
                return factors[0] if len(factors) == 1 else f"({' * '.join(factors)})"
        raise AssertionError(f"code generation: no entrywise form for {node!r}")

    def at(self, node: ir.Node, index: list[str], temps: dict) -> str:
        """`node` read at `index`: a scalar, a local of this loop nest, an inlined generator, or
        an element of a stored array."""
        if isinstance(node, ir.Const):
            return number(node.value)
        if not self.shape(node):
            return self.value(node)
        if node in temps and index == self.identity:
            return temps[node]
        if fusion.is_generator(node, self.frame.shapes):
            return self.expr(node, index, temps)
        if node in self.frame.recomputed and self.lookup(node) is None:
            if index != self.identity:
                return self.expr(node, index, temps)
            temps[node] = self.fresh("t")  # computed once per index, before its first reader
            self.pending.append(f"{temps[node]} = {self.expr(node, index, temps)}")
            return temps[node]
        return f"{self.value(node)}[{', '.join(_placed(index, self.frame.layouts.get(node)))}]"

    def _shifted(self, node: ir.Prim, index: list[str], temps: dict) -> str:
        """shift: x read along `axis` at const + Σ coefs·(new indices), zero outside x."""
        axis, coefs, const = node.attrs
        x = node.args[0]
        rank = len(self.shape(x)) - 1
        outer, new = index[:rank], index[rank:]
        name = self.fresh("p")
        size = self.dims_of(x)[axis]
        if all(float(v).is_integer() and abs(v) < _WHOLE for v in (const, *coefs)):
            # whole steps (a window, a convolution): integer positions, which LLVM sees
            # advance by one with the loop, so it reads x in vector loads, not gathers
            terms = [str(int(const))] + [f"{int(c)} * {i}" for c, i in zip(coefs, new, strict=True)]
            self.pending.append(f"{name} = {' + '.join(terms)}")
            inner = outer[:axis] + [name] + outer[axis:]
            return f"({self.at(x, inner, temps)} if 0 <= {name} < {size} else 0.0)"
        position = " + ".join([number(const)] + [f"{number(c)} * {i}"
                                                 for c, i in zip(coefs, new, strict=True)])
        self.pending.append(f"{name} = {position}")
        inner = outer[:axis] + [f"int({name})"] + outer[axis:]
        return f"({self.at(x, inner, temps)} if 0.0 <= {name} < {size} else 0.0)"

    def _taken(self, node: ir.Prim, index: list[str], temps: dict) -> str:
        """take: x read along `axis` at the s with coef·s + const = t, zero when there is none
        (s not whole, out of range, NaN): the mask's own test, on scalars only, so LLVM makes
        it once, outside the loop nest."""
        x, at = node.args
        axis, coef, const = node.attrs
        t, p, ok = self.fresh("t"), self.fresh("p"), self.fresh("ok")
        size = self.dims_of(x)[axis]
        self.pending.append(f"{t} = {self.value(at)}")
        self.pending.append(f"{p} = ({t} - {number(const)}) * {number(coef)}")
        self.pending.append(f"{ok} = 0.0 <= {p} < {size} and np.floor({p}) == {p} "
                            f"and {number(coef)} * {p} + {number(const)} == {t}")
        inner = index[:axis] + [f"int({p})"] + index[axis:]
        return f"({self.at(x, inner, temps)} if {ok} else 0.0)"

    def emit_group(self, group: fusion.Group) -> None:
        """One loop nest: every member computed once per index, stored if read outside,
        tails accumulated in the same pass."""
        if not group.stored and not group.tails:
            return  # every reader recomputes its members (fusion: an LSTM's a + u + b)
        self.needs_compile = True
        self.kernels += 1
        dims = self.dims_of(group.space)
        rank = len(dims)
        index = [f"i{k}" for k in range(rank)]
        self.identity = index
        before: list[list[str]] = [[] for _ in range(rank + 1)]
        after: list[list[str]] = [[] for _ in range(rank + 1)]
        body: list[str] = []
        temps: dict = {}
        overwritable = self._read_in_place(group)
        stores = {}
        for member in group.members:
            if member in group.stored:
                stores[member] = self._store(member, dims, overwritable)
                overwritable.pop(member, None)
        divisions: list[Division] = []
        self.divisions = None if self.host else divisions
        for member in group.members:
            self.pending = []
            text = self.expr(member, index, temps)
            body += self.pending
            temps[member] = self.fresh("t")
            body.append(f"{temps[member]} = {text}")
        for tail in group.tails:
            self.pending = []
            self._accumulate(tail, index, temps, before, after, body)
        self.divisions = None
        # stores last: an output may be the buffer of an input, read above at the same index
        written = [f"{stores[m]}[{', '.join(_placed(index, self.frame.layouts.get(m)))}] = "
                   f"{temps[m]}" for m in stores]
        parallel = self._parallel(group, before, after, division.exact(body, divisions))
        nest = division.Nest(index, dims, before, after, body, written)
        body = division.rewrite(nest, divisions, self.fresh("bad"),
                                [self.fresh(rows.SCRATCH) for _ in written],
                                allowed=not parallel and not self.out.merged(rank)
                                and self.out.room() > rank)
        merged = self.out.nest(dims, index, before, parallel)
        for text in body:
            self.out.line(text)
        self.out.unnest(rank, merged, after)
        for member, name in stores.items():
            self.bind(member, name)

    def _store(self, member: ir.Node, dims: tuple[str, ...], overwritable: dict) -> str:
        """The buffer a group stores `member` in. One whose every reader takes slices along its
        last axis (gates read as `gate(z, k)`, z B×D×G) is laid out with that axis first, so
        each slice is contiguous and the nests reading it vectorise (_sliced)."""
        axis = self.frame.gathered.get(member)
        if axis is None or member in self.frame.destinations:
            return self.reuse(member, dims, [x for x in overwritable if x not in self.frame.layouts])
        order = (axis, *(k for k in range(len(dims)) if k != axis))
        self.frame.layouts[member] = order
        return self.alloc(member, tuple(dims[k] for k in order))

    def _read_in_place(self, group: fusion.Group) -> dict[ir.Node, None]:
        """Stored values the group reads only at its own index (recomputed members seen
        through), in the order first read: a member may be written over one of them once
        nothing else needs it. (Ordered, not a set: which buffer is taken over must not follow
        the process's hashing, or the generated code would differ from process to process.)"""
        same: dict[ir.Node, None] = {}
        other: set[ir.Node] = set()
        pending = list(group.members + group.tails)
        seen: set[ir.Node] = set()
        while pending:
            node = pending.pop()
            if node in seen:
                continue
            seen.add(node)
            for kid, identity in fusion.reads(node, self.frame.shapes):
                if kid in self.frame.recomputed and kid not in group.members:
                    pending.append(kid) if identity else other.update(
                        fusion.stored_kids(kid, self.frame.recomputed))
                elif kid not in group.members:
                    if identity:
                        same[kid] = None
                    else:
                        other.add(kid)
        return {n: None for n in same if n not in other}

    def _accumulate(self, tail: ir.Node, index: list[str], temps: dict, before: list[list[str]],
                    after: list[list[str]], body: list[str]) -> None:
        """A reduction folded into the nest: in a local when it keeps the leading axes (row
        sums, row maxima), else into its output array. A local sum adds in any order
        (K.add_any_order): LLVM then vectorises its loop with a partial sum per vector lane,
        combined after the loop, where adding in order would wait 4 cycles for each addition
        and keep the loop scalar (a 4096×512 layer norm: 2.3 → 1.5 ms; a softmax's exp pass
        over 2048² scores: 2 ms of 20). A local maximum is exact in any order: K.fmax is
        LLVM's maximum, which LLVM vectorises as it is."""
        x = self.at(tail.args[0], index, temps)
        body += self.pending
        if isinstance(tail, ir.Prim):
            combine, start = REDUCE[tail.op]
            kept = [k for k in range(len(index)) if k != tail.attrs[0]]
        else:
            combine, start = "+", "0.0"
            parsed = parse_spec(tail.spec)
            kept = [parsed.inputs[0].index(ch) for ch in parsed.output]

        depth = len(kept)
        # a local per leading index, unless the nest runs those axes as one flat loop
        if kept == list(range(depth)) and not 0 < depth < self.out.merged(len(index)):
            acc = self.fresh("acc")
            before[depth].append(f"{acc} = {start}")
            reduce = "K.add_any_order" if combine == "+" else combine
            body.append(f"{acc} = {reduce}({acc}, {x})")
            if depth == 0:
                self.bind(tail, acc)
                return
            out = self.alloc(tail, tuple(self.dims_of(tail.args[0])[k] for k in kept))
            after[depth].append(f"{out}[{', '.join(index[:depth])}] = {acc}")
        else:
            out = self.alloc(tail, tuple(self.dims_of(tail.args[0])[k] for k in kept))
            before[0].append(f"{out}.fill({start})")
            target = f"{out}[{', '.join(index[k] for k in kept)}]"
            body.append(f"{target} += {x}" if combine == "+" else
                        f"{target} = {combine}({target}, {x})")
        self.bind(tail, out)

    def _parallel(self, group: fusion.Group, before, after, body: list[str]) -> bool:
        """Whether the group's nest runs its outer loop on several threads: when there are
        threads (executor/threads.py), its iterations are independent (no sum or maximum
        carried across them: nothing set before the outer loop or read after it), and its
        work, entries times a rough cost per entry, pays for starting them."""
        if self.host or threads.count() < 2 or before[0] or after[0]:
            return False
        shape = self.frame.shapes.get(group.space, ())
        if len(shape) < 1 or shape[0] < 2 or self.out.merged(len(shape)):
            return False
        cost = sum(1 + CALL_COST * (text.count("K.") - text.count("K.add_any_order"))
                   for text in body)
        return math.prod(shape) * cost >= PARALLEL_WORK

    # ---------------------------------------------------------------- control

    def emit_cond(self, node: ir.Cond) -> None:
        """if/else on a scalar: each branch computes only what it alone needs."""
        name = self.fresh("v")
        with self.out.block(f"if {self.value(node.cond)} != 0.0:"):
            self._branch(node.then, name)
        with self.out.block("else:"):
            self._branch(node.orelse, name)
        self.bind(node, name)

    def _branch(self, root: ir.Node, name: str) -> None:
        self.frame.blocks.append({})
        self.ensure([root])
        self.out.line(f"{name} = {self.value(root)}")
        self.frame.blocks.pop()

    def emit_loop(self, loop: ir.Loop) -> None:
        """The whole loop, inline: state in locals, array state double-buffered (each step
        writes the buffer the state does not hold), body buffers made once before it."""
        self.needs_compile = True
        number_ = len(self.loops)
        self.loops.append(loop)
        outer = self.frame
        state = [f"s{number_}_{i}" for i in range(len(loop.init))]
        state_dims = [self.dims_of(a) for a in loop.init]
        for name, init in zip(state, loop.init, strict=True):
            self.out.line(f"{name} = {self.value(init)}")
            outer.owned.pop(init, None)  # the state may hold this buffer after the loop
        outer.states[loop] = state
        moving = [i for i, s in enumerate(loop.step)
                  if s != ir.State(i, None) and i != loop.counter]
        arrays = [i for i in moving if state_dims[i]]
        left, turns = f"left{number_}", f"turns{number_}"
        if loop.counter is not None:
            c = state[loop.counter]
            bound = number(LARGEST_COUNT)
            with self.out.block(f"if not ({c} >= 0.0 and {c} <= {bound} and np.floor({c}) == {c}):"):
                self.out.line(f"raise K.StepCountError({number_}, {c})")
            self.out.line(f"{left} = int({c})")
        mark, depth = len(self.out.lines), self.out.depth
        hoist: list[str] = []
        for i in arrays:
            shape = "".join(d + ", " for d in state_dims[i])
            hoist += [f"A{number_}_{i} = K.empty(({shape}))", f"B{number_}_{i} = K.empty(({shape}))"]
        self.out.line(f"{turns} = 0")
        body = outer.scope + (loop,)
        self.frame = Frame(self.table.scopes[body], body, hoist=hoist,
                           fixed={ir.State(i, None) for i in range(len(state))
                                  if i not in moving and i != loop.counter})
        for i, name in enumerate(state):
            self.bind(ir.State(i, None), name)
            self.frame.dims[ir.State(i, None)] = state_dims[i]
        with self.out.block("while True:"):
            self._loop_body(loop, number_, state, moving, arrays)
        self.frame = outer
        self.out.lines[mark:mark] = ["    " * depth + text for text in hoist]
        if loop.counter is not None:
            self.out.line(f"{state[loop.counter]} = np.float64(0.0)")
        self.out.line(f"steps += {turns}")
        self.bind(loop, f"({', '.join(state)},)")  # the loop's value: its final state

    def _loop_body(self, loop: ir.Loop, number_: int, state: list[str], moving: list[int],
                   arrays: list[int]) -> None:
        left, turns = f"left{number_}", f"turns{number_}"
        with self.out.block("if K.stop_requested(stop):"):  # Ctrl-C: the result is discarded
            self.out.line("break")
        if loop.counter is not None:
            with self.out.block(f"if {left} == 0:"):
                self.out.line("break")
            self.out.line(f"{state[loop.counter]} = np.float64({left})")
        else:
            self.ensure([loop.until], final=False)  # the steps below may read what it computes
            with self.out.block(f"if {self.value(loop.until)} != 0.0:"):
                self.out.line("break")
        for i in arrays:
            target = f"G{number_}_{i}"
            self.out.line(f"{target} = A{number_}_{i} if {turns} % 2 == 0 else B{number_}_{i}")
            step = loop.step[i]
            if (step not in self.frame.destinations and self.lookup(step) is None
                    and fusion.role(step, self.frame.shapes) in ("member", "tail", "contraction",
                                                                  "generator")):
                self.frame.destinations[step] = target
        self.ensure([loop.step[i] for i in moving])
        self.frame.destinations.clear()
        new = {}
        for i in moving:
            value = self.value(loop.step[i])
            if i in arrays:
                new[i] = f"G{number_}_{i}"
                if value != new[i]:
                    self.out.line(f"K.copy_into({new[i]}, {value})")
            else:
                new[i] = self.fresh("n")
                self.out.line(f"{new[i]} = {value}")
        for i in moving:
            self.out.line(f"{state[i]} = {new[i]}")
        self.out.line(f"{turns} += 1")
        if loop.counter is not None:
            self.out.line(f"{left} -= 1")
