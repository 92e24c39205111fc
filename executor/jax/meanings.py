"""What each op means in JAX: compiler/ops/meanings.py's NumPy meanings, op by op, as `jnp` and
`lax` compute them (NumPy's results: `x ^ y` as meanings.power, comparisons 1.0/0.0 in the real
dtype, mod and div as NumPy's divmod, draws bit for bit). `MEANINGS[op](node, args, run)` gives
the value of an op node from its arguments' values (traced or host numbers); `run` is the
lowering (executor/jax/lowering.py), through which a meaning notes a runtime check
(`run.check(bad, value, raiser)`: raised after the call, as the host raises it) and reads
whether gaussian draws call back to the host (`run.on_host`).

Positions, sizes and slice bounds stay host numbers where the IR makes them from shapes and
constants alone (the lowering computes those by their NumPy meanings), so slices, one-hots
and placements are static where the other executors' are."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ...compiler import ir
from ...compiler.ops import meanings as host
from ...compiler.ops.draws import drawn_dtype, whole
from ...compiler.ops.primitives import BY_OP, Primitive
from . import draws

#: A JAX meaning: the value of an op node from its arguments' values and the lowering.
Meaning = Callable[[ir.Prim, list, object], object]


def is_host(value) -> bool:
    """True for a number or array the host holds (not a traced JAX value)."""
    return not isinstance(value, jax.Array)


# ---------------------------------------------------------------- arithmetic

def _unary(function) -> Meaning:
    return lambda node, args, run: function(args[0])


def _binary(function) -> Meaning:
    return lambda node, args, run: function(args[0], args[1])


def power(x, y):
    """x ^ y as meanings.power: NumPy's np.power of each pair of scalars, whose exponents −1,
    ½ and 2 are 1/x, √x and x·x (C's pow otherwise)."""
    x, y = jnp.asarray(x), jnp.asarray(y)
    kind = jnp.result_type(x, y)
    x, y = x.astype(kind), y.astype(kind)
    general = lax.pow(*jnp.broadcast_arrays(x, y))
    return jnp.where(y == 2.0, x * x,
                     jnp.where(y == 0.5, jnp.sqrt(x),
                               jnp.where(y == -1.0, 1.0 / x, general)))


def raised(node, args, run):
    x, y = args
    if is_host(y) and np.ndim(y) == 0:  # a constant exponent: one way, chosen now
        kind = jnp.result_type(x, y)
        x = jnp.asarray(x, kind)
        for exponent, way in ((2.0, lambda v: v * v), (0.5, jnp.sqrt), (-1.0, lambda v: 1.0 / v)):
            if y == exponent:
                return way(x)
        return lax.pow(x, jnp.asarray(y, kind))
    return power(x, y)


def divmod_(a, b):
    """NumPy's npy_divmod for real a, b: (floor quotient, remainder with the sign of b), its
    zeros signed as NumPy signs them, a / b (inf or NaN) where b is 0."""
    a, b = jnp.broadcast_arrays(jnp.asarray(a), jnp.asarray(b))
    mod = lax.rem(a, b)  # C's fmod
    div = (a - mod) / b
    fix = (mod != 0) & ((b < 0) != (mod < 0))
    mod = jnp.where(fix, mod + b, mod)
    div = jnp.where(fix, div - 1.0, div)
    mod = jnp.where(mod == 0, jnp.copysign(jnp.zeros_like(mod), b), mod)
    floor = jnp.floor(div)
    floor = jnp.where(div - floor > 0.5, floor + 1.0, floor)
    floor = jnp.where(div == 0, jnp.copysign(jnp.zeros_like(div), a / b), floor)
    zero = b == 0
    return jnp.where(zero, a / b, floor), jnp.where(zero, lax.rem(a, b), mod)


def _compared(function) -> Meaning:
    return lambda node, args, run: function(args[0], args[1]).astype(host.real_type(args[0]))


def _reduced(function) -> Meaning:
    return lambda node, args, run: function(args[0], axis=node.attrs[0])




def measured(node, args, run):
    """rows(x) or columns(x): a host number (shapes are known while tracing), in float64."""
    return np.float64(np.shape(args[0])[{"rows": 0, "columns": 1}[node.op]])


def positions(node, args, run):
    return jnp.arange(np.shape(args[0])[node.attrs[0]], dtype=jnp.float64)


def product_adjoint(node, args, run):
    """productadjoint(x, g)[k] as primitives.py's: the adjoint of x in cumprod(x, k), the
    products before each entry times r_i = g_i + x_{i+1}·r_{i+1}, each a scan in the host's
    order."""
    x, g = jnp.asarray(args[0]), jnp.asarray(args[1])
    axis = node.attrs[0]
    kind = jnp.result_type(x, g)
    xs, gs = jnp.moveaxis(x, axis, 0).astype(kind), jnp.moveaxis(g, axis, 0).astype(kind)
    if xs.shape[0] == 0:
        return jnp.zeros(x.shape, kind)
    nexts = jnp.concatenate([xs[1:], jnp.zeros_like(xs[:1])])

    def after(r, step):
        gi, xnext = step
        r = gi + xnext * r
        return r, r

    last = gs[-1]
    _, rest = lax.scan(after, last, (gs[:-1], nexts[:-1]), reverse=True)
    afters = jnp.concatenate([rest, last[None]])

    def before(b, xi):
        return b * xi, b

    _, befores = lax.scan(before, jnp.ones(xs.shape[1:], kind), xs)
    return jnp.moveaxis(befores * afters, 0, axis)


# ---------------------------------------------------------------- reads by position

def _static(value) -> int | None:
    """A host number as the whole number it is, else None (a traced value)."""
    return int(value) if is_host(value) else None


def indexed(node, args, run):
    """x[t]: the slice at position t along the first axis; E510 unless t is one."""
    x, t = jnp.asarray(args[0]), args[1]
    size = x.shape[0]
    value = jnp.real(jnp.asarray(t)).astype(jnp.float64)
    bad = ~(jnp.isfinite(value) & (jnp.floor(value) == value) & (value >= 0) & (value < size))
    run.check(bad, value, lambda v: host.position(node, v.real, size))
    at = jnp.where(bad, 0.0, value).astype(jnp.int64)
    return lax.dynamic_index_in_dim(x, at, 0, keepdims=False)


def sliced(node, args, run):
    x, start, stop = args
    first, last = _static(start), _static(stop)
    assert first is not None and last is not None, "slice bounds are known from shapes"
    return jnp.asarray(x)[first:last]


def taken(node, args, run):
    """take(x, at)[axis, coef, const] as meanings.take: x at the s along `axis` with
    coef·s + const = at, zeros where there is none."""
    x, at = jnp.asarray(args[0]), args[1]
    axis, coef, const = node.attrs
    size = x.shape[axis]
    kind = x.dtype
    if size == 0:
        return jnp.zeros(x.shape[:axis] + x.shape[axis + 1:], kind)
    value = jnp.real(jnp.asarray(at)).astype(jnp.float64)
    s = (value - const) * coef
    found = (s >= 0) & (s < size) & (jnp.floor(s) == s) & (coef * s + const == value)
    where = jnp.where(found, s, 0.0).astype(jnp.int64)
    taken = lax.dynamic_index_in_dim(x, where, axis, keepdims=False)
    return jnp.where(found, taken, jnp.zeros((), kind))


def shifted(node, args, run):
    """shift(x, w1, …)[axis, coefs, const] as meanings.shift: x read along `axis` at
    const + Σ coefs·(new indices, appended last), zero outside x."""
    x = jnp.asarray(args[0])
    sizes = [np.shape(w)[0] for w in args[1:]]
    axis, coefs, const = node.attrs
    index, valid = host.shift_positions(sizes, x.shape[axis], coefs, const)
    taken = jnp.take(x, index, axis=axis)
    taken = jnp.moveaxis(taken, list(range(axis, axis + len(sizes))),
                         list(range(taken.ndim - len(sizes), taken.ndim)))
    return jnp.where(valid, taken, jnp.zeros((), x.dtype))


def encoded(node, args, run):
    """oneHot(labels, k): E511 unless every label is a whole number 0 … k − 1."""
    labels, classes = jnp.asarray(args[0]), _static(args[1])
    assert classes is not None, "oneHot's class count is known from shapes"
    bad = ~((labels >= 0) & (labels < classes) & (jnp.floor(labels) == labels))
    flat = bad.reshape(-1)
    if flat.size:
        first = labels.reshape(-1)[jnp.argmax(flat)]
        run.check(jnp.any(flat), first,
                  lambda v: host.one_hot(node, np.array([v.real]), classes))
    kind = host.real_type(labels)
    return (labels[..., None] == jnp.arange(classes, dtype=labels.dtype)).astype(kind)


def joined(node, args, run):
    return jnp.concatenate([jnp.asarray(args[0]), jnp.asarray(args[1])], axis=node.attrs[0])


# ---------------------------------------------------------------- draws

def _whole(node, value, what: str, run):
    """A key or step as uint64, E512 unless it is a whole number 0 … 2⁶⁴ − 1."""
    if is_host(value):
        known = float(np.real(value))
        if np.isfinite(known) and known.is_integer() and 0 <= known < 2.0 ** 64:
            return jnp.uint64(int(known))
    number = jnp.real(jnp.asarray(value)).astype(jnp.float64)
    bad = ~(jnp.isfinite(number) & (jnp.floor(number) == number) & (number >= 0)
            & (number < 2.0 ** 64))
    run.check(bad, number, lambda v: whole(v, what, node.span))
    return jnp.where(bad, 0.0, number).astype(jnp.uint64)


def _keyed(way: str) -> Meaning:
    def meaning(node, args, run):
        key, step, like = args
        key, step = _whole(node, key, "key", run), _whole(node, step, "step", run)
        dtype, shape = drawn_dtype(like), tuple(np.shape(like))
        if way == "uniform":
            return draws.uniform(key, step, shape, dtype)
        if way == "gaussian":
            return draws.gaussian(key, step, shape, dtype, on_host=run.on_host)
        return draws.permutation(key, step, shape[0], dtype)
    return meaning


# ---------------------------------------------------------------- what derivatives are made of

def summed_to(node, args, run):
    g, like = args
    return g if np.shape(g) == np.shape(like) else jnp.sum(g)


def spread(node, args, run):
    g, like = args
    return jnp.broadcast_to(jnp.expand_dims(jnp.asarray(g), node.attrs[0]), np.shape(like))


def placed(node, args, run):
    g, like, start = jnp.asarray(args[0]), args[1], args[2]
    out = jnp.zeros(np.shape(like), jnp.result_type(g, like))
    part = g if node.attrs[0] else g[None]
    at = _static(start)
    if at is None:
        at = jnp.real(jnp.asarray(start)).astype(jnp.int64)
    return lax.dynamic_update_slice_in_dim(out, part.astype(out.dtype), at, 0)


def cut(node, args, run):
    g, a, _ = args
    axis, which = node.attrs
    split = np.shape(a)[axis]
    index = [slice(None)] * np.ndim(g)
    index[axis] = slice(0, split) if which == 0 else slice(split, None)
    return jnp.asarray(g)[tuple(index)]


def coordinate(node, args, run):
    x, axis = args[0], node.attrs[0]
    shape = [1] * np.ndim(x)
    shape[axis] = np.shape(x)[axis]
    steps = jnp.arange(np.shape(x)[axis], dtype=jnp.float64).reshape(shape)
    return jnp.broadcast_to(steps, np.shape(x))


def adjoint(node, args, run):
    return args[1]


def erf(node, args, run):
    return jax.scipy.special.erf(jnp.asarray(args[0]))


def remainder(node, args, run):
    """a mod b: NumPy's remainder (the sign of b)."""
    return divmod_(args[0], args[1])[1]


def floor_quotient(node, args, run):
    """a div b: NumPy's floor division."""
    return divmod_(args[0], args[1])[0]


keyed_uniform = _keyed("uniform")
keyed_gaussian = _keyed("gaussian")
keyed_permutation = _keyed("permutation")

#: How a family whose rows name a `jnp.…` or `lax.…` function makes it a meaning (as the op
#: table's families make NumPy meanings of NumPy functions: primitives.FROM_FUNCTION).
_FAMILIES: dict[str, Callable[[Callable], Meaning]] = {
    "unary": _unary, "binary": _binary, "compare": _compared, "reduce": _reduced,
    "scan": _reduced}
_LIBRARIES = {"jnp": jnp, "lax": lax}


def meaning_of(row: Primitive) -> Meaning:
    """The JAX meaning the op table's row names (its `jax` column)."""
    assert row.jax is not None, row.name
    library, _, name = row.jax.rpartition(".")
    if not library:
        return globals()[name]
    return _FAMILIES[row.kind](getattr(_LIBRARIES[library], name))


#: Every op's JAX meaning, by op name, from the op table's `jax` column (tests/test_op_table.py
#: checks that every op an executor meets names one, and that the name is here or in jax).
MEANINGS: dict[str, Meaning] = {op: meaning_of(row) for op, row in BY_OP.items()
                                if row.jax is not None}
