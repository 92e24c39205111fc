"""The op table: one row per primitive of LANGUAGE.md §5, operator and internal op, holding
everything the compiler and the executors know of it: its arity and axis arguments, its shape
rule (compiler/ops/shape_rules.py) and axes rule (compiler/ops/axes.py), its derivative rule
(compiler/ops/derivative_rules.py) and tangent rule (compiler/ops/tangent_rules.py), its NumPy
meaning and dask meaning (compiler/ops/meanings.py), its JAX meaning's name
(executor/jax/meanings.py), its code in generated loops, the form compiled code writes it in
(the code generator's lowering of each form: executor/codegen/forms.py) and, for a reduction,
how compiled loops combine it and start it, and its traits. Every set of
ops a pass needs is derived from the traits here (`having`); a new primitive is one row
(docs/architecture.md, "The op table"), and tests/test_op_table.py checks every column of
every row."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from . import axes as ax
from . import derivative_rules as d
from . import draws, lowering, table
from . import loop_code as lc
from . import meanings as m
from . import shape_rules as sh
from . import tangent_rules as t
from .derivative_rules import c, p

#: The traits an op may have:
#: entrywise - its value at an index reads its arguments at that index only (fused freely);
#: movable - reads values only and cannot fail (a loop may compute it once, before itself);
#: shapes_only - reads only its argument's shape (never worth keeping as loop state);
#: compiled - generated code computes it (ops without it run on the host, between kernels);
#: static - known from shapes when its arguments are (slice bounds, class counts);
#: lazy - its NumPy meaning works on dask arrays as it is (no `dask` meaning needed).
TRAITS = frozenset({"entrywise", "movable", "shapes_only", "compiled", "static", "lazy"})
#: How compiled code writes an op (its row's `form`), each with the role that form plays there
#: (compiler/plan/fusion.py's): `member`, a value computed at each index of a loop nest (a scalar
#: statement where it has no axes); `tail`, a reduction folded into the nest that computes its
#: argument; `generator`, a value of its index alone, inlined where read; `size`, `view` (x[t],
#: x[a:b]), `onehot` and `random` their own code. The code generator registers one lowering
#: per form (executor/codegen/forms.py), so an op of a form already here is one row.
FORMS: dict[str, str] = {
    "code": "member",  # the row's `code` (spelled per tier) applied to its arguments
    "shifted": "member",  # x read at positions made from the new indices (shift)
    "taken": "member",  # x read at the position a scalar names (take)
    "fold": "tail",  # entries folded by the row's `combine` from its `start`
    "position": "generator",  # the index along an axis (positions)
    "size": "size",  # one of x's axis sizes
    "indexed": "view",  # x[t], checked
    "sliced": "view",  # x[a:b]
    "onehot": "onehot",  # oneHot(labels, k), labels checked
    "draw": "random",  # counter-based draws by the draw kernel
}
ROLES = frozenset(FORMS.values())


@dataclass(frozen=True, slots=True)
class Primitive:
    """One row of the table. `kind` names the family the row's defaults come from (_KINDS);
    `code` is the row's lowering in generated loops, as data (compiler/ops/loop_code.py: an
    expression over its arguments, of any float dtype; the code generator spells each of its
    functions per tier, compiled, host or fast maths). A reduction compiled
    as a `tail` folds each entry into its accumulator with the entrywise op `combine`, from
    `start`. `jax` names the row's JAX meaning: `jnp.…` or `lax.…`, the twin of its NumPy
    function, made a meaning as its family makes the NumPy one; a bare name, a meaning of
    executor/jax/meanings.py (resolved when the JAX executor is imported)."""

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
    tangent: t.TangentRule | None = None  # the forward rule (Jacobian-vector products)
    meaning: m.Meaning | None = None
    dask: m.LazyMeaning | None = None  # on dask arrays, where the NumPy meaning is not lazy
    jax: str | None = None
    form: str | None = None  # how compiled code writes it (one of FORMS; None: not compiled)
    axes: ax.AxesRule = ax.first_shaped
    combine: str | None = None
    start: float | None = None
    empty: float | None = None  # a reduction's value over nothing (None: undefined, E317)
    code: lc.Form | None = None
    lower: Callable | None = None  # once shapes are known, written as einsums (lowering.py)
    # counting (compiler/counting.py): `whole` names the arguments whose being whole numbers
    # makes the value one, counted exactly in float64 in every call (() for a value always
    # whole: a size, positions; None for data); `counts` the arguments read as whole numbers
    # (a position, a draw's key and step), never rounded to the call's dtype
    whole: tuple[int, ...] | None = None
    counts: tuple[int, ...] = ()
    # how many leading arguments' values it reads (None: every argument's); the rest give only
    # their shapes (a draw's x, a shift's windows; 0: a size, positions)
    values: int | None = None

    @property
    def role(self) -> str | None:
        """What compiled code makes of it (one of ROLES; None: not compiled): its form's."""
        return None if self.form is None else FORMS[self.form]


def _along(node, args: list, shapes: dict):
    """x's own shape, for an op that runs along an axis x has (a running sum)."""
    sh.axis_of(node, args[0], "runs along")
    return args[0]


@dataclass(frozen=True, slots=True)
class _Family:
    """A family's defaults: traits, shape rule, the meaning made from a row's NumPy function,
    the tangent rule made from its derivative rule, its form and axes in compiled code, and how
    many leading arguments' values it reads."""

    traits: frozenset[str] = frozenset()
    shape: Callable | None = None
    meaning: Callable[[Callable], m.Meaning] | None = None
    tangent: Callable[[d.Rule], t.TangentRule] | None = None
    form: str | None = None
    axes: ax.AxesRule = ax.first_shaped
    values: int | None = None


_ENTRYWISE = frozenset({"entrywise", "movable", "compiled", "lazy"})
_MEASURED = frozenset({"movable", "shapes_only", "compiled", "lazy"})


def _always(rule: t.TangentRule) -> Callable[[d.Rule], t.TangentRule]:
    return lambda derivative: rule


#: Each family's defaults, by kind (a row of a kind not here takes _Family()'s).
_KINDS: dict[str, _Family] = {
    "unary": _Family(_ENTRYWISE, sh.same, m.entrywise, t.entrywise, "code"),
    "binary": _Family(_ENTRYWISE, sh.pair, m.entrywise, t.entrywise, "code"),
    "compare": _Family(_ENTRYWISE, sh.pair, m.compared, _always(t.flat), "code"),
    "reduce": _Family(frozenset({"movable", "compiled", "lazy"}), sh.reduce, m.reduced,
                      t.through_adjoint, "fold", ax.without_axis),
    "scan": _Family(frozenset({"movable", "lazy"}), _along, m.reduced),
    "argreduce": _Family(frozenset({"movable"}), tangent=_always(t.flat)),
    "size": _Family(_MEASURED, sh.size, tangent=_always(t.flat), form="size", axes=ax.no_axes,
                    values=0),
    "positions": _Family(_MEASURED, sh.positions, tangent=_always(t.flat), form="position",
                         axes=ax.axis_alone, values=0),
    "onehot": _Family(frozenset({"compiled"}), sh.onehot, tangent=_always(t.flat),
                      form="onehot"),
    "concat": _Family(frozenset({"movable"}), sh.concat, tangent=_always(t.joined)),
    "draw": _Family(frozenset(), sh.draw, tangent=_always(t.flat)),
    # (not movable: a bad key raises E512, so a draw stays in the loop that makes it)
    "random": _Family(frozenset({"compiled"}), sh.keyed, tangent=_always(t.flat), form="draw",
                      values=2),
    "shift": _Family(frozenset({"movable", "compiled"}), sh.shift, tangent=_always(t.linear),
                     form="shifted", axes=ax.shifted, values=1),
    "take": _Family(frozenset({"movable", "compiled"}), sh.take, tangent=_always(t.linear),
                    form="taken", axes=ax.without_axis),
    "index": _Family(frozenset({"compiled"}), sh.index, tangent=_always(t.linear),
                     form="indexed", axes=ax.after_first),
    "slice": _Family(frozenset({"compiled"}), sh.slice_, tangent=_always(t.linear),
                     form="sliced"),
    "coordinate": _Family(tangent=_always(t.flat)),
}
#: The families whose rows' NumPy meanings (and JAX meanings named `jnp.…`) are made from the
#: row's NumPy function (its JAX twin).
FROM_FUNCTION = frozenset(kind for kind, family in _KINDS.items() if family.meaning is not None)


def _row(name: str, arity: int, kind: str, numpy: Callable | None = None, *,
         traits: frozenset[str] = frozenset(), meaning: m.Meaning | None = None,
         shape: Callable | None = None, axis_arg: int | None = None,
         tangent: t.TangentRule | None = None, **fields) -> Primitive:
    """A row, its traits, shape rule, meanings, tangent rule, form, axes and values read
    completed from its family's defaults (a row that is never differentiated has tangent zero)."""
    family = _KINDS.get(kind, _Family())
    if meaning is None and family.meaning is not None and numpy is not None:
        meaning = family.meaning(numpy)
    derivative = fields.get("derivative")
    if tangent is None:
        tangent = (t.flat if derivative is None else
                   family.tangent(derivative) if family.tangent is not None else None)
    if axis_arg is not None:
        fields.setdefault("attrs", 1)
    fields.setdefault("form", family.form)
    fields.setdefault("axes", family.axes)
    fields.setdefault("values", family.values)
    return Primitive(name, arity, kind, numpy, axis_arg=axis_arg, traits=family.traits | traits,
                     meaning=meaning, shape=shape or family.shape, tangent=tangent, **fields)


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


def _product_adjoint_rule(node, g, position):
    """product(x, k)'s adjoint: g times the product of the line's other entries, exact where x
    holds zeros (no division by x): cumprod's adjoint (productadjoint) of g placed at the
    line's last entry, Σ_{j ≥ i} g_j ∏_{l ≤ j, l ≠ i} x_l with every g_j but the last 0."""
    x, axis = node.args[0], node.attrs
    ends = p(node, "sub", p(node, "sumalong", d.ones_like(x), attrs=axis), c(node, 1.0))
    last = p(node, "eq", p(node, "coordinate", x, attrs=axis), p(node, "spread", ends, x,
                                                                 attrs=axis))
    at_last = p(node, "mul", p(node, "spread", g, x, attrs=axis), last)
    return p(node, "productadjoint", x, at_last, attrs=axis)


_STATIC = frozenset({"static"})
#: The forward rule of the ops only derivatives make: a forward sweep through them is refused.
_SECOND_ORDER = t.refused("E323", "this value is computed with a derivative; derivatives of "
                          "derivatives are not supported yet")
_LAZY = frozenset({"lazy"})

#: The primitives a .hb program calls by name.
PRIMITIVES: dict[str, Primitive] = {row.name: row for row in [
    _row("exp", 1, "unary", np.exp, jax="jnp.exp", derivative=_slope(lambda n, x: n),
         code=lc.unary("exp")),
    _row("ln", 1, "unary", np.log, jax="jnp.log",
         derivative=_slope(lambda n, x: p(n, "div", c(n, 1.0), x)),
         code=lc.unary("log")),
    _row("sqrt", 1, "unary", np.sqrt, jax="jnp.sqrt",
         derivative=_slope(lambda n, x: p(n, "div", c(n, 0.5), n)), code=lc.unary("sqrt")),
    _row("tanh", 1, "unary", np.tanh, jax="jnp.tanh",
         derivative=_slope(lambda n, x: p(n, "sub", c(n, 1.0), p(n, "pow", n, c(n, 2.0)))),
         code=lc.unary("tanh")),
    _row("sin", 1, "unary", np.sin, jax="jnp.sin",
         derivative=_slope(lambda n, x: p(n, "cos", x)), code=lc.unary("sin")),
    _row("cos", 1, "unary", np.cos, jax="jnp.cos",
         derivative=_slope(lambda n, x: p(n, "neg", p(n, "sin", x))), code=lc.unary("cos")),
    _row("tan", 1, "unary", np.tan, jax="jnp.tan",
         derivative=_slope(lambda n, x: p(n, "add", c(n, 1.0), p(n, "pow", n, c(n, 2.0)))),
         code=lc.unary("tan")),
    _row("abs", 1, "unary", np.abs, jax="jnp.abs",
         derivative=_slope(lambda n, x: p(n, "sub", p(n, "gt", x, c(n, 0.0)),
                                          p(n, "lt", x, c(n, 0.0)))),
         code=lc.unary("abs"), whole=(0,)),
    # conj, re and im: on a real value (what compiled code computes: it is float64) the
    # value, the value and 0; on complex values NumPy's, on every host
    _row("conj", 1, "unary", np.conj, jax="jnp.conj",
         derivative=_slope(lambda n, x: c(n, 1.0)), code=lc.unary("real")),
    _row("re", 1, "unary", np.real, jax="jnp.real",
         derivative=_slope(lambda n, x: c(n, 1.0)), code=lc.unary("real")),
    _row("im", 1, "unary", np.imag, jax="jnp.imag", derivative=d.zero, code=lc.Const(0.0)),
    _row("floor", 1, "unary", np.floor, jax="jnp.floor", traits=_STATIC, derivative=d.zero,
         code=lc.unary("floor"), whole=(0,)),
    _row("erf", 1, "unary", _erf, jax="erf",
         derivative=_slope(lambda n, x: p(n, "mul", c(n, 2.0 / math.sqrt(math.pi)),
                                          p(n, "exp", p(n, "neg", p(n, "pow", x, c(n, 2.0)))))),
         code=lc.unary("erf")),
    _row("max", 2, "binary", np.maximum, jax="jnp.maximum", traits=_STATIC,
         derivative=d.extreme("max"), code=lc.binary("fmax"),
         whole=(0, 1)),
    _row("min", 2, "binary", np.minimum, jax="jnp.minimum", traits=_STATIC,
         derivative=d.extreme("min"), code=lc.binary("fmin"),
         whole=(0, 1)),
    _row("maximum", 2, "reduce", np.max, jax="jnp.max", axis_arg=1, derivative=d.reduce_extreme,
         tangent=t.extreme, combine="max", start=-math.inf, whole=(0,)),
    _row("minimum", 2, "reduce", np.min, jax="jnp.min", axis_arg=1, derivative=d.reduce_extreme,
         tangent=t.extreme, combine="min", start=math.inf, whole=(0,)),
    _row("product", 2, "reduce", np.prod, jax="jnp.prod", axis_arg=1,
         derivative=_product_adjoint_rule, combine="mul", start=1.0, empty=1.0),
    _row("cumsum", 2, "scan", np.cumsum, jax="jnp.cumsum", axis_arg=1, tangent=t.linear,
         derivative=lambda node, g, position: _running_sum_adjoint(node, g)),
    _row("cumprod", 2, "scan", np.cumprod, jax="jnp.cumprod", axis_arg=1,
         derivative=lambda node, g, position: (
             p(node, "productadjoint", node.args[0], g, attrs=node.attrs)),
         tangent=t.refused("E326", "a Jacobian-vector product through cumprod is not supported "
                           "yet (its tangent is a running recurrence with no rule written); "
                           "use vjp, or write the product as a loop")),
    _row("argmax", 2, "argreduce", axis_arg=1),
    _row("argmin", 2, "argreduce", axis_arg=1),
    _row("rows", 1, "size", jax="measured", axis=0, traits=_STATIC, meaning=m.measured(0),
         derivative=d.zero, whole=()),
    _row("columns", 1, "size", jax="measured", axis=1, traits=_STATIC, meaning=m.measured(1),
         derivative=d.zero, whole=()),
    _row("positions", 2, "positions", jax="positions", axis_arg=1, meaning=m.positions,
         derivative=d.zero, whole=()),
    _row("oneHot", 2, "onehot", jax="encoded", meaning=m.encoded, dask=m.lazy_encoded,
         derivative=d.zero, counts=(0,)),
    _row("concat", 3, "concat", jax="joined", axis_arg=2, meaning=m.joined, dask=m.lazy_join,
         derivative=d.concat, whole=(0, 1)),
    _row("gaussian", 1, "draw", attrs=1),
    _row("uniform", 1, "draw", attrs=1),
    # counter-based draws anywhere (compiler/ops/draws.py); uniform and gaussian with three
    # arguments are these (KEYED), bernoulli(p, key, step, x) is uniform(key, step, x) < p
    _row("permutation", 3, "random", jax="keyed_permutation", meaning=m.keyed(draws.permutation),
         dask=m.lazy_keyed(draws.permutation), shape=sh.shuffled, derivative=d.zero,
         counts=(0, 1)),
    _row("bernoulli", 4, "rewritten"),  # (never in IR: resolve writes it as above)
]}

#: Operators, by their ASCII spelling in the syntax tree, as primitive ops of the IR.
OPERATORS: dict[str, Primitive] = {
    "+": _row("add", 2, "binary", np.add, jax="jnp.add", traits=_STATIC, derivative=d.add,
              code=lc.binary("add"), whole=(0, 1)),
    "-": _row("sub", 2, "binary", np.subtract, jax="jnp.subtract", traits=_STATIC,
              derivative=d.sub, code=lc.binary("sub"), whole=(0, 1)),
    "*": _row("mul", 2, "binary", np.multiply, jax="jnp.multiply", traits=_STATIC,
              derivative=d.mul, code=lc.binary("mul"), whole=(0, 1)),
    # uncompiled code computes on NumPy float64 scalars, which are IEEE (x/0 is inf); Python
    # floats would raise ZeroDivisionError instead
    "/": _row("div", 2, "binary", np.divide, jax="jnp.true_divide", traits=_STATIC,
              derivative=d.div, code=lc.binary("div")),
    # x ^ y is np.power of each pair of scalars (meanings.power), K.power in compiled code
    "^": _row("pow", 2, "binary", np.power, jax="raised", traits=_STATIC, meaning=m.raised,
              dask=m.lazy_power, derivative=d.pow_, code=lc.binary("pow")),
    # a mod b = a − b⌊a/b⌋ (the sign of b, as NumPy's and Python's %) and a div b = ⌊a/b⌋,
    # exact for whole numbers (fmod underneath, never a rounded quotient)
    "mod": _row("mod", 2, "binary", np.mod, jax="remainder", traits=_STATIC, derivative=d.modulo,
                code=lc.binary("mod"), whole=(0, 1)),
    "div": _row("floordiv", 2, "binary", np.floor_divide, jax="floor_quotient", traits=_STATIC,
                derivative=d.zero, code=lc.binary("floordiv"),
                whole=(0, 1)),
    "neg": _row("neg", 1, "unary", np.negative, jax="jnp.negative", traits=_STATIC,
                derivative=d.negate, code=lc.unary("neg"), whole=(0,)),
    **{symbol: _row(name, 2, "compare", function, jax=f"jnp.{function.__name__}",
                    derivative=d.zero, code=lc.marks(python), whole=())
       for symbol, name, function, python in [
           ("=", "eq", np.equal, "=="), ("!=", "ne", np.not_equal, "!="),
           ("<", "lt", np.less, "<"), (">", "gt", np.greater, ">"),
           ("<=", "le", np.less_equal, "<="), (">=", "ge", np.greater_equal, ">=")]},
}

#: Ops the compiler introduces itself; no .hb text can name them (x[t] and x[a:b] are syntax).
INTERNAL: dict[str, Primitive] = {row.name: row for row in [
    # uniform(key, step, x) and gaussian(key, step, x): counter-based draws shaped like x
    _row("keyeduniform", 3, "random", jax="keyed_uniform", meaning=m.keyed(draws.uniform),
         dask=m.lazy_keyed(draws.uniform), derivative=d.zero, counts=(0, 1)),
    _row("keyedgaussian", 3, "random", jax="keyed_gaussian", meaning=m.keyed(draws.gaussian),
         dask=m.lazy_keyed(draws.gaussian), derivative=d.zero, counts=(0, 1)),
    # shift(x, w1, …, wm) [axis, coefs, const]: x read at axis index const + Σ coefs·(new
    # indices), zero outside x; the new axes (sizes len(w1) … len(wm)) come last. See masks.py.
    _row("shift", -1, "shift", jax="shifted", attrs=3, meaning=m.shifted, dask=m.lazy_shift,
         derivative=d.refused, whole=(0,)),
    # take(x, t)[axis, coef, const]: x at the position s along `axis` with coef·s + const = t
    # (coef ±1, const whole; that axis dropped), zeros where there is none: an einsum against
    # the one-hot [coef·s + const = t] of a scalar t. See masks.py.
    _row("take", 2, "take", jax="taken", attrs=3, meaning=m.taken, dask=m.lazy_take,
         derivative=d.refused, whole=(0,), counts=(1,)),
    # index(x, t): x[t], the slice t along the first axis; slice(x, a, b): x[a:b].
    _row("index", 2, "index", jax="indexed", meaning=m.indexed, dask=m.lazy_index,
         derivative=d.index, whole=(0,), counts=(1,)),
    _row("slice", 3, "slice", jax="sliced", meaning=m.sliced, dask=m.lazy_slice,
         derivative=d.slice_, whole=(0,), counts=(1, 2)),
    # What derivatives are made of (compiler/passes/derivative.py), each polymorphic in rank:
    # sumto(g, like): g summed down to like's shape (like a scalar) or g itself (same shape);
    # spread(g, like)[k]: g repeated along a new axis k to like's shape; sumalong(x)[k]: the
    # sum over axis k; place(g, like, t)[block]: zeros shaped like `like` with g at slice t (or
    # from row t on, a block); cut(g, a, b)[k, which]: the part of g along axis k that came
    # from a (which = 0) or b (1) in concat(a, b, k); coordinate(x)[k]: each entry's index along
    # axis k; gradient(of, g): g, once `of` is checked to be a scalar. All but coordinate and
    # gradient are linear in their first argument, so that is their tangent rule.
    _row("sumto", 2, "sumto", jax="summed_to", shape=sh.sumto, meaning=m.summed_to,
         dask=m.lazy_summed_to, derivative=d.sumto, tangent=t.linear, lower=lowering.sumto,
         whole=(0,)),
    _row("spread", 2, "spread", jax="spread", attrs=1, shape=sh.spread, meaning=m.spread,
         dask=m.lazy_spread, derivative=d.spread, tangent=t.linear, lower=lowering.spread,
         whole=(0,)),
    _row("sumalong", 1, "reduce", np.sum, jax="jnp.sum", attrs=1, derivative=d.sumalong,
         tangent=t.linear, combine="add", start=0.0, empty=0.0, lower=lowering.sumalong),
    _row("place", 3, "place", jax="placed", attrs=1, shape=sh.place, meaning=m.placed,
         dask=m.lazy_placed, derivative=d.refused, tangent=t.linear, whole=(0,), counts=(2,)),
    _row("cut", 3, "cut", jax="cut", attrs=2, traits=_LAZY, shape=sh.cut, meaning=m.cut,
         derivative=d.refused, tangent=t.linear),
    _row("coordinate", 1, "coordinate", jax="coordinate", attrs=1, shape=sh.coordinate,
         meaning=m.coordinate, dask=m.lazy_coordinate, derivative=d.zero,
         lower=lowering.coordinate, whole=()),
    _row("gradient", 2, "gradient", jax="adjoint", traits=_LAZY, shape=sh.gradient,
         meaning=m.adjoint, derivative=d.refused, tangent=_SECOND_ORDER,
         lower=lowering.gradient),
    # productadjoint(x, g)[k]: the adjoint of x in cumprod(x, k), given g, the adjoint of the
    # running products (what cumprod's derivative is written with).
    _row("productadjoint", 2, "scan", jax="product_adjoint", attrs=1, derivative=d.refused,
         tangent=_SECOND_ORDER, meaning=lambda node, args: _product_adjoint(*args, *node.attrs)),
]}

#: Every IR op name to its row, operators and named primitives alike.
BY_OP: dict[str, Primitive] = table.BY_OP
BY_OP.update({**PRIMITIVES, **{p.name: p for p in OPERATORS.values()}, **INTERNAL})

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
table.SPOKEN[:] = [spoken]


#: What argmax and argmin push an entry that is not the extreme by: a whole number past every
#: position, so that all of their IR counts (compiler/counting.py) and a float32 call finds
#: the first extreme past 2²⁴ entries too. A line holding NaN has this as its first position.
NO_POSITION = 2.0 ** 53


def arg_extreme(op: str, x, axis: int, span):
    """argmax(x, k) (or argmin) as IR: a 0/1 tensor shaped like x marking, along axis k, the
    first entry equal to the largest (smallest); a line holding NaN has no mark."""
    from .. import ir

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
