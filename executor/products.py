"""Contractions in generated code: each planned pairwise step as a matrix product (BLAS when
large) on reshaped views chosen so operands are not copied, or as a loop nest when it is not a
product (diagonals, single-operand rearrangements, scalar results)."""

from __future__ import annotations

from dataclasses import dataclass

from hilbert.compiler import ir
from hilbert.compiler.einsum_spec import parse_spec
from hilbert.compiler.plan import contraction


@dataclass(frozen=True)
class Operand:
    """A value in generated code with one einsum letter per axis."""

    name: str
    term: str
    dims: tuple[str, ...]


@dataclass(frozen=True)
class Matrix:
    """A 2-D view: `base` is C-ordered; `transposed` reads it as its transpose (F-ordered, which
    BLAS takes without a copy)."""

    base: str
    transposed: bool = False

    @property
    def T(self) -> Matrix:  # noqa: N802 (NumPy's spelling)
        return Matrix(self.base, not self.transposed)

    def __str__(self) -> str:
        return f"{self.base}.T" if self.transposed else self.base


def emit_einsum(em, node: ir.Einsum) -> None:
    """Emit `node` along its planned path; the last step writes the einsum's own output."""
    shapes = tuple(em.shape(a) for a in node.args)
    path, steps = contraction(node.spec, shapes, em.optimize)
    parsed = parse_spec(node.spec)
    operands = [Operand(em.value(a), term, em.dims_of(a))
                for a, term in zip(node.args, parsed.inputs, strict=True)]
    for number, (positions, step) in enumerate(zip(path, steps, strict=True)):
        last = number == len(steps) - 1
        taken = [operands.pop(i) for i in sorted(positions, reverse=True)]
        output = parsed.output if last else parse_spec(step.spec).output
        operands.append(_step(em, taken, output, node if last else None, free=not last))
    em.bind(node, operands[0].name)
    em.products += 1


def _step(em, taken: list[Operand], output: str, node, free: bool) -> Operand:
    """One step. `free`: the output's letter order is ours to choose (an intermediate)."""
    sizes = {ch: d for op in taken for ch, d in zip(op.term, op.dims, strict=True)}
    if len(taken) == 1 and taken[0].term == output:
        return taken[0]
    if len(taken) == 2 and _is_product(taken[0].term, taken[1].term, output):
        return _product(em, taken[0], taken[1], output, sizes, node, free)
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


def _product(em, a: Operand, b: Operand, output: str, sizes: dict, node, free: bool) -> Operand:
    batch = [ch for ch in output if ch in a.term and ch in b.term]
    if batch:
        return _batched(em, a, b, output, sizes, node, batch, free)
    summed = [ch for ch in a.term if ch in b.term]
    rows = [ch for ch in a.term if ch not in b.term]
    cols = [ch for ch in b.term if ch not in a.term]
    left, rows, summed_a = _matrix(em, a, rows, summed, sizes)
    right, summed_b, cols = _matrix(em, b, summed, cols, sizes)
    if summed_a != summed_b:  # the two orders of the summed letters differ: copy one
        right, summed_b, cols = _matrix(em, Operand(_copy(em, b, summed_a + cols), "".join(summed_a + cols),
                                                    tuple(sizes[ch] for ch in summed_a + cols)),
                                        summed_a, cols, sizes)
    natural, swapped = rows + cols, cols + rows
    if free:
        output = "".join(natural)
    dims = tuple(sizes[ch] for ch in output)
    m, n = _size([sizes[ch] for ch in rows]), _size([sizes[ch] for ch in cols])
    if list(output) == natural:
        return Operand(_multiply(em, left, right, node, dims, (m, n)), output, dims)
    if list(output) == swapped:
        return Operand(_multiply(em, right.T, left.T, node, dims, (n, m)), output, dims)
    inner = "".join(natural)
    tmp = Operand(_multiply(em, left, right, None, tuple(sizes[ch] for ch in inner), (m, n)),
                  inner, tuple(sizes[ch] for ch in inner))
    return _loop_nest(em, [tmp], output, sizes, node)


def _matrix(em, op: Operand, first: list[str], second: list[str], sizes: dict):
    """`op` as a matrix with the letters of `first` down and `second` across, a view when its
    axes already come in two blocks; returns (Matrix, first's order, second's order)."""
    nf = len(first)
    head, tail = list(op.term[:nf]), list(op.term[nf:])
    if set(head) == set(first) and set(tail) == set(second):
        return Matrix(_reshape(op, head, tail, sizes)), head, tail
    head, tail = list(op.term[:len(second)]), list(op.term[len(second):])
    if set(head) == set(second) and set(tail) == set(first):
        return Matrix(_reshape(op, head, tail, sizes), True), tail, head
    order = [ch for ch in op.term if ch in first] + [ch for ch in op.term if ch in second]
    copied = Operand(_copy(em, op, order), "".join(order), tuple(sizes[ch] for ch in order))
    head, tail = order[:nf], order[nf:]
    return Matrix(_reshape(copied, head, tail, sizes)), head, tail


def _reshape(op: Operand, head: list[str], tail: list[str], sizes: dict) -> str:
    if len(head) == 1 and len(tail) == 1:
        return op.name
    rows = _size([sizes[ch] for ch in head])
    cols = _size([sizes[ch] for ch in tail])
    return f"{op.name}.reshape(({rows}, {cols}))"


def _copy(em, op: Operand, order: list[str]) -> str:
    """A C-ordered copy of `op` with its axes in `order`."""
    perm = ", ".join(str(op.term.index(ch)) for ch in order)
    name = em.fresh("c")
    em.out.line(f"{name} = np.ascontiguousarray({op.name}.transpose(({perm},)))")
    return name


def _multiply(em, left: Matrix, right: Matrix, node, dims: tuple[str, ...], shape) -> str:
    """left · right into the output of `node` (a new buffer when None), viewed as m×n."""
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
    _product_into(em, str(left), str(right), view)
    return out


def _product_into(em, left: str, right: str, out: str) -> None:
    """out = left · right: BLAS when large, else plain loops (BLAS's set-up costs more than a
    4×2 product). The test is written here so small products pay no BLAS dispatch."""
    a, b, c = em.fresh("ma"), em.fresh("mb"), em.fresh("mc")
    em.out.line(f"{a}, {b}, {c} = {left}, {right}, {out}")
    with em.out.block(f"if {a}.shape[0] * {a}.shape[1] * {b}.shape[1] > K.SMALL_PRODUCT:"):
        em.out.line(f"K.gemm({a}, {b}, {c})")
    with em.out.block("else:"):
        if em.frame.hoist is None:
            em.out.line(f"K.small_product_into({a}, {b}, {c})")
            return
        # in a loop body the call is paid every step: write the loops here instead
        i, j, k, total = em.fresh("i"), em.fresh("j"), em.fresh("k"), em.fresh("acc")
        with em.out.block(f"for {i} in range({a}.shape[0]):"):
            with em.out.block(f"for {j} in range({b}.shape[1]):"):
                em.out.line(f"{total} = 0.0")
                with em.out.block(f"for {k} in range({a}.shape[1]):"):
                    em.out.line(f"{total} += {a}[{i}, {k}] * {b}[{k}, {j}]")
                em.out.line(f"{c}[{i}, {j}] = {total}")


def _batched(em, a: Operand, b: Operand, output: str, sizes: dict, node, batch: list[str],
             free: bool) -> Operand:
    """A product per index of the batch letters (letters in both operands and the output)."""
    em.needs_compile = True
    rows = [ch for ch in a.term if ch not in b.term]
    cols = [ch for ch in b.term if ch not in a.term]
    summed = [ch for ch in a.term if ch in b.term and ch not in batch]
    count = _size([sizes[ch] for ch in batch])
    m, k, n = (_size([sizes[ch] for ch in letters]) for letters in (rows, summed, cols))
    left = _canonical(em, a, batch + rows + summed, sizes)
    right = _canonical(em, b, batch + summed + cols, sizes)
    natural = "".join(batch + rows + cols)
    if free:
        output = natural
    dims = tuple(sizes[ch] for ch in natural)
    out = em.alloc(node if output == natural else None, dims)
    index = em.fresh("j")
    with em.out.block(f"for {index} in range({count}):"):
        em.out.line(f"K.product_into({left}.reshape(({count}, {m}, {k}))[{index}], "
                    f"{right}.reshape(({count}, {k}, {n}))[{index}], "
                    f"{out}.reshape(({count}, {m}, {n}))[{index}])")
    result = Operand(out, natural, dims)
    if output == natural:
        return result
    return _loop_nest(em, [result], output, sizes, node)


def _canonical(em, op: Operand, order: list[str], sizes: dict) -> str:
    return op.name if list(op.term) == order else _copy(em, op, order)


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
