"""Counter-based draws in JAX, equal bit for bit to compiler/ops/draws.py's: the same
Philox-4x32-10 rounds in uint64 arithmetic (exact: 32 × 32 bits fit in 64), the same float
formulas. Gaussian draws need C's log1p entry by entry, which XLA's own log1p does not equal in
the last bit, so a call computes them on the host (`jax.pure_callback` to the host's own
function); an exported program, which cannot call back, computes them on the device with
XLA's log1p and cos (within an ulp of the host's)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ...compiler.ops import draws
from ...compiler.ops.draws import _M0, _M1, _W0, _W1, ROUNDS

_LOW = np.uint64(0xFFFFFFFF)
_32 = np.uint64(32)


def philox(key, step, count: int) -> tuple:
    """The four words (uint64 arrays) of Philox-4x32-10 for counters (i, step), i = 0 …
    count − 1, under `key` (key and step uint64 scalars)."""
    index = jnp.arange(count, dtype=jnp.uint64)
    c0, c1 = index & _LOW, index >> _32
    c2 = jnp.broadcast_to(step & _LOW, (count,))
    c3 = jnp.broadcast_to(step >> _32, (count,))
    k0, k1 = key & _LOW, key >> _32
    for r in range(ROUNDS):
        if r:
            k0, k1 = (k0 + np.uint64(_W0)) & _LOW, (k1 + np.uint64(_W1)) & _LOW
        p0, p1 = _M0 * c0, _M1 * c2
        c0, c1, c2, c3 = ((p1 >> _32) ^ c1 ^ k0, p1 & _LOW, (p0 >> _32) ^ c3 ^ k1, p0 & _LOW)
    return c0, c1, c2, c3


def _unit(high, low, dtype):
    if np.dtype(dtype) == np.float32:
        return (high >> np.uint64(8)).astype(jnp.float32) * np.float32(2.0 ** -24)
    return ((high >> np.uint64(5)).astype(jnp.float64) * 67108864.0
            + (low >> np.uint64(6)).astype(jnp.float64)) * (2.0 ** -53)


def uniform(key, step, shape: tuple, dtype) -> jnp.ndarray:
    w0, w1, _, _ = philox(key, step, int(np.prod(shape, dtype=np.int64)))
    return _unit(w0, w1, dtype).reshape(shape)


def gaussian(key, step, shape: tuple, dtype, on_host: bool = True) -> jnp.ndarray:
    """Box–Muller draws: on the host (bit for bit the other executors') unless `on_host` is
    False (on the device, within an ulp of them)."""
    if on_host:
        def host(k, s):
            return draws.gaussian(int(k), int(s), shape, dtype)

        return jax.pure_callback(host, jax.ShapeDtypeStruct(shape, dtype), key, step)
    w0, w1, w2, w3 = philox(key, step, int(np.prod(shape, dtype=np.int64)))
    u1, u2 = _unit(w0, w1, np.float64), _unit(w2, w3, np.float64)
    z = jnp.sqrt(-2.0 * jnp.log1p(-u1)) * jnp.cos(2.0 * np.pi * u2)
    return z.astype(dtype).reshape(shape)


def permutation(key, step, n: int, dtype) -> jnp.ndarray:
    return jnp.argsort(uniform(key, step, (n,), np.float64), stable=True).astype(dtype)
