"""Models as people write them (issue 28): the transformer block of examples/Transformer.hb,
whose train block updates its fifteen weights and their Adam moments in one line over the group
`weights`, against the same model written weight by weight (tests/programs/TransformerByHand.hb):
the warm time of one train call of each, in one process. The grouped form is rewritten into the
hand-written one before it is lowered, so the two must run the same generated code; the case
records whether they do (`same_code`) and whether three steps of each give equal weights."""

from __future__ import annotations

import numpy as np

from benchmarks.cases.base import EXAMPLES, ROOT, Anchor, Case, Config, Setup, Target

BY_HAND = "by hand"


def _program_sources(net, tok, nxt) -> list[str]:
    values = net.train._values((tok, nxt), {})
    program = net._functions["train"].program(tuple(v.shape for v in values), net.dtype)
    return program.sources()


def groups(config: Config) -> Setup:
    import hilbert

    sizes = config.pick((64, 32, 4, 8, 128, 0), (7, 8, 2, 3, 12, 0))
    batch, length = config.pick((16, 32), (2, 5))
    rng = np.random.default_rng(28)
    tok = rng.integers(0, sizes[0], size=(batch, length)).astype(float)
    nxt = rng.integers(0, sizes[0], size=(batch, length)).astype(float)
    made = {}
    for name, path in (("grouped", EXAMPLES / "Transformer.hb"),
                       (BY_HAND, ROOT / "tests" / "programs" / "TransformerByHand.hb")):
        made[name] = hilbert.load(path, executor=config.executor).Block
    grouped, by_hand = made["grouped"](*sizes), made[BY_HAND](*sizes)
    grouped.train.build(tok, nxt)
    by_hand.train.build(tok, nxt)
    same = _program_sources(grouped, tok, nxt) == _program_sources(by_hand, tok, nxt)
    a, b = made["grouped"](*sizes), made[BY_HAND](*sizes)
    a.train(tok, nxt, steps=3)
    b.train(tok, nxt, steps=3)
    equal = all(np.array_equal(value, b.weights[name.replace(".", "")])
                for name, value in a.weights.items())
    return Setup(
        ours=lambda: grouped.train(tok, nxt),
        anchors=[Anchor(BY_HAND, lambda: lambda: by_hand.train(tok, nxt),
                        "the same block with Adam written out weight by weight")],
        compare=False,
        params={"vocab, width, heads, key, hidden": ", ".join(map(str, sizes[:5])),
                "tokens": f"{batch}×{length}"},
        metrics={"same_code": same, "weights_equal": equal},
        notes=["one warm train call (one Adam step on 15 weights and their moments) of each form"])


CASES = [
    Case("block-groups", "models", "a transformer block's Adam over the group `weights`",
         "one warm train call, the group form against the same model written weight by weight",
         groups,
         (Target("grouped ≤ 1.05× by hand", BY_HAND, 1.05),
          Target("the same generated code", metric="same_code", expect=True),
          Target("equal weights after 3 steps", metric="weights_equal", expect=True))),
]
