"""The numbers a call computes in (docs/semantics.md, "Number types"): one dtype per call,
float32, float64, complex64 or complex128, chosen from its array arguments as NumPy promotes
them, with Python numbers weak (they never widen a float32 call, as in JAX)."""

from __future__ import annotations

import numpy as np

from ..grammar.errors import ArgumentError

#: The largest finite float32.
FLOAT32_MAX = float(np.finfo(np.float32).max)
#: The dtypes a call may compute in, by name.
NAMES = ("float32", "float64", "complex64", "complex128")
#: What a call computes in when nothing says otherwise (no arrays, or only Python numbers).
DEFAULT = "float64"
#: What counted values (sizes, positions, counters: compiler/counting.py) are computed in,
#: whatever the call's dtype: every whole number up to 2⁵³ is exact in it.
COUNTED = "float64"
#: Each dtype as NumPy's dtype object (a call's signature holds these: `is` compares them).
DTYPES = {name: np.dtype(name) for name in NAMES}
#: Each of NAMES by its NumPy dtype object (a call's hot path looks names up here: a dtype's
#: `.name` is computed in Python, several µs).
BY_DTYPE = {dtype: name for name, dtype in DTYPES.items()}
_REAL = {"float32": "float32", "complex64": "float32", "float64": "float64",
         "complex128": "float64"}
_COMPLEX = {"float32": "complex64", "complex64": "complex64", "float64": "complex128",
            "complex128": "complex128"}


def real(name: str) -> str:
    """The real dtype of `name`: what its constants, positions and |z| are (float32 for
    float32 and complex64, float64 otherwise)."""
    return _REAL[name]


def complex_of(name: str) -> str:
    """The complex dtype of the same precision as `name`."""
    return _COMPLEX[name]


def is_complex(name: str) -> bool:
    return name.startswith("complex")


def itemsize(name: str) -> int:
    """Bytes one entry of `name` takes."""
    return DTYPES[name].itemsize


def natural(dtype: np.dtype) -> str | None:
    """The dtype an array of NumPy dtype `dtype` computes in: booleans and integers widen to
    float64, float16 to float32, wider floats narrow to float64 and complex to complex128;
    None for anything that holds no numbers."""
    kind = dtype.kind
    if kind in "biu":
        return "float64"
    if kind == "f":
        return "float32" if dtype.itemsize <= 4 else "float64"
    if kind == "c":
        return "complex64" if dtype.itemsize <= 8 else "complex128"
    return None


def promote(strong: list[str], weak_complex: bool = False) -> str:
    """NumPy's promotion of the arrays' dtypes `strong` (DEFAULT when there are none); a weak
    complex number (a Python complex argument) makes a real result complex of its precision."""
    if not strong:
        name = DEFAULT
    elif all(s == strong[0] for s in strong):
        name = strong[0]
    else:
        name = BY_DTYPE[np.result_type(*strong)]
    return complex_of(name) if weak_complex else name


def constant(value: float, dtype: str):
    """A `.hb` literal (or a constant the compiler writes) in a call of `dtype`: a NumPy number
    of its real dtype. A finite literal beyond float32's range is float32's largest finite
    number of its sign, not infinity: the Prelude's masks lower scores by 1e300, and an
    infinity there would make 0 · ∞ a NaN (docs/semantics.md, "Number types")."""
    kind = np.dtype(real(dtype)).type
    if kind is np.float32 and np.isfinite(value) and abs(value) > FLOAT32_MAX:
        return np.float32(np.copysign(FLOAT32_MAX, value))
    return kind(value)


def check_dtype(value, span) -> str:
    """`value` (a name, NumPy type or dtype) as one of NAMES, or an ArgumentError (E600)."""
    try:
        name = np.dtype(value).name if value is not None else None
    except (TypeError, ValueError):
        name = None
    if name not in NAMES:
        raise ArgumentError("E600", f"dtype={value!r:.40} is not one hilbert computes in: write "
                            "float32, float64, complex64 or complex128 (or their NumPy types)", span)
    return name
