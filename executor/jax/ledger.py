"""What a jitted call hands back beside its value: the first runtime error it met (which check,
and the value that failed it) and the loop steps it ran. A jitted function cannot raise, so
every check the other executors make from values (E500, E510, E511, E512, a tape too short)
is noted here, threaded through loops and branches as part of their state, and raised on the
host after the call by the same host function that raises it on the other executors."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np


class Ledger(NamedTuple):
    """A call's account, as traced values (a NamedTuple is a JAX pytree): `error` is 0, or
    1 + the index of the first check that failed (`Checks`); `value` the value that failed it;
    `steps` the loop iterations run so far."""

    error: jnp.ndarray
    value: jnp.ndarray
    steps: jnp.ndarray

    @staticmethod
    def empty() -> Ledger:
        return Ledger(jnp.int32(0), jnp.complex128(0), jnp.int64(0))

    def noted(self, bad, check: int, value) -> Ledger:
        """This ledger with check number `check` failed where `bad` holds, unless an earlier
        check failed first (the first failure is the one a host run would have raised)."""
        first = (self.error == 0) & bad
        return Ledger(jnp.where(first, jnp.int32(check + 1), self.error),
                      jnp.where(first, jnp.asarray(value).astype(jnp.complex128), self.value),
                      self.steps)

    def counted(self, steps) -> Ledger:
        return self._replace(steps=self.steps + jnp.asarray(steps).astype(jnp.int64))

    def packed(self) -> jnp.ndarray:
        """The account as one complex128 array (error, value, steps): one transfer to the host,
        not three. (Steps up to 2⁵³ are exact in a float64's real part.)"""
        return jnp.stack([self.error.astype(jnp.complex128), self.value,
                          self.steps.astype(jnp.complex128)])


def unpacked(packed: np.ndarray) -> tuple[int, complex, int]:
    """(error, value, steps) from `Ledger.packed`'s array, on the host."""
    error, value, steps = packed.tolist()
    return int(error.real), value, int(steps.real)


#: A raiser: called on the host with the value that failed a check, it raises what the other
#: executors raise for that value.
Raiser = Callable[[complex], None]


class Checks:
    """The checks one trace of a program made, in order: each a raiser (the traced program
    refers to them by position)."""

    def __init__(self) -> None:
        self.raisers: list[Raiser] = []

    def add(self, raiser: Raiser) -> int:
        self.raisers.append(raiser)
        return len(self.raisers) - 1

    def settle(self, error, value) -> None:
        """Raise what check `error` − 1 raises for `value` (nothing when `error` is 0)."""
        number = int(np.asarray(error))
        if number:
            self.raisers[number - 1](complex(np.asarray(value)))
            raise AssertionError(f"check {number - 1} failed on the device but not on the host "
                                 f"for {complex(np.asarray(value))}")


class TapeTooShort(Exception):
    """A loop run backwards ran more steps than its tape holds: the program is traced again
    with a longer tape (`site`: which loop run backwards, `steps`: the steps it ran)."""

    def __init__(self, site: int, steps: int):
        super().__init__(f"tape {site} needs {steps} steps")
        self.site = site
        self.steps = steps
