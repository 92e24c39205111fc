"""Prints a syntax tree back as .hb source (ASCII or Unicode spelling); parse(print(t)) == t."""

from __future__ import annotations

from .signature import print_shape, print_signature
from .syntax import (
    Assign,
    Axes,
    Binary,
    Binding,
    Call,
    Compare,
    Contract,
    Definition,
    Derivative,
    Expr,
    Frame,
    If,
    Index,
    Law,
    LawModel,
    Let,
    Model,
    Module,
    Name,
    Negate,
    NotIn,
    Number,
    Open,
    Rename,
    Slice,
    String,
    Train,
    Tuple,
    Weight,
    statements,
)

_PRECEDENCE = {"if": 1, "cmp": 2, "+": 3, "-": 3, "*": 4, "/": 4, "mod": 4, "div": 4, "neg": 5,
               "^": 6, "atom": 7}
_UNICODE = {"-": "−", "*": "·", "!=": "≠", "<=": "≤", ">=": "≥", ":=": "≔", "|->": "↦"}


def _spell(op: str, unicode: bool) -> str:
    return _UNICODE.get(op, op) if unicode else op


def _level(e: Expr) -> int:
    match e:
        case If() | Let():
            return 1
        case Compare():
            return 2
        case Binary(op=op):
            return _PRECEDENCE[op]
        case Negate():
            return 5
        case _:
            return 7


def _number(value: float) -> str:
    return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)


def print_expr(e: Expr, unicode: bool = False) -> str:
    """The source text of an expression, with the parentheses its structure needs."""
    match e:
        case Number(value=v):
            return _number(v)
        case String(text=t):
            return f'"{t}"'
        case Name(name=n, module=m):
            return f"{m}.{n}" if m else n
        case Call(name=n, module=m, args=args):
            head = f"{m}.{n}" if m else n
            return f"{head}({', '.join(print_expr(a, unicode) for a in args)})"
        case Binary():
            return _chain(e, unicode)
        case Negate(operand=o):
            inner = _wrap(o, 5, unicode)
            if inner.startswith("-"):  # "--" would begin a comment
                inner = f"({inner})"
            return f"{_spell('-', unicode)}{inner}"
        case Compare(op=op, left=l, right=r):
            return f"{_wrap(l, 3, unicode)} {_spell(op, unicode)} {_wrap(r, 3, unicode)}"
        case If(cond=c, then=t, orelse=o):
            return f"if {print_expr(c, unicode)} then {print_expr(t, unicode)} else {print_expr(o, unicode)}"
        case Let(bindings=bs, body=b):
            return f"let {', '.join(_binding(x, unicode) for x in bs)} in {print_expr(b, unicode)}"
        case Tuple(items=items):
            return f"({', '.join(print_expr(i, unicode) for i in items)})"
        case Index(target=x, index=i):
            return f"{_wrap(x, 7, unicode)}[{print_expr(i, unicode)}]"
        case Slice(target=x, start=a, stop=b):
            return f"{_wrap(x, 7, unicode)}[{print_expr(a, unicode)} : {print_expr(b, unicode)}]"
        case Derivative(of=o, wrt=names, many=many):
            wrt = f"({', '.join(names)})" if many else names[0]
            if unicode:
                return f"∂ {_wrap(o, 6, unicode)} / ∂ {wrt}"
            return f"grad({print_expr(o, unicode)}, {wrt})"
        case Rename(operand=o, pairs=pairs):
            arrow = "→" if unicode else "->"
            shown = [print_shape(Axes((a,), ()), unicode) + f" {arrow} "
                     + print_shape(Axes((b,), ()), unicode) for a, b in pairs]
            return f"rename({print_expr(o, unicode)}, {', '.join(shown)})"
        case Contract(operands=operands, over=over):
            summed = ", ".join(print_shape(Axes((a,), ()), unicode) for a in over)
            return f"contract({', '.join(print_expr(o, unicode) for o in operands)}, over {summed})"
    raise AssertionError(f"unknown syntax node {e!r}")


def _binding(b: Binding, unicode: bool) -> str:
    names = f"({', '.join(b.names)})" if b.pattern else b.names[0]
    if b.axes is not None:
        names += f" : {print_shape(b.axes, unicode)}"
    return f"{names} {_spell(':=', unicode)} {print_expr(b.value, unicode)}"


def _chain(e: Binary, unicode: bool) -> str:
    """A chain of operators of one precedence (`a + b − c`, or `a ^ b ^ c` to the right),
    printed in a loop: the parser lets such a chain be as long as it is written."""
    level = _PRECEDENCE[e.op]
    power = e.op == "^"
    links: list[Binary] = []  # outermost first
    end: Expr = e
    while isinstance(end, Binary) and _PRECEDENCE[end.op] == level:
        links.append(end)
        end = end.right if power else end.left
    if power:  # a ^ (b ^ c) needs no parentheses: ^ groups to the right
        parts = [_wrap(link.left, 7, unicode) for link in links] + [_wrap(end, 5, unicode)]
        return " ^ ".join(parts)
    text = _wrap(end, level, unicode)
    for link in reversed(links):
        text += f" {_spell(link.op, unicode)} {_wrap(link.right, level + 1, unicode)}"
    return text


def _wrap(e: Expr, minimum: int, unicode: bool) -> str:
    """`e`'s text, in parentheses if it binds less tightly than `minimum`."""
    text = print_expr(e, unicode)
    return f"({text})" if _level(e) < minimum else text


def _params(params: tuple[str, ...]) -> str:
    return f"({', '.join(params)})" if params else ""


def print_law(law: Law, unicode: bool = False) -> str:
    """A law's declaration: `law name = lhs = rhs [⇔ l' = r'] [where …]`."""
    text = f"law {law.name} = {print_expr(law.lhs, unicode)} = {print_expr(law.rhs, unicode)}"
    if law.solved is not None:
        iff = "⇔" if unicode else "<=>"
        text += f" {iff} {print_expr(law.solved[0], unicode)} = {print_expr(law.solved[1], unicode)}"
    if law.conditions:
        text += " where " + ", ".join(_condition(c, unicode) for c in law.conditions)
    return text


def _condition(c: NotIn | Compare, unicode: bool) -> str:
    if isinstance(c, NotIn):
        return f"{c.name} ∉ {_wrap(c.term, 3, unicode)}"
    return print_expr(c, unicode)


def _decl(d: Open | Definition | Model | Frame | Law | LawModel, unicode: bool) -> str:
    define = _spell(":=", unicode)
    match d:
        case Open(path=p):
            return "open " + ".".join(p)
        case Definition(kind=kind, name=n, params=ps, body=b, axes=axes):
            keyword, arrow = ("fn", _spell("|->", unicode)) if kind == "fn" else ("def", define)
            signature = print_signature(ps, axes, unicode)
            return f"{keyword} {n}{signature} {arrow} {print_expr(b, unicode)}"
        case Model():
            return _model(d, unicode)
        case Frame():
            from .frames import print_frame  # (with the Frame builder, which needs Lark)

            return print_frame(d, unicode, print_expr)
        case Law():
            return print_law(d, unicode)
        case LawModel(name=n, laws=laws):
            return "\n".join([f"model {n} {{", *(f"  {print_law(x, unicode)}" for x in laws), "}"])
    raise AssertionError(f"unknown declaration {d!r}")


def _model(m: Model, unicode: bool) -> str:
    define = _spell(":=", unicode)
    lines = [f"model {m.name}{_params(m.params)} : {m.base} {{"]
    for w in m.weights:
        dims = ", ".join(_number(x) if isinstance(x, float) else x for x in w.dims)
        lines.append(f"  {w.kind} {w.name} : {w.type_name}[{dims}] from {print_expr(w.init, unicode)}")
    for g in m.groups:
        lines.append(f"  group {g.name} {define} {', '.join(g.members)}")
    for st in m.states:
        lines.append(f"  state {', '.join(st.names)} like {st.group} from {print_expr(st.init, unicode)}")
    for t in m.trains:
        lines.append(f"  def {t.name}{_params(t.params)} {{")
        lines += [f"    {_assign(group, define, unicode)}" for group in statements(t.assigns)]
        lines.append("  }")
    for d in m.methods:
        signature = print_signature(d.params, d.axes, unicode)
        lines.append(f"  def {d.name}{signature} {define} {print_expr(d.body, unicode)}")
    lines.append("}")
    return "\n".join(lines)


def _assign(group: list[Assign], define: str, unicode: bool) -> str:
    names = group[0].name if group[0].count == 1 else f"({', '.join(a.name for a in group)})"
    return f"{names} {define} {print_expr(group[0].value, unicode)}"


def print_module(module: Module, unicode: bool = False) -> str:
    """The whole module as source text, one declaration per line (models span lines)."""
    return "\n".join(_decl(d, unicode) for d in module.decls) + "\n"


__all__ = ["print_expr", "print_law", "print_module", "Assign", "Train", "Weight"]
