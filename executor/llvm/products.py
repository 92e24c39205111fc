"""Matrix products in LLVM IR, as Numba-built code computes them: `K.gemm` and `K.gemm_beta`
call the product kernel (product_kernel.py: blas.py's `_product_at` written again, register
tiles, hilbert's own products or NumPy's BLAS, case for case, so the same bits);
`K.small_product_into` and `K.small_product_beta` (kernels.py's plain loops) call the
module's small-product function for their dtypes (product_kernel.SmallProduct: loops over
tiles of LANES columns whose sums are vectors). Complex matrices' products, either call, are
complex_products.py's.

A small product sums each entry's terms in order from 0 (or from out·beta where beta is not
0), each term the operands' product in their type, added in float64, and stores the sum in
out's dtype: what kernels.py's loops do (their `total = 0.0`), operation for operation, so
its bits are the Numba path's. The tile changes which entries are summed side by side, never
the order of one entry's terms.

The product kernel is a module of its own (`kernel`), compiled at level 3 once per process
(its 0.2–0.37 s of LLVM were most of lowering the circle classifier), its machine code kept in the
disk cache as every module's is (kept.py), and called by its symbol from the modules that
multiply: written into each of them, it was most of their
compile time (0.45 s of mlp's 0.5 s of LLVM), paid again by each module and each new program,
and compiled at level 1 in a large function's module."""

from __future__ import annotations

from llvmlite import ir

from . import complex_products, product_kernel, shared
from .expressions import ArrayValue
from .product_kernel import SmallProduct
from .runtime import I64, LLVM
from .unsupported import Unsupported

#: The calls this module lowers (each a statement: its result, the out it is given, unused).
CALLS = ("K.gemm", "K.gemm_beta", "K.small_product_into", "K.small_product_beta")


def multiply(lowering, fn: str, args: list[tuple]) -> None:
    """The statement `fn(args)` (one of CALLS; each argument its (value, type)) written by
    `lowering`'s builder."""
    arrays = [value for value, _ in args[:3]]
    if len(args) < 3 or any(not isinstance(a, ArrayValue) or len(a.shape) != 2 for a in arrays):
        raise Unsupported(f"{fn} of other than three matrices")
    beta = args[3] if fn.endswith("_beta") else None
    if any(a.dtype in complex_products.cplx.PARTS for a in arrays):
        complex_products.multiply(lowering, *arrays, beta)
    elif fn.startswith("K.gemm"):
        _gemm(lowering, *arrays, beta)
    else:
        _small(lowering, *arrays, beta)


def _gemm(lowering, a, b, c, beta: tuple | None) -> None:
    """out = a · b (+ beta · out) by the module's product kernel (product_kernel.py), given
    what kernels.gemm_beta gives blas.py's."""
    if not a.dtype == b.dtype == c.dtype or c.dtype not in ("float64", "float32"):
        raise Unsupported("a product of mixed or whole-number dtypes")
    module, builder = lowering.module, lowering.builder
    called = kernel(c.dtype, module)
    real = LLVM[c.dtype]
    factor = (lowering.cast(*beta, c.dtype) if beta is not None else ir.Constant(real, 0.0))
    builder.call(called, [*_words(builder, a, True), *_words(builder, b, False),
                          *_words(builder, c, None), factor])


def kernel(dtype: str, module: ir.Module) -> ir.Function:
    """The product kernel for `dtype` declared in `module`, its machine code made (or loaded
    from the disk cache) first, once per process, from a module of its own, and its symbol
    registered with LLVM for the modules that call it."""
    return shared.declared(dtype, product_kernel.symbol(dtype), product_kernel.kind(dtype),
                           module, _writer(dtype))


def begin(dtype: str) -> None:
    """The product kernel for `dtype` (float64 or float32) begun on a thread of its own before
    any module declares it (`hilbert.load`: it then compiles while the front half runs)."""
    shared.begin(dtype, product_kernel.symbol(dtype), _writer(dtype))


def _writer(dtype: str):
    """What writes the product kernel for `dtype` into a module of its own."""
    return lambda own: product_kernel.function(own, dtype,
                                               lambda t: _small_function(own, t, t, t, t))


def _words(builder: ir.IRBuilder, array, rows: bool | None) -> list:
    """An operand of the product kernel: its address, the sizes it is given (a: both, b: its
    columns, c: none) and its steps in entries."""
    sizes = array.shape if rows else array.shape[1:] if rows is False else []
    return [builder.ptrtoint(array.data, I64), *sizes, *array.strides]


def _small(lowering, a, b, c, beta: tuple | None) -> None:
    """out = a · b (+ beta · out) by the module's small-product function for these dtypes."""
    if any(x.dtype not in ("float64", "float32") for x in (a, b, c)):
        raise Unsupported("a small product of whole numbers")
    beta_type = beta[1] if beta is not None else ""
    if beta is not None and beta_type not in ("float64", "float32", "int64"):
        raise Unsupported(f"a product's beta of type {beta_type}")
    function = _small_function(lowering.module, a.dtype, b.dtype, c.dtype, beta_type)
    builder = lowering.builder
    words = [a.data, *a.shape, *a.strides, b.data, b.shape[1], *b.strides, c.data, *c.strides]
    builder.call(function, words + ([beta[0]] if beta is not None else []))


def _small_function(module: ir.Module, ta: str, tb: str, tc: str, tbeta: str) -> ir.Function:
    """The module's function c = a · b (+ beta · c) for operands of these dtypes (beta's:
    "" for none), written once."""
    name = f"hb_small_product.{ta}.{tb}.{tc}.{tbeta or 'none'}"
    found = module.globals.get(name)
    if found is not None:
        return found
    extra = [LLVM[tbeta]] if tbeta else []
    kind = ir.FunctionType(ir.VoidType(), [LLVM[ta].as_pointer(), *[I64] * 4,
                                           LLVM[tb].as_pointer(), *[I64] * 3,
                                           LLVM[tc].as_pointer(), I64, I64, *extra])
    function = ir.Function(module, kind, name)
    function.linkage = "internal"
    function.attributes.add("nounwind")
    function.attributes.add("noinline")  # (one copy optimised, whatever the call sites)
    SmallProduct(function, (ta, tb, tc, tbeta)).write()
    return function


