"""Generated code in float32 (a float32 call's): the float64 code, every number it writes made a
float32 (`np.float32(0.5)`), and its kernels float32's (executor/numba/kernels32.py), so that
nothing in it widens to float64 but the sums' accumulators, which stay float64 (more accurate
than NumPy's pairwise float32 sums) and are rounded once when stored, and counted values
(sizes, positions, counters: compiler/counting.py), which the emitter writes as float64. Matrix products are
BLAS's sgemm, or for small ones loops that sum in float32 as sgemm does (products.py)."""

from __future__ import annotations

import math
import re

from hilbert.compiler.dtypes import FLOAT32_MAX

#: The dtypes code is generated in, and the kernels module each binds as `K`.
KERNELS = {"float64": None, "float32": "hilbert.executor.numba.kernels32"}

#: A float literal standing alone: digits with a point or an exponent, or np.inf and np.nan.
_FLOAT = re.compile(r"(?<![\w.\"'])(\d+\.\d*(?:e[+-]?\d+)?|\d+e[+-]?\d+|np\.inf|np\.nan)(?![\w.])")
#: A sum's accumulator starting at zero (`acc3 = 0.0`): left float64.
_ACCUMULATOR = re.compile(r"^\s*acc\d+ = 0\.0$")


def _single(found: re.Match) -> str:
    """A float literal of the source as a float32 (dtypes.constant: a finite literal beyond
    float32's range is its largest finite number of that sign)."""
    text = found.group(1)
    if not text.startswith("np."):
        value = float(text)
        if math.isfinite(value) and abs(value) > FLOAT32_MAX:
            text = repr(math.copysign(FLOAT32_MAX, value))
    return f"np.float32({text})"


def single(source: str) -> str:
    """`source` (generated float64 code) as float32 code: literals made float32, and `K`
    bound to the float32 kernels. (What the emitter writes as `np.float64(…)` stays float64:
    counted values, compiler/counting.py; it writes a number of the code's dtype itself.)"""
    lines = []
    for line in source.splitlines():
        if _ACCUMULATOR.match(line):
            lines.append(line)
            continue
        lines.append(_FLOAT.sub(_single, line))
    return f"import {KERNELS['float32']} as K\n\n" + "\n".join(lines) + "\n"
