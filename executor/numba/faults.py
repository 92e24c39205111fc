"""What compiled code raises for the executor to turn into the HilbertError the reference
executor raises (generated code knows numbers, not spans). Needs no Numba: the host tier
catches them without loading it."""

from __future__ import annotations


class StepCountError(Exception):
    """Raised by compiled code when a counted loop's step count is bad: args (loop, value).
    The executor turns it into the HilbertError the reference executor raises."""


class PositionError(Exception):
    """Raised by compiled code before reading x[t] at a bad position: args (read, t, size).
    The executor turns it into the HilbertError the reference executor raises (E510)."""


class LabelError(Exception):
    """Raised by compiled code for a oneHot label that is not a whole number 0 … k − 1: args
    (read, label, k). The executor turns it into the reference executor's E511."""


class DrawError(Exception):
    """Raised by compiled code for a random draw whose key or step is not a whole number
    0 … 2⁶⁴ − 1: args (read, key, step). The executor turns it into the reference
    executor's E512."""
