"""The onnx executor (docs/onnx.md) beside the numba executor and beside the same model written
in PyTorch, exported by `torch.onnx.export` and run by onnxruntime with the session options
and provider the onnx executor uses: an MLP fit and prediction (a loop of GEMMs), attention, an
LSTM walked over a sequence, and a matrix-product-state norm (a tensor network along hilbert's
path). Ours is always executor="onnx", whatever the run's executor, so the ratios read as
"onnx executor / numba" and "hilbert's ONNX graph / torch's ONNX graph" on one runtime.

The time each export takes is a figure of its own (metrics `export_hilbert_s`: specialise,
plan and write the graph on a freshly opened module; `export_torch_s`: torch.onnx.export's
trace and write). PyTorch 2.13's default exporter (`dynamo=True`) needs the onnxscript package;
the anchor uses the TorchScript exporter (`dynamo=False`), which traces Python loops unrolled,
so torch's graphs of the fit and the LSTM are straight lines of their steps where hilbert's
are one `Loop`. Without onnx and onnxruntime ours is an error entry saying what to install;
without PyTorch its anchors are skipped."""

from __future__ import annotations

import io
import time
import warnings

import numpy as np

from benchmarks import anchors as A
from benchmarks.cases.base import EXAMPLES, Anchor, Case, Config, Setup, Skip, Target
from benchmarks.cases.jax_executor import NUMBA, _numba, _on
from benchmarks.cases.networks import _chain, _operands
from benchmarks.cases.sequences import _problem, lstm_numpy, lstm_steps
from benchmarks.first_results import mlp_problem

GROUP = "onnx-executor"
#: torch's model exported by torch.onnx.export and run by onnxruntime.
TORCH_ONNX = "torch→onnx"


def _missing() -> str | None:
    """Why the onnx executor cannot run here, or None."""
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
    except ImportError:
        return "onnx and onnxruntime are not installed (pip install 'hilbert[onnx]')"
    return None


def _session(model: bytes):
    """An onnxruntime session of `model` with the options and provider the onnx executor
    gives its own sessions."""
    import onnxruntime
    from hilbert.executor.onnx.executor import resolve_provider, session_options
    from hilbert.grammar.source import nowhere
    return onnxruntime.InferenceSession(model, sess_options=session_options(),
                                        providers=[resolve_provider(None, nowhere("bench"))])


def _torch_export(build, args: tuple, names: list[str]) -> tuple[bytes, float]:
    """`build(torch)`'s function of `args` (arrays as float64 tensors, numbers fixed in the
    graph) exported by torch.onnx.export, and the seconds the export took."""
    torch = A.torch_module()
    fn = build(torch)

    class Model(torch.nn.Module):
        def forward(self, *tensors):
            return fn(*tensors)

    tensors = tuple(torch.from_numpy(np.ascontiguousarray(a)) for a in args)
    out = io.BytesIO()
    with warnings.catch_warnings():  # (the TorchScript exporter is deprecated: the docstring)
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        torch.onnx.export(Model(), tensors, out, dynamo=False, input_names=names,
                          output_names=["result"])
        seconds = time.perf_counter() - start
    return out.getvalue(), seconds


def _torch_onnx(config: Config, build, args: tuple, names: list[str], metrics: dict) -> Anchor:
    """torch's model of `build` exported to ONNX and run by onnxruntime on `args`. The export
    runs now, while the case is built, so that its time reaches `metrics` (the runner copies
    them before it prepares the anchors); where it cannot run, the anchor is skipped."""
    why = None if config.optional else "optional anchors (PyTorch, JAX) are turned off"
    why, failed = why or _missing(), None
    if why is None:
        try:
            model, metrics["export_torch_s"] = _torch_export(build, args, names)
        except Skip as skip:
            why = str(skip)
        except Exception as err:  # noqa: BLE001 - torch's failure is the anchor's error entry
            failed = err

    def make():
        if why is not None:
            raise Skip(why)
        if failed is not None:
            raise failed
        session = _session(model)
        feed = {n: np.ascontiguousarray(a) for n, a in zip(names, args, strict=True)}
        return lambda: session.run(None, feed)[0]
    return Anchor(TORCH_ONNX, make, "the same model in PyTorch, torch.onnx.export(dynamo=False), "
                  "onnxruntime with the onnx executor's session options")


def _ours(what: str, name: str, shapes: tuple, metrics: dict):
    """`name` of `what` on the onnx executor, and its export time on a module opened afresh
    (into `metrics`); None where the onnx extra is missing."""
    if _missing():
        return None
    import hilbert

    how = "open" if what.startswith("Prelude.") else "load"
    target = what if how == "open" else str(EXAMPLES / f"{what}.hb")
    fresh = (hilbert.open if how == "open" else hilbert.load)(target, executor="onnx")
    start = time.perf_counter()
    fresh.function(name).onnx(*shapes)
    metrics["export_hilbert_s"] = time.perf_counter() - start
    return _on("onnx", what).function(name)


def _setup(ours, call, anchors: list, metrics: dict, **fields) -> Setup:
    if ours is None:
        return Setup(ours=None, ours_error=_missing(), anchors=anchors, metrics=metrics,
                     **fields)
    return Setup(ours=call, anchors=anchors, metrics=metrics, **fields)


def mlp_predict(config: Config) -> Setup:
    n, p, h, q, m = 256, 32, 64, 4, 64
    t, r = config.pick(100, 20), 0.01
    x, y, w1, w2 = mlp_problem(n, p, h, q, seed=2)
    z = np.random.default_rng(3).standard_normal((m, p))
    args = (float(t), r, x, y, w1, w2, z)
    metrics: dict = {}
    ours = _ours("Prelude.Networks", "mlpPredict", tuple(np.shape(a) for a in args), metrics)
    fit = A.mlp_torch

    def build(torch):
        return lambda x, y, w1, w2, z: fit(torch)(t, r, x, y, w1, w2, z)

    return _setup(
        ours, lambda: ours(*args),
        [_numba(_on("numba", "Prelude.Networks").function("mlpPredict"), *args),
         _torch_onnx(config, build, args[2:], ["x", "y", "w1", "w2", "z"], metrics),
         A.torch_anchor(config, A.mlp_torch, *args, note="PyTorch eager, the same steps")],
        metrics, params={"x": f"{n}×{p}", "w1": f"{p}×{h}", "w2": f"{h}×{q}", "z": f"{m}×{p}",
                         "t": t}, flops=A.mlp_flops(t, n, p, h, q, m), rtol=1e-6, atol=1e-9)


def attention(config: Config) -> Setup:
    n, e = config.pick((2048, 64), (512, 64))
    rng = np.random.default_rng(4)
    q, k, v = (rng.standard_normal((n, e)) for _ in range(3))
    d = float(e)
    metrics: dict = {}
    ours = _ours("Layers", "attend", ((n, e),) * 3 + ((),), metrics)

    def build(torch):
        return lambda q, k, v: A.attention_torch(torch)(q, k, v, d)

    return _setup(
        ours, lambda: ours(q, k, v, d),
        [_numba(_on("numba", "Layers").function("attend"), q, k, v, d),
         _torch_onnx(config, build, (q, k, v), ["q", "k", "v"], metrics),
         A.torch_anchor(config, A.attention_torch, q, k, v, d, note="torch.softmax")],
        metrics, params={"q, k, v": f"{n}×{e}"}, flops=4.0 * n * n * e, rtol=1e-9, atol=1e-12)


def lstm_torch(torch):
    """sequences.lstm_numpy in PyTorch: the input products in one GEMM, then the steps."""
    def run(x, h, c, wx, wh, b):
        h, c = lstm_steps(x, h, c, wx, wh, b, torch.sigmoid, torch.tanh)
        return torch.cat([h.reshape(-1), c.reshape(-1)])
    return run


def _joined(values) -> np.ndarray:
    return np.concatenate([np.ravel(v) for v in values])


def lstm(config: Config) -> Setup:
    args = _problem(config.pick(100, 10), 4, 20)[:6]
    metrics: dict = {}
    ours = _ours("Prelude.Sequences", "lstm", tuple(a.shape for a in args), metrics)
    theirs = _on("numba", "Prelude.Sequences").function("lstm")

    def numba():
        theirs.build(*args)
        return lambda: _joined(theirs(*args))

    x, h = args[0], args[1]
    return _setup(
        ours, lambda: _joined(ours(*args)),
        [Anchor(NUMBA, numba, "the numba executor, its code built first"),
         _torch_onnx(config, lstm_torch, args, ["x", "h", "c", "wx", "wh", "b"], metrics),
         A.torch_anchor(config, lstm_torch, *args, note="PyTorch eager, the same steps"),
         A.numpy_anchor(lstm_numpy, *args, note="input products in one GEMM, then a loop")],
        metrics, params={"x": "×".join(map(str, x.shape)), "hidden": h.shape[1]},
        flops=float(2 * x.shape[0] * x.shape[1] * (x.shape[2] + h.shape[1]) * 4 * h.shape[1]),
        rtol=1e-9, atol=1e-12)


def _along(spec: str, ops: list, path):
    """`build(torch)` contracting `spec` pairwise along `path` with torch.einsum."""
    import opt_einsum

    steps = [(positions, _lettered(equation)) for positions, _, equation, *_ in
             opt_einsum.contract_path(spec, *ops, optimize=path)[1].contraction_list]

    def build(torch):
        def run(*tensors):
            left = list(tensors)
            for positions, equation in steps:
                taken = [left.pop(i) for i in sorted(positions, reverse=True)]
                left.append(torch.einsum(equation, *taken))
            return left[0]
        return run
    return build


def _lettered(equation: str) -> str:
    """`equation` with its symbols renamed a, b, c… (torch.einsum reads only [a-zA-Z]; a
    long chain's equations use opt_einsum's symbols beyond them)."""
    symbols = dict.fromkeys(ch for ch in equation if ch not in ",->")
    letters = dict(zip(symbols, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
                       strict=False))
    return "".join(letters.get(ch, ch) for ch in equation)


def mps_norm(config: Config) -> Setup:
    import hilbert

    spec, shapes = _chain(config.pick(40, 12), config.pick(16, 8))
    ops = _operands(shapes, 5)
    path, info = hilbert.contract_path(spec, *ops, memory_limit="1T")
    metrics: dict = {}
    ours = None
    if not _missing():
        start = time.perf_counter()
        ours = hilbert.contract_expression(spec, *shapes, optimize=path, executor="onnx")
        ours.function.onnx(*shapes)
        metrics["export_hilbert_s"] = time.perf_counter() - start
    theirs = hilbert.contract_expression(spec, *shapes, optimize=path, executor="numba")

    def numba():
        theirs.build()
        return lambda: theirs(*ops)

    build = _along(spec, ops, path)
    names = [f"t{k}" for k in range(len(ops))]
    return _setup(
        ours, lambda: ours(*ops),
        [Anchor(NUMBA, numba, "the numba executor on the same path, built first"),
         _torch_onnx(config, build, tuple(ops), names, metrics),
         A.torch_anchor(config, build, *ops, note="torch.einsum pairwise on the same path")],
        metrics, params={"tensors": len(shapes), "indices": len(set(spec) - set(",->"))},
        flops=float(info.flops), rtol=1e-7, atol=1e-12)


_AGAINST_TORCH_ONNX = Target("≤ 1.0× torch's ONNX graph on the same runtime", TORCH_ONNX, 1.0)
_AGAINST_NUMBA = Target("≤ 3× the numba executor", NUMBA, 3.0)

CASES = [
    Case("onnx-mlp-predict", GROUP, "mlpPredict on executor=\"onnx\" (256×32 → 64 → 4, 100 steps)",
         "one warm fit and prediction: onnx executor against numba, torch→onnx and torch",
         mlp_predict, (_AGAINST_TORCH_ONNX, _AGAINST_NUMBA)),
    Case("onnx-attention", GROUP, "attention on executor=\"onnx\" (n = 2048, d = 64)",
         "one warm call: onnx executor against numba, torch→onnx and torch", attention,
         (_AGAINST_TORCH_ONNX, _AGAINST_NUMBA)),
    Case("onnx-lstm", GROUP, "Sequences.lstm on executor=\"onnx\" (B = 32, T = 100, 512 → 768)",
         "one warm walk: onnx executor against numba, torch→onnx, torch and NumPy", lstm,
         (_AGAINST_TORCH_ONNX, _AGAINST_NUMBA)),
    Case("onnx-mps", GROUP, "⟨ψ|ψ⟩ of a 40-site MPS, bond 16, on executor=\"onnx\"",
         "one warm contraction along hilbert's path: onnx executor against numba, torch→onnx "
         "and torch", mps_norm, (_AGAINST_TORCH_ONNX, _AGAINST_NUMBA)),
]
