"""What a watched training run recorded (`net.train.watched(…)`, docs/models.md): the value of
a watch, such as the loss, before the first step and after every `every` steps, ready to be
read or plotted in one line:

>>> run = History("Line.train", [0, 10, 20], [4.0, 1.0, 0.25])
>>> run.last
0.25
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field

import numpy as np

from hilbert.grammar.errors import ArgumentError
from hilbert.grammar.source import nowhere


@dataclass
class History:
    """`values[k]`: the watch's value once `steps[k]` steps of `label` (a train block) had run.
    A number stays a float; anything else is kept as the watch gave it."""

    label: str
    steps: list[int] = field(default_factory=list)
    values: list = field(default_factory=list)

    def add(self, step: int, value) -> None:
        self.steps.append(step)
        array = np.asarray(value)
        self.values.append(float(array) if array.ndim == 0 and array.dtype.kind in "biuf"
                           else value)

    @property
    def last(self):
        """The value after the last step (None before any was recorded)."""
        return self.values[-1] if self.values else None

    def plot(self, ax=None, log: bool = False, **style):
        """The recorded values against the steps, on `ax` (a new figure's by default; `log`: a
        logarithmic value axis), drawn with matplotlib (`style`: its line options). Returns
        the axes."""
        try:
            import matplotlib.pyplot as plt
        except ImportError:
            raise ArgumentError("E600", "History.plot needs matplotlib (pip install "
                                "'hilbert[plot]')", nowhere("hilbert.History.plot")) from None
        if ax is None:
            ax = plt.figure().add_subplot()
        ax.plot(self.steps, self.values, label=style.pop("label", self.label), **style)
        ax.set_xlabel("step")
        ax.set_ylabel("watched value")
        if log:
            ax.set_yscale("log")
        ax.set_title(self.label)
        return ax

    def __repr__(self) -> str:
        shown = f", last {self.last!r}" if self.values else ""
        return f"<History of {self.label}: {len(self.values)} values over {self.steps[-1] if self.steps else 0} steps{shown}>"


def whole(value, least: int) -> int | None:
    """`value` as a whole number of at least `least` (a real number, not a bool), else None."""
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        return None
    number = float(value)
    return int(number) if math.isfinite(number) and number >= least and number.is_integer() \
        else None


def every_count(every, steps: int, label: str) -> int:
    """How many steps run between two watches: `every` as a whole number ≥ 1 (by default
    about a hundredth of the run, at least 1), or E600 naming the value."""
    if every is None:
        return max(1, steps // 100)
    count = whole(every, 1)
    if count is not None:
        return count
    raise ArgumentError("E600", f"{label}.watched's every= must be a whole number, at least 1, "
                        f"but it was given {every!r}", nowhere(f"{label}.watched"))
