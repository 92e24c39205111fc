"""An einsum written as ONNX nodes along the plan's path: each pairwise step a `Gemm` where it
is a product of two matrices, a `MatMul` (its operands' axes put in order, and the axes of
each kind merged, by Transpose and Reshape) where it is a batched product, an `Einsum`
otherwise (a step of one operand, a step with no summed axis, a letter summed within one
operand or written twice in one)."""

from __future__ import annotations

import math

from ...compiler.ops.einsum_spec import parse_spec, spelled_out
from ...grammar.errors import ArgumentError
from .graph import Graph, Tensor


def contract(graph: Graph, spec: str, operands: list[Tensor], path, span) -> Tensor:
    """`spec` of `operands` (tensors of one dtype) along `path` (opt_einsum's positions of the
    operands left at each step; the result of a step goes last)."""
    spec = spelled_out(spec, [o.shape for o in operands])
    parsed = parse_spec(spec)
    terms = list(parsed.inputs)
    sizes = {ch: n for term, o in zip(terms, operands, strict=True)
             for ch, n in zip(term, o.shape, strict=True)}
    steps = [tuple(p) for p in path]
    if any(len(p) > 2 for p in steps) or not steps:
        steps = [(0, 1)] * (len(operands) - 1) or [(0,)]
    values = list(operands)
    for number, step in enumerate(steps):
        taken = [terms[i] for i in step]
        inputs = [values[i] for i in step]
        for i in sorted(step, reverse=True):
            del terms[i], values[i]
        last = number == len(steps) - 1
        out = parsed.output if last else _kept(taken, terms, parsed.output)
        values.append(_step(graph, taken, inputs, out, sizes, span))
        terms.append(out)
    return values[0]


def _kept(taken: list[str], others: list[str], output: str) -> str:
    """The letters a step's result keeps: those a later operand or the output reads."""
    later = set("".join(others)) | set(output)
    return "".join(dict.fromkeys(ch for ch in "".join(taken) if ch in later))


def _step(graph: Graph, terms: list[str], inputs: list[Tensor], out: str, sizes: dict,
          span) -> Tensor:
    shape = tuple(sizes[ch] for ch in out)
    if len(terms) == 1 and terms[0] == out:
        return inputs[0]
    if len(terms) == 1 and _is_sum(terms[0], out):
        axes = [k for k, ch in enumerate(terms[0]) if ch not in out]
        return graph.emit("ReduceSum", [inputs[0], graph.tensor(axes, "int64")], shape,
                          inputs[0].dtype, keepdims=0)
    if len(terms) == 2 and _is_product(*terms, out):
        gemm = _gemm(graph, terms, inputs, out, shape)
        return gemm if gemm is not None else _matmul(graph, terms, inputs, out, sizes)
    return _einsum(graph, terms, inputs, out, shape, span)


def _is_sum(term: str, out: str) -> bool:
    """True where `term->out` sums some axes and keeps the others in their order."""
    return len(set(term)) == len(term) and [ch for ch in term if ch in out] == list(out)


def _is_product(a: str, b: str, out: str) -> bool:
    """True where `a,b->out` is a (batched) matrix product: no letter twice in one term,
    every letter of the output read, and every letter of one operand alone kept."""
    if len(set(a)) < len(a) or len(set(b)) < len(b) or len(set(out)) < len(out):
        return False
    alone = (set(a) ^ set(b))
    summed = (set(a) & set(b)) - set(out)
    return bool(summed) and alone <= set(out) and set(out) <= set(a) | set(b)


def _gemm(graph: Graph, terms: list[str], inputs: list[Tensor], out: str, shape):
    """A product of two matrices (one letter kept from each, one summed) as Gemm, each
    operand transposed by its flag where its letters come the other way; else None."""
    (a, b), (x, y) = terms, inputs
    if not (len(a) == len(b) == len(out) == 2):
        return None
    if out[0] not in a:
        (a, b), (x, y) = (b, a), (y, x)
    if out[0] not in a or out[1] not in b:
        return None
    return graph.emit("Gemm", [x, y], shape, x.dtype, transA=int(a[0] != out[0]),
                      transB=int(b[1] != out[1]))


def _matmul(graph: Graph, terms: list[str], inputs: list[Tensor], out: str, sizes) -> Tensor:
    """A batched product as MatMul: a to (batch, left, summed), b to (batch, summed, right),
    each run of letters merged into one axis, the product split and put in `out`'s order.
    Without batch letters a's left letters stay axes of their own (MatMul broadcasts b over
    them), so their sizes are read from a, not written in the graph (a dynamic axis)."""
    a, b = terms
    batch = [ch for ch in a if ch in b and ch in out]
    summed = [ch for ch in a if ch in b and ch not in out]
    left = [ch for ch in a if ch not in b]
    right = [ch for ch in b if ch not in a]
    if batch:
        x = _arranged(graph, inputs[0], a, [batch, left, summed], sizes)
        lead = [sizes[ch] for ch in batch] + [_size(left, sizes)]
    else:
        x = _arranged(graph, inputs[0], a, [left, summed], sizes)
        lead = [sizes[ch] for ch in left]
    y = _arranged(graph, inputs[1], b, [batch, summed, right], sizes)
    merged = lead + [_size(right, sizes)]
    product = graph.emit("MatMul", [x, y], merged, x.dtype)
    order = batch + left + right
    return _arranged(graph, product, order, [[ch] for ch in out], sizes, merged=False)


def _arranged(graph: Graph, value: Tensor, term, groups: list[list[str]], sizes,
              merged: bool = True) -> Tensor:
    """`value` (its axes `term`) transposed to the letters of `groups` in order, the
    groups after the batch's each merged into one axis (`merged`), else split to letters."""
    order = [ch for group in groups for ch in group]
    if not merged:  # (a product's result: first split, then transposed)
        value = graph.reshape(value, [sizes[ch] for ch in term])
        perm = [list(term).index(ch) for ch in order]
        if perm != sorted(perm):
            value = graph.emit("Transpose", [value], [sizes[ch] for ch in order], value.dtype,
                               perm=perm)
        return value
    perm = [list(term).index(ch) for ch in order]
    if perm != sorted(perm):
        value = graph.emit("Transpose", [value], [sizes[ch] for ch in order], value.dtype,
                           perm=perm)
    shape = [sizes[ch] for ch in groups[0]] + [_size(g, sizes) for g in groups[1:]]
    return graph.reshape(value, shape)


def _size(letters: list[str], sizes: dict) -> int:
    return math.prod(sizes[ch] for ch in letters)


def _einsum(graph: Graph, terms: list[str], inputs: list[Tensor], out: str, shape,
            span) -> Tensor:
    """One Einsum node, its letters renamed a, b, c… (ONNX's equations are lower-case
    letters: more than 26 axes in one step is E600)."""
    letters = list(dict.fromkeys("".join(terms) + out))
    if len(letters) > 26:
        raise ArgumentError("E600", f"an einsum step with {len(letters)} distinct axes cannot "
                            "be written in ONNX (its Einsum names axes with the 26 lower-case "
                            "letters)", span)
    named = {ch: chr(ord("a") + k) for k, ch in enumerate(letters)}
    equation = ",".join("".join(named[ch] for ch in t) for t in terms) + "->" + \
        "".join(named[ch] for ch in out)
    return graph.emit("Einsum", inputs, shape, inputs[0].dtype, equation=equation)
