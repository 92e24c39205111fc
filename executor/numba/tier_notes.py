"""What the plans of tiered programs say (executor/numba/tiers.py): which tier calls run on, when
the code is built, and the maths under math="fast"."""

from __future__ import annotations

#: Environment variable saying when a loop-free call's generated code is built (compiled and
#: swapped in): "eager" (at the first call, before it runs), "never" (calls stay on the host),
#: or N (in a background thread from the N-th call of a signature). See COMPILE_AFTER.
COMPILE_ENVIRONMENT = "HILBERT_COMPILE"
#: The call of a signature from which its code is built in the background, by default: a
#: signature called once is never compiled (a call made once costs the host's milliseconds,
#: not Numba's seconds); one called again is compiled while the calls go on on the host.
COMPILE_AFTER = 2
#: What a loop-free program's plan says before its code is built.
TIERED = ("the first calls run on the host (each einsum along its path as NumPy/BLAS pairwise "
          "steps, entrywise work in NumPy) until the generated code is built and swapped in "
          f"({COMPILE_ENVIRONMENT} says when: by default in a background thread from call "
          f"{COMPILE_AFTER})")
#: What a program with loops says before its code is built, (1) when a running loop moves to
#: the compiled code at a step boundary, (2) when only the next call does.
STEPPED = ("the first calls run on the host (loops step by step in Python, each step's work in "
           "NumPy) while the generated code is built in the background "
           f"({COMPILE_ENVIRONMENT} says when: by default from the first call); ")
RESUMED = "a running loop moves to it at the next step boundary, its state carried over"
RESTARTED = "calls that start once it is built run on it"
#: What a plan says under the LLVM back end, where every call is compiled first by default.
COMPILED_FIRST = ("calls run on the generated code, built before the first call runs "
                  f"({COMPILE_ENVIRONMENT}: eager by default under the LLVM back end, so every "
                  "process gives the same bits; background, or N, runs the first calls on the "
                  "host while it is built)")
#: What a plan of a dtype the code generator does not write says.
HOST_ONLY = ("{dtype} calls run on the host tier only (each einsum along its path as NumPy/BLAS "
             "pairwise steps in {dtype}, entrywise work in NumPy, loops stepped in Python): "
             "the code generator writes float64 and float32 code only (complex code only "
             "under HILBERT_CODEGEN=llvm), so nothing is compiled")
#: The dtypes generated code computes in (executor/codegen/precision.py), and those it
#: computes in only where the LLVM back end builds it (Numba builds no complex code).
COMPILED_DTYPES = ("float64", "float32")
LLVM_DTYPES = ("complex128", "complex64")
#: What a complex call's plan says when its code is generated but not all built by llvm.
COMPLEX_HELD = ("calls stay on the host: complex code is built by the llvm back end only, "
                "and {why}")


def compiled(dtype: str) -> bool:
    """Whether calls of `dtype` have a compiled tier (complex ones: under HILBERT_CODEGEN=llvm,
    executor/llvm/complex.py)."""
    from .. import llvm

    return dtype in COMPILED_DTYPES or dtype in LLVM_DTYPES and llvm.wanted()


#: What a plan under math="fast" says (hilbert.load's `math`: executor.MATHS).
FAST_MATHS = ("maths: fast (math=\"fast\"): compiled exp within 2 ulp and tanh within 4 ulp of "
              "NumPy's, division by a value a loop does not change as multiplication by its "
              "reciprocal; the host tier computes as NumPy does")

