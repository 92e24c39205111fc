"""Counter-based random draws: `uniform(key, step, x)`, `gaussian(key, step, x)`,
`bernoulli(p, key, step, x)` and `permutation(key, step, v)` anywhere in a program.

Entry i (in C order) of a draw shaped like x is a function of (key, step, i) alone: the
Philox-4x32-10 block cipher (Salmon, Moraes, Dror and Shaw, "Parallel random numbers: as easy
as 1, 2, 3", SC 2011) applied to the counter (i mod 2³², i div 2³², step mod 2³², step div 2³²)
under the key (key mod 2³², key div 2³²). So any step's draw is made without replaying the
steps before it, and it is the same on every executor, host and thread count: each computes
exactly these integer operations (NumPy's uint64 arithmetic, exact), then one float formula.

From the four 32-bit words w0…w3 of entry i:
- uniform, float64: ((w0 >> 5)·2²⁶ + (w1 >> 6))·2⁻⁵³, the 53-bit construction NumPy's legacy
  generator uses, in [0, 1); float32: (w0 >> 8)·2⁻²⁴, in [0, 1);
- gaussian: Box–Muller, √(−2 ln(1 − u1)) · cos(2π u2), u1 from (w0, w1) and u2 from (w2, w3)
  as above (computed in float64, rounded to float32 for a float32 draw);
- permutation(key, step, v): 0 … n − 1 ordered by the float64 uniforms of length n (a stable
  sort), for the n entries of vector v.
"""

from __future__ import annotations

import math

import numpy as np

from ...grammar.errors import RuntimeHilbertError

_M0, _M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_W0, _W1 = 0x9E3779B9, 0xBB67AE85
_LOW = np.uint64(0xFFFFFFFF)
_32 = np.uint64(32)
ROUNDS = 10
#: Keys and steps are whole numbers below this (two 32-bit words each).
LIMIT = 2 ** 64


def philox(key: int, step: int, count: int) -> tuple[np.ndarray, ...]:
    """The four uint32 words (as uint64 arrays) of Philox-4x32-10 for counters
    (i, step) with i = 0 … count − 1, under `key`.

    >>> [hex(int(w[0])) for w in philox(0, 0, 1)]
    ['0x6627e8d5', '0xe169c58d', '0xbc57ac4c', '0x9b00dbd8']
    """
    index = np.arange(count, dtype=np.uint64)
    c0, c1 = index & _LOW, index >> _32
    c2 = np.full(count, step & 0xFFFFFFFF, np.uint64)
    c3 = np.full(count, step >> 32, np.uint64)
    return _rounds((c0, c1, c2, c3), key & 0xFFFFFFFF, key >> 32)


def _rounds(counter: tuple[np.ndarray, ...], k0: int, k1: int) -> tuple[np.ndarray, ...]:
    c0, c1, c2, c3 = counter
    for r in range(ROUNDS):
        if r:
            k0, k1 = (k0 + _W0) & 0xFFFFFFFF, (k1 + _W1) & 0xFFFFFFFF
        p0, p1 = _M0 * c0, _M1 * c2  # exact: 32 × 32 bits fit in 64
        c0, c1, c2, c3 = ((p1 >> _32) ^ c1 ^ np.uint64(k0), p1 & _LOW,
                          (p0 >> _32) ^ c3 ^ np.uint64(k1), p0 & _LOW)
    return c0, c1, c2, c3


def whole(value, what: str, span) -> int:
    """A key or step as the whole number it must be (0 ≤ n < 2⁶⁴), else E512."""
    number = float(np.real(value))
    if not (np.isfinite(number) and number.is_integer() and 0 <= number < LIMIT):
        raise RuntimeHilbertError("E512", f"a random draw's {what} must be a whole number from 0 "
                                  f"to 2^64 − 1, but it is {number:g}", span)
    return int(number)


def _unit(high: np.ndarray, low: np.ndarray, dtype) -> np.ndarray:
    if np.dtype(dtype) == np.float32:
        return ((high >> np.uint64(8)).astype(np.float32) * np.float32(2.0 ** -24))
    return ((high >> np.uint64(5)).astype(np.float64) * 67108864.0
            + (low >> np.uint64(6)).astype(np.float64)) * (2.0 ** -53)


def uniform(key: int, step: int, shape: tuple[int, ...], dtype=np.float64) -> np.ndarray:
    """Uniform draws on [0, 1) of `shape` (module docstring)."""
    w0, w1, _, _ = philox(key, step, int(np.prod(shape, dtype=np.int64)))
    return _unit(w0, w1, dtype).reshape(shape)


#: C's log1p and cos entry by entry: what compiled code calls (NumPy's own vectorised ones
#: differ from them in the last bit for some entries, and draws must be the same bits).
_log1p, _cos = np.frompyfunc(math.log1p, 1, 1), np.frompyfunc(math.cos, 1, 1)


def gaussian(key: int, step: int, shape: tuple[int, ...], dtype=np.float64) -> np.ndarray:
    """Standard normal draws of `shape` by Box–Muller (module docstring), with C's log1p and
    cos as compiled code has them."""
    w0, w1, w2, w3 = philox(key, step, int(np.prod(shape, dtype=np.int64)))
    u1, u2 = _unit(w0, w1, np.float64), _unit(w2, w3, np.float64)
    radius = np.sqrt(-2.0 * np.asarray(_log1p(-u1), np.float64))
    z = radius * np.asarray(_cos(2.0 * np.pi * u2), np.float64)
    return z.astype(dtype, copy=False).reshape(shape)


def permutation(key: int, step: int, n: int, dtype=np.float64) -> np.ndarray:
    """0 … n − 1 in the order of n uniform draws (module docstring)."""
    return np.argsort(uniform(key, step, (n,)), kind="stable").astype(dtype)


def drawn_dtype(x) -> np.dtype:
    """The dtype draws shaped like x are made in: float32 for float32 or complex64 data,
    float64 otherwise."""
    given = getattr(x, "dtype", None)  # (a dtype is falsy: test it against None)
    kind = np.dtype(given) if given is not None else np.result_type(x)
    return np.dtype(np.float32) if kind in (np.float32, np.complex64) else np.dtype(np.float64)
