"""Weight groups and optimiser state (compiler/groups.py): `group`, `state … like`, one
assignment over a group, `globalNorm`. Expected values come from NumPy written here (each
optimiser's formula, the gradient of a quadratic loss by hand) and from PyTorch's Adam on the
transformer block; the grouped transformer is compared with the same model written weight by
weight (tests/programs/TransformerByHand.hb). Calls stay on the host tier
(HILBERT_COMPILE=never): what is under test is the rewrite, and the generated code of both
transformer forms is compared as source."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hilbert.grammar.parser import parse
from hilbert.grammar.printer import print_module

import hilbert
from hilbert import HilbertError

BLOCK = (7, 8, 2, 3, 12, 3)  # vocab, width, heads, key, hidden, seed
B, T = 2, 5


pytestmark = pytest.mark.usefixtures("on_the_host")  # (tests/conftest.py)


def _tokens(seed: int):
    rng = np.random.default_rng(seed)
    return (rng.integers(0, BLOCK[0], size=(B, T)).astype(float),
            rng.integers(0, BLOCK[0], size=(B, T)).astype(float))


# -- a small model over a matrix, a vector and a scalar -----------------------------------------

SMALL = """
open Prelude.Optimisers
model Fit(n, p) : Learner {
  weight a : Tensor[n, p] from uniform(1) − 0.5
  weight b : Tensor[p]    from uniform(2)
  weight c : Tensor[]     from 0.25
  state taken : Tensor[]  from 0
  state m, v like weights from 0
  def sgdStep(x, y, r) { weights ≔ sgd(weights, ∂ loss(x, y) / ∂ weights, r) }
  def momentumStep(x, y, r) { (weights, m) ≔ momentum(weights, m, ∂ loss(x, y) / ∂ weights, r, 0.9) }
  def nesterovStep(x, y, r) { (weights, m) ≔ nesterov(weights, m, ∂ loss(x, y) / ∂ weights, r, 0.9) }
  def adamStep(x, y, r) {
    (weights, m, v) ≔ adam(weights, m, v, ∂ loss(x, y) / ∂ weights, taken + 1, r, 0.9, 0.999, 1e-8)
    taken ≔ taken + 1
  }
  def adamWStep(x, y, r) {
    (weights, m, v) ≔ adamW(weights, m, v, ∂ loss(x, y) / ∂ weights, taken + 1, r, 0.9, 0.999, 1e-8, 0.1)
    taken ≔ taken + 1
  }
  def clippedStep(x, y, r, most) {
    weights ≔ sgd(weights, clipScale(globalNorm(∂ loss(x, y) / ∂ weights), most) · ∂ loss(x, y) / ∂ weights, r)
  }
  def scheduledStep(x, y) {
    weights ≔ sgd(weights, ∂ loss(x, y) / ∂ weights, cosineRate(taken, 10, 0.1, 0.01))
    taken ≔ taken + 1
  }
  def gradientNorm(x, y) ≔ globalNorm(∂ loss(x, y) / ∂ weights)
  def loss(x, y) ≔ einsum("ij->", (einsum("np,pq->nq", x, a) + einsum("n,q->nq", positions(x, 0) ^ 0, b) · c − y)²) / rows(x)
}
"""


@pytest.fixture(scope="module")
def fit(on_the_host):
    return hilbert.compile_source(SMALL).Fit


def _data(n=6, p=3, q=2, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, p)), rng.standard_normal((n, q))


def _grads(w, x, y):
    """∂ loss by hand for loss = Σ (x a + 1 bᵀ c − y)² / n."""
    n = x.shape[0]
    r = x @ w["a"] + np.outer(np.ones(n), w["b"]) * w["c"] - y
    return {"a": 2 * x.T @ r / n, "b": 2 * r.sum(0) * w["c"] / n,
            "c": np.array(2 * (r * np.outer(np.ones(n), w["b"])).sum() / n)}


def _start(net):
    return {k: np.array(net.weights[k]) for k in ("a", "b", "c")}


def test_every_optimiser_over_the_group_is_its_formula_on_each_weight(fit):
    x, y = _data()
    rate, mu, b1, b2, eps = 0.05, 0.9, 0.9, 0.999, 1e-8
    for step in ("sgd", "momentum", "nesterov", "adam", "adamW"):
        net = fit(3, 2)
        w = _start(net)
        m = {k: np.zeros_like(v) for k, v in w.items()}
        v2 = {k: np.zeros_like(v) for k, v in w.items()}
        for t in range(1, 5):
            g = _grads(w, x, y)
            for k in w:
                if step == "sgd":
                    w[k] = w[k] - rate * g[k]
                elif step in ("momentum", "nesterov"):
                    m[k] = mu * m[k] + g[k]
                    w[k] = w[k] - rate * (m[k] if step == "momentum" else g[k] + mu * m[k])
                else:
                    if step == "adamW":
                        w[k] = w[k] - rate * 0.1 * w[k]
                    m[k] = b1 * m[k] + (1 - b1) * g[k]
                    v2[k] = b2 * v2[k] + (1 - b2) * g[k] ** 2
                    w[k] = w[k] - rate / (1 - b1 ** t) * m[k] / (
                        np.sqrt(v2[k]) / np.sqrt(1 - b2 ** t) + eps)
        getattr(net, f"{step}Step")(x, y, rate, steps=4)
        for k in w:
            np.testing.assert_allclose(net.weights[k], w[k], rtol=1e-12, atol=1e-14,
                                       err_msg=f"{step} {k}")
        if step != "sgd":
            for k in w:
                np.testing.assert_allclose(net.m[k], m[k], rtol=1e-12, atol=1e-14)


def test_clipping_scales_every_gradient_by_the_norm_over_the_whole_group(fit):
    x, y = _data(seed=3)
    for most in (1e-3, 1e3):  # clipped, and not
        net = fit(3, 2)
        w = _start(net)
        g = _grads(w, x, y)
        norm = math.sqrt(sum(float((v ** 2).sum()) for v in g.values()))
        assert net.gradientNorm(x, y) == pytest.approx(norm, rel=1e-12)
        scale = min(1.0, most / (norm + 1e-6))
        net.clippedStep(x, y, 0.1, most)
        for k in w:
            np.testing.assert_allclose(net.weights[k], w[k] - 0.1 * scale * g[k], rtol=1e-12,
                                       atol=1e-15)


def test_a_schedule_reads_the_step_count_kept_as_state(fit):
    x, y = _data(seed=4)
    net = fit(3, 2)
    w = _start(net)
    for t in range(3):
        rate = 0.01 + (0.1 - 0.01) * (1 + math.cos(math.pi * t / 10)) / 2
        g = _grads(w, x, y)
        w = {k: w[k] - rate * g[k] for k in w}
    net.scheduledStep(x, y, steps=3)
    for k in w:
        np.testing.assert_allclose(net.weights[k], w[k], rtol=1e-12, atol=1e-15)
    assert float(net.taken) == 3.0


def test_state_is_held_saved_and_shown(fit, tmp_path):
    x, y = _data()
    net = fit(3, 2)
    net.adamStep(x, y, 0.01, steps=2)
    assert set(net.weights) == {"a", "b", "c", "taken", "m.a", "m.b", "m.c", "v.a", "v.b", "v.c"}
    assert set(net.m) == {"a", "b", "c"} and net.m["a"].shape == (3, 2)
    assert not net.v["b"].flags.writeable
    again = fit.load(net.save(tmp_path / "fit"))
    for k, value in net.weights.items():
        np.testing.assert_array_equal(again.weights[k], value)
    net.adamStep(x, y, 0.01)
    again.adamStep(x, y, 0.01)
    np.testing.assert_array_equal(again.a, net.a)
    with pytest.raises(HilbertError) as err:
        net.m = 3
    assert err.value.code == "E801"
    assert "m.a 3×2" in repr(net)


# -- the transformer, grouped and by hand -------------------------------------------------------

@pytest.fixture(scope="module")
def blocks(on_the_host):
    grouped = hilbert.load("examples/Transformer.hb").Block(*BLOCK)
    by_hand = hilbert.load("tests/programs/TransformerByHand.hb").Block(*BLOCK)
    return grouped, by_hand


def _hand_name(name: str) -> str:
    """m.emb → memb: the by-hand model's name for a state tensor."""
    return name.replace(".", "")


def test_the_grouped_transformer_compiles_to_the_hand_written_plan_and_code(blocks):
    grouped, by_hand = blocks
    tok, nxt = _tokens(1)

    def plain(text: str) -> str:  # state names as by hand; no source locations
        text = re.sub(r"\b([mv])\.(\w+)", r"\1\2", text)
        return re.sub(r"\S+\.hb:\d+:\d+", "<at>", text)

    assert plain(str(grouped.train.plan(tok, nxt))) == plain(str(by_hand.train.plan(tok, nxt)))
    sources = []
    for net in blocks:
        values = net.train._values((tok, nxt), {})
        program = net._functions["train"].program(tuple(v.shape for v in values), net.dtype)
        sources.append(program.sources())
    assert sources[0] and sources[0] == sources[1]  # byte for byte: one disk-cache entry


def test_fifty_adam_steps_grouped_equal_by_hand_and_torch(blocks):
    grouped = hilbert.load("examples/Transformer.hb").Block(*BLOCK)
    by_hand = hilbert.load("tests/programs/TransformerByHand.hb").Block(*BLOCK)
    start = {k: np.array(v) for k, v in grouped.weights.items()}
    tok, nxt = _tokens(2)
    grouped.train(tok, nxt, steps=50)
    by_hand.train(tok, nxt, steps=50)
    for name, value in grouped.weights.items():
        np.testing.assert_allclose(value, by_hand.weights[_hand_name(name)], rtol=1e-12,
                                   atol=1e-15, err_msg=name)
    torch = pytest.importorskip("torch")
    want = _torch_adam(torch, start, tok, nxt, 50)
    for name, value in want.items():
        np.testing.assert_allclose(grouped.weights[name], value, rtol=1e-9, atol=1e-12,
                                   err_msg=name)


NAMES = ("emb", "g1", "s1", "wq", "wk", "wv", "wo", "g2", "s2", "w1", "c1", "w2", "c2", "out", "d")


def _torch_adam(torch, start: dict, tok, nxt, steps: int) -> dict:
    """The block in torch float64, trained by torch.optim.Adam (lr 1e-3, β 0.9/0.999, ε 1e-8)."""
    w = {n: torch.tensor(start[n], dtype=torch.float64, requires_grad=True) for n in NAMES}
    opt = torch.optim.Adam(list(w.values()), lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                           foreach=False)
    tok_i = torch.tensor(tok, dtype=torch.long)
    nxt_i = torch.tensor(nxt, dtype=torch.long)

    def norm(x, g, s):
        c = x - x.mean(-1, keepdim=True)
        return c / torch.sqrt((c ** 2).mean(-1, keepdim=True) + 1e-5) * g + s

    for _ in range(steps):
        opt.zero_grad()
        x = w["emb"][tok_i]
        a = norm(x, w["g1"], w["s1"])
        q, k, v = (torch.einsum("btm,nmf->bntf", a, w[n]) for n in ("wq", "wk", "wv"))
        s = torch.einsum("bntf,bnsf->bnts", q, k) / math.sqrt(w["wq"].shape[-1])
        mask = torch.arange(T)[None, None, None, :] > torch.arange(T)[None, None, :, None]
        p = torch.softmax(s.masked_fill(mask, -math.inf), -1)
        h = x + torch.einsum("bnts,bnsl,nlo->bto", p, v, w["wo"])
        u = torch.nn.functional.gelu(norm(h, w["g2"], w["s2"]) @ w["w1"] + w["c1"])
        y = h + u @ w["w2"] + w["c2"]
        z = y @ w["out"] + w["d"]
        loss = torch.nn.functional.cross_entropy(z.reshape(-1, z.shape[-1]), nxt_i.reshape(-1))
        loss.backward()
        opt.step()
    out = {n: t.detach().numpy() for n, t in w.items()}
    for n, t in w.items():
        state = opt.state[t]
        out[f"m.{n}"] = state["exp_avg"].numpy()
        out[f"v.{n}"] = state["exp_avg_sq"].numpy()
    return out


# -- syntax and misuse --------------------------------------------------------------------------

def test_group_and_state_declarations_print_and_parse_back():
    text = """model M(n) : Learner {
  weight a : Tensor[n] from 0
  state k : Tensor[] from 0
  group some ≔ a
  state m, v like some from 0
  def train(x) {
    (some, m) ≔ momentum(some, m, ∂ f(x) / ∂ some, 0.1, 0.9)
  }
  def f(x) ≔ einsum("i,i->", a, x)
}
"""
    tree = parse(text)
    model = tree.decls[0]
    assert [g.members for g in model.groups] == [("a",)]
    assert model.states[0].names == ("m", "v") and model.weights[1].kind == "state"
    assert parse(print_module(tree, unicode=True)) == tree
    # `state`, `like` and `group` are keywords only where a member starts
    assert parse("def f(state, like, group) ≔ state + like + group").decls[0].params == \
        ("state", "like", "group")


def test_a_named_group_updates_only_its_members():
    module = hilbert.compile_source("""
model M : Learner {
  weight a : Tensor[2] from 1
  weight b : Tensor[2] from 1
  group first ≔ a
  def train(x) { first ≔ first − 0.5 · ∂ loss(x) / ∂ first }
  def loss(x) ≔ einsum("i,i->", a + b, x)
}
""")
    net = module.M()
    net.train(np.array([1.0, 2.0]))
    np.testing.assert_array_equal(net.a, [0.5, 0.0])
    np.testing.assert_array_equal(net.b, [1.0, 1.0])


MODEL = """
open Prelude.Optimisers
model M : Learner {{
  weight a : Tensor[2] from 1
  weight b : Tensor[] from 1
  state k : Tensor[] from 0
  {extra}
}}
"""


@pytest.mark.parametrize("extra, words", [
    ("group g ≔ a, nope", "nope, which is not a weight"),
    ("group g ≔ a, a", "lists a weight twice"),
    ("group a ≔ b", "name of another member"),
    ("group weights ≔ a", "every model has the group weights"),
    ("state m like nope from 0", "not a group"),
    ("state a like weights from 0", "name of another member"),
    ("group g ≔ a\n state m like g from 0\n def t(x) { weights ≔ weights − m }",
     "members of g, but weights also holds b"),
    ("group g ≔ a\n def t(x) { (weights, g) ≔ (weights, g) }", "an assignment runs over one group"),
    ("group g ≔ a\n def t(x) { weights ≔ weights + g }", "reads the group g"),
    ("def t(x) { (weights, k) ≔ (weights, k) }", "a weight on its own"),
    ("def t(x) { k ≔ weights }", "use it in an assignment to the group"),
    ("def f(x) ≔ weights", "one value per member of weights (a, b)"),
    ("def t(x) { weights ≔ ∂ f(x) / ∂ (weights, k) }", "takes the group alone"),
    ("state m like weights from 0\n def t(x) { m ≔ ∂ f(x) / ∂ m }", "m is a state family"),
    ("group g ≔ a\n def f(x) ≔ globalNorm(weights + g)", "reduces the value of one group"),
    ("state m like weights from 0\n def t(m) { k ≔ 1 }", "which it would hide"),
])
def test_every_misuse_of_a_group_is_E803(extra, words):
    body = extra + '\n  def f(x) ≔ einsum("i,i->", a, x) + b' if "def f(" not in extra else extra
    with pytest.raises(HilbertError) as err:
        hilbert.compile_source(MODEL.format(extra=body))
    assert err.value.code == "E803", err.value
    assert words in err.value.message
    assert err.value.span is not None


def test_a_weight_assigned_alone_and_in_its_group_is_assigned_twice():
    with pytest.raises(HilbertError) as err:
        hilbert.compile_source(MODEL.format(extra="def t(x) { a ≔ a\n weights ≔ weights }"))
    assert err.value.code == "E800" and "twice" in err.value.message
