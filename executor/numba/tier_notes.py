"""What the plans of tiered programs say (executor/numba/tiers.py): which tier calls run on, when
the code is built, and the maths under math="fast"."""

from __future__ import annotations

#: Environment variable saying when a loop-free call's generated code is built (compiled and
#: swapped in): "eager" (at the first call, before it runs), "never" (calls stay on the host),
#: or N (in a background thread from the N-th call of a signature). See COMPILE_AFTER.
COMPILE_ENVIRONMENT = "HILBERT_COMPILE"
#: The call of a signature from which its code is built in the background under
#: HILBERT_COMPILE=background: a call with loops from its first (its steps are worth compiling),
#: one without from this one, the calls before it on the host.
COMPILE_AFTER = 2
#: What a plan says: every call is compiled first by default.
COMPILED_FIRST = ("calls run on the generated code, built before the first call runs "
                  f"({COMPILE_ENVIRONMENT}: eager by default under the LLVM back end, so every "
                  "process gives the same bits; background, or N, runs the first calls on the "
                  "host while it is built{looped})")
#: What COMPILED_FIRST adds for a call with loops, (1) when a running loop moves to the
#: compiled code at a step boundary, (2) when only the next call does.
RESUMED = (", loops step by step in Python: a running loop moves to it at the next step "
           "boundary, its state carried over")
RESTARTED = ", loops step by step in Python: calls that start once it is built run on it"
#: What a plan of a dtype the code generator does not write says.
HOST_ONLY = ("{dtype} calls run on the host tier only (each einsum along its path as NumPy/BLAS "
             "pairwise steps in {dtype}, entrywise work in NumPy, loops stepped in Python): "
             "the code generator writes float64, float32, complex128 and complex64 code only, "
             "so nothing is compiled")
#: What every plan says under NUMBA_DISABLE_JIT=1 (Numba's debugging mode).
NOT_JITTED = ("calls run on the host tier only (each einsum along its path as NumPy/BLAS "
              "pairwise steps, entrywise work in NumPy, loops stepped in Python): "
              "NUMBA_DISABLE_JIT=1 runs the shared kernels compiled code calls as Python, so "
              "nothing is compiled")
#: The dtypes generated code computes in (executor/codegen/precision.py, executor/llvm).
COMPILED_DTYPES = ("float64", "float32", "complex128", "complex64")
#: What a plan says when a compiled function of its code is not lowered by the LLVM back end
#: (llvm.Unsupported): the host tier computes the same answer.
HELD = ("calls stay on the host tier, which computes the same answer (each einsum along its "
        "path as NumPy/BLAS pairwise steps, entrywise work in NumPy, loops stepped in "
        "Python): {why}")
#: What a complex call's plan says when its code is generated but not all compiled.
COMPLEX_HELD = ("calls stay on the host: complex code is compiled only as one function built "
                "by the llvm back end, and {why}")


def compiled(dtype: str) -> bool:
    """Whether calls of `dtype` have a compiled tier (not under NUMBA_DISABLE_JIT=1)."""
    from .loading import python_mode

    return dtype in COMPILED_DTYPES and not python_mode()


def host_only(dtype: str) -> str:
    """Why calls of `dtype` have no compiled tier (`compiled` says they have none)."""
    return HOST_ONLY.format(dtype=dtype) if dtype not in COMPILED_DTYPES else NOT_JITTED


#: What a plan under math="fast" says (hilbert.load's `math`: executor.MATHS).
FAST_MATHS = ("maths: fast (math=\"fast\"): compiled exp within 2 ulp and tanh within 4 ulp of "
              "NumPy's, division by a value a loop does not change as multiplication by its "
              "reciprocal; the host tier computes as NumPy does")

