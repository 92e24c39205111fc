"""First results of a few programs, for the startup benchmarks (benchmarks/cases/startup.py):
each contestant's function imports its library, marks that moment, and answers the program's
first result. `child` runs one of them in a fresh process and prints its times as JSON.

This module imports nothing but NumPy (hilbert, torch and JAX only inside the contestants), so
the clock in a fresh process starts before any of them is imported. The training steps the
other benchmark cases time in torch and JAX are written here too, so that both use one copy.
The transformer block's contestants train any number of steps, one a call (one by default):
benchmarks/training_run.py times a whole training run with them."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
OURS, TORCH, JAX = "hilbert", "torch", "jax.jit"  # (as benchmarks.cases.base names them)


# --------------------------------------------------------------------------------------------
# Training steps in torch and JAX (also timed warm by benchmarks/cases/)


def mlp_problem(n, p, h, q, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, p))
    y = rng.standard_normal((n, q))
    w1 = rng.standard_normal((p, h)) / np.sqrt(p)
    w2 = rng.standard_normal((h, q)) / np.sqrt(h)
    return x, y, w1, w2


def loss_torch(torch, x, y, w1, w2):
    return ((torch.clamp_min(x @ w1, 0.0) @ w2 - y) ** 2).sum() / (2 * x.shape[0])


def torch_mlp_step(torch, r: float):
    """One gradient step of the fit in PyTorch eager: (x, y, w1, w2) → the new (w1, w2)."""
    def step(x, y, w1, w2):
        v1, v2 = w1.clone().requires_grad_(), w2.clone().requires_grad_()
        g1, g2 = torch.autograd.grad(loss_torch(torch, x, y, v1, v2), (v1, v2))
        return w1 - r * g1, w2 - r * g2
    return step


def jax_mlp_step(jax, jnp, r: float):
    """One gradient step of the fit for jax.jit: (x, y, w1, w2) → the new weights, flat."""
    def step(x, y, w1, w2):
        loss = lambda v: ((jnp.maximum(x @ v[0], 0.0) @ v[1] - y) ** 2).sum() / (2 * x.shape[0])  # noqa: E731
        g1, g2 = jax.grad(loss)((w1, w2))
        return jnp.concatenate([(w1 - r * g1).ravel(), (w2 - r * g2).ravel()])
    return step


def torch_circle_step(torch, x, labels, hidden: int = 32, dtype: str = "float64"):
    """The circle classifier's training step in torch eager (float64 unless `dtype` says), as
    the course writes it (nn.Linear layers, GELU, cross-entropy, clip_grad_norm_ 1.0, AdamW at
    3e-3): a callable that takes one step on (x, labels) and answers the loss."""
    torch.manual_seed(0)
    nn = torch.nn
    net = nn.Sequential(nn.Linear(2, hidden), nn.GELU(), nn.Linear(hidden, hidden), nn.GELU(),
                        nn.Linear(hidden, 2)).to(getattr(torch, dtype))
    opt = torch.optim.AdamW(net.parameters(), lr=3e-3, weight_decay=1e-2)
    tx, tl = torch.from_numpy(x), torch.from_numpy(labels).long()

    def step():
        loss = torch.nn.functional.cross_entropy(net(tx), tl)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        opt.step()
        return loss.item()
    return step


# --------------------------------------------------------------------------------------------
# The programs: inputs (made before the clock starts), then one function per contestant that
# imports its library, calls `mark("import")`, and answers the first result.


def _circle_inputs() -> dict:
    rng = np.random.default_rng(22)
    x = rng.uniform(-1, 1, (64, 2))
    return {"x": x, "labels": ((x ** 2).sum(1) < 0.5).astype(float)}


def _circle_hilbert(inputs: dict, mark):
    import hilbert

    mark("import")
    net = hilbert.load(ROOT / "examples" / "CircleClassifier.hb").CircleClassifier(32, 0)
    net.train(inputs["x"], inputs["labels"], 0.0)
    return net.weights["w1"]


def _circle_torch(inputs: dict, mark):
    import torch

    mark("import")
    return torch_circle_step(torch, inputs["x"], inputs["labels"])()


def _circle_jax(inputs: dict, mark):
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    mark("import")
    sizes = [(2, 32), (32, 32), (32, 2)]
    rng = np.random.default_rng(0)
    params = [p for d_in, d_out in sizes for p in
              (jnp.asarray(rng.uniform(-1, 1, (d_in, d_out)) / np.sqrt(d_in)),
               jnp.asarray(rng.uniform(-1, 1, d_out) / np.sqrt(d_in)))]
    state = (params, [jnp.zeros_like(p) for p in params], [jnp.zeros_like(p) for p in params])

    def loss(params, x, labels):
        h = x
        for i in range(0, 6, 2):
            h = h @ params[i] + params[i + 1]
            if i < 4:
                h = jax.nn.gelu(h, approximate=False)
        picked = jnp.take_along_axis(h, labels.astype(int)[:, None], axis=1)[:, 0]
        return jnp.mean(jax.nn.logsumexp(h, axis=1) - picked)

    @jax.jit
    def step(state, x, labels, taken):
        params, m, v = state
        grads = jax.grad(loss)(params, x, labels)
        norm = jnp.sqrt(sum(jnp.sum(g * g) for g in grads))
        scale = jnp.minimum(1.0, 1.0 / (norm + 1e-6))
        out = ([], [], [])
        for p, g, mp, vp in zip(params, grads, m, v, strict=True):
            g = g * scale
            p = p * (1 - 3e-3 * 1e-2)
            mp = 0.9 * mp + 0.1 * g
            vp = 0.999 * vp + 0.001 * g * g
            update = (mp / (1 - 0.9 ** taken)) / (jnp.sqrt(vp / (1 - 0.999 ** taken)) + 1e-8)
            for kept, value in zip(out, (p - 3e-3 * update, mp, vp), strict=True):
                kept.append(value)
        return out

    params, _, _ = step(state, jnp.asarray(inputs["x"]), jnp.asarray(inputs["labels"]), 1.0)
    return np.asarray(params[0])


def _mlp_inputs() -> dict:
    return dict(zip(("x", "y", "w1", "w2"), mlp_problem(1024, 64, 256, 10), strict=True))


def _mlp_hilbert(inputs: dict, mark):
    import hilbert

    mark("import")
    gradients = hilbert.load(ROOT / "examples" / "Gradients.hb")
    return gradients.autoStep(0.01, inputs["x"], inputs["y"], inputs["w1"], inputs["w2"])[0]


def _mlp_torch(inputs: dict, mark):
    import torch

    mark("import")
    args = [torch.from_numpy(inputs[k]) for k in ("x", "y", "w1", "w2")]
    return torch_mlp_step(torch, 0.01)(*args)[0].detach().numpy()


def _mlp_jax(inputs: dict, mark):
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    mark("import")
    args = [jnp.asarray(inputs[k]) for k in ("x", "y", "w1", "w2")]
    return np.asarray(jax.jit(jax_mlp_step(jax, jnp, 0.01))(*args))


_T, _B, _E, _D = 50, 16, 64, 128


def _lstm_inputs() -> dict:
    rng = np.random.default_rng(20)
    scale = 1 / np.sqrt(_D)
    return {"x": rng.standard_normal((_T, _B, _E)), "h": rng.standard_normal((_B, _D)) * 0.1,
            "c": rng.standard_normal((_B, _D)) * 0.1,
            "wx": rng.uniform(-scale, scale, (_E, _D, 4)),
            "wh": rng.uniform(-scale, scale, (_D, _D, 4)), "b": rng.uniform(-scale, scale, (_D, 4))}


def _lstm_hilbert(inputs: dict, mark):
    import hilbert

    mark("import")
    lstm = hilbert.compile_source("open Prelude.Sequences\nfn run(x, h, c, wx, wh, b) ↦ "
                                  "lstm(x, h, c, wx, wh, b)").run
    return lstm(*(inputs[k] for k in ("x", "h", "c", "wx", "wh", "b")))[0]


def _lstm_torch(inputs: dict, mark):
    import torch

    mark("import")
    net = torch.nn.LSTM(_E, _D).double()
    with torch.no_grad():
        for name, w in (("weight_ih_l0", inputs["wx"]), ("weight_hh_l0", inputs["wh"])):
            getattr(net, name).copy_(torch.from_numpy(
                np.ascontiguousarray(w.transpose(2, 1, 0).reshape(4 * _D, -1))))
        net.bias_ih_l0.copy_(torch.from_numpy(inputs["b"].T.reshape(-1).copy()))
        net.bias_hh_l0.zero_()
        _, (h, _) = net(torch.from_numpy(inputs["x"]),
                        (torch.from_numpy(inputs["h"][None]), torch.from_numpy(inputs["c"][None])))
    return h.numpy()[0]


def _lstm_jax(inputs: dict, mark):
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    mark("import")

    @jax.jit
    def run(x, h, c, wx, wh, b):
        pre = (x.reshape(-1, _E) @ wx.reshape(_E, -1)).reshape(_T, _B, _D, 4)

        def step(carry, a):
            h, c = carry
            z = a + (h @ wh.reshape(_D, -1)).reshape(_B, _D, 4) + b
            c = jax.nn.sigmoid(z[..., 1]) * c + jax.nn.sigmoid(z[..., 0]) * jnp.tanh(z[..., 2])
            return (jax.nn.sigmoid(z[..., 3]) * jnp.tanh(c), c), None

        (h, c), _ = jax.lax.scan(step, (h, c), pre)
        return h

    return np.asarray(run(*(jnp.asarray(inputs[k]) for k in ("x", "h", "c", "wx", "wh", "b"))))


#: The transformer block's sizes (examples/Transformer.hb): vocabulary, width, heads, key per
#: head, MLP width; batch and sequence length.
_VOCAB, _WIDTH, _HEADS, _KEY, _HIDDEN, _BATCH, _LENGTH = 64, 32, 4, 8, 128, 16, 32
#: Its fifteen parameters: name and shape.
_BLOCK = (("emb", (_VOCAB, _WIDTH)), ("g1", (_WIDTH,)), ("s1", (_WIDTH,)),
          ("wq", (_HEADS, _WIDTH, _KEY)), ("wk", (_HEADS, _WIDTH, _KEY)),
          ("wv", (_HEADS, _WIDTH, _KEY)), ("wo", (_HEADS, _KEY, _WIDTH)), ("g2", (_WIDTH,)),
          ("s2", (_WIDTH,)), ("w1", (_WIDTH, _HIDDEN)), ("c1", (_HIDDEN,)),
          ("w2", (_HIDDEN, _WIDTH)), ("c2", (_WIDTH,)), ("out", (_WIDTH, _VOCAB)), ("d", (_VOCAB,)))


def _block_inputs() -> dict:
    rng = np.random.default_rng(23)
    tok = rng.integers(0, _VOCAB, size=(_BATCH, _LENGTH + 1)).astype(float)
    weights = {name: (np.ones(shape) if name[0] == "g" else np.zeros(shape) if name[0] == "s"
                      else rng.uniform(-1, 1, shape) / np.sqrt(shape[-2] if len(shape) > 1
                                                               else _WIDTH))
               for name, shape in _BLOCK}
    return {"tok": tok[:, :-1], "next": tok[:, 1:], "weights": weights}


def _block_hilbert(inputs: dict, mark, steps: int = 1):
    import hilbert

    mark("import")
    module = hilbert.load(ROOT / "examples" / "Transformer.hb")
    block = module.Block(_VOCAB, _WIDTH, _HEADS, _KEY, _HIDDEN, 0)
    for taken in range(1, steps + 1):
        block.train(inputs["tok"], inputs["next"])
        if taken == 1:
            mark("first step")
    return block.weights["wq"]


def _block_forward(np_, einsum, gelu, p: dict, tok, n_layer_norm, rowmax):
    """The block's logits in torch or JAX (`np_` their array module); `p` its parameters."""
    x = p["emb"][tok]
    a = n_layer_norm(x, p["g1"], p["s1"])
    q, k, v = (einsum("btm,nmf->bntf", a, p[w]) for w in ("wq", "wk", "wv"))
    s = einsum("bntf,bnsf->bnts", q, k) / np.sqrt(_KEY)
    later = np_.triu(np_.ones((_LENGTH, _LENGTH), dtype=bool), 1)
    s = np_.where(later, -np.inf, s)
    e = np_.exp(s - rowmax(s))
    attended = einsum("bnts,bnsl->bntl", e / e.sum(-1, keepdims=True), v)
    h = x + einsum("bntl,nlo->bto", attended, p["wo"])
    u = gelu(n_layer_norm(h, p["g2"], p["s2"]) @ p["w1"] + p["c1"])
    return (h + u @ p["w2"] + p["c2"]) @ p["out"] + p["d"]


def _block_torch(inputs: dict, mark, steps: int = 1):
    import torch

    mark("import")
    params = {name: torch.tensor(value, requires_grad=True)
              for name, value in inputs["weights"].items()}
    opt = torch.optim.Adam(params.values(), lr=1e-3)
    tok = torch.from_numpy(inputs["tok"]).long()
    nxt = torch.from_numpy(inputs["next"]).long()

    def norm(x, gain, shift):
        return torch.nn.functional.layer_norm(x, (_WIDTH,), gain, shift, 1e-5)

    for taken in range(1, steps + 1):
        z = _block_forward(torch, torch.einsum, torch.nn.functional.gelu, params, tok, norm,
                           lambda s: s.amax(-1, keepdim=True))
        loss = torch.nn.functional.cross_entropy(z.reshape(-1, _VOCAB), nxt.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if taken == 1:
            mark("first step")
    return params["wq"].detach().numpy()


def _block_jax(inputs: dict, mark, steps: int = 1):
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    mark("import")

    def norm(x, gain, shift):
        centred = x - x.mean(-1, keepdims=True)
        return centred / jnp.sqrt((centred ** 2).mean(-1, keepdims=True) + 1e-5) * gain + shift

    def loss(p, tok, nxt):
        z = _block_forward(jnp, jnp.einsum, lambda u: jax.nn.gelu(u, approximate=False), p,
                           tok, norm, lambda s: s.max(-1, keepdims=True))
        picked = jnp.take_along_axis(z, nxt[..., None], axis=-1)[..., 0]
        return jnp.mean(jax.nn.logsumexp(z, axis=-1) - picked)

    @jax.jit
    def step(p, m, v, tok, nxt, taken):
        grads = jax.grad(loss)(p, tok, nxt)
        m = {k: 0.9 * m[k] + 0.1 * grads[k] for k in p}
        v = {k: 0.999 * v[k] + 0.001 * grads[k] ** 2 for k in p}
        p = {k: p[k] - 1e-3 * (m[k] / (1 - 0.9 ** taken))
             / (jnp.sqrt(v[k] / (1 - 0.999 ** taken)) + 1e-8) for k in p}
        return p, m, v

    p = {k: jnp.asarray(value) for k, value in inputs["weights"].items()}
    m = v = {k: jnp.zeros_like(value) for k, value in p.items()}
    tok, nxt = (jnp.asarray(inputs[k]).astype(int) for k in ("tok", "next"))
    for taken in range(1, steps + 1):  # (the step number traced as a value: one compilation)
        p, m, v = step(p, m, v, tok, nxt, float(taken))
        if taken == 1:  # (JAX answers before it has computed: wait for the result)
            p["wq"].block_until_ready()
            mark("first step")
    return np.asarray(p["wq"])


def _import_inputs() -> dict:
    return {}


def _import_hilbert(inputs: dict, mark):
    import hilbert  # noqa: F401

    mark("import")
    return np.zeros(1)


def _import_torch(inputs: dict, mark):
    import torch  # noqa: F401

    mark("import")
    return np.zeros(1)


def _import_jax(inputs: dict, mark):
    import jax  # noqa: F401

    mark("import")
    return np.zeros(1)


PROGRAMS = {
    "import": (_import_inputs, _import_hilbert, _import_torch, _import_jax),
    "circle": (_circle_inputs, _circle_hilbert, _circle_torch, _circle_jax),
    "mlp": (_mlp_inputs, _mlp_hilbert, _mlp_torch, _mlp_jax),
    "lstm": (_lstm_inputs, _lstm_hilbert, _lstm_torch, _lstm_jax),
    "block": (_block_inputs, _block_hilbert, _block_torch, _block_jax),
}
#: Where each contestant's function is in a row of PROGRAMS.
CONTESTANTS = {OURS: 1, TORCH: 2, JAX: 3}


def child(program: str, contestant: str) -> None:
    """Run in a fresh process: one contestant's first result, timed; a JSON line on stdout."""
    parts = PROGRAMS[program]
    inputs = parts[0]()
    imported = sorted(m for m in ("hilbert", "torch", "jax", "numba", "lark") if m in sys.modules)
    begun = time.perf_counter()
    marks: dict[str, float] = {}
    answer = parts[CONTESTANTS[contestant]](inputs, lambda name: marks.setdefault(
        name, time.perf_counter() - begun))
    total = time.perf_counter() - begun
    extra = {}
    if contestant == OURS and program != "import":  # (a call with loops builds from the first)
        extra["numba_loaded"] = "numba" in sys.modules
    print(json.dumps({"total_s": total, "import_s": marks.get("import", 0.0),
                      "imported_before": imported, "checksum": float(np.sum(answer)), **extra}))
