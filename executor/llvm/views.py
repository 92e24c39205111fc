"""Views of arrays without copies (the loop IR's View: `{0}.T`, `{0}.transpose((…))`,
`{0}.reshape(…)`, `{0}[a:b]`, `{0}[:, a:b]`, `{0}[None, :]`; a Sub's `x[j, :]`, `x[j]`): a new
ArrayValue over the same memory, with its own shape and strides, as NumPy's views are."""

from __future__ import annotations

import ast
from dataclasses import replace

from llvmlite import ir

from .runtime import I64
from .unsupported import Unsupported


def c_strides(b: ir.IRBuilder, sizes: list) -> list:
    """The strides, in entries, of a C-ordered array of `sizes` (a scalar's: [1])."""
    strides = [ir.Constant(I64, 1)]
    for size in reversed(sizes[1:]):
        strides.insert(0, b.mul(strides[0], size))
    return strides


def entries(b: ir.IRBuilder, shape: list) -> ir.Value:
    """How many entries an array of `shape` holds (1 for a scalar's)."""
    count = ir.Constant(I64, 1)
    for size in shape:
        count = b.mul(count, size)
    return count


def view(lowering, base, form: str, args: list[tuple]):
    """The ArrayValue of the view `form` of `base` (an ArrayValue), `args` its fields' values
    ({1}, {2}, …: each a (value, type))."""
    if form == "{0}.T":
        return replace(base, shape=base.shape[::-1], strides=base.strides[::-1],
                       ordered=False, fresh=False, param=-1)
    if form.startswith("{0}.transpose(("):
        return transposed(base, [int(p) for p in form[len("{0}.transpose(("):-2].split(",")
                                 if p.strip()])
    if form.startswith("{0}.reshape("):
        return _reshaped(lowering, base, form, args)
    if form.startswith("{0}[") and form.endswith("]"):
        return _sliced(lowering, base, [e.strip() for e in form[4:-1].split(",") if e.strip()],
                       args)
    raise Unsupported(f"the view {form!r}")


def transposed(base, order: list[int]):
    """`base` with its axes in `order` (K.transposed's, a transpose's)."""
    return replace(base, shape=[base.shape[p] for p in order],
                   strides=[base.strides[p] for p in order], ordered=False, fresh=False,
                   param=-1)


def _reshaped(lowering, base, form: str, args: list[tuple]):
    """A reshape of a C-ordered array (of another one NumPy copies: not lowered here)."""
    if not base.ordered:
        raise Unsupported("a reshape of a strided view")
    pairs = args
    if form == "{0}.reshape({1})":  # (its shape one tuple: loops.sizes)
        if not isinstance(args[0][1], tuple):
            raise Unsupported(f"the reshape {form!r}")
        pairs = args[0][0]
    values = [lowering.cast(v, t, "int64") for v, t in pairs]
    return replace(base, shape=values, strides=c_strides(lowering.builder, values), fresh=False,
                   param=-1)


def _sliced(lowering, base, entries: list[str], args: list[tuple]):
    """`base[entries]`: each entry `:` (the axis), `{i}:{j}` (entries i … j − 1 of it) or
    `None` (a new axis of length 1)."""
    parts: list = []
    for entry in entries:
        bounds = entry.split(":")
        if entry in ("None", ":"):
            parts.append(NEW if entry == "None" else ALL)
        elif len(bounds) == 2 and all(_field(p) for p in bounds):
            parts.append(tuple(lowering.cast(*args[_field(p) - 1], "int64") for p in bounds))
        else:
            raise Unsupported(f"the slice {entry!r}")
    if len(parts) - parts.count(NEW) > len(base.shape):
        raise Unsupported(f"the slice {entries}")
    return part(lowering, base, parts)


#: An entry of `part`: the whole axis, and a new axis of length 1.
ALL, NEW = ":", "None"


def part(lowering, base, entries: list):
    """`base[entries]` as NumPy's basic indexing views it: each entry ALL (the axis), a pair
    (start, stop) of int64 values (entries start … stop − 1 of it), NEW (a new axis of length
    1) or an int64 value (that position: the axis dropped); the axes after them whole."""
    b = lowering.builder
    shape, strides, offset, axis = [], [], ir.Constant(I64, 0), 0
    kept, ordered = False, base.ordered  # (C-ordered while only the first axis kept is cut)
    for entry in entries:
        if isinstance(entry, str) and entry == NEW:
            shape.append(ir.Constant(I64, 1))
            strides.append(ir.Constant(I64, 0))
            continue
        size, stride = base.shape[axis], base.strides[axis]
        if isinstance(entry, str):  # (ALL)
            shape.append(size)
        elif isinstance(entry, tuple):
            offset = b.add(offset, b.mul(entry[0], stride))
            shape.append(b.sub(entry[1], entry[0]))
            ordered = ordered and not kept
        else:
            offset = b.add(offset, b.mul(entry, stride))
            ordered = ordered and not kept
            axis += 1
            continue
        strides.append(stride)
        kept, axis = True, axis + 1
    return replace(base, data=b.gep(base.data, [offset]), shape=shape + base.shape[axis:],
                   strides=strides + base.strides[axis:], ordered=ordered, fresh=False,
                   param=-1)


def _field(text: str) -> int:
    """k for the field `{k}` (0 for anything else)."""
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        return 0
    if isinstance(node, ast.Set) and len(node.elts) == 1 and \
            isinstance(node.elts[0], ast.Constant) and isinstance(node.elts[0].value, int):
        return node.elts[0].value
    return 0
