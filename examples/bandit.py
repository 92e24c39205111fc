"""A multi-armed bandit learning which arm pays best: examples/Bandit.hb.

    python examples/bandit.py [--pulls 300] [--eps 0.1] [--start 0] [--ucb C] [--seed 3]

Each arm pays a normally distributed reward (means 0.1, 0.5 and 0.9 unless --means says
otherwise, spread 0.2). The learner answers the chances of pulling each arm, ε-greedy
(`choose`) or by upper confidence bounds (`ucb`, with --ucb C); this script draws the arm,
draws its reward, and trains the learner on the pull. It prints the estimates and how often
each arm was pulled.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import hilbert

HERE = Path(__file__).resolve().parent


def play(means: list[float], pulls: int, seed: int, eps: float = 0.1, start: float = 0.0,
         ucb: float | None = None, spread: float = 0.2,
         executor: str = "numba") -> tuple[object, list[int]]:
    """A fresh Bandit trained on `pulls` pulls; the learner and the arm of every pull."""
    bandit = hilbert.load(HERE / "Bandit.hb", executor=executor).Bandit(len(means), start)
    rng = np.random.default_rng(seed)
    arms = []
    for _ in range(pulls):
        chances = (bandit.choose(eps) if ucb is None else bandit.ucb(ucb))[0]
        arm = int(rng.choice(len(means), p=chances))
        bandit.train([arm], [rng.normal(means[arm], spread)])
        arms.append(arm)
    return bandit, arms


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pulls", type=int, default=300)
    parser.add_argument("--eps", type=float, default=0.1)
    parser.add_argument("--start", type=float, default=0.0)
    parser.add_argument("--ucb", type=float, default=None, metavar="C")
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--means", type=float, nargs="+", default=[0.1, 0.5, 0.9])
    args = parser.parse_args(argv)
    bandit, arms = play(args.means, args.pulls, args.seed, args.eps, args.start, args.ucb)
    policy = f"UCB with c = {args.ucb}" if args.ucb is not None else f"ε-greedy with ε = {args.eps}"
    print(f"{args.pulls} pulls, {policy}, unpulled arms worth {args.start}")
    print(f"{'arm':>4} {'pays':>6} {'believed':>9} {'pulls':>6}")
    for arm, (pays, believed) in enumerate(zip(args.means, bandit.means()[0], strict=True)):
        print(f"{arm:>4} {pays:>6.2f} {believed:>9.3f} {arms.count(arm):>6}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
