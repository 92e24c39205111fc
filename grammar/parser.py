"""Parses .hb text into a syntax tree with spans; every failure is a ParseError (E100)."""

from __future__ import annotations

import math
import unicodedata
from dataclasses import replace

from lark import Token, Tree, v_args
from lark.exceptions import (
    LarkError,
    UnexpectedCharacters,
    UnexpectedEOF,
    UnexpectedInput,
    VisitError,
)

from .axes import AxesBuilder
from .confusables import skeleton, spelled
from .constructs import ConstructBuilder, number_value, token_span
from .errors import ArgumentError, ParseError, warn
from .foreign import FOREIGN_OPERATORS, FOREIGN_WORDS
from .frames import FrameBuilder
from .source import Source, Span
from .syntax import (
    Assign,
    Binary,
    Binding,
    Call,
    Compare,
    Definition,
    Derivative,
    Group,
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
    StateLike,
    String,
    Train,
    Tuple,
    Weight,
)
from .tables import lark_parser

_ASCII = {"−": "-", "·": "*", "≠": "!=", "≤": "<=", "≥": ">="}
_KEYWORDS = {"open", "def", "fn", "model", "weight", "from", "if", "then", "else", "let", "in",
             "grad", "match", "rename"}
#: Words that are keywords only where a model's member starts (`state`, `group`), inside
#: `state … like g`, between two operands (`t mod n`, `t div n`), where a match's arm
#: starts (`when`, `other`), in a Frame's `fill col with …`, or where a law or its condition
#: starts (`law`, `where`), or after a comma among a call's arguments (`over`, as in
#: `contract(q, k, over F)`); elsewhere they are names.
_MEMBER_WORDS = {"state", "like", "group", "mod", "div", "when", "other", "fill", "with", "law",
                 "where", "over"}

#: How deeply expressions may nest. Later passes walk the syntax tree recursively, and this
#: keeps them far from Python's recursion limit; no formula written by hand comes close. A
#: chain of operators of one precedence written one after another (`a + b − c + …`, or
#: `a ^ b ^ c` to the right) is not nesting: every pass walks such a chain in a loop.
MAX_NESTING = 100

#: The precedence group of each binary operator token: a chain continues within a group.
_GROUPS = {"PLUS": "sum", "MINUS": "sum", "TIMES": "product", "DIVIDE": "product",
           "MOD": "product", "DIV": "product", "POW": "power"}


def _doc_above(source: Source, line: int) -> str:
    """The `--` comment block directly above `line`, without the dashes (the source's lines
    are split once, so a file of many definitions costs no more per definition)."""
    lines = source.lines
    block: list[str] = []
    index = line - 2
    while 0 <= index < len(lines) and lines[index].strip().startswith("--"):
        block.append(lines[index].strip()[2:].strip())
        index -= 1
    return "\n".join(reversed(block))


@v_args(meta=True)
class _Builder(AxesBuilder, ConstructBuilder, FrameBuilder):
    """Turns Lark's parse tree into syntax-tree dataclasses; no semantic checks here. Walked
    without recursion: a chain of operators may be thousands long."""

    def __init__(self, source: Source):
        super().__init__()
        self.source = source

    def _span(self, meta) -> Span:
        if getattr(meta, "empty", True):
            return Span(self.source, 1, 1, 1, 1)
        return Span(self.source, meta.line, meta.column, meta.end_line, meta.end_column)

    def _doc(self, span: Span) -> str:
        return _doc_above(self.source, span.line)

    def module(self, meta, decls):
        return Module(tuple(decls), self._span(meta))

    def qualname(self, meta, names):
        return tuple(str(n) for n in names)

    def open_decl(self, meta, children):
        return Open(children[0], self._span(meta))

    def _definition(self, kind, meta, children):
        name, params, result, _arrow, body = children
        span = self._span(meta)
        names, axes = self._declared(params, result)
        return Definition(kind, str(name), names, body, span, self._doc(span), axes)

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
        groups = tuple(m for m in members if isinstance(m, Group))
        states = tuple(m for m in members if isinstance(m, StateLike))
        return Model(str(name), self._plain(params, span), str(base), weights, trains, methods, span,
                     _doc_above(self.source, span.line), groups, states)

    def weight_decl(self, meta, children):
        name, type_name, *rest = children
        *dims, init = rest
        return Weight(str(name), str(type_name), tuple(d for d in dims if d is not None), init,
                      self._span(meta))

    def state_decl(self, meta, children):
        return replace(self.weight_decl(meta, children), kind="state")

    def state_like_decl(self, meta, children):
        *names, group, init = children
        return StateLike(tuple(map(str, names)), str(group), init, self._span(meta))

    def group_decl(self, meta, children):
        name, _define, *members = children
        return Group(str(name), tuple(map(str, members)), self._span(meta))

    def dim_name(self, meta, children):
        return str(children[0])

    def dim_number(self, meta, children):
        return number_value(children[0])

    def train_decl(self, meta, children):
        name, params, *assigns = children
        span = self._span(meta)
        flat = tuple(a for group in assigns for a in (group if isinstance(group, tuple) else (group,)))
        return Train(str(name), self._plain(params, span), flat, span,
                     _doc_above(self.source, span.line))

    def assign_tuple(self, meta, children):
        *names, _define, value = children
        span = self._span(meta)
        return tuple(Assign(str(n), value, span, i, len(names)) for i, n in enumerate(names))

    def assign(self, meta, children):
        name, _define, value = children
        return Assign(str(name), value, self._span(meta))

    def expression(self, meta, children):
        return children[0]

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
        of, *names = (c for c in children if not (isinstance(c, Token) and c.type == "PARTIAL"))
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
        return Number(number_value(children[0]), self._span(meta))

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


def _describe(token: Token | None) -> str:
    if token is None or token.type == "$END":
        return "end of the text"
    text = str(token)
    if text in _KEYWORDS:
        return f"the keyword '{text}'"
    return f"'{text}'"


def _syntax_error(source: Source, err: UnexpectedInput) -> ParseError:
    """E103 for a digit other than 0–9, E104 for a construct .hb does not have, else E100."""
    error = _plain_syntax_error(source, err)
    if isinstance(err, UnexpectedCharacters):
        at = err.pos_in_stream or 0
        char = source.text[at] if at < len(source.text) else ""
        if _foreign_digit(char):
            return ParseError("E103", _digit_message(char), error.span)
        if char in FOREIGN_OPERATORS:
            return ParseError("E104", f".hb has no {char}: {FOREIGN_OPERATORS[char]}", error.span)
        return error
    found = _foreign_construct(source, getattr(err, "token", None))
    if found is None:
        return error
    advice, word = found
    return ParseError("E104", advice, token_span(source, word))


def _foreign_digit(char: str) -> bool:
    """A character Unicode reads as a digit (Arabic-Indic ٣, fullwidth ３, superscript ³…)
    that is not one of the ASCII digits .hb numbers are written with."""
    return bool(char) and not char.isascii() and unicodedata.digit(char, None) is not None


def _digit_message(char: str) -> str:
    return (f"{spelled(char)} is a digit, but .hb reads numbers written with the ASCII "
            f"digits 0–9 only: write {unicodedata.digit(char)}")


def _foreign_construct(source: Source, token: Token | None) -> tuple[str, Token] | None:
    """What to write instead, and the token to point at, where the unexpected token (or the
    one just before it) starts a construct of another language: a FOREIGN_WORDS word, `**`,
    a type annotation `x : T`, or a type with arguments where none may stand (`weight w : T(…)`)."""
    if not isinstance(token, Token) or token.type == "$END" or token.start_pos is None:
        return None
    before = _tokens_before(source.text, token.start_pos)
    for word in (token, *before[-1:]):
        if str(word) in FOREIGN_WORDS:
            return f".hb has no {word}: {FOREIGN_WORDS[str(word)]}", word
    if token.type == "TIMES" and before and before[-1].type == "TIMES" and (
            before[-1].end_pos == token.start_pos):  # `x ** 2`
        stars = Token.new_borrow_pos("POW", "**", before[-1])
        stars.end_column, stars.end_pos = token.end_column, token.end_pos
        return f".hb has no **: {FOREIGN_OPERATORS['**']}", stars
    if token.type == "COLON" and _annotates(before):
        return (".hb has no type annotations such as `x : T`: a value's shape comes from the "
                "arguments; only a definition's parameters and result may name their axes, as "
                "def f(x : B×E) : B ≔ …"), token
    if token.type == "LPAR" and [t.type for t in before[-2:]] == ["COLON", "NAME"]:
        return (f".hb has no type {before[-1]}(…): after `:` a model names its base, "
                "`: Learner` or `: Frame(path)`, a weight its shape, `: Tensor[d1, d2, …]`, and a "
                "parameter its named axes, `x : B×E`"
                ), before[-1]
    return None


def _annotates(before: list[Token]) -> bool:
    """True where a `:` after these tokens would annotate a parameter (`(x :`, `, x :`) or a
    definition (`def f :`, `def f(x) :`)."""
    kinds = [t.type for t in before[-2:]]
    return kinds[-1:] == ["RPAR"] or (len(kinds) == 2 and kinds[1] == "NAME"
                                      and kinds[0] in ("LPAR", "COMMA", "DEF", "FN"))


def _tokens_before(text: str, position: int) -> list[Token]:
    """The tokens of `text` before `position` (lexed again: only when reporting an error)."""
    try:
        return list(lark_parser().lex(text[:position]))
    except LarkError:
        return []


def _plain_syntax_error(source: Source, err: UnexpectedInput) -> ParseError:
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
    "PARTIAL": "∂", "SQUARE": "²", "VBAR": "|", "IFF": "⇔ (or <=>)", "NOTIN": "∉",
}


def _pretty_terminal(name: str) -> str:
    if name in _TERMINAL_NAMES:
        return _TERMINAL_NAMES[name]
    return name.lower() if name.isupper() and name.lower() in _KEYWORDS | _MEMBER_WORDS else name


def parse(text: str, name: str = "<string>") -> Module:
    """Parse .hb text into a Module.

    >>> parse('def dense(a, w) ≔ einsum("np,pq->nq", a, w)').decls[0].name
    'dense'
    """
    return parse_counting(text, name)[0]


def parse_expression(text: str, name: str = "<expression>"):
    """Parse the text of one expression (`x · 1 + 0`, or an equation `2 · x + 3 = 7`).

    >>> parse_expression("x · 1").op
    '*'
    """
    return parse_counting(text, name, "expression")[0]


def parse_counting(text: str, name: str = "<string>", start: str = "start") -> tuple[Module, int]:
    """`parse` (or, with start "expression", `parse_expression`), and how many warnings (W100)
    the parse gave."""
    if not isinstance(text, str):
        raise ArgumentError("E600", f".hb source must be text (a str), but it is a "
                            f"{type(text).__name__}", Span(Source(name, ""), 1, 1, 1, 1))
    text = text.removeprefix("\ufeff")  # a byte-order mark some editors write: not text
    source = Source(name, text)
    try:
        tree = lark_parser().parse(text, start=start)
    except UnexpectedInput as err:
        raise _syntax_error(source, err) from None
    except LarkError as err:  # anything else Lark may raise is still the user's text
        raise ParseError("E100", f"cannot parse this text ({type(err).__name__})",
                         Span(source, 1, 1, 1, 2)) from None
    names = _check_tree(source, tree)
    warned = _warn_look_alikes(source, names)
    try:
        return _Builder(source).transform(tree), warned
    except VisitError as err:  # (a builder's check of the text: a match's arms)
        if isinstance(err.orig_exc, ParseError):
            raise err.orig_exc from None
        raise


def _check_tree(source: Source, tree: Tree) -> list[Token]:
    """E101 where the parse tree nests deeper than MAX_NESTING, E102 for a number too large
    for float64 (it would silently become infinity), E103 for a name that starts with a digit
    other than 0–9. Walked without recursion; returns the tree's NAME tokens."""
    names: list[Token] = []
    pending = [(tree, -1)]  # the module, then its declarations at 0, expressions from 1
    while pending:
        node, depth = pending.pop()
        if depth > MAX_NESTING:
            raise ParseError("E101", f"this expression is nested more than {MAX_NESTING} levels "
                             "deep; give some of its parts names with def",
                             _Builder(source)._span(node.meta))
        for index, child in enumerate(node.children):
            if isinstance(child, Tree):
                pending.append((child, depth if _continues(node, index, child) else depth + 1))
            elif isinstance(child, Token) and child.type == "NUMBER" and number_value(child) == math.inf:
                raise ParseError("E102", f"the number {child} is too large: numbers are float64, "
                                 "whose largest is about 1.8e308", token_span(source, child))
            elif isinstance(child, Token) and child.type == "NAME":
                if _foreign_digit(child[0]):
                    raise ParseError("E103", _digit_message(child[0]), token_span(source, child))
                names.append(child)
    return names


def _continues(parent: Tree, index: int, child: Tree) -> bool:
    """True where `child` is the next link of `parent`'s chain of operators of one precedence:
    its left operand (`a + b − c` groups to the left), or for `^` its right (`a ^ b ^ c`)."""
    if parent.data != "binary" or child.data != "binary":
        return False
    group = _GROUPS[_operator(parent)]
    return group == _GROUPS[_operator(child)] and index == (2 if group == "power" else 0)


def _operator(binary: Tree) -> str:
    """The operator token's type of a `binary` tree (its middle child)."""
    token = binary.children[1]
    assert isinstance(token, Token), binary
    return token.type


def _warn_look_alikes(source: Source, names: list[Token]) -> int:
    """W100 for two different names of this text that look the same on the page (`а`, U+0430
    CYRILLIC SMALL LETTER A, and the Latin `a`): each would silently be its own name. Returns
    how many it gave."""
    warned = 0
    spellings: dict[str, dict[str, Token]] = {}  # skeleton -> each spelling's first token
    for token in sorted(names, key=lambda t: t.start_pos or 0):
        alike = spellings.setdefault(skeleton(token), {})
        if str(token) in alike:
            continue
        for other, seen in alike.items():
            if not (other.isascii() and str(token).isascii()):
                warn("W100", f"the names {spelled(other)} at {seen.line}:{seen.column} and "
                     f"{spelled(str(token))} look alike but are different names; rename one",
                     token_span(source, token))
                warned += 1
        alike[str(token)] = token
    return warned


