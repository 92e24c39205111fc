"""Builds and prints a Frame model's declaration: `model House(path) : Frame(path) { … }`.

The parser's syntax-tree builder takes these methods (grammar/parser.py): a Frame's members
are columns (`quality : Scalar from "Overall Qual"`), fills (`fill quality with median`) and
derived columns (`def big ≔ quality > 7`). Only the declaration's shape is checked here; what
its names mean is compiler/frames.py's."""

from __future__ import annotations

from lark import v_args
from lark.visitors import Transformer_NonRecursive

from .errors import ParseError
from .source import Span
from .syntax import Column, Definition, Fill, Frame

#: The base a Frame model names, with the parameter that is its CSV file's path.
FRAME = "Frame"
#: How `fill col with …` fills a column's missing cells.
FILLS = ("median", "mean", "value")


@v_args(meta=True)
class FrameBuilder(Transformer_NonRecursive):
    """The syntax-tree builder's methods for a Frame model (parser._Builder, a subclass, gives
    `_span` and `_doc`; a derived column is its `method_decl`)."""

    def _span(self, meta) -> Span:
        raise NotImplementedError

    def _doc(self, span: Span) -> str:
        raise NotImplementedError

    def _plain(self, params, span: Span) -> tuple[str, ...]:
        raise NotImplementedError

    def frame_decl(self, meta, children):
        name, params, base, path, *members = children
        span = self._span(meta)
        if str(base) != FRAME:
            raise ParseError("E104", f".hb has no type {base}(…): after `:` a model names its "
                             f"base, `: Learner`, or `: {FRAME}(path)` for a CSV file's columns",
                             Span(span.source, base.line, base.column, base.end_line,
                                  base.end_column))
        if len(path) != 1:
            raise ParseError("E100", f"a Frame model names the one parameter that is its file's "
                             f"path, as `model {name}(path) : {FRAME}(path)`", span)
        return Frame(str(name), self._plain(params, span), path[0],
                     tuple(m for m in members if isinstance(m, Column)),
                     tuple(m for m in members if isinstance(m, Fill)),
                     tuple(m for m in members if isinstance(m, Definition)), span,
                     self._doc(span))

    def column_decl(self, meta, children):
        name, type_name, header = children
        return Column(str(name), str(type_name), str(header)[1:-1], self._span(meta))

    def fill_decl(self, meta, children):
        column, how, *rest = children
        span = self._span(meta)
        value = None
        if rest:
            minus, number = rest
            value = float(str(number)) * (-1 if minus is not None else 1)
        if str(how) not in FILLS or (str(how) == "value") != (value is not None):
            raise ParseError("E100", f"fill {column} with median, with mean, or with value "
                             "<number> (as `fill quality with value 0`)", span)
        return Fill(str(column), str(how), value, span)


def print_frame(frame: Frame, unicode: bool, print_expr) -> str:
    """The Frame declaration as source text, one member per line."""
    define = "≔" if unicode else ":="
    params = ", ".join(frame.params)
    lines = [f"model {frame.name}({params}) : {FRAME}({frame.path}) {{"]
    lines += [f'  {c.name} : {c.type_name} from "{c.header}"' for c in frame.columns]
    lines += [f"  fill {f.column} with {f.how}" + ("" if f.value is None else f" {f.value!r}")
              for f in frame.fills]
    lines += [f"  def {d.name} {define} {print_expr(d.body, unicode)}" for d in frame.derived]
    lines.append("}")
    return "\n".join(lines)
