"""What the product kernels share (blas.py's, built by Numba, and the LLVM back end's,
executor/llvm/product_kernel.py), in a module that imports no Numba: the register tiles'
sizes (tiles.py's), the sizes from which hilbert's own products run and their entries
(own_products.py's), and NumPy's own cblas routines. The LLVM back end writes its product
kernel from these alone, so a process whose code it builds need not import Numba (a third of
a second) to multiply."""

from __future__ import annotations

import ctypes
from pathlib import Path

import llvmlite.binding as llvm
import numpy as np

from .loading import python_mode

#: Rows of the result a tile holds, and vectors of its columns (each VECTOR_BITS wide): the
#: widest the CPU has (AVX-512: 32 vector registers, so 8 sums, 2 rows of b and a broadcast
#: fit; with AVX2's 16 they fit too).
ROWS, VECTORS = 4, 2
VECTOR_BITS = 512 if llvm.get_host_cpu_features().get("avx512f") else 256
#: At most this many multiply-adds (m·n·k) run as tiles. Measured through kernels.gemm against
#: NumPy's OpenBLAS (np.matmul into a given out) on the 2-core AMD EPYC, float64 (float32):
#: 64×32·32×32 6.7 (3.4) against 19 (6.1) µs, 64×64·64×64 25 (12) against 51 (16) µs;
#: 64×128·128×128, 4 times this bound, 107 (54) against 102 (45) µs, where BLAS's packing and
#: its second thread pay.
TILED_PRODUCT = 2 ** 18

#: Per number width, the least work (m·n·k) of a product run as an own product and its least
#: m, k and n: measured on one core of the AMD EPYC against OpenBLAS's SkylakeX kernel
#: (docs/architecture.md, "Large products"), float64 ones were faster from 2²¹ multiply-adds
#: (the register tiles take products up to 2¹⁸) at every shape but 8-row ones (even); float32
#: ones from 2²⁴, but for fewer than 256 columns, which leave the 64-column tiles mostly
#: padding (n = 96: 0.76×, n = 48: 0.74×).
WORK = {64: 1 << 21, 32: 1 << 24}
SIDES = {64: (16, 8, 32), 32: (8, 8, 256)}
#: own_product's address per number width, 0 outside `used` (read by compiled code).
ENTRIES = {64: ctypes.c_int64(0), 32: ctypes.c_int64(0)}
for _width, _entry in ENTRIES.items():
    llvm.add_symbol(f"hilbert_own_product_f{_width}", ctypes.addressof(_entry))


def _numpy_blas_libraries() -> list[ctypes.CDLL]:
    """The BLAS libraries NumPy's wheel carries (numpy.libs on Linux and Windows, .dylibs on
    macOS), loaded (they are already, by NumPy: this finds their handles)."""
    if python_mode():
        return []
    root = Path(np.__file__).parent
    found = []
    for library in [*root.parent.glob("numpy.libs/*blas*"), *root.glob(".dylibs/*blas*")]:
        try:
            found.append(ctypes.CDLL(str(library)))
        except OSError:
            continue
    return found


def numpy_cblas(routine: str) -> tuple[int, bool] | None:
    """The address of NumPy's own cblas_<routine> (dgemm, dgemv) and whether its integers are
    64-bit, or None. Compiled code multiplies through it, so NumPy and hilbert share one BLAS
    and one thread pool: two OpenBLAS pools in one process (NumPy's, and SciPy's that Numba's
    np.dot uses) make each other's threads wait, which turns a 1 ms product into tens of
    milliseconds."""
    try:
        blas = np.__config__.CONFIG["Build Dependencies"]["blas"]
        ilp64 = "64BITINT" in blas.get("openblas configuration", "").upper()
    except (AttributeError, KeyError, TypeError):
        return None
    for handle in _numpy_blas_libraries():
        for name, wide in ((f"scipy_cblas_{routine}64_", True), (f"cblas_{routine}64_", True),
                           (f"scipy_cblas_{routine}", ilp64), (f"cblas_{routine}", ilp64)):
            function = getattr(handle, name, None)
            if function is not None:
                return ctypes.cast(function, ctypes.c_void_p).value, wide
    return None
