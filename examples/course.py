"""Every number the course seed printed, beside hilbert's (examples/Course.hb, CircleClassifier.hb).

    .venv/bin/python examples/course.py [--epochs 400] [--against-torch]

The seed is the course module on networks, backpropagation, optimisers and numerics
(/work/shared/seeds/002_aa602d91ed2d4b95.txt); docs/course.md lists the same numbers with
notes. A number agrees when hilbert's value, rounded to the digits the seed printed, is the
seed's. Where the seed's number is a float32 effect, the float32 figure is shown as NumPy
computes it and hilbert's float64 value beside it.

The circle classifier trains for --epochs epochs (400, as the seed). With PyTorch installed
its data, initial weights and batch orders are drawn exactly as the seed draws them
(torch.manual_seed(0)), so hilbert's float64 rows stand beside the seed's float32 ones;
--against-torch also runs the seed's loop in torch float64 and float32 and prints their rows.
Without PyTorch the same procedure runs on data drawn with NumPy.
"""

from __future__ import annotations

import argparse
import math
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import hilbert

HERE = Path(__file__).resolve().parent
TRAIN, BATCH, SEED_EPOCHS = 1536, 64, 400

#: The seed's circle-classifier table: epoch, last mini-batch loss, validation accuracy.
SEED_ROWS = [(100, 0.0069, 0.992), (200, 0.0205, 0.996), (300, 0.0056, 0.996),
             (400, 0.0107, 0.996)]
#: The epoch means of the loss the seed quotes for the same epochs.
SEED_EPOCH_MEANS = [0.0108, 0.0065, 0.0054, 0.0046]


@dataclass(frozen=True)
class Number:
    """One printed number of the seed and hilbert's value for it."""

    what: str
    seed: object  # None where the seed printed nothing: a value shown for contrast
    ours: object
    decimals: int  # the decimals the seed printed; agreement is equality after rounding to them

    def agrees(self) -> bool:
        if self.seed is None:
            return True
        ours, seed = np.asarray(self.ours, dtype=float), np.asarray(self.seed, dtype=float)
        with np.errstate(invalid="ignore"):
            close = np.abs(ours - seed) <= 10.0 ** -self.decimals / 2 + 1e-12
        same = (ours == seed) | close | (np.isnan(ours) & np.isnan(seed))
        return bool(ours.shape == seed.shape and np.all(same))


def tiny_network(course) -> list[Number]:
    """Section "The batch form, and the code": the gradients of Lab 1's tiny network by ∂."""
    grads = course.tinyGradients([[2.0, 1.0]], [[1.0]], [[0.5, -1.0], [0.25, 0.5]], [0.1, 0.0],
                                 [[0.8], [-0.6]], [0.2])
    seed = ([[0.896, 0.0], [0.448, 0.0]], [0.448, 0.0], [[0.756], [0.0]], [0.56])
    return [Number(f"∂L/∂{name}", s, g, 4)
            for name, s, g in zip(("W1", "b1", "W2", "b2"), seed, grads, strict=True)]


def dual_numbers(course) -> list[Number]:
    """Section on forward mode: f = ln x1 + x1 x2 − sin x2 at (2, 5) and its partials."""
    f, dx1, dx2 = course.dualExample(2.0, 5.0)
    return [Number("f", 11.6521, f, 4), Number("df/dx1", 5.5, dx1, 4),
            Number("df/dx2", 1.7163, dx2, 4)]


def activations(course) -> list[Number]:
    """Section on activations: φ′ at z = −3, 0, 1, 2, 5; the minima; the tanh approximation."""
    seed = {"sigmoid": [0.0452, 0.2500, 0.1966, 0.1050, 0.0066],
            "tanh": [0.0099, 1.0000, 0.4200, 0.0707, 0.0002],
            "relu": [0.0, 0.0, 1.0, 1.0, 1.0],
            "gelu": [-0.0119, 0.5000, 1.0833, 1.0852, 1.0000],
            "silu": [-0.0881, 0.5000, 0.9277, 1.0908, 1.0265]}
    slopes = course.activationSlopes([-3.0, 0.0, 1.0, 2.0, 5.0])
    numbers = [Number(f"{name}′(z)", s, g, 4)
               for (name, s), g in zip(seed.items(), slopes, strict=True)]
    gelu_at, gelu_low, _ = course.geluMinimum(-1.0)
    silu_at, silu_low, _ = course.siluMinimum(-1.0)
    gap, where = course.tanhGap(np.linspace(-6.0, 6.0, 12001))
    return numbers + [Number("GELU minimum", -0.170, gelu_low, 3),
                      Number("GELU minimum at z", -0.752, gelu_at, 3),
                      Number("SiLU minimum", -0.278, silu_low, 3),
                      Number("SiLU minimum at z", -1.278, silu_at, 3),
                      Number("GELU tanh gap, largest", 4.7e-4, gap, 5),
                      Number("GELU tanh gap, at |z|", 2.7, abs(where), 1)]


def digits_network(course) -> list[Number]:
    """Section "The batch form": the digits network's output shape and parameter counts."""
    net = course.DigitsNetwork(0)
    logits = net.eval(np.random.default_rng(0).normal(size=(64, 64)))
    weights = net.weights.values()
    decayed = sum(w.size for w in weights if w.ndim >= 2)
    return [Number("logits shape", (64, 10), logits.shape, 0),
            Number("parameters", 26122, net.parameters(), 0),
            Number("AdamW group with decay (matrices)", 25856, decayed, 0),
            Number("AdamW group without decay (biases)", 266, net.parameters() - decayed, 0),
            Number("Adam memory, bytes (16 per parameter)", 417952, net.parameters() * 16, 0)]


def losses(course) -> list[Number]:
    """Section on numerics: overflow, underflow, saturation, Huber, and the two variances."""
    logits = [[1000.0, 999.0, 998.0]]
    huber, square = course.huberAgainstSquare(3.0, 1.0)
    deviations, moments = course.spreads([10000.0, 10001.0, 10002.0])
    return [Number("softmax by hand of [1000, 999, 998]", [[math.nan] * 3],
                   course.softmaxByHand(logits), 4),
            Number("softmaxRows of [1000, 999, 998]", None,
                   course.softmaxStable(logits), 4),
            Number("cross-entropy from logits", 0.407606, course.crossEntropyOf(logits, [0]), 6),
            Number("ln softmax of [0, −800] (the seed's −120 is float32)", [[0.0, -math.inf]],
                   course.logOfSoftmax([[0.0, -800.0]]), 4),
            Number("logSoftmax of [0, −120]", [[0.0, -120.0]],
                   course.logSoftmaxOf([[0.0, -120.0]]), 4),
            Number("BCE with logits, z = 17, y = 0", 17.0,
                   course.binaryCrossEntropyOf([[17.0]], [[0.0]]), 1),
            Number("BCE after a sigmoid, z = 17 (torch: 100.0)", None,
                   course.binaryCrossEntropyByHand([[17.0]], [[0.0]]), 1),
            Number("BCE after a sigmoid, z = 40", None,
                   course.binaryCrossEntropyByHand([[40.0]], [[0.0]]), 1),
            Number("Huber cost of a residual of 3", 2.5, huber, 4),
            Number("½ r² of a residual of 3", 4.5, square, 4),
            Number("variance as mean((x − μ)²)", 0.6667, deviations, 4),
            Number("variance as mean(x²) − μ² (the seed's 0 is float32)", None, moments, 4)]


def float32_figures() -> list[tuple[str, object, str]]:
    """The seed's float32 effects, recomputed in float32 by NumPy: (what, value, note)."""
    with np.errstate(all="ignore"):
        shares = np.exp(np.float32([0.0, -120.0]))
        log_shares = np.log(shares / shares.sum())
        sigma = np.float32(1) / (np.float32(1) + np.exp(np.float32(-17.0)))
        x = np.float32([10000, 10001, 10002])
        moments = (x * x).mean() - x.mean() ** 2
    return [("ln softmax of [0, −120]", log_shares.tolist(),
             "e^z underflows from z ≈ −104 in float32, from −745 in float64"),
            ("σ(17)", float(sigma),
             "exactly 1 in float32, so ln(1 − σ) = −inf; torch clamps the log at −100"),
            ("mean(x²) − μ²", float(moments), "the seed's exactly 0")]


def batch_norm(course) -> list[Number]:
    """Section on normalisation: one training pass of nn.BatchNorm1d(1), then evaluation."""
    out, mean, var = course.batchNormStep([[2.0], [4.0], [6.0], [8.0]], [0.0], [1.0], 0.1)
    return [Number("train out", [-1.342, -0.447, 0.447, 1.342], np.ravel(out), 3),
            Number("running mean", 0.5, mean[0], 3), Number("running var", 1.567, var[0], 3),
            Number("eval out for 6", 4.394, course.batchNormAfter([[6.0]], mean, var)[0, 0], 3)]


def optimisers(course) -> list[Number]:
    """Sections on Adam, momentum and stability: the arithmetic the text quotes."""
    t = np.arange(1.0, 10001.0)
    late, fast = course.correctionFactor(t, 0.9, 0.999), course.correctionFactor(t, 0.9, 0.95)
    m, v, root, step = course.spike(100.0, 0.9, 0.999)
    slow, steady = course.momentumGain(200, 0.9, -1), course.momentumGain(200, 0.9, 1)
    return [Number("Adam correction factor, t = 1", 3.16, late[0], 2),
            Number("… its peak", 6.57, late.max(), 2),
            Number("… at the step", 12, t[late.argmax()], 0),
            Number("… at t = 1000", 1.26, late[999], 2),
            Number("β2 = 0.95: factor at t = 1", 0.45, fast[0], 2),
            Number("β2 = 0.95: never above", 1.10, fast.max(), 2),
            Number("spike of 100: v", 11.0, v, 1), Number("√v", 3.3, root, 1),
            Number("m", 10.9, m, 1), Number("step, in usual steps", 3, step, 0),
            Number("steps for √v to return within 10%", 3860,
                   course.recoverySteps(100.0, 0.9, 0.999, 0.1), -1),
            Number("momentum gain, sign flips every step", 0.53, slow, 2),
            Number("momentum gain, constant gradient", 10, steady, 0),
            Number("their ratio", 19, steady / slow, 0)]


def stability(course) -> list[tuple[str, float, float, float]]:
    """The limits on f(θ) = λθ²/2 (λ = 4), 2000 steps from θ = 1 just below and just above
    each: (optimiser, the limit on ηλ, |θ| below, |θ| above)."""
    lam, steps, mu = 4.0, 2000, 0.9
    runs = [("gradient descent", 2.0,
             lambda e: course.descentTrajectory(steps, 1.0, e / lam, lam)),
            ("heavy ball μ = 0.9", 2 * (1 + mu),
             lambda e: course.heavyBallTrajectory(steps, 1.0, e / lam, mu, lam)),
            ("Nesterov μ = 0.9", 2 * (1 + mu) / (1 + 2 * mu),
             lambda e: course.nesterovTrajectory(steps, 1.0, e / lam, mu, lam))]
    return [(name, limit, abs(run(limit - 0.01)), abs(run(limit + 0.01)))
            for name, limit, run in runs]


def schedule(course) -> list[tuple[int, float, float | None]]:
    """warmupCosine at some steps, beside torch's SequentialLR(LinearLR, CosineAnnealingLR) when
    PyTorch is installed: (step, hilbert, torch or None)."""
    steps = [0, 1, 250, 499, 500, 501, 2500, 5000, 7500, 9999, 10000]
    ours = [course.courseSchedule(s) for s in steps]
    theirs = torch_schedule(max(steps) + 1)
    return [(s, o, None if theirs is None else theirs[s]) for s, o in zip(steps, ours, strict=True)]


def torch_schedule(length: int) -> list[float] | None:
    """The seed's schedule as torch computes it, one rate per step; None without PyTorch."""
    try:
        import torch
        from torch.optim.lr_scheduler import CosineAnnealingLR, LinearLR, SequentialLR
    except ImportError:
        return None
    opt = torch.optim.AdamW([torch.zeros(1, requires_grad=True)], lr=3e-3)
    sched = SequentialLR(opt, milestones=[500], schedulers=[
        LinearLR(opt, start_factor=1e-3, end_factor=1.0, total_iters=500),
        CosineAnnealingLR(opt, T_max=10_000 - 500, eta_min=3e-5)])
    rates = []
    with warnings.catch_warnings():  # the rates need no optimiser steps, which torch warns about
        warnings.simplefilter("ignore", UserWarning)
        for _ in range(length):
            rates.append(opt.param_groups[0]["lr"])
            sched.step()
    return rates


# The circle classifier

@dataclass(frozen=True)
class CircleRun:
    """What the seed's loop needs: all points, labels, the initial parameters as nn.Linear
    holds them, and one batch order per epoch."""

    points: np.ndarray  # 2048×2
    labels: np.ndarray  # 2048 class numbers
    initial: list       # w1 (d_out×d_in), b1, w2, b2, w3, b3
    orders: list        # one permutation of range(TRAIN) per epoch


@dataclass(frozen=True)
class Epoch:
    """One row of the training log."""

    number: int
    last: float      # the last mini-batch's loss, as the seed prints it
    mean: float      # the mean of the epoch's batch losses
    accuracy: float  # on the validation set


def seed_network(torch):
    """The seed's classifier, built (and so drawn) as the seed builds it."""
    nn = torch.nn
    return nn.Sequential(nn.Linear(2, 32), nn.GELU(), nn.Linear(32, 32), nn.GELU(),
                         nn.Linear(32, 2))


def circle_from_torch(epochs: int) -> CircleRun:
    """Data, initial weights and batch orders drawn exactly as the seed draws them."""
    import torch

    torch.manual_seed(0)
    points = torch.rand(2048, 2) * 2 - 1
    labels = ((points ** 2).sum(1) < 0.5).long()
    initial = [p.detach().double().numpy().copy() for p in seed_network(torch).parameters()]
    orders = [torch.randperm(TRAIN).numpy() for _ in range(epochs)]
    return CircleRun(points.double().numpy(), labels.double().numpy(), initial, orders)


def circle_from_numpy(epochs: int) -> CircleRun:
    """The same procedure with NumPy's generator: nn.Linear's uniform ±1/√d_in initialisation."""
    rng = np.random.default_rng(0)
    points = rng.random((2048, 2)) * 2 - 1
    labels = ((points ** 2).sum(1) < 0.5).astype(float)
    initial = []
    for d_in, d_out in ((2, 32), (32, 32), (32, 2)):
        bound = 1 / math.sqrt(d_in)
        initial += [rng.uniform(-bound, bound, (d_out, d_in)), rng.uniform(-bound, bound, d_out)]
    return CircleRun(points, labels, initial, [rng.permutation(TRAIN) for _ in range(epochs)])


def train_circle(circle, run: CircleRun, epochs: int) -> list[Epoch]:
    """The seed's loop in hilbert, one train call per batch, logged every epoch."""
    x = circle.standardise(run.points, *circle.trainingStatistics(run.points[:TRAIN]))
    xs, ts, xv, tv = x[:TRAIN], run.labels[:TRAIN], x[TRAIN:], run.labels[TRAIN:]
    net = circle.CircleClassifier(32, 0)
    w1, b1, w2, b2, w3, b3 = run.initial
    net.restart(w1.T, b1, w2.T, b2, w3.T, b3)  # nn.Linear stores d_out×d_in
    log = []
    for epoch in range(epochs):
        losses = []
        for start in range(0, TRAIN, BATCH):
            batch = run.orders[epoch][start:start + BATCH]
            losses.append(net.loss(xs[batch], ts[batch]))
            net.train(xs[batch], ts[batch], epoch)
        log.append(Epoch(epoch + 1, losses[-1], float(np.mean(losses)), net.accuracyOn(xv, tv)))
    return log


def train_torch(epochs: int, dtype_name: str) -> list[Epoch]:
    """The seed's loop verbatim in torch, in float32 (as printed) or float64."""
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(1)
    dtype = getattr(torch, dtype_name)
    torch.manual_seed(0)
    X = torch.rand(2048, 2) * 2 - 1
    T = ((X ** 2).sum(1) < 0.5).long()
    model = seed_network(torch).to(dtype)
    X = X.to(dtype)
    Xtr, Ttr, Xva, Tva = X[:TRAIN], T[:TRAIN], X[TRAIN:], T[TRAIN:]
    mu, sd = Xtr.mean(0), Xtr.std(0)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-2)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=SEED_EPOCHS)
    log = []
    for epoch in range(epochs):
        perm, losses = torch.randperm(TRAIN), []
        for i in range(0, TRAIN, BATCH):
            idx = perm[i:i + BATCH]
            loss = F.cross_entropy(model((Xtr[idx] - mu) / sd), Ttr[idx])
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            losses.append(loss.item())
        sched.step()
        with torch.no_grad():
            accuracy = (model((Xva - mu) / sd).argmax(1) == Tva).to(dtype).mean().item()
        log.append(Epoch(epoch + 1, losses[-1], float(np.mean(losses)), accuracy))
    return log


def has_torch() -> bool:
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def seed_agreement(log: list[Epoch]) -> list[Number]:
    """The seed's rows (last loss, accuracy, epoch mean) beside the log's."""
    numbers = []
    for (epoch, loss, accuracy), mean in zip(SEED_ROWS, SEED_EPOCH_MEANS, strict=True):
        if epoch <= len(log):
            row = log[epoch - 1]
            numbers += [Number(f"epoch {epoch}: last batch loss", loss, row.last, 4),
                        Number(f"epoch {epoch}: validation accuracy", accuracy, row.accuracy, 3),
                        Number(f"epoch {epoch}: epoch mean loss", mean, row.mean, 4)]
    return numbers


# Printing

def show(value) -> str:
    """A number or nested list, twelve significant digits at most."""
    array = np.asarray(value, dtype=float)
    if array.ndim == 0:
        return f"{float(array):.12g}"
    return "[" + ", ".join(show(part) for part in array) + "]"


def print_numbers(title: str, numbers: list[Number]) -> bool:
    """One section: each number, the seed's and hilbert's; True when all agree."""
    print(f"\n{title}")
    for number in numbers:
        seed = "—" if number.seed is None else show(number.seed)
        mark = "(for contrast)" if number.seed is None else "ok" if number.agrees() else "DIFFERS"
        print(f"  {number.what:<44} seed {seed:<30} hilbert {show(number.ours):<30} {mark}")
    return all(number.agrees() for number in numbers)


def print_circle(circle, epochs: int, against_torch: bool) -> bool:
    """Train the classifier, print its log beside the seed's (and torch's); True when the rows
    agree with the seed's, or when the draws cannot be the seed's (no PyTorch)."""
    torch_here = has_torch()
    run = circle_from_torch(epochs) if torch_here else circle_from_numpy(epochs)
    print(f"\nThe circle classifier, {epochs} epochs, data and initial weights from "
          + ("torch.manual_seed(0) as in the seed" if torch_here else
             "NumPy (PyTorch is not installed, so these are not the seed's draws)"))
    log = train_circle(circle, run, epochs)
    theirs = {f"torch {kind}": train_torch(epochs, kind) for kind in ("float32", "float64")
              if against_torch and torch_here}
    print(f"  {'epoch':>5}  {'seed (float32)':<22} {'hilbert (float64)':<26}"
          + "".join(f"{name:<26}" for name in theirs))
    seed = {e: f"{loss:.4f} {acc:.3f} {mean:.4f}" for (e, loss, acc), mean
            in zip(SEED_ROWS, SEED_EPOCH_MEANS, strict=True)}
    for row in log:
        if row.number in seed or row.number == epochs:
            cells = [log_cell(row)] + [log_cell(t[row.number - 1]) for t in theirs.values()]
            print(f"  {row.number:>5}  {seed.get(row.number, '—'):<22} " + "".join(cells))
    print("  (each cell: the last batch's loss, validation accuracy, the epoch's mean loss)")
    for name, other in theirs.items():
        gap = max(abs(a.last - b.last) for a, b in zip(log, other, strict=True))
        print(f"  largest |{name} − hilbert| over every epoch's last batch loss: {gap:.2e}")
    return not torch_here or print_numbers("The rows the seed printed", seed_agreement(log))


def log_cell(row: Epoch) -> str:
    return f"{row.last:.10f} {row.accuracy:.3f} {row.mean:.4f}".ljust(26)


SECTIONS = [("The tiny network's gradients, by ∂", tiny_network),
            ("Dual numbers: f = ln x1 + x1 x2 − sin x2 at (2, 5)", dual_numbers),
            ("Activations: φ′ at z = −3, 0, 1, 2, 5; minima; tanh approximation", activations),
            ("The digits network 64→128→128→10", digits_network),
            ("Losses and numerics (float64; the float32 figures follow)", losses),
            ("Batch normalisation", batch_norm),
            ("Optimiser arithmetic", optimisers)]


def print_explorations(course) -> None:
    """What the seed states without printing: float32 effects, stability limits, the schedule."""
    print("\nThe seed's float32 effects, recomputed in float32 by NumPy")
    for what, value, note in float32_figures():
        print(f"  {what:<30} {show(value):<20} {note}")
    print("\nStability on f(θ) = 2θ², 2000 steps from θ = 1: |θ| at ηλ = the limit ∓ 0.01")
    for name, limit, below, above in stability(course):
        print(f"  {name:<20} ηλ < {limit:.4g}   below: {below:.3g}   above: {above:.3g}")
    print("\nThe worked example's schedule, warmupCosine"
          + (" (and torch's SequentialLR)" if has_torch() else ""))
    for step, ours, theirs in schedule(course):
        torch_rate = "" if theirs is None else f"   torch {theirs:.12g}"
        print(f"  step {step:>5}   hilbert {ours:.12g}{torch_rate}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=SEED_EPOCHS)
    parser.add_argument("--against-torch", action="store_true",
                        help="also run the seed's loop in torch float32 and float64 (minutes)")
    args = parser.parse_args(argv)
    course = hilbert.load(HERE / "Course.hb")
    agree = all([print_numbers(title, part(course)) for title, part in SECTIONS])
    print_explorations(course)
    circle = hilbert.load(HERE / "CircleClassifier.hb")
    agree &= print_circle(circle, args.epochs, args.against_torch)
    print("\n" + ("every number agrees with the seed to the digits it printed" if agree
                  else "SOME NUMBERS DIFFER FROM THE SEED"))
    return 0 if agree else 1


if __name__ == "__main__":
    raise SystemExit(main())
