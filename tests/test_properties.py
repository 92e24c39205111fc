"""Property tests of the core: einsum against numpy.einsum, entrywise programs against NumPy,
and every executor (and so every optimisation: sharing, fusion, paths) against the reference."""

import string

import numpy as np
import pytest
from conftest import EXECUTORS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hilbert

# Each example compiles a new program for every executor (Numba compiles kernels, cached on
# disk afterwards), so the default runs are small; `-m slow` runs thousands.
PROPERTY = settings(max_examples=25, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
SLOW = settings(max_examples=2_000, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

TOLERANCE = {"rtol": 1e-10, "atol": 1e-10, "equal_nan": True}


def compiled(text: str) -> dict:
    """The module compiled once per executor."""
    return {name: hilbert.compile_source(text, executor=name) for name in EXECUTORS}


# Random einsum specifications


@st.composite
def einsums(draw, max_operands: int = 3):
    """(spec, operands): repeated letters within a term (diagonals), across terms
    (contractions), size-1 axes, scalar operands, and any order of output letters."""
    letters = draw(st.lists(st.sampled_from(string.ascii_letters), min_size=1, max_size=5,
                            unique=True))
    sizes = {letter: draw(st.integers(1, 3)) for letter in letters}
    terms = draw(st.lists(st.lists(st.sampled_from(letters), max_size=4).map("".join),
                          min_size=1, max_size=max_operands))
    used = sorted(set("".join(terms)))
    output = "".join(draw(st.permutations(used))[:draw(st.integers(0, len(used)))])
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    operands = [rng.standard_normal(tuple(sizes[c] for c in term)) for term in terms]
    return ",".join(terms) + "->" + output, operands


def einsum_source(spec: str, count: int) -> str:
    params = ", ".join(f"a{i}" for i in range(count))
    return f'fn f({params}) ↦ einsum("{spec}", {params})'


def check_einsum(spec, operands):
    want = np.einsum(spec, *operands)
    for name, mod in compiled(einsum_source(spec, len(operands))).items():
        got = mod.f(*operands)
        np.testing.assert_allclose(got, want, **TOLERANCE, err_msg=f"{name}: {spec}")
        assert np.shape(got) == np.shape(want)


@settings(PROPERTY, max_examples=20)
@given(einsums())
def test_einsum_agrees_with_numpy(case):
    check_einsum(*case)


@st.composite
def einsum_chains(draw):
    """einsum(s2, einsum(s1, a, b), c): the fused program must equal the two-step one."""
    spec1, (a, b) = draw(einsums(max_operands=2).filter(lambda c: len(c[1]) == 2))
    inner = spec1.split("->")[1]
    spare = [c for c in string.ascii_lowercase if c not in spec1][:2]
    terms = spec1.split("->")[0].split(",")
    size = {c: n for term, op in zip(terms, (a, b), strict=True) for c, n in zip(term, op.shape, strict=True)}
    third = "".join(draw(st.lists(st.sampled_from(sorted(set(inner)) + spare), max_size=3)))
    size.update({c: 2 for c in spare})
    used = sorted(set(inner + third))
    output = "".join(draw(st.permutations(used))[:draw(st.integers(0, len(used)))])
    c = np.random.default_rng(draw(st.integers(0, 1000))).standard_normal(tuple(size[x] for x in third))
    return spec1, f"{inner},{third}->{output}", a, b, c


@settings(PROPERTY, max_examples=15)
@given(einsum_chains())
def test_nested_einsums_agree_with_numpy(case):
    spec1, spec2, a, b, c = case
    want = np.einsum(spec2, np.einsum(spec1, a, b), c)
    text = f'fn f(a, b, c) ↦ einsum("{spec2}", einsum("{spec1}", a, b), c)'
    for name, mod in compiled(text).items():
        np.testing.assert_allclose(mod.f(a, b, c), want, **TOLERANCE, err_msg=f"{name}: {text}")


@pytest.mark.parametrize("spec, shapes", [
    ("ii->i", [(3, 3)]), ("iij->j", [(2, 2, 3)]), ("ii->", [(1, 1)]), ("i,i->i", [(1,), (1,)]),
    ("ij,jk,kl,lm->im", [(2, 3), (3, 1), (1, 4), (4, 2)]), ("->", [()]), (",->", [(), ()]),
    ("abc->cab", [(1, 2, 3)]), ("aA->Aa", [(2, 3)]), ("i,j,k->ijk", [(2,), (1,), (3,)]),
])
def test_einsum_edge_cases(spec, shapes, rng):
    check_einsum(spec, [rng.standard_normal(s) for s in shapes])


# Random entrywise programs


BINARY = {"+": np.add, "−": np.subtract, "·": np.multiply, "/": np.divide, "^": np.power}
COMPARE = {"=": np.equal, "≠": np.not_equal, "<": np.less, ">": np.greater, "≤": np.less_equal,
           "≥": np.greater_equal}
UNARY = {"exp": np.exp, "tanh": np.tanh, "abs": np.abs, "sin": np.sin, "cos": np.cos,
         "floor": np.floor, "sqrt": np.sqrt, "ln": np.log}


def scalar_expressions():
    leaves = st.one_of(st.just(("s",)), st.sampled_from([0.0, 1.0, 0.5, 3.0]).map(lambda v: ("const", v)))
    return st.recursive(leaves, lambda inner: st.one_of(
        st.tuples(st.just("cmp"), st.sampled_from(sorted(COMPARE)), inner, inner),
        st.tuples(st.just("bin"), st.sampled_from(["+", "−", "·"]), inner, inner),
    ), max_leaves=4)


def entrywise_expressions():
    leaves = st.one_of(st.sampled_from([("x",), ("y",), ("s",)]),
                       st.sampled_from([0.0, 1.0, 2.0, 0.5, 1e-3]).map(lambda v: ("const", v)))
    return st.recursive(leaves, lambda inner: st.one_of(
        st.tuples(st.just("bin"), st.sampled_from(sorted(BINARY)), inner, inner),
        st.tuples(st.just("cmp"), st.sampled_from(sorted(COMPARE)), inner, inner),
        st.tuples(st.just("un"), st.sampled_from(sorted(UNARY)), inner),
        st.tuples(st.just("neg"), inner),
        st.tuples(st.just("sq"), inner),
        st.tuples(st.sampled_from(["max", "min"]), inner, inner),
        st.tuples(st.just("if"), scalar_expressions(), inner, inner),
    ), max_leaves=10)


def source(e) -> str:
    """The .hb text of an expression tree (fully parenthesised)."""
    match e:
        case (name,):
            return name
        case ("const", v):
            return repr(v)
        case ("bin", op, l, r) | ("cmp", op, l, r):
            return f"({source(l)} {op} {source(r)})"
        case ("un", f, a):
            return f"{f}({source(a)})"
        case ("neg", a):
            return f"(−{source(a)})"
        case ("sq", a):
            return f"({source(a)})²"
        case (("max" | "min") as f, l, r):
            return f"{f}({source(l)}, {source(r)})"
        case ("if", c, a, b):
            # `+ 0 · x` gives both branches the shape of x, as if requires.
            return f"(if {source(c)} then {source(a)} + 0 · x else {source(b)} + 0 · x)"
    raise AssertionError(e)


def evaluate(e, env):
    """NumPy's value of an expression tree."""
    match e:
        case (name,):
            return env[name]
        case ("const", v):
            return np.float64(v)
        case ("bin", op, l, r):
            return BINARY[op](evaluate(l, env), evaluate(r, env))
        case ("cmp", op, l, r):
            return COMPARE[op](evaluate(l, env), evaluate(r, env)).astype(np.float64)
        case ("un", f, a):
            return UNARY[f](evaluate(a, env))
        case ("neg", a):
            return -evaluate(a, env)
        case ("sq", a):
            return np.power(evaluate(a, env), 2.0)
        case ("max", l, r):
            return np.maximum(evaluate(l, env), evaluate(r, env))
        case ("min", l, r):
            return np.minimum(evaluate(l, env), evaluate(r, env))
        case ("if", c, a, b):
            zero = 0 * env["x"]
            return evaluate(a, env) + zero if evaluate(c, env) != 0 else evaluate(b, env) + zero
    raise AssertionError(e)


@st.composite
def entrywise_cases(draw):
    shape = draw(st.sampled_from([(), (1,), (3,), (2, 3), (1, 1, 2)]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    values = [-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0]
    env = {"x": rng.choice(values, size=shape) + rng.standard_normal(shape) * draw(st.sampled_from([0, 1])),
           "y": rng.standard_normal(shape) * 2,
           "s": float(draw(st.sampled_from(values)))}
    return draw(entrywise_expressions()), env


def check_entrywise(case):
    expression, env = case
    text = f"fn f(x, y, s) ↦ {source(expression)}"
    with np.errstate(all="ignore"):
        want = evaluate(expression, env)
    for name, mod in compiled(text).items():
        got = mod.f(env["x"], env["y"], env["s"])
        np.testing.assert_allclose(got, want, **TOLERANCE, err_msg=f"{name}: {text}")


@PROPERTY
@given(entrywise_cases())
def test_entrywise_programs_agree_with_numpy(case):
    check_entrywise(case)


@pytest.mark.slow
@SLOW
@given(entrywise_cases())
def test_entrywise_programs_agree_with_numpy_slow(case):
    check_entrywise(case)


@pytest.mark.slow
@SLOW
@given(einsums())
def test_einsum_agrees_with_numpy_slow(case):
    check_einsum(*case)


# Executors against the reference


LOOPS = """
def descend(t, r, a, x, b) ≔
  if t = 0 then x else descend(t − 1, r, a, x − r · einsum("ji,j->i", a, einsum("ij,j->i", a, x) − b), b)
fn solve(t, r, a, x, b) ↦ descend(t, r, a, x, b)
def halve(x, k) ≔ if einsum("ij->", abs(x)) < k then x else halve(x / 2, k)
fn shrink(x, k) ↦ halve(x, k)
fn twice(t, r, a, x, b) ↦ descend(t, r, a, x, b) + descend(t, r, a, x, b)
fn chain(a, b, c, d) ↦ einsum("ij,jk->ik", einsum("ij,jk->ik", a, b), einsum("ij,jk->ik", c, d))
fn gated(s, a, b) ↦ if s > 0 then einsum("ij,jk->ik", a, b) else einsum("ij,kj->ik", a, b)
"""


@pytest.fixture(scope="module")
def loops():
    return compiled(LOOPS)


def numpy_descend(t, r, a, x, b):
    for _ in range(t):
        x = x - r * (a.T @ (a @ x - b))
    return x


def numpy_halve(x, k):
    while np.sum(np.abs(x)) >= k:
        x = x / 2
    return x


@settings(PROPERTY, max_examples=12)
@given(st.integers(1, 3), st.integers(1, 3), st.integers(0, 30), st.integers(0, 2**32 - 1))
def test_executors_agree_on_loops_and_chains(loops, n, p, steps, seed):
    """Every executor against NumPy written here (so also against each other)."""
    rng = np.random.default_rng(seed)
    a, x, b = rng.standard_normal((n, p)), rng.standard_normal(p), rng.standard_normal(n)
    m = rng.standard_normal((p, p))
    descended = numpy_descend(steps, 0.05, a, x, b)
    calls = [("solve", (steps, 0.05, a, x, b), descended),
             ("twice", (steps, 0.05, a, x, b), 2 * descended),
             ("shrink", (a, 0.1), numpy_halve(a, 0.1)), ("chain", (a, m, m, m), a @ m @ (m @ m)),
             ("gated", (1.0, a, m), a @ m), ("gated", (-1.0, a, m), a @ m.T)]
    for name, args, want in calls:
        for executor, mod in loops.items():
            np.testing.assert_allclose(getattr(mod, name)(*args), want, **TOLERANCE,
                                       err_msg=f"{executor}: {name}")


NETWORKS = {name: hilbert.open("Prelude.Networks", executor=name) for name in EXECUTORS}


def numpy_mlp_fit(t, r, x, y, w1, w2):
    """Prelude.Networks' mlpFit: t steps of full-batch descent on ½n‖relu(X W1) W2 − Y‖²."""
    for _ in range(t):
        pre = x @ w1
        out_delta = (np.maximum(pre, 0) @ w2 - y) / len(x)
        hid_delta = (out_delta @ w2.T) * (pre > 0)
        w1, w2 = w1 - r * (x.T @ hid_delta), w2 - r * (np.maximum(pre, 0).T @ out_delta)
    return np.maximum(x @ w1, 0) @ w2


def numpy_layer_norm(a):
    centred = a - a.mean(axis=1, keepdims=True)
    return centred / np.sqrt((centred**2).mean(axis=1, keepdims=True) + 1e-5)


def numpy_attention(q, k, v, d):
    scores = q @ k.T / np.sqrt(d)
    weights = np.exp(scores - scores.max(axis=1, keepdims=True))
    return weights / weights.sum(axis=1, keepdims=True) @ v


def numpy_windows(x, width):
    """x[i, t + j] for t < L and j < width, 0 past the end of the row."""
    padded = np.concatenate([x, np.zeros((len(x), width))], axis=1)
    return np.stack([padded[:, j:j + x.shape[1]] for j in range(width)], axis=2)


@settings(PROPERTY, max_examples=12)
@given(st.integers(1, 5), st.integers(1, 4), st.integers(1, 4), st.integers(0, 2**32 - 1))
def test_executors_agree_on_the_prelude(n, p, q, seed):
    """Every executor against NumPy written here."""
    rng = np.random.default_rng(seed)
    x, y = rng.standard_normal((n, p)), rng.standard_normal((n, 1))
    w1, w2 = rng.standard_normal((p, q)) * 0.5, rng.standard_normal((q, 1)) * 0.5
    signal, kernel = rng.standard_normal((n, p + 3)), rng.standard_normal(min(q, 3))
    calls = [("dense", (x, w1), x @ w1), ("layerNorm", (x,), numpy_layer_norm(x)),
             ("mlpFit", (7, 0.1, x, y, w1, w2), numpy_mlp_fit(7, 0.1, x, y, w1, w2)),
             ("attentionOf", (x, x, y, float(p)), numpy_attention(x, x, y, float(p))),
             ("convolve", (signal, kernel), numpy_windows(signal, len(kernel)) @ kernel),
             ("maxPool", (signal, np.ones(min(q, 3))),
              numpy_windows(signal, min(q, 3)).max(axis=2))]
    for name, args, want in calls:
        for executor, mod in NETWORKS.items():
            np.testing.assert_allclose(mod.function(name)(*args), want, **TOLERANCE,
                                       err_msg=f"{executor}: {name}")


# BLAS-sized programs: the numba executor's matrix products (BLAS above 4096 multiply-adds,
# loops below), transposed operands read in place, batched products and loops around them.

BLAS_SPECS = [
    ("bij,bjk->bik", "bij bjk"),          # batched
    ("ji,jk->ik", "ji jk"),               # transposed left operand
    ("ij,kj->ik", "ij kj"),               # transposed right operand
    ("ji,kj->ki", "ji kj"),               # both, output swapped
    ("iaj,ajk->ik", "iaj ajk"),           # two summed axes between kept ones
    ("ajb,bjc->ca", "ajb bjc"),           # summed axes in the middle, output transposed
    ("ij,ij->", "ij ij"),                 # scalar output
    ("ij,jk,ki->", "ij jk ki"),           # a chain down to a scalar
    ("ij,jk,kl->il", "ij jk kl"),         # a chain, path chosen by the planner
    ("bij,bkj->bki", "bij bkj"),          # batched, transposed, output reordered
]


@st.composite
def blas_cases(draw):
    """A spec of BLAS_SPECS with sizes 9 to 300 per axis (at most about 4M multiply-adds)."""
    spec, terms = draw(st.sampled_from(BLAS_SPECS))
    letters = sorted(set(terms.replace(" ", "")))
    sizes = {ch: draw(st.integers(9, 300)) for ch in letters}
    while np.prod([sizes[ch] for ch in letters], dtype=float) > 4e6:
        largest = max(sizes, key=sizes.get)
        sizes[largest] = max(9, sizes[largest] // 2)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return spec, [rng.standard_normal(tuple(sizes[ch] for ch in term)) for term in terms.split()]


@settings(PROPERTY, max_examples=30)
@given(blas_cases())
def test_blas_sized_einsums_agree_with_numpy_and_the_reference(case):
    """Each spec alone (the numba executor calls NumPy for a lone contraction) and inside
    compiled code (its own BLAS calls on views: `tanh` of the product)."""
    spec, operands = case
    params = ", ".join(f"a{i}" for i in range(len(operands)))
    mods = compiled(f'fn f({params}) ↦ einsum("{spec}", {params})\n'
                    f'fn g({params}) ↦ tanh(einsum("{spec}", {params}))')
    want = np.einsum(spec, *operands)
    for name, expected in (("f", want), ("g", np.tanh(want))):
        reference = getattr(mods["reference"], name)(*operands)
        np.testing.assert_allclose(reference, expected, **TOLERANCE, err_msg=f"reference {name}: {spec}")
        np.testing.assert_allclose(getattr(mods["numba"], name)(*operands), reference,
                                   **TOLERANCE, err_msg=f"numba {name}: {spec}")


BLAS_LOOPS = """
def descend(t, r, a, x, b) ≔
  if t = 0 then x else descend(t − 1, r, a, x − r · einsum("ji,jk->ik", a, einsum("ij,jk->ik", a, x) − b), b)
fn solve(t, r, a, x, b) ↦ descend(t, r, a, x, b)
def powered(t, m, x) ≔ if t = 0 then x else powered(t − 1, m, tanh(einsum("ij,bjk->bik", m, x)))
fn power(t, m, x) ↦ powered(t, m, x)
"""


@settings(PROPERTY, max_examples=6)
@given(st.integers(9, 300), st.integers(9, 120), st.integers(9, 40), st.integers(0, 2**32 - 1))
def test_blas_sized_loops_agree_with_numpy_and_the_reference(n, p, k, seed):
    """Loops with matrix products (and batched ones) inside, at BLAS sizes."""
    rng = np.random.default_rng(seed)
    a, x, b = rng.standard_normal((n, p)), rng.standard_normal((p, k)), rng.standard_normal((n, k))
    m, batch = rng.standard_normal((p, p)) / p, rng.standard_normal((3, p, k))
    rate = 0.5 / np.linalg.norm(a, 2) ** 2
    want_solve = numpy_descend(5, rate, a, x, b)
    want_power = batch
    for _ in range(5):
        want_power = np.tanh(np.einsum("ij,bjk->bik", m, want_power))
    mods = compiled(BLAS_LOOPS)
    for executor in EXECUTORS:
        np.testing.assert_allclose(mods[executor].solve(5, rate, a, x, b), want_solve, **TOLERANCE,
                                   err_msg=f"{executor}: solve")
        np.testing.assert_allclose(mods[executor].power(5, m, batch), want_power, **TOLERANCE,
                                   err_msg=f"{executor}: power")
    np.testing.assert_allclose(mods["numba"].solve(5, rate, a, x, b),
                               mods["reference"].solve(5, rate, a, x, b), **TOLERANCE)
