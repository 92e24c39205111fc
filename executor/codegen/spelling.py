"""How generated Python spells each function of the op table's lowerings
(compiler/ops/loop_code.py: FUNCTIONS), in each tier.

"compiled" is code Numba compiles: exp, log and tanh are executor/numba/vmath.py's (arithmetic
LLVM vectorises, not calls to libm), maxima and minima K.fmax and K.fmin (LLVM's). "host" is
uncompiled generated code, where NumPy's own functions cost less than a compiled one called
from Python and NumPy float64 scalars already give x ^ y and x / 0 their meaning. "fast" is
compiled code under math="fast": exp and tanh within 4 ulp of NumPy, for less work. A tier
spells what it does not name as "compiled" does. Printing only: render.py writes an Op with
these, loops.py counts the kernels they call.
"""

from __future__ import annotations

#: How a function is written: INFIX `(a + b)`, PREFIX `(-a)`, CALL `K.exp(a)`, and WRAP
#: `(a)` (the value itself).
INFIX, PREFIX, CALL, WRAP = "infix", "prefix", "call", "wrap"

COMPILED: dict[str, tuple[str, str]] = {
    "add": (INFIX, "+"), "sub": (INFIX, "-"), "mul": (INFIX, "*"), "div": (INFIX, "/"),
    "mod": (INFIX, "%"), "floordiv": (INFIX, "//"), "pow": (CALL, "K.power"),
    "fmax": (CALL, "K.fmax"), "fmin": (CALL, "K.fmin"), "neg": (PREFIX, "-"), "real": (WRAP, ""),
    "exp": (CALL, "K.exp"), "log": (CALL, "K.log"), "sqrt": (CALL, "np.sqrt"),
    "tanh": (CALL, "K.tanh"), "sin": (CALL, "np.sin"), "cos": (CALL, "np.cos"),
    "tan": (CALL, "np.tan"), "abs": (CALL, "np.abs"), "floor": (CALL, "np.floor"),
    "erf": (CALL, "K.erf"), "conj": (CALL, "np.conj"), "re": (CALL, "np.real"),
    "im": (CALL, "np.imag"),
}
HOST: dict[str, tuple[str, str]] = {
    "exp": (CALL, "np.exp"), "log": (CALL, "np.log"), "tanh": (CALL, "np.tanh"),
    "fmax": (CALL, "np.maximum"), "fmin": (CALL, "np.minimum"), "div": (CALL, "np.true_divide"),
    "pow": (CALL, "np.power"), "mod": (CALL, "np.mod"), "floordiv": (CALL, "np.floor_divide"),
}
FAST: dict[str, tuple[str, str]] = {"exp": (CALL, "K.exp_fast"), "tanh": (CALL, "K.tanh_fast")}
TIERS: dict[str, dict[str, tuple[str, str]]] = {
    "compiled": COMPILED, "host": {**COMPILED, **HOST}, "fast": {**COMPILED, **FAST}}


def spelled(fn: str, tier: str) -> tuple[str, str]:
    """How `fn` is written in `tier`: (INFIX, "+"), (CALL, "K.exp")…"""
    return TIERS[tier][fn]


def written(fn: str, tier: str, args: list[str]) -> str:
    """`fn` of the printed `args` as `tier` writes it."""
    form, name = spelled(fn, tier)
    if form == INFIX:
        return f"({args[0]} {name} {args[1]})"
    if form == PREFIX:
        return f"({name}{args[0]})"
    if form == WRAP:
        return f"({args[0]})"
    return f"{name}({', '.join(args)})"
