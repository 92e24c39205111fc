"""Counter-based draws as LLVM IR (`K.keyed_draws`, executor/numba/kernels.py): uniform,
gaussian and permutation draws into a fresh C-ordered array, entry i from Philox-4x32-10 of
the counter (i, step) under the key, the same integer operations and float formulas as
compiler/ops/draws.py (the host's), so the same bits: a uniform's 53 (float64) or 24
(float32) bits, Box–Muller's C log1p and cos in float64, a permutation's stable order of the
float64 uniforms (a merge sort here, as NumPy's stable argsort orders them)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from llvmlite import ir

from ...compiler.ops.draws import _M0, _M1, _W0, _W1, ROUNDS
from .entries import counted, while_
from .runtime import DOUBLE, I64, LLVM, _declared, allocate, release
from .scalars import least
from .unsupported import Unsupported
from .views import entries

if TYPE_CHECKING:
    from .expressions import ArrayValue, Expressions

_LOW = 0xFFFFFFFF
UNIFORM, GAUSSIAN, PERMUTATION = 0, 1, 2  # (control.py's DRAWS)
_PHILOX, _ORDER = "hilbert.philox", "hilbert.stable_order"
_OF_DOUBLE = ir.FunctionType(DOUBLE, [DOUBLE])  # (floor, C's log1p, cos, sqrt)


def keyed_draws(lowering: Expressions, kind: ir.Value, key: tuple, step: tuple,
                out: ArrayValue) -> ir.Value:
    """The draws of `kind` into `out`; 0, or 1 (nothing drawn: the executor raises E512)
    when the key or step is no whole number 0 … 2⁶⁴ − 1."""
    if not isinstance(kind, ir.Constant) or kind.constant not in (UNIFORM, GAUSSIAN,
                                                                 PERMUTATION):
        raise Unsupported("a draw of a kind not known when it is lowered")
    if not out.ordered or out.dtype not in ("float64", "float32"):
        raise Unsupported(f"a draw into a {out.dtype} array not C-ordered")
    b = lowering.builder
    k, s = (lowering.cast(*value, "float64") for value in (key, step))
    status = b.select(b.and_(_whole64(b, k), _whole64(b, s)), ir.Constant(I64, 0),
                      ir.Constant(I64, 1))
    with b.if_then(b.icmp_signed("==", status, ir.Constant(I64, 0))):
        k, s = b.fptoui(k, I64), b.fptoui(s, I64)
        size = entries(b, out.shape)
        if kind.constant == PERMUTATION:
            _permutation(lowering, k, s, size, out)
        else:
            philox = _philox(b.module)
            lowering._loop("draws", size, lambda i: b.store(
                _entry(b, kind.constant, out.dtype, b.call(philox, [k, s, i])),
                b.gep(out.data, [i])))
    return status


def _whole64(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """kernels._whole64: 0 ≤ x < 2⁶⁴ and x whole (False for NaN)."""
    floor = _declared(b.module, "llvm.floor.f64", _OF_DOUBLE)
    return b.and_(b.and_(b.fcmp_ordered(">=", x, ir.Constant(DOUBLE, 0.0)),
                         b.fcmp_ordered("<", x, ir.Constant(DOUBLE, 2.0 ** 64))),
                  b.fcmp_ordered("==", b.call(floor, [x]), x))


def _unit53(b: ir.IRBuilder, high: ir.Value, low: ir.Value) -> ir.Value:
    """((high >> 5)·2²⁶ + (low >> 6))·2⁻⁵³ (each step exact but the last's rounding)."""
    top = b.uitofp(b.lshr(high, ir.Constant(I64, 5)), DOUBLE)
    bottom = b.uitofp(b.lshr(low, ir.Constant(I64, 6)), DOUBLE)
    joined = b.fadd(b.fmul(top, ir.Constant(DOUBLE, 67108864.0)), bottom)
    return b.fmul(joined, ir.Constant(DOUBLE, 2.0 ** -53))


def _entry(b: ir.IRBuilder, kind: int, dtype: str, words: ir.Value) -> ir.Value:
    """One entry of a uniform or gaussian draw from Philox's four words, in `dtype`."""
    w = [b.extract_value(words, k) for k in range(4)]
    if kind == UNIFORM and dtype == "float32":
        value = b.fmul(b.uitofp(b.lshr(w[0], ir.Constant(I64, 8)), DOUBLE),
                       ir.Constant(DOUBLE, 2.0 ** -24))
    elif kind == UNIFORM:
        value = _unit53(b, w[0], w[1])
    else:
        log1p, cos, sqrt = (_declared(b.module, name, _OF_DOUBLE)
                            for name in ("log1p", "llvm.cos.f64", "llvm.sqrt.f64"))
        logged = b.call(log1p, [b.fneg(_unit53(b, w[0], w[1]))])
        radius = b.call(sqrt, [b.fmul(ir.Constant(DOUBLE, -2.0), logged)])
        angle = b.fmul(ir.Constant(DOUBLE, 2.0 * math.pi), _unit53(b, w[2], w[3]))
        value = b.fmul(radius, b.call(cos, [angle]))
    return value if dtype == "float64" else b.fptrunc(value, LLVM["float32"])


def _philox(module: ir.Module) -> ir.Function:
    """The module's function philox(key, step, i) → its four words (each below 2³²), made
    once: compiler/ops/draws.py's rounds (and kernels.philox's)."""
    found = module.globals.get(_PHILOX)
    if found is not None:
        return found
    words = ir.LiteralStructType([I64] * 4)
    function = ir.Function(module, ir.FunctionType(words, [I64, I64, I64]), _PHILOX)
    function.linkage = "internal"
    b = ir.IRBuilder(function.append_basic_block("entry"))
    key, step, i = function.args
    low, shift = ir.Constant(I64, _LOW), ir.Constant(I64, 32)
    c = [b.and_(i, low), b.lshr(i, shift), b.and_(step, low), b.lshr(step, shift)]
    k0, k1 = b.and_(key, low), b.lshr(key, shift)
    for r in range(ROUNDS):
        if r:
            k0 = b.and_(b.add(k0, ir.Constant(I64, _W0)), low)
            k1 = b.and_(b.add(k1, ir.Constant(I64, _W1)), low)
        p0 = b.mul(ir.Constant(I64, int(_M0)), c[0])
        p1 = b.mul(ir.Constant(I64, int(_M1)), c[2])
        c = [b.xor(b.xor(b.lshr(p1, shift), c[1]), k0), b.and_(p1, low),
             b.xor(b.xor(b.lshr(p0, shift), c[3]), k1), b.and_(p0, low)]
    made = ir.Constant(words, ir.Undefined)
    for k, value in enumerate(c):
        made = b.insert_value(made, value, k)
    b.ret(made)
    return function


def _permutation(lowering: Expressions, key: ir.Value, step: ir.Value, size: ir.Value,
                 out: ArrayValue) -> None:
    """0 … n − 1 in the stable order of n float64 uniform draws, written into `out`."""
    b, philox = lowering.builder, _philox(lowering.builder.module)
    bytes_ = b.mul(size, ir.Constant(I64, 8))
    memory = [allocate(b, bytes_) for _ in range(3)]
    keys, order, spare = (b.bitcast(m, t.as_pointer())
                          for m, t in zip(memory, (DOUBLE, I64, I64), strict=True))

    def drawn(i: ir.Value) -> None:
        words = b.call(philox, [key, step, i])
        b.store(_unit53(b, b.extract_value(words, 0), b.extract_value(words, 1)),
                b.gep(keys, [i]))

    lowering._loop("permutation.keys", size, drawn)
    b.call(_stable_order(b.module), [keys, order, spare, size])
    lowering._loop("permutation.out", size, lambda i: b.store(
        lowering.cast(b.load(b.gep(order, [i])), "int64", out.dtype), b.gep(out.data, [i])))
    for m in memory:
        release(b, m)


def _stable_order(module: ir.Module) -> ir.Function:
    """The module's function stable_order(keys, order, spare, n): order = 0 … n − 1 sorted by
    keys, equal keys in their first order (a bottom-up merge sort through `spare`)."""
    found = module.globals.get(_ORDER)
    if found is not None:
        return found
    kind = ir.FunctionType(ir.VoidType(), [DOUBLE.as_pointer(), I64.as_pointer(),
                                           I64.as_pointer(), I64])
    function = ir.Function(module, kind, _ORDER)
    function.linkage = "internal"
    keys, order, spare, n = function.args
    b = ir.IRBuilder(function.append_basic_block("entry"))
    slots = {name: b.alloca(t, name=name) for name, t in (
        ("i", I64), ("width", I64), ("lo", I64), ("left", I64), ("right", I64), ("k", I64),
        ("from", I64.as_pointer()), ("to", I64.as_pointer()))}
    counted(b, slots["i"], ir.Constant(I64, 0), n, 1,
            lambda i: b.store(i, b.gep(order, [i])), "order.start")
    b.store(order, slots["from"])
    b.store(spare, slots["to"])
    b.store(ir.Constant(I64, 1), slots["width"])
    while_(b, lambda: b.icmp_signed("<", b.load(slots["width"]), n),
           lambda: _merge_pass(b, slots, keys, n), "order.pass")
    # (the sorted order is in `from`: copied into `order` when the passes ended in `spare`)
    with b.if_then(b.icmp_unsigned("!=", b.load(slots["from"]), order)):
        done = b.load(slots["from"])
        counted(b, slots["i"], ir.Constant(I64, 0), n, 1,
                lambda i: b.store(b.load(b.gep(done, [i])), b.gep(order, [i])), "order.copy")
    b.ret_void()
    return function


def _merge_pass(b: ir.IRBuilder, slots: dict, keys: ir.Value, n: ir.Value) -> None:
    """Each pair of neighbouring runs of `width` merged from `from` into `to`; then the
    two swapped and the width doubled."""
    width = b.load(slots["width"])
    source, target = b.load(slots["from"]), b.load(slots["to"])

    def merged(lo: ir.Value) -> None:
        middle, high = least(b, b.add(lo, width), n), least(b, b.add(lo, b.add(width, width)), n)
        b.store(lo, slots["left"])
        b.store(middle, slots["right"])

        def take(k: ir.Value) -> None:
            left, right = b.load(slots["left"]), b.load(slots["right"])
            left_in = b.icmp_signed("<", left, middle)
            right_in = b.icmp_signed("<", right, high)
            safe_left = b.select(left_in, left, lo)  # (read only where it is in its run)
            safe_right = b.select(right_in, right, lo)
            a = b.load(b.gep(source, [safe_left]))
            c = b.load(b.gep(source, [safe_right]))
            in_order = b.fcmp_ordered("<=", b.load(b.gep(keys, [a])),
                                      b.load(b.gep(keys, [c])))
            from_left = b.and_(left_in, b.or_(b.not_(right_in), in_order))
            b.store(b.select(from_left, a, c), b.gep(target, [k]))
            b.store(b.select(from_left, b.add(left, ir.Constant(I64, 1)), left), slots["left"])
            b.store(b.select(from_left, right, b.add(right, ir.Constant(I64, 1))),
                    slots["right"])

        counted(b, slots["k"], lo, high, 1, take, "order.take")

    counted(b, slots["lo"], ir.Constant(I64, 0), n, b.add(width, width), merged, "order.runs")
    b.store(target, slots["from"])
    b.store(source, slots["to"])
    b.store(b.add(width, width), slots["width"])

