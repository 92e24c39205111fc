"""Q-learning and SARSA on a small cliff walk: examples/QTable.hb and examples/Sarsa.hb.

    python examples/cliff_walk.py [--episodes 150] [--seed 1] [--rows 3] [--columns 7]

The world is a grid. The walker starts in the bottom-left corner and the goal is the
bottom-right one; the cells between them on the bottom row are a cliff. Each step costs 1; a
step onto the cliff costs 100 and puts the walker back at the start (Sutton and Barto, 2nd ed.,
example 6.6, made smaller). Both learners explore ε-greedily; the tables decide the chances and
this script draws the actions. It prints each learner's greedy path and its returns.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import hilbert

HERE = Path(__file__).resolve().parent
MOVES = ((-1, 0), (0, 1), (1, 0), (0, -1))  # up, right, down, left: actions 0 to 3


@dataclass(frozen=True)
class Cliff:
    """A rows×columns grid; states are numbered row by row, the cliff is the bottom row's middle."""

    rows: int = 3
    columns: int = 7

    @property
    def states(self) -> int:
        return self.rows * self.columns

    @property
    def start(self) -> int:
        return (self.rows - 1) * self.columns

    @property
    def goal(self) -> int:
        return self.rows * self.columns - 1

    def step(self, state: int, action: int) -> tuple[int, float, bool]:
        """Where `action` leads from `state`, what it costs, and whether the episode ended."""
        row, column = divmod(state, self.columns)
        d_row, d_column = MOVES[action]
        row = min(max(row + d_row, 0), self.rows - 1)
        column = min(max(column + d_column, 0), self.columns - 1)
        landed = row * self.columns + column
        if row == self.rows - 1 and 0 < column < self.columns - 1:
            return self.start, -100.0, False
        return landed, -1.0, landed == self.goal

    def greedy_path(self, table: np.ndarray, limit: int = 100) -> list[int]:
        """The states visited taking each state's best action in `table` (the first of ties),
        until the goal or `limit` steps."""
        path = [self.start]
        while path[-1] != self.goal and len(path) <= limit:
            path.append(self.step(path[-1], int(np.argmax(table[path[-1]])))[0])
        return path


def draw(chances: np.ndarray, rng: np.random.Generator) -> int:
    """One action drawn from a row of chances (the learner answers chances, never an action)."""
    return int(rng.choice(len(chances), p=chances))


def run(kind: str, world: Cliff, episodes: int, seed: int, eps: float = 0.1, rate: float = 0.5,
        limit: int = 60, executor: str = "numba") -> tuple[np.ndarray, list[float]]:
    """Train a fresh QTable ("q") or Sarsa ("sarsa"); its final table and each episode's return."""
    if kind == "q":
        learner = hilbert.load(HERE / "QTable.hb", executor=executor).QTable(world.states, 4)
    else:
        learner = hilbert.load(HERE / "Sarsa.hb", executor=executor).Sarsa(world.states, 4)
    rng = np.random.default_rng(seed)
    returns = []
    for _ in range(episodes):
        state, total = world.start, 0.0
        action = draw(learner.act([state], eps)[0], rng)
        for _ in range(limit):
            landed, reward, done = world.step(state, action)
            following = draw(learner.act([landed], eps)[0], rng)
            if kind == "q":
                learner.train([state], [action], [reward], [landed], [float(done)], rate, 1.0)
            else:
                learner.train([state], [action], [reward], [landed], [following], [float(done)],
                              rate, 1.0)
            total += reward
            state, action = landed, following
            if done:
                break
        returns.append(total)
    return learner.q, returns


def picture(world: Cliff, path: list[int]) -> str:
    """The grid with the path drawn as *, the start S, the goal G and the cliff C."""
    lines = []
    for row in range(world.rows):
        cells = []
        for column in range(world.columns):
            state = row * world.columns + column
            cliff = row == world.rows - 1 and 0 < column < world.columns - 1
            cells.append("S" if state == world.start else "G" if state == world.goal else
                         "C" if cliff else "*" if state in path else ".")
        lines.append(" ".join(cells))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=150)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rows", type=int, default=3)
    parser.add_argument("--columns", type=int, default=7)
    args = parser.parse_args(argv)
    world = Cliff(args.rows, args.columns)
    for kind, name in (("q", "Q-learning"), ("sarsa", "SARSA")):
        table, returns = run(kind, world, args.episodes, args.seed)
        path = world.greedy_path(table)
        last = returns[-20:]
        print(f"{name}: greedy path of {len(path) - 1} steps; mean return of the last "
              f"{len(last)} episodes {np.mean(last):.1f}")
        print(picture(world, path), end="\n\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
