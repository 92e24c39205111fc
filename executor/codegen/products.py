"""Contractions in generated code: each planned pairwise step as matrix products (BLAS when
large) on views of its operands, laid out by layout.py so that nothing is copied where a view,
or a loop of products over views, will do; or as a loop nest when a step is not a product
(diagonals, single-operand rearrangements, scalar results)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...compiler import ir
from ...compiler.ops.einsum_spec import numpy_spec, parse_spec
from ...compiler.plan.layout import SMALL_PRODUCT, Layout
from ...compiler.plan.scheduler import Step
from .loops import (
    Assign,
    Do,
    Expr,
    Fmt,
    Num,
    Pick,
    Store,
    Sub,
    Update,
    Var,
    View,
    call,
    fmt,
    number,
    other,
    product,
    sizes,
    whole,
)
from .nest_steps import Operand, loop_nest


def emit_einsum(em, node: ir.Einsum) -> None:
    """Emit `node` along its planned path (the plan's, when it has this einsum: Plan.paths);
    the last step writes the einsum's own output."""
    decided = em.block.plan.contractions[node]
    parsed = parse_spec(node.spec)
    # (a counted tensor's float64 buffer read as data, but by a counted rearrangement)
    operands = [Operand(em.stored_as(a, em.value(a), em.widened(node)) if em.shape(a) else
                        em.value(a), term, em.dims_of(a), a)
                for a, term in zip(node.args, parsed.inputs, strict=True)]
    em.numbers = decided.numbers
    for step, (positions, run) in enumerate(zip(decided.path, decided.runs, strict=True)):
        last = step == len(decided.runs) - 1
        taken = [operands.pop(i) for i in sorted(positions, reverse=True)]
        output = run.spec.split("->")[1]
        operands.append(_step(em, taken, output, run, node if last else None))
    em.bind(node, operands[0].value)
    em.products += 1


def _step(em, taken: list[Operand], output: str, run: Step, node) -> Operand:
    """One step, run as decided (scheduler.py)."""
    known = {ch: d for op in taken for ch, d in zip(op.term, op.dims, strict=True)}
    if run.kind == "same":
        return taken[0]
    if run.layout is not None:
        a, b = taken
        em.record("product", run.shape, run.spec, _described(run.layout, a.term, b.term,
                                                              em.host))
        return _product(em, a, b, run.layout, known, node, output, run.shared)
    if em.host:  # (a tensor network's step run as NumPy calls: compiler/plan/building.py)
        em.record("einsum", run.shape, run.spec)
        return _einsum_call(em, taken, output, known)
    em.record("loops", run.shape, run.spec, f"loops over {run.order}")
    return loop_nest(em, taken, output, known, node, run.order)


def _einsum_call(em, taken: list[Operand], output: str, dims_of: dict) -> Operand:
    """A step that is no product as one numpy.einsum (host code), its letters renamed
    a–z, A–Z (the spec is made of letters only: nothing else reaches the source)."""
    spec = numpy_spec(",".join(op.term for op in taken) + "->" + output)
    name = Var(em.fresh("v"))
    em.out.add(Assign((name.name,), (Fmt(f"np.einsum('{spec}', " + ", ".join(
        "{}" for _ in taken) + ")", tuple(op.value for op in taken)),)))
    return Operand(name, output, tuple(dims_of[ch] for ch in output))


def _described(plan: Layout, a: str, b: str, host: bool) -> str:
    """A product's layout as the plan says it: how many products, over what, and the copies."""
    if plan.loops:
        how = f"{'one np.matmul' if host else 'a product'} per {','.join(plan.loops)}"
    else:
        how = "one np.dot" if host else "one product"
    copies = [f"{side} copied as {new}" for side, old, new in (("a", a, plan.a), ("b", b, plan.b))
              if new != old]
    if plan.rearranged:
        copies.append(f"result rearranged from {plan.output}")
    return ", ".join([how, *copies])


def _transposed(value: Expr, perm: str) -> View:
    return View(value, f"{{0}}.transpose(({perm},))")


def _product(em, a: Operand, b: Operand, plan: Layout, dims_of: dict, node,
             output: str, shared: bool | None = None) -> Operand:
    """The product `plan` lays out: operands copied where it says, then one product per index
    of its loop letters (into a scratch buffer first when the result is to be rearranged)."""
    if plan.a != a.term:
        a = _copied(em, a, plan.a, dims_of)
    if plan.b != b.term:
        b = _copied(em, b, plan.b, dims_of)
    dims = tuple(dims_of[ch] for ch in plan.output)
    target = None if plan.rearranged else node
    if not plan.loops:
        result = _single(em, a, b, plan, dims_of, target, dims, shared)
    elif em.host:
        result = _stacked(em, a, b, plan, dims_of, dims)
    else:
        result = _looped(em, a, b, plan, dims_of, target, dims)
    if not plan.rearranged:
        return result
    em.copies += 1
    if em.host:
        perm = ", ".join(str(plan.output.index(ch)) for ch in output)
        name = Var(em.fresh("v"))
        em.out.add(Assign((name.name,), (call("np.ascontiguousarray",
                                              _transposed(result.value, perm)),)))
        return Operand(name, output, tuple(dims_of[ch] for ch in output))
    perm = ",".join(str(plan.output.index(ch)) for ch in output)
    out = em.alloc(node, tuple(dims_of[ch] for ch in output))
    em.out.add(Do(call("K.arranged_into", call("K.transposed", result.value, other(f'"{perm}"')),
                       out)))
    return Operand(out, output, tuple(dims_of[ch] for ch in output))


def _copied(em, op: Operand, order: str, dims_of: dict) -> Operand:
    return Operand(_copy(em, op, list(order)), order, tuple(dims_of[ch] for ch in order))


def _copy(em, op: Operand, order: list[str]) -> Var:
    """A C-ordered copy of `op` with its axes in `order`: made once, before the loop, when `op`
    is loop state the loop never changes."""
    perm = ", ".join(str(op.term.index(ch)) for ch in order)
    made = (call("np.ascontiguousarray", _transposed(op.value, perm)) if em.host else  # (Numba's
            call("K.contiguous", call("K.transposed", op.value,  # own compile slowly)
                                      other(f'"{perm.replace(" ", "")}"'))))
    em.copies += 1
    if em.frame.hoist is not None and op.node is not None and op.node in em.frame.fixed:
        key = (op.value, tuple(order))
        if key not in em.frame.copied:
            em.frame.copied[key] = Var(em.fresh("c"))
            em.frame.hoist.append(Assign((em.frame.copied[key].name,), (made,)))
        return em.frame.copied[key]
    name = Var(em.fresh("c"))
    em.out.add(Assign((name.name,), (made,)))
    return name


@dataclass(frozen=True)
class _View:
    """An operand reshaped so that each index of the loop letters picks a matrix: `base` is
    the reshaped array's expression, `axes` its axes in memory order (a loop letter, or "1"
    and "2" for the matrix's first and second side)."""

    base: Expr
    axes: tuple[str, ...]
    reshaped: bool

    def at(self, base: Expr, index: dict[str, Expr]) -> Expr:
        """The matrix at the loop indices `index`, the array being held in `base`."""
        picked = base
        if len(self.axes) > 2:
            picked = Sub(base, tuple(index.get(axis, other(":")) for axis in self.axes))
        sides = [axis for axis in self.axes if axis in ("1", "2")]
        return picked if sides == ["1", "2"] else View(picked, "{0}.T")


def _view(op: Operand, first: tuple[str, ...], second: tuple[str, ...], dims_of: dict) -> _View:
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
        return _View(op.value, tuple(axes), False)
    shape = tuple(product([dims_of[ch] for ch in group]) for group in letters)
    form = "{0}.reshape((" + "".join(f"{{{k + 1}}}, " for k in range(len(shape))) + "))"
    return _View(View(op.value, form, shape), tuple(axes), True)


def _factors(a: Operand, b: Operand, plan: Layout, dims_of: dict) -> tuple[_View, _View]:
    """The left and right factors' views: a·b, or bᵀ·aᵀ when the result is swapped."""
    if plan.swapped:
        return _view(b, plan.cols, plan.summed, dims_of), _view(a, plan.summed, plan.rows, dims_of)
    return _view(a, plan.rows, plan.summed, dims_of), _view(b, plan.summed, plan.cols, dims_of)


def _single(em, a: Operand, b: Operand, plan: Layout, dims_of: dict, node, dims,
            shared: bool | None) -> Operand:
    """One product: both operands and the result read as matrices as they are; `shared`: by
    blocks of rows or columns among hilbert's threads, as the schedule says (Step.shared)."""
    left, right = _factors(a, b, plan, dims_of)
    first, second = plan.sides
    m, n = (product([dims_of[ch] for ch in side]) for side in (first, second))
    rows, summed, columns = _sizes(em, first, plan.summed, second)
    known = (rows, summed, columns) if em.exact else None
    out = _multiply(em, left.at(left.base, {}), right.at(right.base, {}), node, dims, (m, n),
                    known, shared)
    return Operand(out, plan.output, dims)


def _sizes(em, rows, summed, cols) -> tuple[int, int, int]:
    """The product's m, k and n as numbers (the plan's sizes; exact-size code, a tiny program,
    writes them as constants, other code reads them from the arrays)."""
    m, k, n = (math.prod(em.numbers[ch] for ch in side) for side in (rows, summed, cols))
    return m, k, n


def _multiply(em, left: Expr, right: Expr, node, dims: tuple, shape,
              known: tuple[int, int, int] | None = None, shared: bool | None = None) -> Var:
    """left · right into the output of `node` (a new buffer when None), viewed as m×n;
    `known`: m, k and n as numbers (exact-size code); `shared`: shared out among hilbert's
    threads by blocks of rows (True) or of columns (False) (`_shared_out`)."""
    m, n = shape
    natural = len(dims) == 2 and dims == (m, n)
    if em.host:
        name = Var(em.fresh("v"))
        dot = call("np.dot", left, right)
        if shared is not None and known is None:  # (blocks on hilbert's threads, each an own
            dot = call("K.shared_product", left, right, Num(str(shared), "bool"))  # product or BLAS's)
            em.split = True
        em.out.add(Assign((name.name,), (dot if natural else
                                         View(dot, "{0}.reshape({1})", (sizes(dims),)),)))
        return name
    out = em.alloc(node, dims)
    whole = out if natural else View(out, "{0}.reshape(({1}, {2}))", (m, n))
    a, b, c = (Var(em.fresh(p)) for p in ("ma", "mb", "mc"))
    em.out.add(Assign((a.name, b.name, c.name), (left, right, whole)))
    if shared is not None and known is None:
        _shared_out(em, a, b, c, shared)
    else:
        _blas_or_loops(em, a, b, c, call("K.gemm", a, b, c), None, known)
    return out


def _shared_out(em, a: Var, b: Var, c: Var, by_rows: bool) -> None:
    """c = a · b as one BLAS product per block of c's rows (or columns), one block per thread
    of hilbert's, in a prange: the call runs NumPy's BLAS on one thread (the region's
    `split`: executor/blas_threads.py), so no BLAS thread spins beside the nests that
    follow. Each block is a view BLAS reads as it is (kernels.gemm_beta)."""
    parts = em.decided.threads
    block, lo, hi = (Var(em.fresh(p)) for p in ("blk", "lo", "hi"))
    side = fmt("{}.shape[0]", a) if by_rows else fmt("{}.shape[1]", b)
    em.out.open_for(block.name, whole(parts), parallel=True)
    em.out.add(Assign((lo.name,), (fmt(f"({{}} * {{}}) // {parts}", side, block),)))
    em.out.add(Assign((hi.name,), (fmt(f"({{}} * ({{}} + 1)) // {parts}", side, block),)))
    with em.out.if_(fmt("{} > {}", hi, lo)):
        if by_rows:
            em.out.add(Do(call("K.gemm", View(a, "{0}[{1}:{2}]", (lo, hi)), b,
                               View(c, "{0}[{1}:{2}]", (lo, hi)))))
        else:
            em.out.add(Do(call("K.gemm", a, View(b, "{0}[:, {1}:{2}]", (lo, hi)),
                               View(c, "{0}[:, {1}:{2}]", (lo, hi)))))
    em.out.close()
    em.split = True


def _blas_or_loops(em, a: Var, b: Var, c: Var, gemm: Expr, more: Expr | None,
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
            em.out.add(Do(gemm))
        else:
            _small_loops(em, a, b, c, more, known)
        return
    with em.out.if_(fmt("{}.shape[0] * {}.shape[1] * {}.shape[1] > K.SMALL_PRODUCT", a, a, b)):
        em.out.add(Do(gemm))
    with em.out.else_():
        em.out.add(Do(call("K.small_product_into", a, b, c) if more is None else
                      call("K.small_product_beta", a, b, c, _where(em, more))))


def _where(em, more: Expr) -> Expr:
    """1 where `more` holds, else 0 (a product's beta), in the code's dtype."""
    return fmt("{} if {} else {}", number(1.0, em.dtype), more, number(0.0, em.dtype))


def _small_loops(em, a: Var, b: Var, c: Var, more: Expr | None,
                 known: tuple[int, int, int]) -> None:
    """c = a · b as plain loops with constant bounds written into the generated code (LLVM
    then unrolls and vectorises the loops of a tiny product); c += a · b where the condition
    `more` holds. The sum is kept in the call's dtype, as BLAS keeps a larger product's (so
    a float32 product rounds alike whichever side of SMALL_PRODUCT it falls, as NumPy's
    sgemm does): `dot` starts at a zero of the code's dtype, not an accumulator's float64
    one (loops.ACCUMULATOR)."""
    i, j, k, total = (Var(em.fresh(p)) for p in ("i", "j", "k", "dot"))
    rows, inner, cols = known
    with em.out.for_(i.name, whole(rows)), em.out.for_(j.name, whole(cols)):
        zero = number(0.0, em.dtype)
        em.out.add(Assign((total.name,), (zero if more is None else
                                          Pick(Sub(c, (i, j)), more, zero),)))
        with em.out.for_(k.name, whole(inner)):
            em.out.add(Update(total.name, "+=", fmt("{} * {}", Sub(a, (i, k)), Sub(b, (k, j)))))
        em.out.add(Store(Sub(c, (i, j)), total))


def _looped(em, a: Operand, b: Operand, plan: Layout, dims_of: dict, node, dims) -> Operand:
    """One product per index of the loop letters, on views (compiled code): each reads its
    operands' matrices in place; the products over a summed letter accumulate. Large products
    over kept letters need no compiling: host code runs them as one np.matmul (`_stacked`)."""
    sums = [ch for ch in plan.loops if ch not in plan.output]
    em.looped += 1
    out = em.alloc(node, dims)
    left, right = _factors(a, b, plan, dims_of)
    target = _view(Operand(out, plan.output, dims), *plan.sides, dims_of)
    bases: list[Expr] = []
    for view in (left, right, target):
        if view.reshaped:  # made once, outside the loops
            bases.append(Var(em.fresh("r")))
            em.out.add(Assign((bases[-1].name,), (view.base,)))
        else:
            bases.append(view.base)
    if sums:  # a sum over nothing is 0: the loop below never writes the result then
        with em.out.if_(Fmt(" * ".join("{}" for _ in sums) + " == 0",
                            tuple(dims_of[ch] for ch in sums))):
            em.out.add(Do(fmt("{}.fill({})", out, number(0.0, em.dtype))))
    index = {ch: Var(em.fresh("j")) for ch in plan.loops}
    more = Fmt(" or ".join("{} > 0" for _ in sums), tuple(index[ch] for ch in sums)) if sums \
        else None
    merged = em.out.nest([dims_of[ch] for ch in plan.loops], [index[ch].name for ch in plan.loops])
    x, y, z = (Var(em.fresh(p)) for p in ("ma", "mb", "mc"))
    em.out.add(Assign((x.name, y.name, z.name),
                      tuple(view.at(base, index)
                            for view, base in zip((left, right, target), bases, strict=True))))
    gemm = (call("K.gemm", x, y, z) if more is None else
            call("K.gemm_beta", x, y, z, _where(em, more)))
    first, second = plan.sides
    _blas_or_loops(em, x, y, z, gemm, more,
                   _sizes(em, first, plan.summed, second) if em.exact else None)
    em.out.unnest(len(plan.loops), merged)
    return Operand(out, plan.output, dims)


def _stacked(em, a: Operand, b: Operand, plan: Layout, dims_of: dict, dims) -> Operand:
    """The loop of products as one np.matmul over stacked views (host code): each factor is
    viewed with the loop letters first (a new unit axis for one it lacks) and its matrix
    last; the result comes out so, which is the layout's output order."""
    factors: list[Expr] = []
    for view in _factors(a, b, plan, dims_of):
        order = [view.axes.index(ch) for ch in plan.loops if ch in view.axes]
        order += [view.axes.index("1"), view.axes.index("2")]
        factor = view.base
        if order != sorted(order):
            factor = View(factor, "{0}.transpose((" + "".join(f"{p}, " for p in order) + "))")
        if any(ch not in view.axes for ch in plan.loops):
            picks = "".join(":, " if ch in view.axes else "None, " for ch in plan.loops)
            factor = View(factor, "{0}[" + picks + ":, :]")
        factors.append(factor)
    name = Var(em.fresh("v"))
    em.out.add(Assign((name.name,), (View(call("np.matmul", *factors), "{0}.reshape({1})",
                                          (sizes(dims),)),)))
    em.looped += 1
    return Operand(name, plan.output, dims)
