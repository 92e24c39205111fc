"""Train the transformer block of examples/Transformer.hb to copy: each sequence is k random
values followed by the same k values again, so once the first half has been read every next
value can be found by attending back k − 1 places. Only those predictions count (a 0/1 mask
over the second half); the first half's next values are random and cannot be learnt. The
block has no positional embedding, so each token carries its position: token = value +
vocab · position, and the block predicts the next token (its value and its position).

    python examples/copy_task.py [--steps 600] [--half 4] [--vocab 8] [--batch 32]

Each step trains on a fresh batch (numpy.random.default_rng(step)); the script prints the
masked loss and the share of the second half's tokens predicted right on a held-out batch,
before and after training.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import hilbert

HERE = Path(__file__).resolve().parent


def batch(seed: int, size: int, half: int, vocab: int):
    """(tokens, next tokens, mask): size sequences of 2·half tokens, the second half's values a
    copy of the first's, each token its value + vocab · its position; next[:, t] is the token
    after position t (the last wraps to the first, masked out); the mask is 1 where the next
    token's value is a copied one."""
    first = np.random.default_rng(seed).integers(0, vocab, size=(size, half))
    values = np.concatenate([first, first], axis=1)
    tok = (values + vocab * np.arange(2 * half)).astype(float)
    nxt = np.roll(tok, -1, axis=1)
    mask = np.zeros_like(tok)
    mask[:, half - 1:2 * half - 1] = 1.0
    return tok, nxt, mask


def train(steps: int, half: int, vocab: int, size: int, every: int = 100):
    """A Block (width 32, 2 heads of 16, MLP 64) trained for `steps` Adam steps, one fresh
    batch each; the held-out (loss, share right) before training and every `every` steps."""
    block = hilbert.load(HERE / "Transformer.hb").Block(vocab * 2 * half, 32, 2, 16, 64, 0)
    held = batch(10 ** 6, 256, half, vocab)
    curve = [(0, block.maskedLoss(*held), block.predicted(*held))]
    for step in range(steps):
        block.trainMasked(*batch(step, size, half, vocab))
        if (step + 1) % every == 0 or step + 1 == steps:
            curve.append((step + 1, block.maskedLoss(*held), block.predicted(*held)))
    return block, curve


def main(argv: list[str] | None = None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--half", type=int, default=4)
    parser.add_argument("--vocab", type=int, default=8)
    parser.add_argument("--batch", type=int, default=32)
    args = parser.parse_args(argv)
    _, curve = train(args.steps, args.half, args.vocab, args.batch)
    for step, loss, right in curve:
        print(f"step {step:5d}: held-out masked loss {loss:.4f}, copied right {right:.0%}")
    return curve


if __name__ == "__main__":
    main()
