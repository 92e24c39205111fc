"""∂ e / ∂ x: automatic gradients against central finite differences, on both executors.

Every expected value here is a finite difference of the function's own value (computed by
the same executor, at x ± h), or NumPy written in the test; the derivative code is never its
own oracle.
"""

import numpy as np
import pytest

import hilbert

H = 1e-6


def numeric_gradient(f, x: np.ndarray) -> np.ndarray:
    """Central differences of the scalar f at x, entry by entry."""
    x = np.array(x, dtype=float)
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[index] = H
        grad[index] = (f(x + step) - f(x - step)) / (2 * H)
    return grad


def check(source: str, executor: str, args: dict, wrt: str, rtol=1e-6, atol=1e-8):
    """The fn `value` and fn `slope` of `source` (slope = ∂ value / ∂ wrt) must agree."""
    module = hilbert.compile_source(source, executor=executor)
    names = list(args)

    def value(x):
        return module.value(**{**args, wrt: x})

    got = module.slope(**args)
    want = numeric_gradient(value, np.asarray(args[wrt], dtype=float))
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=f"{names} wrt {wrt}")
    return got


UNARY = {  # op: (points where it is smooth)
    "exp": [-1.5, 0.2, 2.0],
    "ln": [0.3, 1.0, 4.0],
    "sqrt": [0.3, 1.0, 4.0],
    "tanh": [-2.0, 0.1, 1.5],
    "sin": [-2.0, 0.1, 1.5],
    "cos": [-2.0, 0.1, 1.5],
    "tan": [-1.0, 0.1, 1.2],
    "abs": [-2.0, 0.5, 1.5],
    "erf": [-1.5, 0.1, 2.0],
}


@pytest.mark.parametrize("op", sorted(UNARY))
def test_every_unary_primitive(op, executor):
    source = f"""
fn value(x) ↦ einsum("i->", {op}(x) · x)
fn slope(x) ↦ ∂ einsum("i->", {op}(x) · x) / ∂ x
"""
    check(source, executor, {"x": np.array(UNARY[op])}, "x")


def test_floor_and_comparisons_have_zero_derivative(executor):
    module = hilbert.compile_source("""
fn slope(x) ↦ ∂ einsum("i->", floor(x) + (x > 1) + (x ≤ 0.5) + (x = 2)) / ∂ x
""", executor=executor)
    np.testing.assert_array_equal(module.slope(np.array([0.3, 1.7, 2.5])), np.zeros(3))


@pytest.mark.parametrize("expression", [
    "a + b", "a − b", "a · b", "a / b", "a ^ b", "max(a, b)", "min(a, b)", "a ^ 3", "a ^ 0.5",
    "a²", "−a", "2 ^ a", "a / 3 − 3 / a",
])
@pytest.mark.parametrize("which", ["a", "b"])
def test_binary_operators(expression, which, executor, rng):
    source = f"""
fn value(a, b) ↦ einsum("ij->", {expression})
fn slope(a, b) ↦ ∂ einsum("ij->", {expression}) / ∂ {which}
"""
    a = rng.uniform(0.5, 2.0, (2, 3))
    b = rng.uniform(0.5, 2.0, (2, 3))
    check(source, executor, {"a": a, "b": b}, which)


@pytest.mark.parametrize("expression", ["a · s", "s · a", "a / s", "s / a", "a + s", "s − a",
                                        "a ^ s", "s ^ a", "max(a, s)"])
def test_a_scalar_operand_gets_the_sum_of_its_contributions(expression, executor, rng):
    source = f"""
fn value(a, s) ↦ einsum("ij->", {expression} · a)
fn slope(a, s) ↦ ∂ einsum("ij->", {expression} · a) / ∂ s
"""
    a = rng.uniform(0.5, 2.0, (3, 2))
    got = check(source, executor, {"a": a, "s": 1.3}, "s")
    assert np.ndim(got) == 0


def test_max_and_min_give_ties_to_the_second_operand(executor):
    module = hilbert.compile_source("""
fn slope(a, b) ↦ ∂ einsum("i->", max(a, b) + 2 · min(a, b)) / ∂ a
fn other(a, b) ↦ ∂ einsum("i->", max(a, b) + 2 · min(a, b)) / ∂ b
fn relu(z) ↦ ∂ einsum("i->", max(z, 0)) / ∂ z
""", executor=executor)
    a = np.array([1.0, 2.0, 3.0])
    b = np.array([2.0, 2.0, 1.0])
    # where a < b: max → b, min → a (2); a = b: all to b; a > b: max → a (1)
    np.testing.assert_allclose(module.slope(a, b), [2.0, 0.0, 1.0])
    np.testing.assert_allclose(module.other(a, b), [1.0, 3.0, 2.0])
    np.testing.assert_allclose(module.relu(np.array([-1.0, 0.0, 1.0])), [0.0, 0.0, 1.0])


@pytest.mark.parametrize("op,axis", [("maximum", 0), ("maximum", 1), ("minimum", 1)])
def test_reductions_route_to_the_extreme(op, axis, executor, rng):
    x = rng.normal(size=(3, 4))
    source = f"""
fn value(x) ↦ einsum("i->", {op}(x, {axis}) ^ 2)
fn slope(x) ↦ ∂ einsum("i->", {op}(x, {axis}) ^ 2) / ∂ x
"""
    check(source, executor, {"x": x}, "x")


def test_tied_extremes_share_the_adjoint_equally(executor):
    module = hilbert.compile_source("""
fn slope(x) ↦ ∂ einsum("i->", maximum(x, 1)) / ∂ x
""", executor=executor)
    got = module.slope(np.array([[1.0, 3.0, 3.0, 3.0], [5.0, 0.0, 1.0, 2.0]]))
    np.testing.assert_allclose(got, [[0, 1 / 3, 1 / 3, 1 / 3], [1, 0, 0, 0]])


EINSUMS = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk->", [(2, 3), (3, 4)]),
    ("ij->ji", [(2, 3)]),
    ("ii->i", [(3, 3)]),
    ("ii->", [(3, 3)]),
    ("iij,j->i", [(3, 3, 2), (2,)]),
    ("ij,ij->ij", [(2, 3), (2, 3)]),
    ("i,j->ij", [(3,), (4,)]),
    ("ijk->", [(2, 3, 2)]),
    ("ij,->ij", [(2, 3), ()]),
    ("bij,bjk->bik", [(2, 3, 2), (2, 2, 3)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
]


@pytest.mark.parametrize("spec,shapes", EINSUMS)
def test_every_operand_of_an_einsum(spec, shapes, executor, rng):
    names = "abcd"[:len(shapes)]
    params = ", ".join(names)
    value = f'einsum("{spec}", {params})'
    weights = rng.normal(size=np.shape(np.einsum(spec, *[np.ones(s) for s in shapes])))
    letters = spec.split("->")[1]
    loss = f'einsum("{letters},{letters}->", {value}, w)'
    args = {n: rng.normal(size=s) for n, s in zip(names, shapes, strict=True)}
    args["w"] = weights
    for which in names:
        source = f"""
fn value({params}, w) ↦ {loss}
fn slope({params}, w) ↦ ∂ {loss} / ∂ {which}
"""
        check(source, executor, args, which)


def test_if_takes_the_derivative_of_the_branch_it_takes(executor):
    module = hilbert.compile_source("""
fn slope(x) ↦ ∂ (if x > 0 then sqrt(x) else 0 − x · x) / ∂ x
""", executor=executor)
    assert module.slope(4.0) == pytest.approx(0.25)
    # the other branch's sqrt(−4) is never evaluated, so no NaN leaks in
    assert module.slope(-4.0) == pytest.approx(8.0)


def test_a_vector_ternary_by_arithmetic(executor, rng):
    source = """
def pick(c, a, b) ≔ c · a + (1 − c) · b
fn value(x, y) ↦ einsum("i->", pick(x > y, x², y ^ 3))
fn slope(x, y) ↦ ∂ einsum("i->", pick(x > y, x², y ^ 3)) / ∂ x
"""
    check(source, executor, {"x": np.array([0.5, 2.0, 3.0]), "y": np.array([1.0, 1.0, 4.0])}, "x")


def test_several_parameters_at_once_share_the_forward_work(executor, rng):
    source = """
def loss(x, w1, w2) ≔ einsum("ij->", relu(einsum("np,ph->nh", x, w1)) ²) + einsum("ij->", w2²)
def relu(z) ≔ max(z, 0)
fn both(x, w1, w2) ↦ ∂ loss(x, w1, w2) / ∂ (w1, w2)
fn one(x, w1, w2) ↦ ∂ loss(x, w1, w2) / ∂ w1
fn other(x, w1, w2) ↦ ∂ loss(x, w1, w2) / ∂ w2
"""
    module = hilbert.compile_source(source, executor=executor)
    x, w1, w2 = rng.normal(size=(4, 3)), rng.normal(size=(3, 5)), rng.normal(size=(5, 2))
    g1, g2 = module.both(x, w1, w2)
    np.testing.assert_allclose(g1, module.one(x, w1, w2))
    np.testing.assert_allclose(g2, module.other(x, w1, w2))
    np.testing.assert_allclose(g2, 2 * w2)
    hidden = x @ w1
    np.testing.assert_allclose(g1, x.T @ (2 * np.maximum(hidden, 0) * (hidden > 0)))


def test_ascii_spelling_is_the_same_derivative(executor):
    unicode = hilbert.compile_source("fn f(x) ↦ ∂ (x · x · x) / ∂ x", executor=executor)
    ascii_ = hilbert.compile_source("fn f(x) |-> grad(x * x * x, x)", executor=executor)
    assert unicode.f(2.0) == ascii_.f(2.0) == pytest.approx(12.0)


def test_a_training_loop_with_the_gradient_inside(executor):
    source = """
def loss(w, x, y) ≔ einsum("ij->", (einsum("np,pq->nq", x, w) − y)²) / rows(x)
def fit(t, r, w, x, y) ≔ if t = 0 then w else fit(t − 1, r, w − r · ∂ loss(w, x, y) / ∂ w, x, y)
fn train(t, r, w, x, y) ↦ fit(t, r, w, x, y)
"""
    module = hilbert.compile_source(source, executor=executor)
    x = np.array([[0.0, 1.0], [1.0, 1.0], [2.0, 1.0], [3.0, 1.0]])
    y = np.array([[1.0], [3.0], [5.0], [7.0]])
    w = np.zeros((2, 1))
    want = w.copy()
    for _ in range(200):
        want = want - 0.05 * 2 * x.T @ (x @ want - y) / 4
    np.testing.assert_allclose(module.train(200, 0.05, w, x, y), want, rtol=1e-12)


def test_through_a_counted_loop(executor, rng):
    source = """
def step(w, x) ≔ tanh(einsum("ij,jk->ik", w, x))
def run(t, w, x) ≔ if t = 0 then w else run(t − 1, step(w, x), x)
fn value(t, w, x) ↦ einsum("ij->", run(t, w, x) · run(t, w, x))
fn slope(t, w, x) ↦ ∂ einsum("ij->", run(t, w, x) · run(t, w, x)) / ∂ x
"""
    w = rng.normal(size=(2, 3)) * 0.5
    x = rng.normal(size=(3, 3)) * 0.5
    check(source, executor, {"t": 4, "w": w, "x": x}, "x")
    source_w = source.replace("/ ∂ x", "/ ∂ w")
    check(source_w, executor, {"t": 4, "w": w, "x": x}, "w")


def test_through_a_loop_that_stops_on_a_condition(executor):
    source = """
def grow(x, k) ≔ if x > 10 then x else grow(x · k, k)
fn value(x, k) ↦ grow(x, k)
fn slope(x, k) ↦ ∂ grow(x, k) / ∂ k
"""
    # grow(1, 1.5): 1.5^6 = 11.39 > 10 after six steps, so value = k^6 near k = 1.5
    got = check(source, executor, {"x": 1.0, "k": 1.5}, "k")
    assert got == pytest.approx(6 * 1.5 ** 5)


def test_a_model_train_block_with_a_gradient(executor):
    module = hilbert.compile_source("""
model Line(seed) : Learner {
  weight w : Tensor[2, 1] from 0
  def train(x, y, r) { w ≔ w − r · ∂ loss(x, y) / ∂ w }
  def loss(x, y) ≔ einsum("ij->", (einsum("np,pq->nq", x, w) − y)²) / rows(x)
}
""", executor=executor)
    line = module.Line(0)
    x = np.array([[0.0, 1.0], [1.0, 1.0], [2.0, 1.0]])
    y = np.array([[1.0], [3.0], [5.0]])
    line.train(x, y, 0.1, steps=300)
    np.testing.assert_allclose(line.w.ravel(), [2.0, 1.0], atol=1e-4)


def test_a_parameter_unused_by_the_loss_gets_zeros(executor):
    module = hilbert.compile_source("fn f(x, y) ↦ ∂ einsum(\"i->\", x) / ∂ y", executor=executor)
    np.testing.assert_array_equal(module.f(np.ones(3), np.ones((2, 2))), np.zeros((2, 2)))


@pytest.mark.parametrize("source,code", [
    ("fn f(x) ↦ ∂ (x · x) / ∂ x", "E320"),
    ("fn f(x) ↦ let y ≔ x in ∂ y / ∂ y", "E322"),
    ("fn f(x) ↦ ∂ x / ∂ z", "E322"),
    ("def d(x) ≔ ∂ (x · x · x) / ∂ x\nfn f(x) ↦ ∂ d(x) / ∂ x", "E323"),
    ("def p(x) ≔ (x, x)\nfn f(x) ↦ ∂ p(x) / ∂ x", "E320"),
    ("fn f(x) ↦ grad(x, 2)", "E100"),
])
def test_derivative_errors(source, code):
    with pytest.raises(hilbert.HilbertError) as raised:
        hilbert.compile_source(source).f(np.ones(3))
    assert raised.value.code == code, str(raised.value)


def test_the_gradient_of_an_mlp_plans_to_gemms_within_three_forward_passes():
    """Issue 12 (d): ∂ of a dense-layer loss is matrix products, at most 3× the forward's
    FLOPs (the hand-written backpropagation of Prelude.Networks is the yardstick)."""
    module = hilbert.compile_source("""
open Prelude.Networks
def loss(x, y, w1, w2) ≔ einsum("ij->", (outputs(x, w1, w2) − y)²) / (2 · rows(x))
fn forward(x, y, w1, w2) ↦ loss(x, y, w1, w2)
fn backward(x, y, w1, w2) ↦ ∂ loss(x, y, w1, w2) / ∂ (w1, w2)
fn byHand(x, y, w1, w2) ↦ (gradFirst(x, y, w1, w2), gradSecond(x, y, w1, w2))
""")
    shapes = ((1024, 64), (1024, 10), (64, 256), (256, 10))
    forward = module.forward.plan(*shapes)
    backward = module.backward.plan(*shapes)
    products = [e for e in backward.einsums if len(e.shapes) > 1 and e.flops > 1e6]
    assert len(products) == 5  # X W1, H W2; δ W2ᵀ; Xᵀ δhid, Hᵀ δout
    assert all(step.blas == "GEMM" for e in products for step in e.steps)
    assert backward.flops <= 3 * forward.flops
    assert backward.flops <= 1.001 * module.byHand.plan(*shapes).flops


def test_every_op_has_a_derivative_rule():
    """A new primitive must come with a derivative rule in its row of the op table (or be one
    that is never differentiated: seeded draws live only in weight initialisers; argmax/argmin
    and bernoulli become other ops)."""
    from hilbert.compiler.ops.primitives import BY_OP

    never = {"gaussian", "uniform", "argmax", "argmin", "bernoulli"}
    assert {op for op, row in BY_OP.items() if row.derivative is None} == never


def test_cross_entropy_gradient_is_softmax_minus_one_hot(executor):
    """oneHot inside a derivative compiles on numba (it once ran only on the reference)."""
    module = hilbert.compile_source("""
open Prelude.Losses
fn g(z, labels) ↦ ∂ crossEntropy(z, labels) / ∂ z
""", executor=executor)
    z = np.array([[1.0, 2.0, 3.0], [0.0, 1.0, 0.0]])
    labels = np.array([2.0, 0.0])
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    np.testing.assert_allclose(module.g(z, labels), (p - np.eye(3)[[2, 0]]) / 2, rtol=1e-12)


def test_a_shape_error_under_a_derivative_names_the_einsum_written():
    with pytest.raises(hilbert.HilbertError) as raised:
        hilbert.compile_source('fn f(z) ↦ ∂ einsum("i->", z · z) / ∂ z').f(2.0)
    assert raised.value.code == "E306" and 'einsum "i->"' in raised.value.message
