"""Prints a syntax tree back as .hb source (ASCII or Unicode spelling); parse(print(t)) == t."""

from __future__ import annotations

from .syntax import (
    Assign,
    Binary,
    Binding,
    Call,
    Compare,
    Definition,
    Derivative,
    Expr,
    If,
    Index,
    Let,
    Model,
    Module,
    Name,
    Negate,
    Number,
    Open,
    Slice,
    String,
    Train,
    Tuple,
    Weight,
)

_PRECEDENCE = {"if": 1, "cmp": 2, "+": 3, "-": 3, "*": 4, "/": 4, "neg": 5, "^": 6, "atom": 7}
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

    def wrap(sub: Expr, minimum: int) -> str:
        text = print_expr(sub, unicode)
        return f"({text})" if _level(sub) < minimum else text

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
        case Binary(op="^", left=l, right=r):
            return f"{wrap(l, 7)} ^ {wrap(r, 5)}"
        case Binary(op=op, left=l, right=r):
            level = _PRECEDENCE[op]
            return f"{wrap(l, level)} {_spell(op, unicode)} {wrap(r, level + 1)}"
        case Negate(operand=o):
            inner = wrap(o, 5)
            if inner.startswith("-"):  # "--" would begin a comment
                inner = f"({inner})"
            return f"{_spell('-', unicode)}{inner}"
        case Compare(op=op, left=l, right=r):
            return f"{wrap(l, 3)} {_spell(op, unicode)} {wrap(r, 3)}"
        case If(cond=c, then=t, orelse=o):
            return f"if {print_expr(c, unicode)} then {print_expr(t, unicode)} else {print_expr(o, unicode)}"
        case Let(bindings=bs, body=b):
            return f"let {', '.join(_binding(x, unicode) for x in bs)} in {print_expr(b, unicode)}"
        case Tuple(items=items):
            return f"({', '.join(print_expr(i, unicode) for i in items)})"
        case Index(target=x, index=i):
            return f"{wrap(x, 7)}[{print_expr(i, unicode)}]"
        case Slice(target=x, start=a, stop=b):
            return f"{wrap(x, 7)}[{print_expr(a, unicode)} : {print_expr(b, unicode)}]"
        case Derivative(of=o, wrt=names, many=many):
            wrt = f"({', '.join(names)})" if many else names[0]
            if unicode:
                return f"∂ {wrap(o, 6)} / ∂ {wrt}"
            return f"grad({print_expr(o, unicode)}, {wrt})"
    raise AssertionError(f"unknown syntax node {e!r}")


def _binding(b: Binding, unicode: bool) -> str:
    names = f"({', '.join(b.names)})" if b.pattern else b.names[0]
    return f"{names} {_spell(':=', unicode)} {print_expr(b.value, unicode)}"


def _params(params: tuple[str, ...]) -> str:
    return f"({', '.join(params)})" if params else ""


def _decl(d: Open | Definition | Model, unicode: bool) -> str:
    define = _spell(":=", unicode)
    match d:
        case Open(path=p):
            return "open " + ".".join(p)
        case Definition(kind=kind, name=n, params=ps, body=b):
            keyword, arrow = ("fn", _spell("|->", unicode)) if kind == "fn" else ("def", define)
            return f"{keyword} {n}{_params(ps)} {arrow} {print_expr(b, unicode)}"
        case Model():
            return _model(d, unicode)
    raise AssertionError(f"unknown declaration {d!r}")


def _model(m: Model, unicode: bool) -> str:
    define = _spell(":=", unicode)
    lines = [f"model {m.name}{_params(m.params)} : {m.base} {{"]
    for w in m.weights:
        dims = ", ".join(_number(x) if isinstance(x, float) else x for x in w.dims)
        lines.append(f"  weight {w.name} : {w.type_name}[{dims}] from {print_expr(w.init, unicode)}")
    for t in m.trains:
        lines.append(f"  def {t.name}{_params(t.params)} {{")
        lines += [f"    {_assign(group, define, unicode)}" for group in _assign_groups(t.assigns)]
        lines.append("  }")
    for d in m.methods:
        lines.append(f"  def {d.name}{_params(d.params)} {define} {print_expr(d.body, unicode)}")
    lines.append("}")
    return "\n".join(lines)


def _assign_groups(assigns: tuple[Assign, ...]) -> list[list[Assign]]:
    """The assignments as written: a tuple assignment's names together."""
    groups: list[list[Assign]] = []
    for a in assigns:
        if a.index > 0:
            groups[-1].append(a)
        else:
            groups.append([a])
    return groups


def _assign(group: list[Assign], define: str, unicode: bool) -> str:
    names = group[0].name if group[0].count == 1 else f"({', '.join(a.name for a in group)})"
    return f"{names} {define} {print_expr(group[0].value, unicode)}"


def print_module(module: Module, unicode: bool = False) -> str:
    """The whole module as source text, one declaration per line (models span lines)."""
    return "\n".join(_decl(d, unicode) for d in module.decls) + "\n"


__all__ = ["print_expr", "print_module", "Assign", "Train", "Weight"]
