"""Train examples/Iris.hb on Fisher's iris data (examples/data/iris.csv), with and without
dropout, and print the loss and the share classified right on flowers held out.

    python examples/iris.py [--steps 300] [--rate 0.05] [--hidden 16] [--drop 0.2]

The 150 flowers are shuffled with a fixed seed; 100 train, 50 are held out. The measurements
are standardised by the training flowers' means and deviations.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import hilbert

HERE = Path(__file__).resolve().parent


def iris(seed: int = 0):
    """(train x, train labels, held-out x, held-out labels), standardised."""
    data = np.loadtxt(HERE / "data" / "iris.csv", delimiter=",", skiprows=1)
    data = data[np.random.default_rng(seed).permutation(len(data))]
    x, labels = data[:, :4], data[:, 4]
    mean, spread = x[:100].mean(0), x[:100].std(0)
    x = (x - mean) / spread
    return x[:100], labels[:100], x[100:], labels[100:]


def trained(drop: float, steps: int, rate: float, hidden: int, seed: int = 3):
    """A Classifier trained for `steps` full-batch Adam steps (one compiled loop)."""
    x, labels, _, _ = iris()
    net = hilbert.load(HERE / "Iris.hb").Classifier(4, hidden, 3, seed, drop)
    net.train(x, labels, rate, steps=steps)
    return net


def main(argv: list[str] | None = None) -> dict[float, tuple[float, float]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--rate", type=float, default=0.05)
    parser.add_argument("--hidden", type=int, default=16)
    parser.add_argument("--drop", type=float, default=0.2)
    args = parser.parse_args(argv)
    _, _, held_x, held_labels = iris()
    results = {}
    for drop in (0.0, args.drop):
        net = trained(drop, args.steps, args.rate, args.hidden)
        results[drop] = (net.loss(held_x, held_labels), net.correct(held_x, held_labels))
        print(f"dropout {drop:.2f}: held-out loss {results[drop][0]:.4f}, "
              f"right {results[drop][1]:.0%} of {len(held_labels)}")
    return results


if __name__ == "__main__":
    main()
