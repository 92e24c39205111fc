"""Builders of the syntax tree's constructs that stand for others or stand apart: `match` (the
ifs it means) and laws (`law name = lhs = rhs`, law-only models, `where` conditions); a mixin
of grammar/parser.py's builder."""

from __future__ import annotations

from dataclasses import replace

from lark import Token, v_args
from lark.visitors import Transformer_NonRecursive

from .errors import ParseError
from .source import Source, Span
from .syntax import Compare, If, Law, LawModel, NotIn, Number


def number_value(token: Token) -> float:
    return float(str(token).replace("−", "-"))


def token_span(source: Source, token: Token) -> Span:
    return Span(source, token.line or 1, token.column or 1, token.end_line or 1,
                token.end_column or 1)


@v_args(meta=True)
class ConstructBuilder(Transformer_NonRecursive):
    """The parser's builder methods for match and laws (its `_span` and `source` are the
    builder's)."""

    source: Source

    def _span(self, meta) -> Span:
        raise NotImplementedError

    def match_expr(self, meta, children):
        """`match x { when 1 ↦ a  when 2 | 3 ↦ b  other ↦ c }` as the ifs it means: `if x = 1
        then a else if x = 2 then b else if x = 3 then b else c` (each test spanning its
        literal, each if its arm), so it is checked, compiled and differentiated as they are."""
        subject, *arms = children
        span = self._span(meta)
        *whens, last = arms
        misplaced = [arm for arm in whens if arm[0] is None]
        if misplaced or last[0] is not None:
            raise ParseError("E100", "a match ends with one `other ↦ …` arm, after its `when` "
                             "arms: the value when no literal matches",
                             (misplaced or [last])[0][2])
        value = last[1]
        for patterns, then, arm_span in reversed(whens):
            for pattern in reversed(patterns):
                test = Compare("=", subject, pattern, pattern.span)
                value = If(test, then, value, arm_span)
        return replace(value, span=span) if isinstance(value, If) else value

    def when_arm(self, meta, children):
        *patterns, _mapsto, value = children
        return (tuple(patterns), value, self._span(meta))

    def other_arm(self, meta, children):
        _mapsto, value = children
        return (None, value, self._span(meta))

    def negative_number(self, meta, children):
        return Number(-number_value(children[1]), self._span(meta))

    def law_model(self, meta, children):
        name, *laws = children
        return LawModel(str(name), tuple(laws), self._span(meta))

    def term_law(self, meta, children):
        name, first, lhs, second, rhs, conditions = children
        self._equals(first, second)
        return Law(str(name), lhs, rhs, None, conditions or (), self._span(meta))

    def equation_law(self, meta, children):
        name, first, lhs, second, rhs, _iff, solved_lhs, third, solved_rhs, conditions = children
        self._equals(first, second, third)
        return Law(str(name), lhs, rhs, (solved_lhs, solved_rhs), conditions or (),
                   self._span(meta))

    def _equals(self, *tokens: Token) -> None:
        """E100 unless each of a law's separators is `=` (`law n = lhs = rhs`)."""
        for token in tokens:
            if str(token) != "=":
                raise ParseError("E100", "a law is written law name = lhs = rhs, with = "
                                 f"between its parts, not {token}",
                                 token_span(self.source, token))

    def conditions(self, meta, children):
        return tuple(children)

    def not_in(self, meta, children):
        name, _notin, term = children
        return NotIn(str(name), term, self._span(meta))
