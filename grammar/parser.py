"""Parses .hb text into a syntax tree with spans; every failure is a ParseError (E100)."""

from __future__ import annotations

import math
from functools import lru_cache
from importlib import resources

from lark import Lark, Token, Transformer, Tree, v_args
from lark.exceptions import LarkError, UnexpectedCharacters, UnexpectedEOF, UnexpectedInput

from .errors import ArgumentError, ParseError
from .source import Source, Span
from .syntax import (
    Assign,
    Binary,
    Binding,
    Call,
    Compare,
    Definition,
    Derivative,
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

_ASCII = {"−": "-", "·": "*", "≠": "!=", "≤": "<=", "≥": ">="}
_KEYWORDS = {"open", "def", "fn", "model", "weight", "from", "if", "then", "else", "let", "in"}

#: How deeply expressions may nest. Later passes walk the syntax tree recursively, and this
#: keeps them far from Python's recursion limit; no formula written by hand comes close.
MAX_NESTING = 100


@lru_cache(maxsize=1)
def _lark() -> Lark:
    grammar = resources.files("hilbert.grammar").joinpath("hb.lark").read_text(encoding="utf-8")
    return Lark(grammar, parser="lalr", propagate_positions=True, maybe_placeholders=True)


def _doc_above(source: Source, line: int) -> str:
    """The `--` comment block directly above `line`, without the dashes."""
    lines = source.text.split("\n")
    block: list[str] = []
    index = line - 2
    while 0 <= index < len(lines) and lines[index].strip().startswith("--"):
        block.append(lines[index].strip()[2:].strip())
        index -= 1
    return "\n".join(reversed(block))


@v_args(meta=True)
class _Builder(Transformer):
    """Turns Lark's parse tree into syntax-tree dataclasses; no semantic checks here."""

    def __init__(self, source: Source):
        super().__init__()
        self.source = source

    def _span(self, meta) -> Span:
        if getattr(meta, "empty", True):
            return Span(self.source, 1, 1, 1, 1)
        return Span(self.source, meta.line, meta.column, meta.end_line, meta.end_column)

    def module(self, meta, decls):
        return Module(tuple(decls), self._span(meta))

    def qualname(self, meta, names):
        return tuple(str(n) for n in names)

    def params(self, meta, names):
        return tuple(str(n) for n in names if n is not None)

    def open_decl(self, meta, children):
        return Open(children[0], self._span(meta))

    def _definition(self, kind, meta, children):
        name, params, _arrow, body = children
        span = self._span(meta)
        return Definition(kind, str(name), params or (), body, span, _doc_above(self.source, span.line))

    def def_decl(self, meta, children):
        return self._definition("def", meta, children)

    def fn_decl(self, meta, children):
        return self._definition("fn", meta, children)

    def method_decl(self, meta, children):
        return self._definition("method", meta, children)

    def model_decl(self, meta, children):
        name, params, base, *members = children
        span = self._span(meta)
        weights = tuple(m for m in members if isinstance(m, Weight))
        trains = tuple(m for m in members if isinstance(m, Train))
        methods = tuple(m for m in members if isinstance(m, Definition))
        return Model(str(name), params or (), str(base), weights, trains, methods, span,
                     _doc_above(self.source, span.line))

    def weight_decl(self, meta, children):
        name, type_name, *rest = children
        *dims, init = rest
        return Weight(str(name), str(type_name), tuple(d for d in dims if d is not None), init,
                      self._span(meta))

    def dim_name(self, meta, children):
        return str(children[0])

    def dim_number(self, meta, children):
        return _number_value(children[0])

    def train_decl(self, meta, children):
        name, params, *assigns = children
        span = self._span(meta)
        flat = tuple(a for group in assigns for a in (group if isinstance(group, tuple) else (group,)))
        return Train(str(name), params or (), flat, span, _doc_above(self.source, span.line))

    def assign_tuple(self, meta, children):
        *names, _define, value = children
        span = self._span(meta)
        return tuple(Assign(str(n), value, span, i, len(names)) for i, n in enumerate(names))

    def assign(self, meta, children):
        name, _define, value = children
        return Assign(str(name), value, self._span(meta))

    def if_expr(self, meta, children):
        return If(*children, self._span(meta))

    def let_expr(self, meta, children):
        *bindings, body = children
        return Let(tuple(bindings), body, self._span(meta))

    def bind_name(self, meta, children):
        name, _define, value = children
        return Binding((str(name),), False, value, self._span(meta))

    def bind_tuple(self, meta, children):
        *names, _define, value = children
        return Binding(tuple(str(n) for n in names), True, value, self._span(meta))

    def tuple_expr(self, meta, children):
        return Tuple(tuple(children), self._span(meta))

    def index(self, meta, children):
        target, index = children
        return Index(target, index, self._span(meta))

    def slice(self, meta, children):
        target, start, stop = children
        return Slice(target, start, stop, self._span(meta))

    def derivative(self, meta, children):
        _partial, of, _again, *names = children
        return Derivative(of, tuple(str(n) for n in names), len(names) > 1, self._span(meta))

    def compare(self, meta, children):
        left, op, right = children
        return Compare(_ASCII.get(str(op), str(op)), left, right, self._span(meta))

    def binary(self, meta, children):
        left, op, right = children
        return Binary(_ASCII.get(str(op), str(op)), left, right, self._span(meta))

    def negate(self, meta, children):
        return Negate(children[1], self._span(meta))

    def square(self, meta, children):
        span = self._span(meta)
        return Binary("^", children[0], Number(2.0, span), span)

    def number(self, meta, children):
        return Number(_number_value(children[0]), self._span(meta))

    def string(self, meta, children):
        return String(str(children[0])[1:-1], self._span(meta))

    def name(self, meta, children):
        return Name(str(children[0]), None, self._span(meta))

    def qualified_name(self, meta, children):
        return Name(str(children[1]), str(children[0]), self._span(meta))

    def call(self, meta, children):
        name, *args = children
        return Call(str(name), None, tuple(a for a in args if a is not None), self._span(meta))

    def qualified_call(self, meta, children):
        module, name, *args = children
        return Call(str(name), str(module), tuple(a for a in args if a is not None), self._span(meta))


def _number_value(token: Token) -> float:
    return float(str(token).replace("−", "-"))


def _describe(token: Token | None) -> str:
    if token is None or token.type == "$END":
        return "end of the text"
    text = str(token)
    if text in _KEYWORDS:
        return f"the keyword '{text}'"
    return f"'{text}'"


def _syntax_error(source: Source, err: UnexpectedInput) -> ParseError:
    line = getattr(err, "line", None) or 1
    column = getattr(err, "column", None) or 1
    token = getattr(err, "token", None)
    if isinstance(token, Token) and token.type == "$END" and token.end_line:
        line, column = token.end_line, token.end_column  # Lark puts the end on the last token
    if line < 1:  # Lark reports end of input as line -1
        lines = source.text.split("\n")  # Lark counts lines by \n alone
        line, column = len(lines), len(lines[-1]) + 1
    span = Span(source, line, column, line, column + 1)
    if isinstance(err, UnexpectedCharacters):
        at = err.pos_in_stream or 0
        char = source.text[at] if at < len(source.text) else "?"
        shown = char if char.isprintable() else f"U+{ord(char):04X}"
        message = f"unexpected character '{shown}'"
    elif isinstance(err, UnexpectedEOF):
        message = "the text ends in the middle of a declaration"
    else:
        message = f"unexpected {_describe(getattr(err, 'token', None))}"
    expected = sorted(getattr(err, "expected", None) or getattr(err, "allowed", None) or ())
    if expected and len(expected) <= 8:
        message += f"; expected one of: {', '.join(_pretty_terminal(e) for e in expected)}"
    return ParseError("E100", message, span)


_TERMINAL_NAMES = {
    "DEFINE": "≔ (or :=)", "MAPSTO": "↦ (or |->)", "NAME": "a name", "NUMBER": "a number",
    "STRING": "a string", "LPAR": "(", "RPAR": ")", "COMMA": ",", "LBRACE": "{", "RBRACE": "}",
    "LSQB": "[", "RSQB": "]", "COLON": ":", "DOT": ".", "$END": "the end of the text",
    "PLUS": "+", "MINUS": "−", "TIMES": "·", "DIVIDE": "/", "POW": "^", "CMP": "a comparison",
    "PARTIAL": "∂", "SQUARE": "²",
}


def _pretty_terminal(name: str) -> str:
    if name in _TERMINAL_NAMES:
        return _TERMINAL_NAMES[name]
    return name.lower() if name.isupper() and name.lower() in _KEYWORDS else name


def parse(text: str, name: str = "<string>") -> Module:
    """Parse .hb text into a Module.

    >>> parse('def dense(a, w) ≔ einsum("np,pq->nq", a, w)').decls[0].name
    'dense'
    """
    if not isinstance(text, str):
        raise ArgumentError("E600", f".hb source must be text (a str), but it is a "
                            f"{type(text).__name__}", Span(Source(name, ""), 1, 1, 1, 1))
    source = Source(name, text)
    try:
        tree = _lark().parse(text)
    except UnexpectedInput as err:
        raise _syntax_error(source, err) from None
    except LarkError as err:  # anything else Lark may raise is still the user's text
        raise ParseError("E100", f"cannot parse this text ({type(err).__name__})",
                         Span(source, 1, 1, 1, 2)) from None
    _check_tree(source, tree)
    return _Builder(source).transform(tree)


def _check_tree(source: Source, tree: Tree) -> None:
    """E101 where the parse tree is deeper than MAX_NESTING, E102 for a number too large for
    float64 (it would silently become infinity). Walked without recursion."""
    pending = [(tree, -1)]  # the module, then its declarations at 0, expressions from 1
    while pending:
        node, depth = pending.pop()
        if depth > MAX_NESTING:
            raise ParseError("E101", f"this expression is nested more than {MAX_NESTING} levels "
                             "deep; give some of its parts names with def",
                             _Builder(source)._span(node.meta))
        for child in node.children:
            if isinstance(child, Tree):
                pending.append((child, depth + 1))
            elif isinstance(child, Token) and child.type == "NUMBER" and _number_value(child) == math.inf:
                raise ParseError("E102", f"the number {child} is too large: numbers are float64, "
                                 "whose largest is about 1.8e308", _token_span(source, child))


def _token_span(source: Source, token: Token) -> Span:
    return Span(source, token.line or 1, token.column or 1, token.end_line or 1,
                token.end_column or 1)
