"""Every derivative of the Prelude: ∂ of each definition against finite differences.

For every definition of every Prelude module, the table below says how to call it (shapes and
domains of its arguments) and which parameters it is differentiable in; every parameter left
out says why. Each definition is wrapped into a scalar in .hb, `checked = Σ output · ω` with
fixed random weights ω (so every output entry matters), and ∂ checked / ∂ p for every
differentiable p (one ∂ of the tuple of parameters) must equal fourth-order central differences
of `checked` (five-point stencil, h = 1e-4: truncation error about h⁴, rounding about 1e-12 of
the value) to relative 1e-6, on both executors. Domains keep every argument at least a few h
away from the kinks of relu, max, abs, floor and comparisons, so the stencil never straddles one.

The finite differences are of `checked` as the reference executor computes it, and are shared
by both executors' checks; no expected value comes from the derivative code. A parameter with
more than SAMPLED entries is checked at SAMPLED entries drawn by a generator seeded from the
definition's name (the whole gradient is computed). Nothing is silently skipped:
test_the_table_covers_every_definition fails when a definition, a parameter, a model or a module
appears that the table does not name. What a default run leaves out is the numba executor on the
definitions of HEAVY_ON_NUMBA, whose gradient programs take seconds each to compile: those run
with `-m slow`. The bugs this file found (since fixed) are reduced to small tests at the end.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache

import numpy as np
import pytest
from conftest import EXECUTORS, ROOT

import hilbert

#: The finite-difference step and the tolerance of the comparison.
H = 1e-4
RTOL = 1e-6
ATOL = 1e-9

#: Entries checked per parameter, at most.
SAMPLED = 6

Draw = Callable[[np.random.Generator], dict]


@dataclass(frozen=True)
class Case:
    """How to check one definition: `draw` makes its arguments (every parameter, in any order);
    `fixed` names each parameter that is not differentiated, with the reason; every other
    parameter is. A `symmetric` parameter is a symmetric matrix by its definition's contract, so
    it is moved along symmetric directions only (entries ij and ji together). `lower_only`
    weighs only the entries on and below the diagonal of the last two axes (those above hold
    −1e300 exactly: the score is lost in rounding). `label` tells two cases of one definition
    apart."""

    draw: Draw
    fixed: dict[str, str] = field(default_factory=dict)
    lower_only: bool = False
    label: str = ""
    symmetric: tuple[str, ...] = ()


@dataclass(frozen=True)
class Excluded:
    """A definition with no parameter to differentiate, and why."""

    reason: str


SHAPE_ONLY = "only its shape is read"
LOOP_COUNT = "a loop count (whole number of steps)"
LENGTH_ONLY = "only its length is read"
POSITIONS = "its value depends on shapes alone (positions and 0/1 windows)"


# ---------------------------------------------------------------- domains

def normal(g: np.random.Generator, *shape: int) -> np.ndarray:
    return g.normal(size=shape)


def away(g: np.random.Generator, *shape: int) -> np.ndarray:
    """Entries of either sign with 0.3 ≤ |entry| ≤ 1.5: away from the kink at 0."""
    return g.choice([-1.0, 1.0], size=shape) * g.uniform(0.3, 1.5, shape)


def positive(g: np.random.Generator, *shape: int) -> np.ndarray:
    return g.uniform(0.5, 2.0, shape)


def unit(g: np.random.Generator, *shape: int) -> np.ndarray:
    return g.uniform(0.1, 0.9, shape)


def signed_columns(g: np.random.Generator, p: int, h: int) -> np.ndarray:
    """First-layer weights whose columns are all positive or all negative, alternately: with
    positive inputs every hidden unit is clearly on or clearly off (|X W1| ≥ 0.3 per entry)."""
    return g.uniform(0.3, 1.2, (p, h)) * np.resize([1.0, -1.0], h)


def spd(g: np.random.Generator, n: int) -> np.ndarray:
    """A well-conditioned symmetric positive definite matrix."""
    a = g.normal(size=(n, n))
    return a @ a.T + n * np.eye(n)


def shares(g: np.random.Generator, n: int, k: int) -> np.ndarray:
    """Rows of positive shares summing to one."""
    return g.dirichlet(np.ones(k), size=n)


def off_kinks(g: np.random.Generator, shape: tuple[int, ...], kinks: list[float],
              lo: float = -1.5, hi: float = 1.5) -> np.ndarray:
    """Entries in (lo, hi), each at least 0.05 from every value in `kinks`."""
    values = g.uniform(lo, hi, shape)
    while True:
        near = np.min(np.abs(values[..., None] - np.array(kinks)), axis=-1) < 0.05
        if not near.any():
            return values
        values[near] = g.uniform(lo, hi, near.sum())


def _mlp(g: np.random.Generator) -> dict:
    """A two-layer network: x 4×2 (positive), y 4×2, w1 2×3 (units on or off), w2 3×2. With
    r = 0.01 and 3 steps every |X W1| entry stays above 0.4 through a fit."""
    return dict(x=positive(g, 4, 2), y=normal(g, 4, 2), w1=signed_columns(g, 2, 3),
                w2=normal(g, 3, 2))


def _gan(g: np.random.Generator) -> dict:
    return dict(real=normal(g, 3, 2), z=normal(g, 2, 2), wg=normal(g, 2, 2), wd=normal(g, 2))


def _lstm(g: np.random.Generator) -> dict:
    """B = 2, E = 2, D = 2, a sequence of T = 3 steps, 4 gates."""
    return dict(x=normal(g, 3, 2, 2), h=normal(g, 2, 2), c=normal(g, 2, 2),
                wx=0.5 * normal(g, 2, 2, 4), wh=0.5 * normal(g, 2, 2, 4), b=0.5 * normal(g, 2, 4))


def _cell(g: np.random.Generator) -> dict:
    """One step of _lstm: x is B×E."""
    return {**_lstm(g), "x": normal(g, 2, 2)}


def _recurrent_part(g: np.random.Generator) -> dict:
    """The state, memory and recurrent weights of _lstm, for the steps that start from the
    input products: weights D×G×D and bias G×D, the gate axis in the middle (as `middle`
    gives them)."""
    parts = {k: v for k, v in _lstm(g).items() if k in ("h", "c", "wh", "b")}
    return {**parts, "wh": parts["wh"].transpose(0, 2, 1).copy(), "b": parts["b"].T.copy()}


def _gru(g: np.random.Generator, cell: bool = False) -> dict:
    x = normal(g, 2, 2) if cell else normal(g, 3, 2, 2)
    return dict(x=x, h=normal(g, 2, 2), wx=0.5 * normal(g, 2, 2, 3), wh=0.5 * normal(g, 2, 2, 3),
                bx=0.5 * normal(g, 2, 3), bh=0.5 * normal(g, 2, 3))


def _gru_part(g: np.random.Generator) -> dict:
    """A GRU step's arguments after its input product: h, wh (D×3×D), bx and bh (3×D), the gate
    axis in the middle."""
    parts = {k: v for k, v in _gru(g, cell=True).items() if k not in ("x", "wx")}
    return {**parts, "wh": parts["wh"].transpose(0, 2, 1).copy(),
            "bx": parts["bx"].T.copy(), "bh": parts["bh"].T.copy()}


def _cho(g: np.random.Generator, cell: bool = False) -> dict:
    args = _gru(g, cell)
    del args["bx"], args["bh"]
    return {**args, "b": 0.5 * normal(g, 2, 3)}


def _heads(g: np.random.Generator) -> dict:
    """B = 2, T = 3, M = 4, N = 2 heads, F = 2, L = 3."""
    return dict(x=normal(g, 2, 3, 4), wq=normal(g, 2, 4, 2), wk=normal(g, 2, 4, 2),
                wv=normal(g, 2, 4, 3), wo=normal(g, 2, 3, 4))


def _huber(g: np.random.Generator) -> dict:
    y = normal(g, 3, 2)
    return dict(p=y + off_kinks(g, (3, 2), [-0.8, 0.0, 0.8]), y=y, delta=0.8)


def _absolute(g: np.random.Generator) -> dict:
    y = normal(g, 3, 2)
    return dict(p=y + away(g, 3, 2), y=y)


def _dropped(g: np.random.Generator) -> dict:
    """Draws u in [0, 1) kept 0.05 from the drop probability p = 0.3."""
    return dict(a=normal(g, 3, 4), u=off_kinks(g, (3, 4), [0.3], lo=0.0, hi=1.0), p=0.3)


ARITHMETIC = {
    "relu": Case(lambda g: dict(z=away(g, 3, 4))),
    "reluSlope": Case(lambda g: dict(z=away(g, 3, 4))),
    "sigmoid": Case(lambda g: dict(z=normal(g, 3, 4))),
    "softplus": Case(lambda g: dict(z=away(g, 3, 4))),
    "clipped": Case(lambda g: dict(z=off_kinks(g, (2, 4), [-0.5, 0.6]), lo=-0.5, hi=0.6)),
    "signOf": Case(lambda g: dict(z=away(g, 3, 4))),
    "softmaxRows": Case(lambda g: dict(m=normal(g, 3, 4))),
    "logSumExpRows": Case(lambda g: dict(m=normal(g, 3, 4))),
    "rowShifted": Case(lambda g: dict(m=normal(g, 3, 4))),
    "descend": Case(lambda g: dict(w=normal(g, 2, 3), g=normal(g, 2, 3), r=0.3)),
    "floorOf": Case(lambda g: dict(p=away(g, 3, 4))),  # the negative entries are floored
    "lifted": Case(lambda g: dict(a=normal(g, 3, 2), v=normal(g, 3)), {"a": SHAPE_ONLY}),
    "stacked": Case(lambda g: dict(a=normal(g, 3, 2), v=normal(g, 2)), {"a": SHAPE_ONLY}),
    "ones": Excluded(SHAPE_ONLY),
    "zeros": Excluded(SHAPE_ONLY),
}

STATISTICS = {
    "total": Case(lambda g: dict(x=normal(g, 4))),
    "count": Excluded(LENGTH_ONLY),
    "mean": Case(lambda g: dict(x=normal(g, 4))),
    "deviations": Case(lambda g: dict(x=normal(g, 4))),
    "variance": Case(lambda g: dict(x=normal(g, 4))),
    "std": Case(lambda g: dict(x=normal(g, 4))),
    "standardised": Case(lambda g: dict(x=normal(g, 4))),
    "covariance": Case(lambda g: dict(x=normal(g, 4), y=normal(g, 4))),
    "correlation": Case(lambda g: dict(x=normal(g, 5), y=normal(g, 5))),
    "grandTotal": Case(lambda g: dict(a=normal(g, 3, 2))),
    "rowTotal": Case(lambda g: dict(a=normal(g, 3, 2))),
    "rowMean": Case(lambda g: dict(a=normal(g, 3, 2))),
    "columnTotal": Case(lambda g: dict(a=normal(g, 3, 2))),
    "columnMean": Case(lambda g: dict(a=normal(g, 3, 2))),
    "columnCentred": Case(lambda g: dict(a=normal(g, 3, 2))),
    "columnVariance": Case(lambda g: dict(a=normal(g, 4, 3))),
    "covarianceMatrix": Case(lambda g: dict(a=normal(g, 4, 3))),
}

LINEAR_ALGEBRA = {
    "mul": Case(lambda g: dict(a=normal(g, 2, 3), b=normal(g, 3, 2))),
    "mulVec": Case(lambda g: dict(a=normal(g, 2, 3), v=normal(g, 3))),
    "vecMul": Case(lambda g: dict(v=normal(g, 2), a=normal(g, 2, 3))),
    "dot": Case(lambda g: dict(u=normal(g, 3), v=normal(g, 3))),
    "outer": Case(lambda g: dict(u=normal(g, 3), v=normal(g, 2))),
    "gram": Case(lambda g: dict(x=normal(g, 3, 2))),
    "transpose": Case(lambda g: dict(a=normal(g, 2, 3))),
    "trace": Case(lambda g: dict(a=normal(g, 3, 3))),
    "diagonal": Case(lambda g: dict(a=normal(g, 3, 3))),
    "diagonalOf": Case(lambda g: dict(v=normal(g, 3))),
    "identity": Excluded(SHAPE_ONLY),
    "identityOf": Excluded(LENGTH_ONLY),
    "norm": Case(lambda g: dict(v=normal(g, 3))),
    "frobenius": Case(lambda g: dict(a=normal(g, 2, 3))),
    "sameIndex": Excluded(LENGTH_ONLY),
    "solve": Case(lambda g: dict(a=spd(g, 3), b=normal(g, 3)), symmetric=("a",)),
    "leastSquares": Case(lambda g: dict(x=normal(g, 5, 2), y=normal(g, 5))),
    "cgLoop": Case(lambda g: dict(t=2, a=spd(g, 3), x=normal(g, 3), r=normal(g, 3),
                                  p=normal(g, 3), tol=1e-30),
                   {"t": LOOP_COUNT, "tol": "a stopping threshold: only compared (r·r ≤ tol)"}),
    "cgStepSize": Case(lambda g: dict(a=spd(g, 3), r=normal(g, 3), p=normal(g, 3))),
    "cgResidual": Case(lambda g: dict(a=spd(g, 3), r=normal(g, 3), p=normal(g, 3))),
    "cgDirection": Case(lambda g: dict(a=spd(g, 3), r=normal(g, 3), p=normal(g, 3))),
    "lowest": Excluded("its answer is 0/1 marks of each row's smallest entries: piecewise "
                       "constant"),
    "highest": Excluded("its answer is 0/1 marks of each row's largest entries: piecewise "
                        "constant"),
}

_FIT = {"t": LOOP_COUNT}
_DRAWS = "uniform draws: only compared with p"

NETWORKS = {
    "dense": Case(lambda g: dict(a=normal(g, 3, 2), w=normal(g, 2, 3))),
    "hiddenOf": Case(lambda g: dict(x=positive(g, 3, 2), w1=signed_columns(g, 2, 3))),
    "outputs": Case(lambda g: {k: v for k, v in _mlp(g).items() if k != "y"}),
    "preHidden": Case(lambda g: dict(x=normal(g, 3, 2), w1=normal(g, 2, 3))),
    "stepFirst": Case(lambda g: dict(r=0.1, **_mlp(g))),
    "stepSecond": Case(lambda g: dict(r=0.1, **_mlp(g))),
    "outDelta": Case(lambda g: _mlp(g)),
    "hidDelta": Case(lambda g: _mlp(g)),
    "gradSecond": Case(lambda g: _mlp(g)),
    "gradFirst": Case(lambda g: _mlp(g)),
    "mlpFirst": Case(lambda g: dict(t=3, r=0.01, **_mlp(g)), _FIT),
    "mlpSecond": Case(lambda g: dict(t=3, r=0.01, **_mlp(g)), _FIT),
    "mlpPredict": Case(lambda g: dict(t=3, r=0.01, **_mlp(g), z=positive(g, 2, 2)), _FIT),
    "mlpFit": Case(lambda g: dict(t=3, r=0.01, **_mlp(g)), _FIT),
    "mlpShares": Case(lambda g: dict(t=3, r=0.01, **_mlp(g), z=positive(g, 2, 2)), _FIT),
    "firstLoop": Case(lambda g: dict(t=3, r=0.01, **_mlp(g)), _FIT),
    "secondLoop": Case(lambda g: dict(t=3, r=0.01, **_mlp(g)), _FIT),
    "encoded": Case(lambda g: dict(x=normal(g, 4, 3), w1=normal(g, 3, 2))),
    "rebuilt": Case(lambda g: dict(x=normal(g, 4, 3), w1=normal(g, 3, 2), w2=normal(g, 2, 3))),
    "autoCode": Case(lambda g: dict(t=3, r=0.05, x=normal(g, 4, 3), w1=normal(g, 3, 2),
                                    w2=normal(g, 2, 3)), _FIT),
    "autoBuild": Case(lambda g: dict(t=3, r=0.05, x=normal(g, 4, 3), w1=normal(g, 3, 2),
                                     w2=normal(g, 2, 3)), _FIT),
    "autoFit": Case(lambda g: dict(t=3, r=0.05, x=normal(g, 4, 3), w1=normal(g, 3, 2),
                                   w2=normal(g, 2, 3)), _FIT),
    "rebuildDelta": Case(lambda g: dict(x=normal(g, 4, 3), w1=normal(g, 3, 2), w2=normal(g, 2, 3))),
    "rebuildSecond": Case(lambda g: dict(x=normal(g, 4, 3), w1=normal(g, 3, 2), w2=normal(g, 2, 3))),
    "rebuildFirst": Case(lambda g: dict(x=normal(g, 4, 3), w1=normal(g, 3, 2), w2=normal(g, 2, 3))),
    "codeLoop": Case(lambda g: dict(t=3, r=0.05, x=normal(g, 4, 3), w1=normal(g, 3, 2),
                                    w2=normal(g, 2, 3)), _FIT),
    "buildLoop": Case(lambda g: dict(t=3, r=0.05, x=normal(g, 4, 3), w1=normal(g, 3, 2),
                                     w2=normal(g, 2, 3)), _FIT),
    "layerNorm": Case(lambda g: dict(a=normal(g, 3, 4))),
    "rowCentre": Case(lambda g: dict(a=normal(g, 3, 4))),
    "rowVar": Case(lambda g: dict(a=normal(g, 3, 4))),
    "attentionOf": Case(lambda g: dict(q=normal(g, 2, 3), k=normal(g, 4, 3), v=normal(g, 4, 2),
                                       d=3.0)),
    "causalAttention": Case(lambda g: dict(q=normal(g, 3, 3), k=normal(g, 3, 3),
                                           v=normal(g, 3, 2), d=2.0)),
    "selfAttention": Case(lambda g: dict(a=normal(g, 3, 4), wq=normal(g, 4, 2), wk=normal(g, 4, 2),
                                         wv=normal(g, 4, 3), d=2.0)),
    "attentionScores": Case(lambda g: dict(q=normal(g, 2, 3), k=normal(g, 4, 3), d=3.0)),
    "causalOf": Excluded(SHAPE_ONLY),
    "causalScores": Case(lambda g: dict(q=normal(g, 3, 2), k=normal(g, 3, 2), d=2.0),
                         lower_only=True),
    "dropped": Case(_dropped, {"u": _DRAWS}),
    "convolve": Case(lambda g: dict(x=normal(g, 2, 5), k=normal(g, 3))),
    "maxPool": Case(lambda g: dict(x=away(g, 2, 5), k=normal(g, 3)), {"k": LENGTH_ONLY}),
    "meanPool": Excluded("deliberately refused: a vector window has no columns, so every call "
                         "is a rank error, as its documentation says (test_prelude_networks)"),
    "siteIds": Excluded(POSITIONS),
    "tapIds": Excluded(POSITIONS),
    "windowFrom": Excluded(POSITIONS),
    "windowTo": Excluded(POSITIONS),
    "windowOf": Excluded(POSITIONS),
    "gathered": Case(lambda g: dict(x=normal(g, 2, 4), k=normal(g, 3)), {"k": LENGTH_ONLY}),
    "stateStep": Case(lambda g: dict(h=normal(g, 2, 3), xt=normal(g, 2), wh=0.5 * normal(g, 3, 3),
                                     wx=normal(g, 3))),
    "recurrent": Case(lambda g: dict(x=normal(g, 2, 4), wh=0.5 * normal(g, 3, 3), wx=normal(g, 3),
                                     h0=normal(g, 2, 3))),
    "atTime": Case(lambda g: dict(x=normal(g, 2, 4), ids=np.arange(4.0), t=2),
                   {"ids": "positions: only compared with t", "t": "a time step: only compared"}),
    "stateLoop": Case(lambda g: dict(t=3, x=normal(g, 2, 4), ids=np.arange(4.0),
                                     wh=0.5 * normal(g, 3, 3), wx=normal(g, 3), h=normal(g, 2, 3)),
                      {"t": LOOP_COUNT, "ids": "positions: only compared with the step"}),
    "gateOf": Case(lambda g: dict(h=normal(g, 2, 3), xt=normal(g, 2), wh=normal(g, 3, 3),
                                  wx=normal(g, 3))),
    "candidateOf": Case(lambda g: dict(h=normal(g, 2, 3), xt=normal(g, 2), wh=normal(g, 3, 3),
                                       wx=normal(g, 3))),
    "cellMemory": Case(lambda g: dict(c=normal(g, 2, 3), f=unit(g, 2, 3), i=unit(g, 2, 3),
                                      g=normal(g, 2, 3))),
    "cellHidden": Case(lambda g: dict(c=normal(g, 2, 3), o=unit(g, 2, 3))),
    "critic": Case(lambda g: dict(a=normal(g, 3, 2), wd=normal(g, 2))),
    "madeFrom": Case(lambda g: dict(z=normal(g, 3, 2), wg=normal(g, 2, 3))),
    "criticLoss": Case(lambda g: dict(real=normal(g, 3, 2), fake=normal(g, 2, 2), wd=normal(g, 2))),
    "makerLoss": Case(lambda g: dict(fake=normal(g, 2, 2), wd=normal(g, 2))),
    "criticStep": Case(lambda g: dict(r=0.1, **_gan(g))),
    "makerStep": Case(lambda g: {"r": 0.1, **{k: v for k, v in _gan(g).items() if k != "real"}}),
    "ganCritic": Case(lambda g: dict(t=3, r=0.1, **_gan(g)), _FIT),
    "ganMaker": Case(lambda g: dict(t=3, r=0.1, **_gan(g)), _FIT),
    "ganSamples": Case(lambda g: dict(t=3, r=0.1, **_gan(g)), _FIT),
    "criticGrad": Case(lambda g: dict(real=normal(g, 3, 2), fake=normal(g, 2, 2), wd=normal(g, 2))),
    "makerGrad": Case(lambda g: dict(z=normal(g, 2, 2), wg=normal(g, 2, 2), wd=normal(g, 2))),
    "criticLoop": Case(lambda g: dict(t=3, r=0.1, **_gan(g)), _FIT),
    "makerLoop": Case(lambda g: dict(t=3, r=0.1, **_gan(g)), _FIT),
}

_LABELS = "class labels (whole numbers)"
_MASK = "a 0/1 mask"
_SEQUENCE_LABELS = np.array([[0.0, 3.0, 1.0], [2.0, 2.0, 0.0]])
_SEQUENCE_MASK = np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 1.0]])

LOSSES = {
    "logSoftmax": Case(lambda g: dict(z=normal(g, 3, 4))),
    "crossEntropy": Case(lambda g: dict(z=normal(g, 3, 4), labels=np.array([0.0, 2.0, 1.0])),
                         {"labels": _LABELS}),
    "softCrossEntropy": Case(lambda g: dict(z=normal(g, 3, 4), y=shares(g, 3, 4))),
    "smoothedLabels": Case(lambda g: dict(labels=np.array([0.0, 2.0, 1.0]), z=normal(g, 3, 4),
                                          alpha=0.1), {"labels": _LABELS, "z": SHAPE_ONLY}),
    "accuracy": Case(lambda g: dict(z=normal(g, 3, 4), labels=np.array([0.0, 2.0, 1.0])),
                     {"labels": _LABELS}),
    "logSoftmaxLast": Case(lambda g: dict(z=normal(g, 2, 3, 4))),
    "crossEntropyLast": Case(lambda g: dict(z=normal(g, 2, 3, 4), labels=_SEQUENCE_LABELS),
                             {"labels": _LABELS}),
    "softCrossEntropyLast": Case(lambda g: dict(z=normal(g, 2, 3, 4),
                                                y=shares(g, 6, 4).reshape(2, 3, 4))),
    "maskedCrossEntropy": Case(lambda g: dict(z=normal(g, 2, 3, 4), labels=_SEQUENCE_LABELS,
                                              mask=_SEQUENCE_MASK),
                               {"labels": _LABELS, "mask": _MASK}),
    "smoothedLabelsLast": Case(lambda g: dict(labels=_SEQUENCE_LABELS, z=normal(g, 2, 3, 4),
                                              alpha=0.1), {"labels": _LABELS, "z": SHAPE_ONLY}),
    "accuracyLast": Case(lambda g: dict(z=normal(g, 2, 3, 4), labels=_SEQUENCE_LABELS),
                         {"labels": _LABELS}),
    "maskedAccuracy": Case(lambda g: dict(z=normal(g, 2, 3, 4), labels=_SEQUENCE_LABELS,
                                          mask=_SEQUENCE_MASK), {"labels": _LABELS, "mask": _MASK}),
    "lastMaximum": Case(lambda g: dict(z=normal(g, 2, 3, 4))),
    "lastArgmax": Case(lambda g: dict(z=normal(g, 2, 3, 4))),
    "classCount": Excluded(SHAPE_ONLY),
    "spreadLast": Case(lambda g: dict(v=normal(g, 2, 3), z=normal(g, 2, 3, 4)),
                       {"z": SHAPE_ONLY}),
    "binaryTerms": Case(lambda g: dict(z=away(g, 3, 2), y=unit(g, 3, 2))),
    "binaryCrossEntropy": Case(lambda g: dict(z=away(g, 3, 2), y=unit(g, 3, 2))),
    "mse": Case(lambda g: dict(p=normal(g, 3, 2), y=normal(g, 3, 2))),
    "huberTerms": Case(lambda g: dict(r=off_kinks(g, (3, 2), [-0.8, 0.0, 0.8]), delta=0.8)),
    "huber": Case(_huber),
    "absoluteError": Case(_absolute),
}

NORMS = {
    "batchNorm": Case(lambda g: dict(z=normal(g, 4, 3), gain=normal(g, 3), shift=normal(g, 3))),
    "batchNormEval": Case(lambda g: dict(z=normal(g, 4, 3), mean=normal(g, 3), var=positive(g, 3),
                                         gain=normal(g, 3), shift=normal(g, 3))),
    "runningMean": Case(lambda g: dict(run=normal(g, 3), z=normal(g, 4, 3), m=0.1)),
    "runningVar": Case(lambda g: dict(run=positive(g, 3), z=normal(g, 4, 3), m=0.1)),
    "batchVar": Case(lambda g: dict(z=normal(g, 4, 3))),
    "layerNormed": Case(lambda g: dict(a=normal(g, 3, 4), gain=normal(g, 4), shift=normal(g, 4))),
    "rmsNorm": Case(lambda g: dict(a=normal(g, 3, 4), gain=normal(g, 4))),
    "rowCentred": Case(lambda g: dict(a=normal(g, 3, 4))),
    "rowSpread": Case(lambda g: dict(a=normal(g, 3, 4))),
    "gelu": Case(lambda g: dict(z=normal(g, 3, 4))),
    "geluTanh": Case(lambda g: dict(z=normal(g, 3, 4))),
    "silu": Case(lambda g: dict(z=normal(g, 3, 4))),
    "dropout": Case(lambda g: dict(x=normal(g, 3, 4), p=0.3, key=5.0, step=2.0),
                    {"p": "the drop rate: the mask it draws is a step function of it",
                     "key": "a random key (a whole number)", "step": "a step (a whole number)"}),
}

_STEP_NUMBER = {"t": "the step number (a count)"}
_SCHEDULE = "a step count"


def _adam(g: np.random.Generator) -> dict:
    return dict(w=normal(g, 2, 3), m=normal(g, 2, 3), v=positive(g, 2, 3), g=normal(g, 2, 3), t=3,
                r=0.01, b1=0.9, b2=0.99, eps=1e-3)


OPTIMISERS = {
    "sgd": Case(lambda g: dict(w=normal(g, 2, 3), g=normal(g, 2, 3), r=0.1)),
    "momentum": Case(lambda g: dict(w=normal(g, 2, 3), v=normal(g, 2, 3), g=normal(g, 2, 3),
                                    r=0.1, mu=0.9)),
    "nesterov": Case(lambda g: dict(w=normal(g, 2, 3), v=normal(g, 2, 3), g=normal(g, 2, 3),
                                    r=0.1, mu=0.9)),
    "adam": Case(_adam, _STEP_NUMBER),
    "adamW": Case(lambda g: dict(_adam(g), decay=0.01), _STEP_NUMBER),
    "clipScale": Case(lambda g: dict(norm=5.0, c=1.0)),  # clipping: c / norm < 1
    "squares": Case(lambda g: dict(w=normal(g, 2, 3))),
    "vectorSquares": Case(lambda g: dict(b=normal(g, 3))),
    "cosineRate": Case(lambda g: dict(step=3, total=10, peak=0.1, low=0.01),
                       {"step": _SCHEDULE, "total": _SCHEDULE}),
    "warmupCosine": (
        Case(lambda g: dict(step=2, total=10, warm=4, peak=0.1, low=0.01, start=1e-3),
             {"step": _SCHEDULE, "total": _SCHEDULE, "warm": _SCHEDULE}, label="warming"),
        Case(lambda g: dict(step=6, total=10, warm=4, peak=0.1, low=0.01, start=1e-3),
             {"step": _SCHEDULE, "total": _SCHEDULE, "warm": _SCHEDULE}, label="cosine"),
    ),
}

_GATE = "a gate number"

SEQUENCES = {
    "lstmCell": Case(_cell),
    "lstm": Case(_lstm),
    "peepholeCell": Case(lambda g: dict(_cell(g), p=0.5 * normal(g, 2, 3))),
    "peepholeLstm": Case(lambda g: dict(_lstm(g), p=0.5 * normal(g, 2, 3))),
    "affine": Case(lambda g: {k: v for k, v in _cell(g).items() if k != "c"}),
    "biasOf": Case(lambda g: dict(h=normal(g, 2, 2), b=normal(g, 2, 4)), {"h": SHAPE_ONLY}),
    "gate": Case(lambda g: dict(z=normal(g, 2, 2, 4), k=1), {"k": _GATE}),
    "slab": Case(lambda g: dict(z=normal(g, 2, 4, 2), k=1), {"k": _GATE}),
    "middle": Case(lambda g: dict(w=normal(g, 2, 2, 4))),
    "biasAlong": Case(lambda g: dict(z=normal(g, 2, 4, 2), b=normal(g, 4, 2)), {"z": SHAPE_ONLY}),
    "peep": Case(lambda g: dict(c=normal(g, 2, 2), p=normal(g, 2, 3), k=2), {"k": _GATE}),
    "inputsOf": Case(lambda g: dict(x=normal(g, 3, 2, 2), wx=normal(g, 2, 2, 4))),
    "lstmSteps": Case(lambda g: dict(n=3, a=normal(g, 3, 2, 4, 2),
                                     **_recurrent_part(g)),
                      {"n": LOOP_COUNT}),
    "lstmFrom": Case(lambda g: dict(a=normal(g, 2, 4, 2),
                                    **_recurrent_part(g))),
    "peepholeSteps": Case(lambda g: dict(n=3, **_lstm(g), p=0.5 * normal(g, 2, 3)),
                          {"n": LOOP_COUNT}),
    "gruCell": Case(lambda g: _gru(g, cell=True)),
    "gru": Case(_gru),
    "choCell": Case(lambda g: _cho(g, cell=True)),
    "choGru": Case(_cho),
    "layer": Case(lambda g: dict(w=normal(g, 2, 2, 3), k=1), {"k": _GATE}),
    "gruSteps": Case(lambda g: dict(n=3, a=normal(g, 3, 2, 3, 2), **_gru_part(g)),
                     {"n": LOOP_COUNT}),
    "gruFrom": Case(lambda g: dict(a=normal(g, 2, 3, 2), **_gru_part(g))),
    "choSteps": Case(lambda g: dict(n=3, **_cho(g)), {"n": LOOP_COUNT}),
    "attend": Case(lambda g: dict(q=normal(g, 2, 3, 2), k=normal(g, 2, 4, 2), v=normal(g, 2, 4, 3))),
    "causalAttend": Case(lambda g: dict(q=normal(g, 2, 3, 2), k=normal(g, 2, 3, 2),
                                        v=normal(g, 2, 3, 2))),
    "attention": Case(lambda g: dict(x=normal(g, 2, 3, 4), wq=normal(g, 4, 2), wk=normal(g, 4, 2),
                                     wv=normal(g, 4, 3))),
    "multiHead": Case(_heads),
    "causalMultiHead": Case(_heads),
    "layerNormSeq": Case(lambda g: dict(x=normal(g, 2, 3, 4), gain=normal(g, 4), shift=normal(g, 4))),
    "project": Case(lambda g: dict(x=normal(g, 2, 3, 4), w=normal(g, 4, 2))),
    "scores": Case(lambda g: dict(q=normal(g, 2, 3, 2), k=normal(g, 2, 4, 2))),
    "masked": Case(lambda g: dict(s=normal(g, 2, 3, 3)), lower_only=True),
    "alongLast": Case(lambda g: dict(x=normal(g, 2, 3, 4), v=normal(g, 2, 3)), {"x": SHAPE_ONLY}),
    "softmaxLast": Case(lambda g: dict(s=normal(g, 2, 3, 4))),
    "heads": Case(lambda g: dict({k: v for k, v in _heads(g).items() if k != "wo"}, causal=1),
                  {"causal": "a 0/1 switch: the causal mask on or off"}),
    "drawn": Case(lambda g: dict(u=unit(g, 2, 3), n=4.0)),
    # x · b is within ±3 here, far inside the clamp at ±700
    "hazardOf": Case(lambda g: dict(x=normal(g, 4, 3), b=0.5 * normal(g, 3))),
}


# ---------------------------------------------------------------- the samples' modules

_MARKS = "0/1 marks (one-hot rows, or flags): not a real-valued input"
_PICKS = "read only through nearest-point picks (argmin): piecewise constant"
_IDS = "ids (whole numbers): only compared"
_COUNTS = "counts (whole numbers ≥ 0 by the module's contract)"
_NEIGHBOURS = "a count of neighbours (a whole number)"
_GREEDY = "read only through marks of each row's largest entries: piecewise constant"


def marks(g: np.random.Generator, n: int, k: int) -> np.ndarray:
    """n one-hot rows over k columns."""
    return np.eye(k)[g.integers(0, k, n)]


def flags(g: np.random.Generator, n: int) -> np.ndarray:
    """n entries of 0 or 1, both present."""
    return np.resize([0.0, 1.0], n)[g.permutation(n)]


def untied(g: np.random.Generator, s: int, a: int) -> np.ndarray:
    """An s×a table whose every row's largest entry leads its second by at least 0.05, so a
    stencil never moves the row's maximum to another column."""
    q = g.normal(size=(s, a))
    while True:
        top = np.sort(q, axis=1)
        close = top[:, -1] - top[:, -2] < 0.05
        if not close.any():
            return q
        q[close] = g.normal(size=(close.sum(), a))


def apart(g: np.random.Generator, m: int, n: int, p: int) -> dict:
    """Queries z (m×p) and points x (n×p) whose every coordinate difference z_ik − x_jk is at
    least 0.05 from 0 (the kink of abs)."""
    x = g.normal(size=(n, p))
    z = np.column_stack([off_kinks(g, (m,), list(x[:, k]), lo=-2.0, hi=2.0) for k in range(p)])
    return dict(z=z, x=x)


def design(g: np.random.Generator, n: int, p: int) -> np.ndarray:
    """n rows of p − 1 random columns and a column of ones last (the intercept)."""
    return np.column_stack([normal(g, n, p - 1), np.ones(n)])


def _fund(g: np.random.Generator) -> dict:
    """Three funds, entrywise: the premium c is 1.5 to 3 times the expected claims λ m, so the
    safety loading is at least 0.5 and the adjustment 1/m − λ/c at least 0.22 (away from the
    kinks of max(·, 0) and relu)."""
    lam, m = g.uniform(0.3, 0.8, 3), g.uniform(0.8, 1.5, 3)
    return dict(u=g.uniform(0.5, 2.0, 3), c=lam * m * g.uniform(1.5, 3.0, 3), lam=lam, m=m)


def _steps(g: np.random.Generator) -> dict:
    """A table of 4 states and 3 actions and a batch of 5 steps, some ending their episode."""
    return dict(q=untied(g, 4, 3), s=marks(g, 5, 4), a=marks(g, 5, 3), s2=marks(g, 5, 4),
                a2=marks(g, 5, 3), rw=normal(g, 5), gamma=0.9, done=flags(g, 5))


def _take(*names: str) -> Draw:
    return lambda g: {k: v for k, v in _steps(g).items() if k in names}


_NEAREST = {"z": _PICKS, "x": _PICKS, "k": _NEIGHBOURS}


def _voters(g: np.random.Generator) -> dict:
    """3 queries, 5 known points, weights for 2 classes (non-negative, as the module allows), k = 2."""
    return dict(z=normal(g, 3, 2), x=normal(g, 5, 2), g=unit(g, 5, 2), k=2)


MULTIVARIATE = {
    "coefficients": Case(lambda g: dict(x=normal(g, 5, 3), y=normal(g, 5))),
    "gram": Case(lambda g: dict(x=normal(g, 4, 3))),
    "moment": Case(lambda g: dict(x=normal(g, 4, 3), y=normal(g, 4))),
    "withIntercept": Case(lambda g: dict(x=normal(g, 4, 2))),
    "columnScales": Case(lambda g: dict(x=normal(g, 4, 3))),
    "scaledColumns": Case(lambda g: dict(x=normal(g, 4, 3))),
    "onesColumn": Excluded(SHAPE_ONLY),
    "apply": Case(lambda g: dict(x=normal(g, 4, 3), b=normal(g, 3))),
    "fitted": Case(lambda g: dict(x=design(g, 5, 3), y=normal(g, 5))),
    "residuals": Case(lambda g: dict(x=design(g, 5, 3), y=normal(g, 5))),
    "rSquared": Case(lambda g: dict(x=design(g, 5, 3), y=normal(g, 5))),
}

KERNELS = {
    "sqDistances": Case(lambda g: dict(z=normal(g, 3, 2), x=normal(g, 4, 2))),
    "distances": Case(lambda g: dict(z=normal(g, 3, 2), x=normal(g, 4, 2))),
    "cityBlock": Case(lambda g: apart(g, 3, 4, 2)),
    "linearKernel": Case(lambda g: dict(z=normal(g, 3, 2), x=normal(g, 4, 2))),
    "gaussianKernel": Case(lambda g: dict(z=normal(g, 3, 2), x=normal(g, 4, 2), w=1.3)),
    # positive points and offset: the base z·x + c is positive, so its power is smooth in d too
    "polynomialKernel": Case(lambda g: dict(z=unit(g, 3, 2), x=unit(g, 4, 2), c=0.5, d=3.0)),
    "softmaxRows": Case(lambda g: dict(m=normal(g, 3, 4))),
}

NEIGHBOURS = {
    "knnClassify": Excluded("its answer is 0/1 marks of the largest votes: piecewise constant "
                            "in z, x and g; k is a count of neighbours"),
    "knnShares": Case(_voters, _NEAREST),
    "knnRegress": Case(lambda g: dict(z=normal(g, 3, 2), x=normal(g, 5, 2), y=normal(g, 5), k=2),
                       _NEAREST),
    "knnVotes": Case(_voters, _NEAREST),
    "nearestOf": Excluded("its answer is 0/1 marks of nearest-point picks (argmin): piecewise "
                          "constant in z and x; k is a count of neighbours"),
    "pickNearest": Excluded("t is a loop count, d is read only through argmin picks (piecewise "
                            "constant), and chosen holds 0/1 marks (weighed by 1e300: a "
                            "stencil step leaves its domain)"),
    "centroidPredict": Excluded("its answer is 0/1 marks of the nearest centroids: piecewise "
                                "constant in z, x and g"),
    "centroids": Case(lambda g: dict(x=normal(g, 5, 2), g=unit(g, 5, 3))),
    "classSizes": Case(lambda g: dict(g=unit(g, 5, 3))),
}

POLICIES = {
    "exploring": Case(lambda g: dict(v=normal(g, 2, 3), eps=0.2), {"v": _GREEDY}),
    "confident": Excluded("its answer is a policy of marks (the untried actions, or the largest "
                          "upper bounds): piecewise constant in v and c; n are counts"),
    "greedyShares": Excluded("its answer is marks of each row's largest entries, shared: "
                             "piecewise constant"),
    "upperBounds": Case(lambda g: dict(v=normal(g, 2, 3), c=1.5,
                                       n=g.integers(1, 5, (2, 3)).astype(float)),
                        {"n": _COUNTS}),
    "marked": Excluded("only the length of ids is read, and a holds ids (whole numbers)"),
    "actionIds": Excluded(SHAPE_ONLY),
    "tally": Case(lambda g: dict(t=np.zeros((1, 3)), a=np.array([0.0, 2.0, 1.0, 2.0, 0.0]),
                                 w=normal(g, 5)), {"t": SHAPE_ONLY, "a": _IDS}),
    "ones": Excluded(SHAPE_ONLY),
    "safe": Excluded(_COUNTS),
}

TEMPORAL = {
    "qTarget": Case(_take("q", "s2", "rw", "gamma", "done"), {"s2": _MARKS, "done": _MARKS}),
    "sarsaTarget": Case(_take("q", "s2", "a2", "rw", "gamma", "done"),
                        {"s2": _MARKS, "a2": _MARKS, "done": _MARKS}),
    "expectedSarsaTarget": Case(lambda g: dict(_take("q", "s2", "rw", "gamma", "done")(g),
                                               policy=shares(g, 4, 3)),
                                {"s2": _MARKS, "done": _MARKS}),
    "nudged": Case(lambda g: dict(_take("q", "s", "a")(g), target=normal(g, 5), rate=0.3),
                   {"s": _MARKS, "a": _MARKS}),
    "stateIds": Excluded(SHAPE_ONLY),
    "rowMost": Case(lambda g: dict(q=untied(g, 4, 3))),
    "greedyOf": Excluded(_GREEDY),
    "taken": Case(_take("q", "s", "a"), {"s": _MARKS, "a": _MARKS}),
}

FIELDS = {
    "safetyLoading": Case(lambda g: {k: v for k, v in _fund(g).items() if k != "u"}),
    "adjustment": Case(lambda g: {k: v for k, v in _fund(g).items() if k != "u"}),
    "lundberg": Case(_fund),
    "ruinChance": Case(_fund),
    "surplusAfter": Case(lambda g: dict(u=normal(g, 3), c=normal(g, 3), t=positive(g, 3),
                                        s=normal(g, 3))),
}


#: Every Prelude module, its definitions' cases.
TABLE: dict[str, dict[str, Case | Excluded | tuple[Case, ...]]] = {
    "Arithmetic": ARITHMETIC,
    "Statistics": STATISTICS,
    "LinearAlgebra": LINEAR_ALGEBRA,
    "Networks": NETWORKS,
    "Losses": LOSSES,
    "Norms": NORMS,
    "Optimisers": OPTIMISERS,
    "Sequences": SEQUENCES,
    "Multivariate": MULTIVARIATE,
    "Kernels": KERNELS,
    "Neighbours": NEIGHBOURS,
    "Policies": POLICIES,
    "Temporal": TEMPORAL,
    "Fields": FIELDS,
    "Laws": {},  # (laws only: no definitions, nothing to differentiate)
    "Trigonometry": {},
}

#: The models of the Prelude: each one's methods call a definition the table checks.
MODELS = {
    "LSTM": "run is lstm, checked above",
    "PeepholeLSTM": "run is peepholeLstm, checked above",
    "GRU": "run is gru, checked above",
    "ChoGRU": "run is choGru, checked above",
    "Attention": "run is attention, checked above",
    "MultiHeadAttention": "run and runCausal are multiHead and causalMultiHead, checked above",
}


# ---------------------------------------------------------------- the wrappers

@dataclass(frozen=True)
class Check:
    """One case of one definition, with its arguments drawn."""

    module: str
    name: str
    case: Case
    args: dict[str, np.ndarray]

    @property
    def key(self) -> str:
        """The suffix of this case's .hb names."""
        return self.name + (f"_{self.case.label}" if self.case.label else "")

    @property
    def wrt(self) -> tuple[str, ...]:
        return tuple(p for p in self.args if p not in self.case.fixed)


def _cases(entry: Case | Excluded | tuple[Case, ...]) -> tuple[Case, ...]:
    if isinstance(entry, Excluded):
        return ()
    return entry if isinstance(entry, tuple) else (entry,)


def _draw(name: str, case: Case) -> dict[str, np.ndarray]:
    g = np.random.default_rng(zlib.crc32(f"{name}/{case.label}".encode()))
    return {p: np.asarray(v, dtype=float) for p, v in case.draw(g).items()}


CHECKS = {(module, check.key): check
          for module, table in TABLE.items()
          for name, entry in table.items()
          for case in _cases(entry)
          for check in [Check(module, name, case, _draw(name, case))]}


@cache
def prelude(module: str) -> hilbert.Module:
    return hilbert.open(f"Prelude.{module}", executor="reference")


def _weights(check: Check) -> list[np.ndarray]:
    """Fixed random weights, one per output, shaped like it (zero above the diagonal where the
    case says so)."""
    function = prelude(check.module).function(check.name)
    result = function(*(check.args[p] for p in function.entry.params))
    outputs = result if isinstance(result, tuple) else (result,)
    g = np.random.default_rng(zlib.crc32(f"weights/{check.key}".encode()))
    weights = []
    for output in outputs:
        w = g.normal(size=np.shape(output))
        if check.case.lower_only:
            w = w * np.tril(np.ones(w.shape[-2:]))
        weights.append(w)
    return weights


def _wrapper(check: Check) -> str:
    """`checked_KEY = Σ output · weight` in .hb, its value, and its slope: the gradients in every
    differentiable parameter at once (a tuple, or one tensor for one parameter)."""
    params = prelude(check.module).function(check.name).entry.params
    weights = [f"omega{i}" for i in range(len(_weights(check)))]
    outputs = [f"out{i}" for i in range(len(weights))]
    ranks = [np.ndim(w) for w in _weights(check)]
    terms = [f'einsum("{_letters(r)},{_letters(r)}->", {o}, {w})'
             for o, w, r in zip(outputs, weights, ranks, strict=True)]
    call = f"{check.name}({', '.join(params)})"
    body = (f"let {outputs[0]} ≔ {call} in {terms[0]}" if len(outputs) == 1 else
            f"let ({', '.join(outputs)}) ≔ {call} in {' + '.join(terms)}")
    signature = ", ".join([*params, *weights])
    wrt = check.wrt[0] if len(check.wrt) == 1 else f"({', '.join(check.wrt)})"
    key = check.key
    return "\n".join([f"def checked_{key}({signature}) ≔ {body}",
                      f"fn value_{key}({signature}) ↦ checked_{key}({signature})",
                      f"fn slope_{key}({signature}) ↦ ∂ checked_{key}({signature}) / ∂ {wrt}"])


def _letters(rank: int) -> str:
    return "abcdefgh"[:rank]


@cache
def wrapped(module: str, executor: str) -> hilbert.Module:
    """Every case of `module` wrapped, in one compiled source."""
    checks = [c for (m, _), c in CHECKS.items() if m == module]
    source = "\n".join([f"open Prelude.{module}", *map(_wrapper, checks)])
    return hilbert.compile_source(source, executor=executor)


def _arguments(check: Check) -> list[np.ndarray]:
    params = prelude(check.module).function(check.name).entry.params
    return [check.args[p] for p in params] + _weights(check)


@cache
def gradients(module: str, key: str, executor: str) -> dict[str, np.ndarray] | Exception:
    """∂ checked / ∂ p for every differentiable p, computed once (or what it raised)."""
    check = CHECKS[module, key]
    try:
        slopes = wrapped(module, executor).function(f"slope_{key}")(*_arguments(check))
    except Exception as err:  # reported by each parameter's test
        return err
    slopes = slopes if len(check.wrt) > 1 else (slopes,)
    return {p: np.asarray(g) for p, g in zip(check.wrt, slopes, strict=True)}


# ---------------------------------------------------------------- finite differences

def central_difference(f: Callable[[list], float], args: list, position: int,
                       direction: np.ndarray) -> float:
    """The derivative of f along `direction` in args[position], by the fourth-order central
    stencil (8 (f(+h) − f(−h)) − (f(+2h) − f(−2h))) / 12h."""

    def at(k: int) -> float:
        moved = list(args)
        moved[position] = args[position] + k * H * direction
        return f(moved)

    return (8 * (at(1) - at(-1)) - (at(2) - at(-2))) / (12 * H)


def sampled(shape: tuple[int, ...], key: str) -> list[tuple[int, ...]]:
    """Every entry of `shape`, or SAMPLED of them drawn by a generator seeded from `key`."""
    entries = list(np.ndindex(shape))
    if len(entries) <= SAMPLED:
        return entries
    g = np.random.default_rng(zlib.crc32(f"entries/{key}".encode()))
    return [entries[i] for i in sorted(g.choice(len(entries), SAMPLED, replace=False))]


def directions(check: Check, parameter: str) -> list[np.ndarray]:
    """The unit directions to differentiate along: one entry each, or for a symmetric matrix
    the entries ij and ji together (then the gradient's part along it is g_ij + g_ji)."""
    shape = check.args[parameter].shape
    result = []
    for index in sampled(shape, f"{check.key}/{parameter}"):
        e = np.zeros(shape)
        e[index] = 1.0
        result.append(np.maximum(e, e.T) if parameter in check.case.symmetric else e)
    return result


@cache
def expected(module: str, key: str, parameter: str) -> tuple[float, ...]:
    """Finite differences of the wrapper's value along each direction, the value computed by
    the reference executor (the oracle: test_properties checks the numba executor's values
    against it), so both executors' gradients are held to the same numbers."""
    check = CHECKS[module, key]
    value = wrapped(module, "reference").function(f"value_{key}")
    position = prelude(module).function(check.name).entry.params.index(parameter)
    return tuple(central_difference(lambda moved: value(*moved), _arguments(check), position, e)
                 for e in directions(check, parameter))


#: Bugs found by this file, each reduced to a test at the end of the file.
#: Definitions whose gradient program takes the numba executor long to compile on first use
#: (seconds of CPU with a cold cache on the 2-core machine; a loop family shares its programs,
#: so it is listed whole): on numba they run with `-m slow`, to keep the default run short.
#: On the reference executor every definition runs by default.
HEAVY_ON_NUMBA: dict[tuple[str, str], float] = {
    ("Networks", "stepFirst"): 1.9,
    ("Networks", "stepSecond"): 1.5, ("Networks", "gradFirst"): 1.6,
    ("Networks", "attentionOf"): 1.7, ("Networks", "causalAttention"): 1.9,
    ("Networks", "selfAttention"): 2.5, ("Networks", "criticStep"): 1.9,
    ("Networks", "makerStep"): 1.9, ("Norms", "batchNorm"): 2.2, ("Norms", "layerNormed"): 1.5,
    ("Sequences", "lstmCell"): 2.8, ("Sequences", "peepholeCell"): 3.7,
    ("Sequences", "affine"): 1.7, ("Sequences", "lstmFrom"): 2.4, ("Sequences", "gruCell"): 3.0,
    ("Sequences", "gruFrom"): 2.4,
    ("Sequences", "choCell"): 3.6, ("Sequences", "attend"): 2.9,
    ("Sequences", "causalAttend"): 3.2, ("Sequences", "attention"): 4.6,
    ("Sequences", "multiHead"): 8.8, ("Sequences", "causalMultiHead"): 8.6,
    ("Sequences", "heads"): 8.0, ("Sequences", "layerNormSeq"): 2.1,
    ("Sequences", "scores"): 1.9,
    ("LinearAlgebra", "solve"): 4.5, ("LinearAlgebra", "leastSquares"): 1.8,
    **{("Networks", name): 31.5 for name in ("mlpFirst", "mlpSecond", "mlpPredict", "mlpFit",
                                             "mlpShares", "firstLoop", "secondLoop")},
    **{("Networks", name): 12.1 for name in ("autoCode", "autoBuild", "autoFit", "codeLoop",
                                             "buildLoop")},
    **{("Networks", name): 14.8 for name in ("ganCritic", "ganMaker", "ganSamples", "criticLoop",
                                             "makerLoop")},
    ("Networks", "recurrent"): 5.1,
    ("Sequences", "lstm"): 14.7, ("Sequences", "peepholeLstm"): 18.2,
    ("Sequences", "peepholeSteps"): 2.5, ("Sequences", "gru"): 14.4,
    ("Sequences", "choGru"): 15.1, ("Sequences", "gruSteps"): 2.4,
    ("Sequences", "lstmSteps"): 7.7, ("Sequences", "choSteps"): 11.0,
    **{("Multivariate", name): 10.8 for name in ("coefficients", "fitted", "residuals",
                                                 "rSquared")},
}


def _parameter(module: str, key: str, p: str, executor: str):
    name = CHECKS[module, key].name
    marks = []
    if executor == "numba" and (module, name) in HEAVY_ON_NUMBA:
        marks.append(pytest.mark.slow)
    return pytest.param(module, key, p, executor, id=f"{executor}-{module}.{key}.{p}", marks=marks)


PARAMETERS = [_parameter(module, key, p, executor)
              for executor in EXECUTORS
              for (module, key), check in CHECKS.items() for p in check.wrt]


@pytest.mark.parametrize("module,key,parameter,executor", PARAMETERS)
def test_gradient_equals_finite_differences(module, key, parameter, executor):
    check = CHECKS[module, key]
    got = gradients(module, key, executor)
    if isinstance(got, Exception):
        raise got.with_traceback(None)  # (its message says it; a deep traceback is slow to print)
    assert got[parameter].shape == check.args[parameter].shape
    along = directions(check, parameter)
    np.testing.assert_allclose([np.sum(got[parameter] * e) for e in along],
                               expected(module, key, parameter), rtol=RTOL, atol=ATOL,
                               err_msg=f"∂ {check.name} / ∂ {parameter} along entries "
                                       f"{[tuple(map(int, np.argwhere(e)[0])) for e in along]}")


# ---------------------------------------------------------------- nothing left out

def test_the_table_covers_every_definition():
    """Every module, definition, parameter and model of the Prelude is in the table: checked,
    or excluded with a reason."""
    files = {p.stem for p in (ROOT / "prelude").glob("*.hb")}
    assert files == set(TABLE), "a Prelude module is missing from TABLE (or TABLE names one gone)"
    for module, table in TABLE.items():
        opened = hilbert.open(f"Prelude.{module}", executor="reference")
        assert set(opened.definitions) == set(table), f"Prelude.{module}: the table is out of date"
        for name, entry in table.items():
            params = set(opened.function(name).entry.params)
            for case in _cases(entry):
                drawn = set(CHECKS[module, Check(module, name, case, {}).key].args)
                assert drawn == params, f"{module}.{name}: draws {drawn}, parameters {params}"
                assert set(case.fixed) <= params, f"{module}.{name}: fixes unknown parameters"
                assert all(case.fixed.values()), f"{module}.{name}: a fixed parameter needs a reason"
            if isinstance(entry, Excluded):
                assert entry.reason
    models = {m for module in TABLE for m in hilbert.open(f"Prelude.{module}").models}
    assert models == set(MODELS), "a Prelude model is missing from MODELS"


# ---------------------------------------------------------------- bugs found, reduced


def test_gradients_in_two_parameters_through_one_loop(executor):
    """run(t, w, x) = w · x^t (t = 2 here), so ∂/∂w Σ run = x² and ∂/∂x Σ run = 2 w x."""
    module = hilbert.compile_source("""
def run(t, w, x) ≔ if t = 0 then w else run(t − 1, w · x, x)
fn slopes(t, w, x) ↦ ∂ einsum("i->", run(t, w, x)) / ∂ (w, x)
""", executor=executor)
    w, x = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    by_w, by_x = module.slopes(2, w, x)
    np.testing.assert_allclose(by_w, x ** 2, rtol=1e-15)
    np.testing.assert_allclose(by_x, 2 * w * x, rtol=1e-15)


def test_argmax_has_derivative_zero(executor):
    """Σ argmax(z, 1) · z picks each row's largest entry, so its gradient is argmax itself."""
    module = hilbert.compile_source('fn f(z) ↦ ∂ einsum("ij,ij->", argmax(z, 1), z) / ∂ z',
                                    executor=executor)
    z = np.array([[1.0, 3.0, 2.0], [0.0, 1.0, -1.0]])
    np.testing.assert_array_equal(module.f(z), np.eye(3)[z.argmax(axis=1)])



def test_one_hot_weights_in_a_gradient(executor):
    """Σ_ij [j = l_i] (z_ij − Σ_k z_ik) has gradient [j = l_i] − 1."""
    module = hilbert.compile_source("""
fn f(z, l) ↦ ∂ einsum("ij,ij->", oneHot(l, 3), z − einsum("ij,i->ij", z ^ 0, einsum("ij->i", z))) / ∂ z
""", executor=executor)
    z, labels = np.array([[1.0, 3.0, 2.0], [0.0, 1.0, -1.0]]), np.array([0.0, 2.0])
    np.testing.assert_array_equal(module.f(z, labels), np.eye(3)[[0, 2]] - 1)




def test_solve_gradient_in_a_is_that_of_the_solution_within_symmetric_matrices(executor):
    """solve is conjugate gradient, for a symmetric a, and ∂ through it follows the steps the
    solve took (docs/semantics.md): within symmetric matrices, its domain, that is the gradient
    of the solution, d(w·a⁻¹b)/da = −(a⁻ᵀ w)(a⁻¹ b)ᵀ, symmetrised."""
    module = hilbert.compile_source("""
open Prelude.LinearAlgebra
fn slope(a, b, w) ↦ ∂ dot(solve(a, b), w) / ∂ a
""", executor=executor)
    a = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])
    b, w = np.array([1.0, 2.0, 3.0]), np.array([0.3, -1.0, 0.5])
    want = -np.outer(np.linalg.solve(a.T, w), np.linalg.solve(a, b))
    got = module.slope(a, b, w)
    np.testing.assert_allclose(got + got.T, want + want.T, rtol=1e-9, atol=1e-12)
