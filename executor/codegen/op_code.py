"""The op table's lowerings (compiler/ops/loop_code.py) as loop IR: each function an Op, each
comparison a Compare, each choice a Select, each constant a Num, all typed by the dtype the op
computes in; nothing is text (spelling.py says how render.py prints them)."""

from __future__ import annotations

from ...compiler.ops import loop_code as lc
from .loops import Compare, Expr, Op, Select, number


def lowered(form: lc.Form, args: tuple[Expr, ...], dtype: str, tier: str) -> Expr:
    """`form` over `args` (an op's arguments, read) in code of `dtype`, spelled as `tier`
    spells it: its constants numbers of `dtype`, its ops typed `dtype` until loop_types.typed gives
    each the dtype its operands make it compute in (a counted value's op in float32 code
    computes in float64)."""
    match form:
        case lc.Arg(position=position):
            return args[position]
        case lc.Const(value=value):
            return number(value, dtype)
        case lc.Apply(fn=fn, args=parts):
            return Op(fn, tuple(lowered(p, args, dtype, tier) for p in parts), dtype, tier)
        case lc.Select(test=test, then=then, otherwise=otherwise):
            compared = Compare(test.op, lowered(test.left, args, dtype, tier),
                               lowered(test.right, args, dtype, tier), dtype)
            return Select(compared, lowered(then, args, dtype, tier),
                          lowered(otherwise, args, dtype, tier), dtype)
    raise AssertionError(f"code generation: no loop IR for the lowering {form!r}")


def tier(em) -> str:
    """The tier the emitter `em` writes: host (uncompiled), fast (math="fast") or compiled."""
    return "host" if em.host else "fast" if em.decided.fast else "compiled"
