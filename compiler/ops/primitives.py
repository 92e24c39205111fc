"""The op table: one row per primitive of LANGUAGE.md §5, operator and internal op, holding
everything the compiler and the executors know of it: its arity and axis arguments, its shape
rule (compiler/ops/shape_rules.py), its derivative rule (compiler/ops/derivative_rules.py), its NumPy
meaning and dask meaning (compiler/ops/meanings.py), its code in generated loops, and its traits.
Every set of ops a pass needs is derived from the traits here (`having`); a new primitive is
one row (docs/architecture.md, "The op table")."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from hilbert.compiler.ops import derivative_rules as d
from hilbert.compiler.ops import draws, lowering
from hilbert.compiler.ops import meanings as m
from hilbert.compiler.ops import shape_rules as sh
from hilbert.compiler.ops.derivative_rules import c, p

#: The traits an op may have:
#: entrywise - its value at an index reads its arguments at that index only (fused freely);
#: movable - reads values only and cannot fail (a loop may compute it once, before itself);
#: shapes_only - reads only its argument's shape (never worth keeping as loop state);
#: compiled - generated code computes it (ops without it run on the host, between kernels);
#: static - known from shapes when its arguments are (slice bounds, class counts);
#: lazy - its NumPy meaning works on dask arrays as it is (no `dask` meaning needed).
TRAITS = frozenset({"entrywise", "movable", "shapes_only", "compiled", "static", "lazy"})


@dataclass(frozen=True, slots=True)
class Primitive:
    """One row of the table. `kind` names the family the row's defaults come from (_KINDS);
    `code` is the row's expression in compiled loops (`{}` for each argument), `host_code` the
    same in uncompiled generated code where it differs, `fast_code` in compiled loops under
    math="fast" where it differs (within 4 ulp of NumPy, for less work)."""

    name: str
    arity: int
    kind: str
    numpy: Callable | None = None  # the NumPy function (entrywise ops and reductions)
    axis: int | None = None  # for size primitives: which axis they measure
    axis_arg: int | None = None  # the argument that must be a whole-number literal (an axis)
    traits: frozenset[str] = frozenset()
    attrs: int = 0  # how many attributes its IR nodes carry (an axis, a shift's offsets…)
    shape: Callable | None = None
    derivative: d.Rule | None = None  # None: never differentiated (refused before)
    meaning: m.Meaning | None = None
    dask: m.LazyMeaning | None = None  # on dask arrays, where the NumPy meaning is not lazy
    code: str | None = None
    host_code: str | None = None
    fast_code: str | None = None
    lower: Callable | None = None  # once shapes are known, written as einsums (lowering.py)
    # counting (compiler/counting.py): `whole` names the arguments whose being whole numbers
    # makes the value one, counted exactly in float64 in every call (() for a value always
    # whole: a size, positions; None for data); `counts` the arguments read as whole numbers
    # (a position, a draw's key and step), never rounded to the call's dtype
    whole: tuple[int, ...] | None = None
    counts: tuple[int, ...] = ()


def _along(node, args: list, shapes: dict):
    """x's own shape, for an op that runs along an axis x has (a running sum)."""
    sh.axis_of(node, args[0], "runs along")
    return args[0]


#: Each family's defaults: traits, shape rule, and meaning made from the row's NumPy function.
_KINDS: dict[str, tuple[frozenset[str], Callable | None, Callable[[Callable], m.Meaning] | None]] = {
    "unary": (frozenset({"entrywise", "movable", "compiled", "lazy"}), sh.same, m.entrywise),
    "binary": (frozenset({"entrywise", "movable", "compiled", "lazy"}), sh.pair, m.entrywise),
    "compare": (frozenset({"entrywise", "movable", "compiled", "lazy"}), sh.pair, m.compared),
    "reduce": (frozenset({"movable", "compiled", "lazy"}), sh.reduce, m.reduced),
    "scan": (frozenset({"movable", "lazy"}), _along, m.reduced),
    "argreduce": (frozenset({"movable"}), None, None),
    "size": (frozenset({"movable", "shapes_only", "compiled", "lazy"}), sh.size, None),
    "positions": (frozenset({"movable", "shapes_only", "compiled", "lazy"}), sh.positions, None),
    "onehot": (frozenset({"compiled"}), sh.onehot, None),
    "concat": (frozenset({"movable"}), sh.concat, None),
    "draw": (frozenset(), sh.draw, None),
    # (not movable: a bad key raises E512, so a draw stays in the loop that makes it)
    "random": (frozenset({"compiled"}), sh.keyed, None),
    "shift": (frozenset({"movable", "compiled"}), sh.shift, None),
    "take": (frozenset({"movable", "compiled"}), sh.take, None),
    "index": (frozenset({"compiled"}), sh.index, None),
    "slice": (frozenset({"compiled"}), sh.slice_, None),
}


def _row(name: str, arity: int, kind: str, numpy: Callable | None = None, *,
         traits: frozenset[str] = frozenset(), meaning: m.Meaning | None = None,
         shape: Callable | None = None, axis_arg: int | None = None, **fields) -> Primitive:
    """A row, its traits, shape rule and meaning completed from its family's defaults."""
    family_traits, family_shape, family_meaning = _KINDS.get(kind, (frozenset(), None, None))
    if meaning is None and family_meaning is not None and numpy is not None:
        meaning = family_meaning(numpy)
    if axis_arg is not None:
        fields.setdefault("attrs", 1)
    return Primitive(name, arity, kind, numpy, axis_arg=axis_arg, traits=family_traits | traits,
                     meaning=meaning, shape=shape or family_shape, **fields)


def _slope(function: Callable) -> d.Rule:
    """The rule of an entrywise f(x) from f'(x), written over the node f(x) and x."""
    return d.unary(lambda node: function(node, node.args[0]))


#: Up to this many entries, erf on the host is C's erf entry by entry (what compiled code
#: calls), so that a program's first calls do not import SciPy (a third of a second) for it.
ERF_BY_LIBM = 1 << 16
_libm_erf = np.frompyfunc(math.erf, 1, 1)


def _erf(x):
    """erf of a number or an array: C's erf (math.erf) entry by entry for numbers and arrays of
    up to ERF_BY_LIBM entries; SciPy's erf ufunc for larger arrays and dask arrays, SciPy
    imported at the first of those (it costs a third of a second)."""
    if isinstance(x, (float, int, np.floating, np.integer)):
        return m.real_type(x)(math.erf(x))
    if isinstance(x, np.ndarray) and x.size <= ERF_BY_LIBM:
        return _libm_erf(x).astype(x.dtype) if x.ndim else x.dtype.type(math.erf(x))
    from scipy import special

    return special.erf(x)


def _running_sum_adjoint(node, g):
    """cumsum(x, k)'s adjoint: g summed along k from each position to the end, written as the
    whole sum less the running sum before it (Σ_{j ≥ i} g_j = Σ_j g_j − Σ_{j ≤ i} g_j + g_i)."""
    total = p(node, "spread", p(node, "sumalong", g, attrs=node.attrs), g, attrs=node.attrs)
    return p(node, "add", p(node, "sub", total, p(node, "cumsum", g, attrs=node.attrs)), g)


def _product_adjoint(x, g, axis: int):
    """The adjoint of x in cumprod(x, k), given g: Σ_{j ≥ i} g_j ∏_{l ≤ j, l ≠ i} x_l, exact
    where x holds zeros (no division by x): the product of the entries before i times r_i,
    where r_i = g_i + x_{i+1} · r_{i+1} runs backwards from the last position."""
    xs, gs = np.moveaxis(x, axis, 0), np.moveaxis(g, axis, 0)
    n = xs.shape[0]
    if n == 0:
        return np.zeros(np.shape(x), m.dtype_of(x, g))
    after = [gs[n - 1]]
    for i in range(n - 2, -1, -1):
        after.append(gs[i] + xs[i + 1] * after[-1])
    after.reverse()
    parts, before = [], np.ones(xs.shape[1:], m.dtype_of(x))
    for i in range(n):
        parts.append(before * after[i])
        before = before * xs[i]
    return np.moveaxis(np.stack(parts), 0, axis)


_STATIC = frozenset({"static"})
_LAZY = frozenset({"lazy"})

#: The primitives a .hb program calls by name.
PRIMITIVES: dict[str, Primitive] = {row.name: row for row in [
    _row("exp", 1, "unary", np.exp, derivative=_slope(lambda n, x: n),
         code="K.exp({})", host_code="np.exp({})", fast_code="K.exp_fast({})"),
    _row("ln", 1, "unary", np.log, derivative=_slope(lambda n, x: p(n, "div", c(n, 1.0), x)),
         code="K.log({})", host_code="np.log({})"),
    _row("sqrt", 1, "unary", np.sqrt, derivative=_slope(lambda n, x: p(n, "div", c(n, 0.5), n)),
         code="np.sqrt({})"),
    _row("tanh", 1, "unary", np.tanh,
         derivative=_slope(lambda n, x: p(n, "sub", c(n, 1.0), p(n, "pow", n, c(n, 2.0)))),
         code="K.tanh({})", host_code="np.tanh({})", fast_code="K.tanh_fast({})"),
    _row("sin", 1, "unary", np.sin, derivative=_slope(lambda n, x: p(n, "cos", x)),
         code="np.sin({})"),
    _row("cos", 1, "unary", np.cos, derivative=_slope(lambda n, x: p(n, "neg", p(n, "sin", x))),
         code="np.cos({})"),
    _row("tan", 1, "unary", np.tan,
         derivative=_slope(lambda n, x: p(n, "add", c(n, 1.0), p(n, "pow", n, c(n, 2.0)))),
         code="np.tan({})"),
    _row("abs", 1, "unary", np.abs,
         derivative=_slope(lambda n, x: p(n, "sub", p(n, "gt", x, c(n, 0.0)),
                                          p(n, "lt", x, c(n, 0.0)))),
         code="np.abs({})", whole=(0,)),
    # conj, re and im: on a real value (what compiled code computes: it is float64) the
    # value, the value and 0; on complex values NumPy's, on every host
    _row("conj", 1, "unary", np.conj, derivative=_slope(lambda n, x: c(n, 1.0)), code="({})"),
    _row("re", 1, "unary", np.real, derivative=_slope(lambda n, x: c(n, 1.0)), code="({})"),
    _row("im", 1, "unary", np.imag, derivative=d.zero, code="0.0"),
    _row("floor", 1, "unary", np.floor, traits=_STATIC, derivative=d.zero, code="np.floor({})",
         whole=(0,)),
    _row("erf", 1, "unary", _erf,
         derivative=_slope(lambda n, x: p(n, "mul", c(n, 2.0 / math.sqrt(math.pi)),
                                          p(n, "exp", p(n, "neg", p(n, "pow", x, c(n, 2.0)))))),
         code="K.erf({})"),
    _row("max", 2, "binary", np.maximum, traits=_STATIC, derivative=d.extreme("max"),
         code="K.fmax({}, {})", host_code="np.maximum({}, {})", whole=(0, 1)),
    _row("min", 2, "binary", np.minimum, traits=_STATIC, derivative=d.extreme("min"),
         code="K.fmin({}, {})", host_code="np.minimum({}, {})", whole=(0, 1)),
    _row("maximum", 2, "reduce", np.max, axis_arg=1, derivative=d.reduce_extreme, whole=(0,)),
    _row("minimum", 2, "reduce", np.min, axis_arg=1, derivative=d.reduce_extreme, whole=(0,)),
    _row("cumsum", 2, "scan", np.cumsum, axis_arg=1, derivative=lambda node, g, position: (
        _running_sum_adjoint(node, g))),
    _row("cumprod", 2, "scan", np.cumprod, axis_arg=1, derivative=lambda node, g, position: (
        p(node, "productadjoint", node.args[0], g, attrs=node.attrs))),
    _row("argmax", 2, "argreduce", axis_arg=1),
    _row("argmin", 2, "argreduce", axis_arg=1),
    _row("rows", 1, "size", axis=0, traits=_STATIC, meaning=m.measured(0), derivative=d.zero,
         whole=()),
    _row("columns", 1, "size", axis=1, traits=_STATIC, meaning=m.measured(1), derivative=d.zero,
         whole=()),
    _row("positions", 2, "positions", axis_arg=1, meaning=m.positions, derivative=d.zero, whole=()),
    _row("oneHot", 2, "onehot", meaning=m.encoded, dask=m.lazy_encoded, derivative=d.zero,
         counts=(0,)),
    _row("concat", 3, "concat", axis_arg=2, meaning=m.joined, dask=m.lazy_join,
         derivative=d.concat, whole=(0, 1)),
    _row("gaussian", 1, "draw", attrs=1),
    _row("uniform", 1, "draw", attrs=1),
    # counter-based draws anywhere (compiler/ops/draws.py); uniform and gaussian with three
    # arguments are these (KEYED), bernoulli(p, key, step, x) is uniform(key, step, x) < p
    _row("permutation", 3, "random", meaning=m.keyed(draws.permutation),
         dask=m.lazy_keyed(draws.permutation), shape=sh.shuffled, derivative=d.zero, counts=(0, 1)),
    _row("bernoulli", 4, "rewritten"),  # (never in IR: resolve writes it as above)
]}

#: Operators, by their ASCII spelling in the syntax tree, as primitive ops of the IR.
OPERATORS: dict[str, Primitive] = {
    "+": _row("add", 2, "binary", np.add, traits=_STATIC, derivative=d.add, code="({} + {})",
              whole=(0, 1)),
    "-": _row("sub", 2, "binary", np.subtract, traits=_STATIC, derivative=d.sub,
              code="({} - {})", whole=(0, 1)),
    "*": _row("mul", 2, "binary", np.multiply, traits=_STATIC, derivative=d.mul,
              code="({} * {})", whole=(0, 1)),
    # uncompiled code computes on NumPy float64 scalars, which are IEEE (x/0 is inf); Python
    # floats would raise ZeroDivisionError instead
    "/": _row("div", 2, "binary", np.divide, traits=_STATIC, derivative=d.div,
              code="({} / {})", host_code="np.true_divide({}, {})"),
    # x ^ y is np.power of each pair of scalars (meanings.power), K.power in compiled code
    "^": _row("pow", 2, "binary", np.power, traits=_STATIC, meaning=m.raised,
              dask=m.lazy_power, derivative=d.pow_, code="K.power({}, {})",
              host_code="np.power({}, {})"),
    # a mod b = a − b⌊a/b⌋ (the sign of b, as NumPy's and Python's %) and a div b = ⌊a/b⌋,
    # exact for whole numbers (fmod underneath, never a rounded quotient)
    "mod": _row("mod", 2, "binary", np.mod, traits=_STATIC, derivative=d.modulo,
                code="({} % {})", host_code="np.mod({}, {})", whole=(0, 1)),
    "div": _row("floordiv", 2, "binary", np.floor_divide, traits=_STATIC, derivative=d.zero,
                code="({} // {})", host_code="np.floor_divide({}, {})", whole=(0, 1)),
    "neg": _row("neg", 1, "unary", np.negative, traits=_STATIC, derivative=d.negate,
                code="(-{})", whole=(0,)),
    **{symbol: _row(name, 2, "compare", function, derivative=d.zero,
                    code=f"(1.0 if {{}} {python} {{}} else 0.0)", whole=())
       for symbol, name, function, python in [
           ("=", "eq", np.equal, "=="), ("!=", "ne", np.not_equal, "!="),
           ("<", "lt", np.less, "<"), (">", "gt", np.greater, ">"),
           ("<=", "le", np.less_equal, "<="), (">=", "ge", np.greater_equal, ">=")]},
}

#: Ops the compiler introduces itself; no .hb text can name them (x[t] and x[a:b] are syntax).
INTERNAL: dict[str, Primitive] = {row.name: row for row in [
    # uniform(key, step, x) and gaussian(key, step, x): counter-based draws shaped like x
    _row("keyeduniform", 3, "random", meaning=m.keyed(draws.uniform),
         dask=m.lazy_keyed(draws.uniform), derivative=d.zero, counts=(0, 1)),
    _row("keyedgaussian", 3, "random", meaning=m.keyed(draws.gaussian),
         dask=m.lazy_keyed(draws.gaussian), derivative=d.zero, counts=(0, 1)),
    # shift(x, w1, …, wm) [axis, coefs, const]: x read at axis index const + Σ coefs·(new
    # indices), zero outside x; the new axes (sizes len(w1) … len(wm)) come last. See masks.py.
    _row("shift", -1, "shift", attrs=3, meaning=m.shifted, dask=m.lazy_shift,
         derivative=d.refused, whole=(0,)),
    # take(x, t)[axis, coef, const]: x at the position s along `axis` with coef·s + const = t
    # (coef ±1, const whole; that axis dropped), zeros where there is none: an einsum against
    # the one-hot [coef·s + const = t] of a scalar t. See masks.py.
    _row("take", 2, "take", attrs=3, meaning=m.taken, dask=m.lazy_take, derivative=d.refused,
         whole=(0,), counts=(1,)),
    # index(x, t): x[t], the slice t along the first axis; slice(x, a, b): x[a:b].
    _row("index", 2, "index", meaning=m.indexed, dask=m.lazy_index, derivative=d.index,
         whole=(0,), counts=(1,)),
    _row("slice", 3, "slice", meaning=m.sliced, dask=m.lazy_slice, derivative=d.slice_,
         whole=(0,), counts=(1, 2)),
    # What derivatives are made of (compiler/passes/derivative.py), each polymorphic in rank:
    # sumto(g, like): g summed down to like's shape (like a scalar) or g itself (same shape);
    # spread(g, like)[k]: g repeated along a new axis k to like's shape; sumalong(x)[k]: the
    # sum over axis k; place(g, like, t)[block]: zeros shaped like `like` with g at slice t (or
    # from row t on, a block); cut(g, a, b)[k, which]: the part of g along axis k that came
    # from a (which = 0) or b (1) in concat(a, b, k); coordinate(x)[k]: each entry's index along
    # axis k; gradient(of, g): g, once `of` is checked to be a scalar.
    _row("sumto", 2, "sumto", shape=sh.sumto, meaning=m.summed_to, dask=m.lazy_summed_to,
         derivative=d.sumto, lower=lowering.sumto, whole=(0,)),
    _row("spread", 2, "spread", attrs=1, shape=sh.spread, meaning=m.spread,
         dask=m.lazy_spread, derivative=d.spread, lower=lowering.spread, whole=(0,)),
    _row("sumalong", 1, "reduce", np.sum, attrs=1, derivative=d.sumalong,
         lower=lowering.sumalong),
    _row("place", 3, "place", attrs=1, shape=sh.place, meaning=m.placed, dask=m.lazy_placed,
         derivative=d.refused, whole=(0,), counts=(2,)),
    _row("cut", 3, "cut", attrs=2, traits=_LAZY, shape=sh.cut, meaning=m.cut,
         derivative=d.refused),
    _row("coordinate", 1, "coordinate", attrs=1, shape=sh.coordinate, meaning=m.coordinate,
         dask=m.lazy_coordinate, derivative=d.zero, lower=lowering.coordinate, whole=()),
    _row("gradient", 2, "gradient", traits=_LAZY, shape=sh.gradient, meaning=m.adjoint,
         derivative=d.refused, lower=lowering.gradient),
    # productadjoint(x, g)[k]: the adjoint of x in cumprod(x, k), given g, the adjoint of the
    # running products (what cumprod's derivative is written with).
    _row("productadjoint", 2, "scan", attrs=1, derivative=d.refused,
         meaning=lambda node, args: _product_adjoint(*args, *node.attrs)),
]}

#: Every IR op name to its row, operators and named primitives alike.
BY_OP: dict[str, Primitive] = {**PRIMITIVES, **{p.name: p for p in OPERATORS.values()}, **INTERNAL}

#: How each op is written back in .hb, for printers and messages.
SPELLING: dict[str, str] = ({p.name: sym for sym, p in OPERATORS.items()}
                            | {"neg": "−", "index": "x[t]", "slice": "x[a:b]",
                               "keyeduniform": "uniform", "keyedgaussian": "gaussian"})
#: The draws that take (key, step, x) where an initialiser's take (seed): by name, their op.
KEYED = {"uniform": "keyeduniform", "gaussian": "keyedgaussian"}

_UNICODE = {"-": "−", "*": "·", "!=": "≠", "<=": "≤", ">=": "≥"}


def having(trait: str) -> frozenset[str]:
    """The ops with `trait` (one of TRAITS)."""
    assert trait in TRAITS, trait
    return frozenset(op for op, row in BY_OP.items() if trait in row.traits)


def spoken(op: str) -> str:
    """An op as messages name it: `exp`, `x[t]`, `the operator ·`."""
    name = SPELLING.get(op, op)
    if op in _OPERATOR_NAMES:
        return f"the operator {_UNICODE.get(name, name)}"
    return name


_OPERATOR_NAMES = frozenset(row.name for row in OPERATORS.values())


#: What argmax and argmin push an entry that is not the extreme by: a whole number past every
#: position, so that all of their IR counts (compiler/counting.py) and a float32 call finds
#: the first extreme past 2²⁴ entries too. A line holding NaN has this as its first position.
NO_POSITION = 2.0 ** 53


def arg_extreme(op: str, x, axis: int, span):
    """argmax(x, k) (or argmin) as IR: a 0/1 tensor shaped like x marking, along axis k, the
    first entry equal to the largest (smallest); a line holding NaN has no mark."""
    from hilbert.compiler import ir

    def prim(name, *args, attrs=()):
        return ir.Prim(name, args, attrs, span)

    reduce = "maximum" if op == "argmax" else "minimum"
    best = prim(reduce, x, attrs=(axis,))
    marks = prim("eq", x, prim("spread", best, x, attrs=(axis,)))
    where = prim("coordinate", x, attrs=(axis,))
    # positions of the marked entries as they are, every other entry pushed past them all
    pushed = prim("add", where, prim("mul", prim("sub", ir.Const(1.0, span), marks),
                                     ir.Const(NO_POSITION, span)))
    first = prim("minimum", pushed, attrs=(axis,))
    return prim("eq", where, prim("spread", first, x, attrs=(axis,)))
