"""Train examples/Perceptron.hb on XOR and save its loss curve as a PNG (needs matplotlib).

    python examples/train_perceptron.py [--steps 500] [--rate 0.5] [--out perceptron_loss.png]

Without matplotlib (`pip install 'hilbert[plot]'`) it trains, prints the losses and says that
it drew nothing.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import hilbert

HERE = Path(__file__).resolve().parent
XOR_X = np.array([[0, 0], [0, 1], [1, 0], [1, 1]], dtype=float)
XOR_Y = np.array([[0], [1], [1], [0]], dtype=float)


def train(steps: int, rate: float, hidden: int, seed: int, every: int) -> tuple[object, list]:
    """A fresh Perceptron trained for `steps` steps; the loss every `every` steps."""
    net = hilbert.load(HERE / "Perceptron.hb").Perceptron(2, hidden, seed=seed)
    curve = [(0, net.loss(XOR_X, XOR_Y))]
    done = 0
    while done < steps:
        chunk = min(every, steps - done)
        net.train(XOR_X, XOR_Y, rate, steps=chunk)  # `chunk` steps in one compiled loop
        done += chunk
        curve.append((done, net.loss(XOR_X, XOR_Y)))
    return net, curve


def plot(curve: list, out: Path, title: str) -> bool:
    """Draw the loss curve to `out`; False if matplotlib is not installed."""
    try:
        import matplotlib
    except ImportError:
        return False
    matplotlib.use("Agg")
    from matplotlib import pyplot

    steps, losses = zip(*curve, strict=True)
    figure, axes = pyplot.subplots(figsize=(6, 4))
    axes.semilogy(steps, np.maximum(losses, 1e-32))
    axes.set(xlabel="step", ylabel="mean squared error (log scale)", title=title)
    axes.grid(True, which="both", alpha=0.3)
    figure.tight_layout()
    figure.savefig(out, dpi=120)
    pyplot.close(figure)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--rate", type=float, default=0.5)
    parser.add_argument("--hidden", type=int, default=8)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--every", type=int, default=1, help="steps between loss readings")
    parser.add_argument("--out", type=Path, default=Path("perceptron_loss.png"))
    args = parser.parse_args(argv)
    net, curve = train(args.steps, args.rate, args.hidden, args.seed, max(1, args.every))
    print(net)
    print(f"loss: {curve[0][1]:.6f} at step 0, {curve[-1][1]:.3g} after {args.steps} steps")
    print(f"outputs on XOR: {np.round(net.eval(XOR_X).ravel(), 4).tolist()} (targets 0, 1, 1, 0)")
    title = f"Perceptron(2, {args.hidden}, seed={args.seed}) on XOR, rate {args.rate}"
    if plot(curve, args.out, title):
        print(f"loss curve saved to {args.out}")
    else:
        print("matplotlib is not installed (pip install 'hilbert[plot]'), so no loss curve "
              "was drawn")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
