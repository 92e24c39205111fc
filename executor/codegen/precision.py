"""How a literal of each dtype is written in generated code, and the kernels each code's dtype
binds as `K`.

Float32 code (a float32 call's) is the float64 code's loop IR with its numbers typed float32
(loops.py: the generator types every literal as it builds it), printed with each float32
literal as `np.float32(…)`, and its kernels float32's (executor/numba/kernels32.py), so that
nothing in it widens to float64 but the sums' accumulators, typed float64 (more accurate than
NumPy's pairwise float32 sums) and rounded once when stored, and counted values (sizes,
positions, counters: compiler/counting.py), which the emitter writes as float64. Matrix
products are BLAS's sgemm, or for small ones loops that sum in float32 as sgemm does
(products.py)."""

from __future__ import annotations

import math

from ...compiler.dtypes import FLOAT32_MAX

#: The dtypes code is generated in, and the kernels module each binds as `K`.
KERNELS = {"float64": None, "float32": "hilbert.executor.numba.kernels32",
           "complex128": None, "complex64": None}  # (complex code: built by llvm only)


def literal(text: str, dtype: str) -> str:
    """A number's text (loops.number's: `0.5`, `-2.0`, `np.inf`, `(-np.inf)`) as a literal of
    `dtype`: itself but in float32, where it is `np.float32(0.5)` (dtypes.constant: a finite
    number beyond float32's range is its largest finite number of that sign)."""
    if dtype != "float32":
        return text
    if text.startswith("(") and text.endswith(")"):
        return f"({literal(text[1:-1], dtype)})"
    if text.startswith("-"):
        return "-" + literal(text[1:], dtype)
    if not text.startswith("np."):
        value = float(text)
        if math.isfinite(value) and abs(value) > FLOAT32_MAX:
            text = repr(FLOAT32_MAX)
    return f"np.float32({text})"


def header(dtype: str) -> str:
    """What code of `dtype` starts with: the binding of its kernels as `K` (float64 code's
    are bound where it is compiled)."""
    module = KERNELS[dtype]
    return f"import {module} as K\n\n" if module else ""
