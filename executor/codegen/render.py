"""The loop IR (loops.py) printed as Python source: printing only, nothing decided here."""

from __future__ import annotations

from . import precision, spelling
from .loops import (
    Assign,
    Break,
    Call,
    Compare,
    Delete,
    Do,
    Expr,
    Fmt,
    For,
    If,
    Num,
    Op,
    Pick,
    Raise,
    Return,
    Select,
    Stmt,
    Store,
    Sub,
    Update,
    Var,
    View,
    While,
)

INDENT = "    "


def expr(e: Expr) -> str:
    match e:
        case Var(name=name):
            return name
        case Num(text=text, dtype=dtype):
            return precision.literal(text, dtype)
        case Sub(base=base, index=index):
            return f"{expr(base)}[{', '.join(expr(i) for i in index)}]"
        case View(base=base, form=form, args=args):
            return form.format(expr(base), *(expr(a) for a in args))
        case Pick(a=a, test=test, b=b):
            return f"{expr(a)} if {expr(test)} else {expr(b)}"
        case Call(fn=fn, args=args):
            return f"{fn}({', '.join(expr(a) for a in args)})"
        case Fmt(template=template, args=args):
            return template.format(*(expr(a) for a in args))
        case Op(fn=fn, args=args, tier=tier):
            return spelling.written(fn, tier, [expr(a) for a in args])
        case Compare(op=op, left=left, right=right):
            return f"{expr(left)} {op} {expr(right)}"
        case Select(test=test, a=a, b=b):
            return f"({expr(a)} if {expr(test)} else {expr(b)})"
    raise AssertionError(f"code generation: cannot print {e!r}")


def lines(body: list, depth: int = 1) -> list[str]:
    """`body` as lines of Python at indentation `depth`."""
    out: list[str] = []
    for stmt in body:
        _statement(stmt, depth, out)
    return out


def _statement(stmt: Stmt, depth: int, out: list[str]) -> None:
    pad = INDENT * depth
    match stmt:
        case Assign(targets=targets, values=values):
            out.append(f"{pad}{', '.join(targets)} = {', '.join(expr(v) for v in values)}")
        case Update(name=name, op=op, value=value):
            out.append(f"{pad}{name} {op} {expr(value)}")
        case Store(target=target, value=value, add=add):
            out.append(f"{pad}{expr(target)} {'+=' if add else '='} {expr(value)}")
        case Do(expr=e):
            out.append(pad + expr(e))
        case For(index=index, size=size, body=body, parallel=parallel):
            out.append(f"{pad}for {index} in {'prange' if parallel else 'range'}({expr(size)}):")
            out.extend(lines(body, depth + 1))
        case If(test=test, body=body, orelse=orelse):
            out.append(f"{pad}if {expr(test)}:")
            out.extend(lines(body, depth + 1))
            if orelse:
                out.append(f"{pad}else:")
                out.extend(lines(orelse, depth + 1))
        case While(body=body):
            out.append(f"{pad}while True:")
            out.extend(lines(body, depth + 1))
        case Break():
            out.append(f"{pad}break")
        case Raise(error=error):
            out.append(f"{pad}raise {expr(error)}")
        case Return(value=value):
            out.append(f"{pad}return {expr(value)}")
        case Delete(names=names):
            out.append(f"{pad}del {', '.join(names)}")
        case _:
            raise AssertionError(f"code generation: cannot print {stmt!r}")
