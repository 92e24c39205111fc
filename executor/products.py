"""Contractions in generated code: each planned pairwise step as matrix products (BLAS when
large) on views of its operands, laid out by `layout` so that nothing is copied where a view,
or a loop of products over views, will do; or as a loop nest when a step is not a product
(diagonals, single-operand rearrangements, scalar results)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations

from hilbert.compiler import ir
from hilbert.compiler.einsum_spec import parse_spec
from hilbert.compiler.plan import contraction

#: Below this many multiply-adds a product runs as plain loops (kernels.SMALL_PRODUCT).
SMALL_PRODUCT = 4096

# The cost model `layout` compares layouts with, in nanoseconds on a CI-class core. Only the
# ratios matter: a copy moves each element once, slowly (transposing reads across lines);
# each product has a set-up cost; BLAS runs near peak only when no side of a product is thin.
COPY_NS = 1.0  # per element copied into another axis order
COPY_CALL_NS = {"compiled": 100.0, "host": 1500.0}  # per copy (a NumPy call, on the host)
CALL_NS = {"compiled": 400.0, "small": 20.0, "host": 300.0}  # per product (BLAS or loops)
FLOP_NS = 0.05  # per floating-point operation at BLAS speed (20 GFLOP/s)
TOUCH_NS = 0.3  # per element a product reads or writes (memory-bound products: GEMV, k = 1)
SCALAR_FLOP_NS = 0.5  # per floating-point operation of a small product's plain loops
#: Past this many letters that could be looped over, only loops over one letter are tried.
SEARCH_PAIRS = 12


@dataclass(frozen=True)
class Operand:
    """A value in generated code with one einsum letter per axis (`node`: the IR node it holds,
    when it is one, so a copy of a loop-invariant operand can be made once, before the loop)."""

    name: str
    term: str
    dims: tuple[str, ...]
    node: ir.Node | None = None


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
    for count in range(1, width + 1):
        for extra in combinations(others, count):
            found = _cheapest(a, b, output, sizes, free, host, batch + extra)
            if found is not None and (best is None or found.cost < best.cost):
                best = found
    assert best is not None, f"no layout for {a},{b}->{output}"
    return best


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
            + calls * _product_ns(m, n, k, host))
    return Layout(loops, rows, summed, cols, new_a, new_b, result, rearranged, cost)


def _elements(term: str, sizes: dict[str, int]) -> int:
    return math.prod(sizes[ch] for ch in term)


def _product_ns(m: int, n: int, k: int, host: bool) -> float:
    """The model's time for one m×k by k×n product."""
    flops = 2.0 * m * n * k
    if not host and m * n * k <= SMALL_PRODUCT:
        return CALL_NS["small"] + flops * SCALAR_FLOP_NS
    touched = m * k + k * n + m * n
    return CALL_NS["host" if host else "compiled"] + max(flops * FLOP_NS, touched * TOUCH_NS)


def _runs(term: str, looped: set[str], first: tuple[str, ...], second: tuple[str, ...]):
    """(first's letter order, second's) when `term`, C-ordered, reads as a matrix with the
    letters of `first` down and `second` across at each index of the `looped` letters, as a
    view BLAS accepts; else None. Each side's letters must be adjacent (to merge into one
    axis) and, when both sides have letters, one of them must hold the last, unit-stride axis
    (a side with no letters is a unit axis, whose stride does not matter)."""
    orders = []
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


# ------------------------------------------------------------------------------ emission


def emit_einsum(em, node: ir.Einsum) -> None:
    """Emit `node` along its planned path; the last step writes the einsum's own output."""
    shapes = tuple(em.shape(a) for a in node.args)
    path, steps = contraction(node.spec, shapes, em.optimize)
    parsed = parse_spec(node.spec)
    numbers = {ch: int(n) for term, shape in zip(parsed.inputs, shapes, strict=True)
               for ch, n in zip(term, shape, strict=True)}
    operands = [Operand(em.value(a), term, em.dims_of(a), a)
                for a, term in zip(node.args, parsed.inputs, strict=True)]
    em.numbers = numbers
    for number, (positions, step) in enumerate(zip(path, steps, strict=True)):
        last = number == len(steps) - 1
        taken = [operands.pop(i) for i in sorted(positions, reverse=True)]
        output = parsed.output if last else parse_spec(step.spec).output
        operands.append(_step(em, taken, output, numbers, node if last else None, free=not last))
    em.bind(node, operands[0].name)
    em.products += 1


def _step(em, taken: list[Operand], output: str, numbers: dict, node, free: bool) -> Operand:
    """One step. `free`: the output's letter order is ours to choose (an intermediate)."""
    sizes = {ch: d for op in taken for ch, d in zip(op.term, op.dims, strict=True)}
    if len(taken) == 1 and taken[0].term == output:
        return taken[0]
    if len(taken) == 2 and _is_product(taken[0].term, taken[1].term, output):
        a, b = taken
        plan = layout(a.term, b.term, output, numbers, free, em.host)
        return _product(em, a, b, plan, sizes, node, output)
    return _loop_nest(em, taken, output, sizes, node)


def _is_product(a: str, b: str, output: str) -> bool:
    """A matrix product: no diagonal, something summed between the two, nothing summed within
    one operand alone, and a non-scalar result."""
    if len(set(a)) != len(a) or len(set(b)) != len(b) or not output:
        return False
    summed = (set(a) & set(b)) - set(output)
    alone = (set(a) ^ set(b)) - set(output)
    return bool(summed) and not alone


def _size(dims: list[str]) -> str:
    return " * ".join(dims) if dims else "1"


def _product(em, a: Operand, b: Operand, plan: Layout, sizes: dict, node, output: str) -> Operand:
    """The product `plan` lays out: operands copied where it says, then one product per index
    of its loop letters (into a scratch buffer first when the result is to be rearranged)."""
    if plan.a != a.term:
        a = _copied(em, a, plan.a, sizes)
    if plan.b != b.term:
        b = _copied(em, b, plan.b, sizes)
    dims = tuple(sizes[ch] for ch in plan.output)
    target = None if plan.rearranged else node
    if not plan.loops:
        result = _single(em, a, b, plan, sizes, target, dims)
    elif em.host:
        result = _stacked(em, a, b, plan, sizes, dims)
    else:
        result = _looped(em, a, b, plan, sizes, target, dims)
    if not plan.rearranged:
        return result
    if em.host:
        perm = ", ".join(str(plan.output.index(ch)) for ch in output)
        name = em.fresh("v")
        em.out.line(f"{name} = np.ascontiguousarray({result.name}.transpose(({perm},)))")
        em.copies += 1
        return Operand(name, output, tuple(sizes[ch] for ch in output))
    em.copies += 1
    return _loop_nest(em, [result], output, sizes, node)


def _copied(em, op: Operand, order: str, sizes: dict) -> Operand:
    return Operand(_copy(em, op, list(order)), order, tuple(sizes[ch] for ch in order))


def _copy(em, op: Operand, order: list[str]) -> str:
    """A C-ordered copy of `op` with its axes in `order`: made once, before the loop, when `op`
    is loop state the loop never changes."""
    perm = ", ".join(str(op.term.index(ch)) for ch in order)
    text = (f"np.ascontiguousarray({op.name}.transpose(({perm},)))" if em.host else  # (Numba's
            f'K.contiguous(K.transposed({op.name}, "{perm.replace(" ", "")}"))')  # compile slowly)
    em.copies += 1
    hoisted = em.frame.hoist is not None and op.node is not None and op.node in em.frame.fixed
    if hoisted:
        key = (op.name, tuple(order))
        if key not in em.frame.copied:
            em.frame.copied[key] = em.fresh("c")
            em.frame.hoist.append(f"{em.frame.copied[key]} = {text}")
        return em.frame.copied[key]
    name = em.fresh("c")
    em.out.line(f"{name} = {text}")
    return name


@dataclass(frozen=True)
class _View:
    """An operand reshaped so that each index of the loop letters picks a matrix: `base` is
    the reshaped array's expression, `axes` its axes in memory order (a loop letter, or "1"
    and "2" for the matrix's first and second side)."""

    base: str
    axes: tuple[str, ...]
    reshaped: bool

    def at(self, base: str, index: dict[str, str]) -> str:
        """The matrix at the loop indices `index`, the array being held in `base`."""
        picked = base
        if len(self.axes) > 2:
            picked = f"{base}[{', '.join(index.get(axis, ':') for axis in self.axes)}]"
        sides = [axis for axis in self.axes if axis in ("1", "2")]
        return picked if sides == ["1", "2"] else f"{picked}.T"


def _view(op: Operand, first: tuple[str, ...], second: tuple[str, ...], sizes: dict) -> _View:
    """`op` (C-ordered, in a layout's letter order) reshaped: each side's letters merged into
    one axis, each loop letter an axis of its own, and a side with no letters a unit axis at
    the end (whose stride BLAS ignores)."""
    axes: list[str] = []
    letters: list[list[str]] = []
    for ch in op.term:
        side = "1" if ch in first else "2" if ch in second else ch
        if side in ("1", "2") and axes and axes[-1] == side:
            letters[-1].append(ch)
        else:
            axes.append(side)
            letters.append([ch])
    for side, group in (("1", first), ("2", second)):
        if not group:
            axes.append(side)
            letters.append([])
    if all(len(group) == 1 for group in letters):
        return _View(op.name, tuple(axes), False)
    shape = "".join(_size([sizes[ch] for ch in group]) + ", " for group in letters)
    return _View(f"{op.name}.reshape(({shape}))", tuple(axes), True)


def _swapped(plan: Layout) -> bool:
    """Whether the result's matrices are computed transposed, as bᵀ·aᵀ: they are written
    row-major, so when the result's memory order puts the columns' letters first (or only
    they are left), the rows must be the fast side."""
    if not plan.cols:
        return False
    if not plan.rows:
        return True
    return [ch for ch in plan.output if ch not in plan.loops][-1] in plan.rows


def _factors(a: Operand, b: Operand, plan: Layout, sizes: dict) -> tuple[_View, _View]:
    """The left and right factors' views: a·b, or bᵀ·aᵀ when the result is swapped."""
    if _swapped(plan):
        return _view(b, plan.cols, plan.summed, sizes), _view(a, plan.summed, plan.rows, sizes)
    return _view(a, plan.rows, plan.summed, sizes), _view(b, plan.summed, plan.cols, sizes)


def _result_sides(plan: Layout) -> tuple[tuple[str, ...], tuple[str, ...]]:
    return (plan.cols, plan.rows) if _swapped(plan) else (plan.rows, plan.cols)


def _single(em, a: Operand, b: Operand, plan: Layout, sizes: dict, node, dims) -> Operand:
    """One product: both operands and the result read as matrices as they are."""
    left, right = _factors(a, b, plan, sizes)
    first, second = _result_sides(plan)
    m, n = (_size([sizes[ch] for ch in side]) for side in (first, second))
    known = _known(em, first, plan.summed, second)
    name = _multiply(em, left.at(left.base, {}), right.at(right.base, {}), node, dims, (m, n),
                     known)
    return Operand(name, plan.output, dims)


def _known(em, rows, summed, cols) -> tuple[int, int, int] | None:
    """The product's m, k and n as numbers when the code is written for exact sizes
    (`em.exact`: a tiny program), else None (the code reads them from the arrays)."""
    if not em.exact:
        return None
    m, k, n = (math.prod(em.numbers[ch] for ch in side) for side in (rows, summed, cols))
    return m, k, n


def _multiply(em, left: str, right: str, node, dims: tuple[str, ...], shape,
              known: tuple[int, int, int] | None = None) -> str:
    """left · right into the output of `node` (a new buffer when None), viewed as m×n;
    `known`: m, k and n as numbers (exact-size code)."""
    m, n = shape
    natural = len(dims) == 2 and dims == (m, n)
    if em.host:
        name = em.fresh("v")
        product = f"np.dot({left}, {right})"
        em.out.line(f"{name} = {product}" if natural else
                    f"{name} = {product}.reshape(({''.join(d + ', ' for d in dims)}))")
        return name
    out = em.alloc(node, dims)
    view = out if natural else f"{out}.reshape(({m}, {n}))"
    _product_into(em, left, right, view, known)
    return out


def _product_into(em, left: str, right: str, out: str,
                  known: tuple[int, int, int] | None = None) -> None:
    """out = left · right: BLAS when large, else plain loops (BLAS's set-up costs more than a
    4×2 product)."""
    a, b, c = em.fresh("ma"), em.fresh("mb"), em.fresh("mc")
    em.out.line(f"{a}, {b}, {c} = {left}, {right}, {out}")
    _blas_or_loops(em, a, b, c, f"K.gemm({a}, {b}, {c})", None, known)


def _blas_or_loops(em, a: str, b: str, c: str, gemm: str, more: str | None,
                   known: tuple[int, int, int] | None) -> None:
    """c = a · b (+ c where `more` holds) by `gemm` when large, else by plain loops. The test
    is written here so small products pay no BLAS dispatch; with the sizes `known` (exact-size
    code, a tiny program), only the branch they take is written, as loops with constant
    bounds. Otherwise the loops are a shared kernel's (K.small_product_into): a call costs
    nanoseconds, while loops written into every product site cost Numba and LLVM time at
    every compilation (a circle classifier's train step: 13 sites, a third of its compile
    time)."""
    if known is not None:
        if math.prod(known) > SMALL_PRODUCT:
            em.out.line(gemm)
        else:
            _small_loops(em, a, b, c, more, known)
        return
    with em.out.block(f"if {a}.shape[0] * {a}.shape[1] * {b}.shape[1] > K.SMALL_PRODUCT:"):
        em.out.line(gemm)
    with em.out.block("else:"):
        em.out.line(f"K.small_product_into({a}, {b}, {c})" if more is None else
                    f"K.small_product_beta({a}, {b}, {c}, 1.0 if {more} else 0.0)")


def _small_loops(em, a: str, b: str, c: str, more: str | None,
                 known: tuple[int, int, int]) -> None:
    """c = a · b as plain loops with constant bounds written into the generated code (LLVM
    then unrolls and vectorises the loops of a tiny product); c += a · b where the condition
    `more` holds."""
    i, j, k, total = em.fresh("i"), em.fresh("j"), em.fresh("k"), em.fresh("acc")
    rows, inner, cols = known
    with em.out.block(f"for {i} in range({rows}):"):
        with em.out.block(f"for {j} in range({cols}):"):
            em.out.line(f"{total} = 0.0" if more is None else
                        f"{total} = {c}[{i}, {j}] if {more} else 0.0")
            with em.out.block(f"for {k} in range({inner}):"):
                em.out.line(f"{total} += {a}[{i}, {k}] * {b}[{k}, {j}]")
            em.out.line(f"{c}[{i}, {j}] = {total}")


def _looped(em, a: Operand, b: Operand, plan: Layout, sizes: dict, node, dims) -> Operand:
    """One product per index of the loop letters, on views (compiled code): each reads its
    operands' matrices in place; the products over a summed letter accumulate. Large products
    over kept letters need no compiling: host code runs them as one np.matmul (`_stacked`)."""
    sums = [ch for ch in plan.loops if ch not in plan.output]
    each = math.prod(em.numbers[ch] for ch in plan.rows + plan.summed + plan.cols)
    em.needs_compile |= bool(sums) or each <= SMALL_PRODUCT
    em.looped += 1
    out = em.alloc(node, dims)
    left, right = _factors(a, b, plan, sizes)
    target = _view(Operand(out, plan.output, dims), *_result_sides(plan), sizes)
    bases = []
    for view in (left, right, target):
        if view.reshaped:  # made once, outside the loops
            bases.append(em.fresh("r"))
            em.out.line(f"{bases[-1]} = {view.base}")
        else:
            bases.append(view.base)
    if sums:  # a sum over nothing is 0: the loop below never writes the result then
        with em.out.block(f"if {' * '.join(sizes[ch] for ch in sums)} == 0:"):
            em.out.line(f"{out}.fill(0.0)")
    index = {ch: em.fresh("j") for ch in plan.loops}
    more = " or ".join(f"{index[ch]} > 0" for ch in sums) or None
    merged = em.out.nest([sizes[ch] for ch in plan.loops], [index[ch] for ch in plan.loops])
    x, y, z = em.fresh("ma"), em.fresh("mb"), em.fresh("mc")
    matrices = (view.at(base, index) for view, base in zip((left, right, target), bases, strict=True))
    em.out.line(f"{x}, {y}, {z} = {', '.join(matrices)}")
    gemm = (f"K.gemm({x}, {y}, {z})" if more is None else
            f"K.gemm_beta({x}, {y}, {z}, 1.0 if {more} else 0.0)")
    first, second = _result_sides(plan)
    _blas_or_loops(em, x, y, z, gemm, more, _known(em, first, plan.summed, second))
    em.out.unnest(len(plan.loops), merged)
    return Operand(out, plan.output, dims)


def _stacked(em, a: Operand, b: Operand, plan: Layout, sizes: dict, dims) -> Operand:
    """The loop of products as one np.matmul over stacked views (host code): each factor is
    viewed with the loop letters first (a new unit axis for one it lacks) and its matrix
    last; the result comes out so, which is the layout's output order."""
    factors = []
    for view in _factors(a, b, plan, sizes):
        order = [view.axes.index(ch) for ch in plan.loops if ch in view.axes]
        order += [view.axes.index("1"), view.axes.index("2")]
        factor = view.base
        if order != sorted(order):
            factor += f".transpose(({''.join(f'{p}, ' for p in order)}))"
        if any(ch not in view.axes for ch in plan.loops):
            factor += f"[{''.join(':, ' if ch in view.axes else 'None, ' for ch in plan.loops)}:, :]"
        factors.append(factor)
    name = em.fresh("v")
    em.out.line(f"{name} = np.matmul({factors[0]}, {factors[1]})"
                f".reshape(({''.join(d + ', ' for d in dims)}))")
    em.looped += 1
    return Operand(name, plan.output, dims)


def _loop_nest(em, taken: list[Operand], output: str, sizes: dict, node) -> Operand:
    """Any einsum step as loops over its letters: the sum of products into the output."""
    em.needs_compile = True
    letters = list(output) + [ch for op in taken for ch in op.term if ch not in output]
    letters = list(dict.fromkeys(letters))
    index = {ch: em.fresh("j") for ch in letters}
    dims = tuple(sizes[ch] for ch in output)
    factors = [f"{op.name}[{', '.join(index[ch] for ch in op.term)}]" if op.term else op.name
               for op in taken]
    product = " * ".join(factors) if factors else "1.0"
    summing = len(letters) > len(output)
    if output:
        out = em.alloc(node, dims)
        target = f"{out}[{', '.join(index[ch] for ch in output)}]"
        if summing:
            em.out.line(f"{out}.fill(0.0)")
    else:
        out = target = em.fresh("v")
        em.out.line(f"{out} = 0.0")
    merged = em.out.nest([sizes[ch] for ch in letters], [index[ch] for ch in letters])
    em.out.line(f"{target} {'+=' if summing or not output else '='} {product}")
    em.out.unnest(len(letters), merged)
    return Operand(out, output, dims)
