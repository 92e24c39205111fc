"""Views of arrays without copies (the loop IR's View: `{0}.T`, `{0}.transpose((…))`,
`{0}.reshape(…)`, `{0}[a:b]`, `{0}[:, a:b]`, `{0}[None, :]`): a new ArrayValue over the same
memory, with its own shape and strides, as NumPy's views are."""

from __future__ import annotations

import ast
from dataclasses import replace

from llvmlite import ir

from .runtime import I64
from .unsupported import Unsupported


def view(lowering, base, form: str, args: list[tuple]):
    """The ArrayValue of the view `form` of `base` (an ArrayValue), `args` its fields' values
    ({1}, {2}, …: each a (value, type))."""
    if form == "{0}.T":
        return replace(base, shape=base.shape[::-1], strides=base.strides[::-1],
                       ordered=False, fresh=False, param=-1)
    if form.startswith("{0}.transpose(("):
        order = [int(p) for p in form[len("{0}.transpose(("):-2].split(",") if p.strip()]
        return replace(base, shape=[base.shape[p] for p in order],
                       strides=[base.strides[p] for p in order], ordered=False, fresh=False,
                       param=-1)
    if form.startswith("{0}.reshape("):
        return _reshaped(lowering, base, form, args)
    if form.startswith("{0}[") and form.endswith("]"):
        return _sliced(lowering, base, [e.strip() for e in form[4:-1].split(",") if e.strip()],
                       args)
    raise Unsupported(f"the view {form!r}")


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
    return replace(base, shape=values, strides=lowering.c_strides(values), fresh=False,
                   param=-1)


def _sliced(lowering, base, entries: list[str], args: list[tuple]):
    """`base[entries]`: each entry `:` (the axis), `{i}:{j}` (entries i … j − 1 of it) or
    `None` (a new axis of length 1)."""
    b = lowering.builder
    shape, strides, offset, axis = [], [], ir.Constant(I64, 0), 0
    for entry in entries:
        if entry == "None":
            shape.append(ir.Constant(I64, 1))
            strides.append(ir.Constant(I64, 0))
            continue
        if axis >= len(base.shape):
            raise Unsupported(f"the slice {entries}")
        bounds = entry.split(":")
        if entry == ":":
            shape.append(base.shape[axis])
        elif len(bounds) == 2 and all(_field(p) for p in bounds):
            start, stop = (lowering.cast(*args[_field(p) - 1], "int64") for p in bounds)
            offset = b.add(offset, b.mul(start, base.strides[axis]))
            shape.append(b.sub(stop, start))
        else:
            raise Unsupported(f"the slice {entry!r}")
        strides.append(base.strides[axis])
        axis += 1
    shape += base.shape[axis:]
    strides += base.strides[axis:]
    ordered = base.ordered and all(e in (":", "None") for e in entries[1:])
    return replace(base, data=b.gep(base.data, [offset]), shape=shape, strides=strides,
                   ordered=ordered, fresh=False, param=-1)


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
