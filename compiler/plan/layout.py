"""How one pairwise product runs: which operands are copied into another axis order, which
letters are looped over (products on views), and the result's order; chosen by a cost model
(products.py emits what it chooses)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations

#: Below this many multiply-adds a product runs as plain loops (kernels.SMALL_PRODUCT).
SMALL_PRODUCT = 4096
#: Up to this many multiply-adds a product runs as register tiles (tiles.TILED_PRODUCT).
TILED_PRODUCT = 2 ** 18

# The cost model `layout` compares layouts with, in nanoseconds on a CI-class core. Only the
# ratios matter: a copy moves each element once, slowly (transposing reads across lines);
# each product has a set-up cost; BLAS runs near peak only when no side of a product is thin.
# Measured on the 2-core AMD EPYC (CPU time, one BLAS thread): a small product's kernel call
# about 50 ns; the register tiles (4 rows at a time) on a product of one row or column about
# 1 ns per entry they touch, three times BLAS's GEMV (a loop of 300 such: 6.4 ms, against
# 2.0 ms for the loop nest); np.matmul over a stack of matrices about 30 ns per matrix.
COPY_NS = 1.0  # per element copied into another axis order
COPY_CALL_NS = {"compiled": 100.0, "host": 1500.0}  # per copy (a NumPy call, on the host)
CALL_NS = {"compiled": 400.0, "small": 50.0, "host": 300.0}  # per product (BLAS or loops)
STACKED_NS = 30.0  # per matrix of one np.matmul over stacked views (host code)
FLOP_NS = 0.05  # per floating-point operation at BLAS speed (20 GFLOP/s)
TOUCH_NS = 0.3  # per element a product reads or writes (memory-bound products: GEMV, k = 1)
THIN_TILE_NS = 1.0  # per element the register tiles touch in a product of one row or column
SCALAR_FLOP_NS = 0.5  # per floating-point operation of a small product's plain loops
#: Past this many letters that could be looped over, only loops over one letter are tried.
SEARCH_PAIRS = 12


#: From this many multiply-adds a product of a `split` function is shared out among hilbert's
#: threads (products.py, `_shared_out`). Below it, blocks run by threads of hilbert's lose to
#: OpenBLAS's own threads (single-threaded calls side by side contend inside OpenBLAS: a
#: 1024×64·64×256 float32 product took 1.5 ms so, 0.6 ms on OpenBLAS's two threads); from
#: about here they are even (2048×64·64×2048: 9.3 against 9.0 ms), and the nests after them
#: keep the cores.
SPLIT_PRODUCT = 1 << 26


@dataclass(frozen=True)
class Layout:
    """How one pairwise product runs: a product of matrix views per index of the `loops`
    letters (none: one product), each view of `a` having `rows` down and `summed` across and
    each of `b` `summed` down and `cols` across. `a` and `b` are the operands' letter orders in
    memory: their own terms, or the order a copy puts them in. `output` is the result's
    order; `rearranged`: the products land in a scratch buffer in `output` order and are then
    rearranged into the einsum's own order. Loop letters not in the output are summed: their
    products accumulate."""

    loops: tuple[str, ...]
    rows: tuple[str, ...]
    summed: tuple[str, ...]
    cols: tuple[str, ...]
    a: str
    b: str
    output: str
    rearranged: bool
    cost: float

    def copies(self, a: str, b: str) -> int:
        """How many operands (and scratch results) this layout copies."""
        return (self.a != a) + (self.b != b) + self.rearranged

    @property
    def swapped(self) -> bool:
        """Whether the result's matrices are computed transposed, as bᵀ·aᵀ: they are written
        row-major, so when the result's memory order puts the columns' letters first (or only
        they are left), the rows must be the fast side."""
        if not self.cols:
            return False
        if not self.rows:
            return True
        return [ch for ch in self.output if ch not in self.loops][-1] in self.rows

    @property
    def sides(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The letters down and across the matrices the products compute."""
        return (self.cols, self.rows) if self.swapped else (self.rows, self.cols)

    def shared(self, numbers: dict[str, int]) -> bool | None:
        """How a lone product (no loop letters) of a function whose products hilbert's threads
        share out runs (products.py): by blocks of its rows (True) or of its columns (False),
        or whole on one thread (None: smaller than SPLIT_PRODUCT, or a loop of products)."""
        if self.loops:
            return None
        first, second = self.sides
        m, k, n = (math.prod(numbers[ch] for ch in side) for side in (first, self.summed, second))
        return (m >= n) if m * k * n >= SPLIT_PRODUCT else None


def layout(a: str, b: str, output: str, sizes: dict[str, int], free: bool,
           host: bool = False) -> Layout:
    """The cheapest layout (by the cost model above) of the product of operands with letters
    `a` and `b` (C-ordered) into `output` (whose order is ours to choose when `free`). Letters
    in both operands and the output are looped over (batch letters); so may any other letter,
    when a loop of products on views costs less than copying an operand. `host`: the products
    are NumPy calls (a loop is one np.matmul over stacked views, and nothing summed is looped).

    >>> layout("abc", "b", "ac", {"a": 300, "b": 64, "c": 300}, free=False).loops
    ('a',)
    """
    batch = tuple(ch for ch in output if ch in a and ch in b)
    best = _cheapest(a, b, output, sizes, free, host, batch)
    if best is not None and best.copies(a, b) == 0:
        return best
    others = [ch for ch in a + b if ch not in batch and (not host or ch in output)]
    others = list(dict.fromkeys(others))
    width = 2 if len(others) <= SEARCH_PAIRS else 1
    tried = [extra for count in range(1, width + 1) for extra in combinations(others, count)]
    for extra in tried + _runs_of(others, (a, b, output), width):
        found = _cheapest(a, b, output, sizes, free, host, batch + extra)
        if found is not None and (best is None or found.cost < best.cost):
            best = found
    assert best is not None, f"no layout for {a},{b}->{output}"
    return best


def _runs_of(others: list[str], terms: tuple[str, ...], shortest: int) -> list[tuple[str, ...]]:
    """Every run of more than `shortest` letters adjacent in one of `terms`, each of them in
    `others`: a loop over a block of letters (a tensor's leading axes before a summed one, as
    in "n,hlmnopq->hlmopq") leaves matrices in place where no loop over one or two does."""
    found: list[tuple[str, ...]] = []
    for term in terms:
        for start in range(len(term)):
            for stop in range(start + shortest + 1, len(term) + 1):
                run = tuple(term[start:stop])
                if all(ch in others for ch in run) and run not in found:
                    found.append(run)
    return found


def _cheapest(a: str, b: str, output: str, sizes: dict[str, int], free: bool, host: bool,
              loops: tuple[str, ...]) -> Layout | None:
    """The cheapest layout looping over `loops`, over every choice of what to copy."""
    looped = set(loops)
    rows = tuple(ch for ch in a if ch not in b and ch not in looped)
    cols = tuple(ch for ch in b if ch not in a and ch not in looped)
    summed = tuple(ch for ch in a if ch in b and ch not in output and ch not in looped)
    kept = [ch for ch in output if ch in looped]
    loops = tuple(kept + [ch for ch in loops if ch not in output])  # sums innermost
    fits = _host_runs if host else _runs
    natives = (_runs(a, looped, rows, summed), _runs(b, looped, summed, cols),
               None if free else fits(output, looped, rows, cols))
    best: Layout | None = None
    for copied in ((False, False), (True, False), (False, True), (True, True)):
        for rearranged in (False,) if free else (False, True):
            found = _choose(a, b, output, sizes, loops, (rows, summed, cols), natives,
                            (*copied, rearranged), free, host)
            if found is not None and (best is None or found.cost < best.cost):
                best = found
    return best


def _choose(a: str, b: str, output: str, sizes: dict[str, int], loops: tuple[str, ...],
            groups: tuple, natives: tuple, copied: tuple[bool, bool, bool], free: bool,
            host: bool) -> Layout | None:
    """The layout that copies what `copied` says (a, b, the result), or None when something
    left in place cannot be read as a matrix, or two in-place readings disagree on the order
    of the letters they share (each side of a product is one merged axis)."""
    copy_a, copy_b, rearranged = copied
    in_place = not free and not rearranged
    if (not copy_a and natives[0] is None) or (not copy_b and natives[1] is None) or (
            in_place and natives[2] is None):
        return None
    at_a = None if copy_a else natives[0]
    at_b = None if copy_b else natives[1]
    at_out = natives[2] if in_place else None
    orders = []
    for choices, default in (((at_a and at_a[0], at_out and at_out[0]), groups[0]),
                             ((at_a and at_a[1], at_b and at_b[0]), groups[1]),
                             ((at_b and at_b[1], at_out and at_out[1]), groups[2])):
        present = {c for c in choices if c is not None}
        if len(present) > 1:
            return None
        orders.append(present.pop() if present else default)
    rows, summed, cols = orders
    new_a = a if not copy_a else "".join(ch for ch in loops if ch in a) + "".join(rows + summed)
    new_b = b if not copy_b else "".join(ch for ch in loops if ch in b) + "".join(summed + cols)
    kept = "".join(ch for ch in loops if ch in output)
    result = output if in_place else kept + "".join(rows + cols)
    calls = math.prod(sizes[ch] for ch in loops)
    m, k, n = (math.prod(sizes[ch] for ch in g) for g in (rows, summed, cols))
    moved = (copy_a * _elements(a, sizes) + copy_b * _elements(b, sizes)
             + rearranged * _elements(output, sizes))
    cost = (moved * COPY_NS + (copy_a + copy_b + rearranged) * COPY_CALL_NS["host" if host else "compiled"]
            + _products_ns(calls, m, n, k, host))
    return Layout(loops, rows, summed, cols, new_a, new_b, result, rearranged, cost)


def _elements(term: str, sizes: dict[str, int]) -> int:
    return math.prod(sizes[ch] for ch in term)


def _products_ns(calls: int, m: int, n: int, k: int, host: bool) -> float:
    """The model's time for `calls` m×k by k×n products: each a call of its own in compiled
    code; on the host one call (np.dot, or np.matmul over the stack when there are several)."""
    flops = 2.0 * m * n * k
    touched = m * k + k * n + m * n
    if host:
        each = max(flops * FLOP_NS, touched * TOUCH_NS)
        return CALL_NS["host"] + calls * (each + (STACKED_NS if calls > 1 else 0.0))
    if m * n * k <= SMALL_PRODUCT:
        each = CALL_NS["small"] + flops * SCALAR_FLOP_NS
    elif m * n * k <= TILED_PRODUCT and min(m, n) < 4:
        each = CALL_NS["compiled"] + touched * THIN_TILE_NS
    else:
        each = CALL_NS["compiled"] + max(flops * FLOP_NS, touched * TOUCH_NS)
    return calls * each


def _runs(term: str, looped: set[str], first: tuple[str, ...], second: tuple[str, ...]):
    """(first's letter order, second's) when `term`, C-ordered, reads as a matrix with the
    letters of `first` down and `second` across at each index of the `looped` letters, as a
    view BLAS accepts; else None. Each side's letters must be adjacent (to merge into one
    axis) and, when both sides have letters, one of them must hold the last, unit-stride axis
    (a side with no letters is a unit axis, whose stride does not matter)."""
    orders: list[tuple[str, ...]] = []
    for group in (first, second):
        if not group:
            orders.append(())
            continue
        where = sorted(term.index(ch) for ch in group)
        if where[-1] - where[0] != len(group) - 1:
            return None
        orders.append(tuple(term[where[0]:where[-1] + 1]))
    if first and second and term[-1] in looped:
        return None
    return tuple(orders)


def _host_runs(term: str, looped: set[str], first: tuple[str, ...], second: tuple[str, ...]):
    """As _runs, for the result of np.matmul over stacked views: the looped letters first
    (np.matmul puts its stack axes first), then either side."""
    head = len([ch for ch in term if ch in looped])
    if any(ch not in looped for ch in term[:head]):
        return None
    rest = term[head:]
    for one, two in ((first, second), (second, first)):
        if set(rest[:len(one)]) == set(one) and set(rest[len(one):]) == set(two):
            orders = (tuple(rest[:len(one)]), tuple(rest[len(one):]))
            return orders if one is first else orders[::-1]
    return None


# A step as one loop nest (compiled: nest_steps.py; on the host: one numpy.einsum), in
# nanoseconds per iteration: a nest whose innermost loop (its letters merged where they lie
# side by side in every array: `merged_groups`) is long, kept (not summed) and unit-stride in
# every array holding it runs in vector lanes at memory speed ("n,hlmnopq->hlmopq": 25 M
# iterations in 8.7 ms); any other runs scalar (an innermost sum adds into one place in a
# chain; a short or strided loop gains nothing from vectors); each run of the innermost loop
# costs a little more. numpy.einsum walks its operands alike, slower on short loops; a
# compiled nest costs about a product call once.
NEST_NS = {"vector": 0.3, "scalar": 1.2, "run": 2.0, "once": 400.0}
EINSUM_NS = {"vector": 0.4, "scalar": 4.0, "run": 0.0, "once": 1500.0}
#: An innermost loop shorter than this runs scalar.
VECTOR_RUN = 8


@dataclass(frozen=True)
class Nest:
    """A step as one loop nest: its letters in loop order (outermost first) and the model's
    time for it."""

    order: str
    cost: float


def nest(terms: list[str], output: str, sizes: dict[str, int], host: bool = False) -> Nest:
    """The cheapest loop order (by the model above) of a step reading `terms` into `output`:
    each term's letters innermost in its own order, the letters it lacks outside them (the
    largest arrays tried first, so a tie keeps the one read in its memory order).

    >>> nest(["n", "hnq"], "hq", {"h": 9, "n": 14, "q": 30}).order
    'hnq'
    """
    letters = list(dict.fromkeys(output + "".join(terms)))
    iterations = math.prod(sizes[ch] for ch in letters)
    rates = EINSUM_NS if host else NEST_NS
    best: Nest | None = None
    for anchor in sorted([output, *terms], key=lambda t: -_elements(t, sizes)):
        order = "".join(ch for ch in letters if ch not in anchor) + "".join(
            dict.fromkeys(anchor))  # (a diagonal's letter once)
        inner = merged_groups(order, [*terms, output])[-1] if order else ""
        length = math.prod(sizes[ch] for ch in inner)
        kept = bool(inner) and inner[0] in output and all(
            t.endswith(inner) for t in (output, *terms) if inner[0] in t)
        per = rates["vector" if kept and length >= VECTOR_RUN else "scalar"]
        cost = (iterations * per + iterations / max(length, 1) * rates["run"] + rates["once"])
        if best is None or cost < best.cost:
            best = Nest(order, cost)
    assert best is not None
    return best


def merged_groups(order: str, terms: list[str]) -> list[str]:
    """`order` cut into groups of letters that can be looped over as one: each next letter
    of a group follows the one before it directly in every term that holds either (and no
    term holds one without the other).

    >>> merged_groups("hlmnopq", ["n", "hlmnopq", "hlmopq"])
    ['hlm', 'n', 'opq']
    """
    groups: list[str] = []
    for ch in order:
        if groups and all(_follows(groups[-1][-1], ch, term) for term in terms):
            groups[-1] += ch
        else:
            groups.append(ch)
    return groups


def _follows(before: str, after: str, term: str) -> bool:
    """Whether `after` comes right after `before` in `term`, or neither is there (a letter
    read twice, on a diagonal, stays a loop of its own)."""
    if before not in term and after not in term:
        return True
    return (term.count(before) == 1 and term.count(after) == 1
            and term.index(after) == term.index(before) + 1)
