"""Deterministic printer of IR as equations (ANF); names are given by first appearance."""

from __future__ import annotations

from .. import ir


def _number(v: float) -> str:
    return str(int(v)) if float(v).is_integer() and abs(v) < 1e15 else repr(float(v))


def print_ir(root: ir.Node) -> str:
    """The IR reachable from `root` as numbered equations, loop bodies indented.

    >>> from hilbert.grammar.source import nowhere
    >>> p = ir.Param(0, "a", nowhere())
    >>> print(print_ir(ir.Prim("mul", (p, p), (), nowhere())))
    v0 = mul a a
    return v0
    """
    lines: list[str] = []
    counter = [0]
    _scope([root], lines, counter, "", "return")
    return "\n".join(lines)


def _scope(roots: list[ir.Node], lines: list[str], counter: list[int], indent: str, label: str):
    """Print the equations of one scope; `label` heads the line that names the roots."""
    names: dict[int, str] = {}

    def ref(node: ir.Node) -> str:
        match node:
            case ir.Param(name=n) | ir.Local(name=n):
                return n
            case ir.State(index=i):
                return f"s{i}"
            case ir.Const(value=v):
                return _number(v)
        return names[id(node)]

    for node in ir.topological(*roots):
        if isinstance(node, (ir.Param, ir.State, ir.Const, ir.Local)):
            continue
        name = names[id(node)] = f"v{counter[0]}"
        counter[0] += 1
        lines.append(f"{indent}{name} = {_equation(node, ref)}")
        labels = ("until, step:", "adjoints:")
        for scope, head in zip(ir.bodies(node), labels, strict=False):
            _scope(list(scope), lines, counter, indent + "    ", head)
    lines.append(f"{indent}{label} {', '.join(ref(r) for r in roots)}")


def _equation(node: ir.Node, ref) -> str:
    args = " ".join(ref(a) for a in ir.children(node))
    match node:
        case ir.Prim(op=op, attrs=attrs):
            return f"{op}{''.join(f' [{a}]' for a in attrs)} {args}"
        case ir.Einsum(spec=spec):
            return f'einsum "{spec}" {args}'
        case ir.Cond():
            return f"if {args}"
        case ir.Call(key=k):
            return f"call {k} {args}"
        case ir.Project(index=i):
            return f"{args}.{i}"
        case ir.Loop(counter=c):
            counted = f" counted by s{c}" if c is not None else ""
            return f"loop {node.name}{counted} from {args}"
        case ir.LoopGrad(loop=loop, carried=carried):
            return f"backwards {loop.name} carrying {list(carried)} from {args}"
        case ir.Tuple():
            return f"tuple {args}"
        case ir.Item(index=i, count=n):
            return f"item {i} of {n} {args}"
        case ir.Grad():
            return f"grad {args}"
    raise AssertionError(f"cannot print {node!r}")
