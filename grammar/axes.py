"""Builds named axes: `def f(x : B×E, w : E×R) : B×R ≔ …`, `rename(x, D → R)` and
`contract(q, k, over F)`.

The parser's syntax-tree builder takes these methods (grammar/parser.py): a parameter or a
result may be declared with a shape written in named axes, each name a coordinate set (`T′` and
`T` are two); `Scalar` is the shape with none. What the names mean, and whether a body keeps
to them, is compiler/passes/axes.py's."""

from __future__ import annotations

from lark import Token, v_args
from lark.visitors import Transformer_NonRecursive

from .errors import ParseError
from .signature import SCALAR
from .source import Span
from .syntax import Axes, Binding, Contract, Declared, Rename

#: A parameter as the builder's `params` gives it: its name, and its axes where declared.
Param = str | tuple[str, Axes]


@v_args(meta=True)
class AxesBuilder(Transformer_NonRecursive):
    """The syntax-tree builder's methods for named axes (parser._Builder, a subclass, gives
    `_span`)."""

    def _span(self, meta) -> Span:
        raise NotImplementedError

    def params(self, meta, children) -> tuple[Param, ...]:
        return tuple(c if isinstance(c, tuple) else str(c) for c in children if c is not None)

    def typed_param(self, meta, children):
        name, shape = children
        return (str(name), shape)

    def result(self, meta, children) -> Axes | tuple[Axes, ...]:
        """One shape, or a tuple result's, one per component (`: (B×R, B×R)`)."""
        return children[0] if len(children) == 1 else tuple(children)

    def shape(self, meta, children) -> Axes:
        axes = [c for c in children if isinstance(c, tuple)]
        if [name for name, _ in axes] == [SCALAR]:
            return Axes((), ())
        return Axes(tuple(name for name, _ in axes), tuple(span for _, span in axes))

    def axis(self, meta, children) -> tuple[str, Span]:
        name, *primes = children
        return str(name) + "′" * len(primes), self._span(meta)

    def bind_declared(self, meta, children) -> Binding:
        name, axes, _define, value = children
        if isinstance(axes, tuple):
            raise ParseError("E100", f"a let declares one value's axes: take the tuple apart, "
                             f"as `let (a, b) ≔ …`, or declare {name} where it is a parameter "
                             "or a result", self._span(meta))
        return Binding((str(name),), False, value, self._span(meta), axes)

    def renaming(self, meta, children):
        old, _arrow, new = children
        return old, new

    def rename(self, meta, children) -> Rename:
        operand, *pairs = children
        return Rename(operand, tuple((old[0], new[0]) for old, new in pairs), self._span(meta),
                      tuple(old[1] for old, _ in pairs))

    def contract(self, meta, children) -> Contract:
        name, *rest = children
        operands = tuple(c for c in rest if not isinstance(c, (tuple, Token)))
        axes = [c for c in rest if isinstance(c, tuple)]
        if str(name) != "contract":  # (`over` names what a contraction sums: only contract's)
            raise ParseError("E100", f"`over …` names the axes a contraction sums, as in "
                             f"contract(q, k, over F); {name}(…) takes expressions only",
                             axes[0][1])
        return Contract(operands, tuple(a for a, _ in axes), self._span(meta),
                        tuple(sp for _, sp in axes))

    def _declared(self, params: tuple[Param, ...] | None, result: Axes | tuple[Axes, ...] | None
                  ) -> tuple[tuple[str, ...], Declared | None]:
        """A definition's parameter names, and its named axes where any are declared."""
        params = params or ()
        names = tuple(p[0] if isinstance(p, tuple) else p for p in params)
        axes = tuple(p[1] if isinstance(p, tuple) else None for p in params)
        if result is None and not any(axes):
            return names, None
        if isinstance(result, tuple):
            return names, Declared(axes, None, result)
        return names, Declared(axes, result)

    def _plain(self, params: tuple[Param, ...] | None, span: Span) -> tuple[str, ...]:
        """The names of parameters that may not declare axes (a model's, a train block's)."""
        for p in params or ():
            if isinstance(p, tuple):
                raise ParseError("E100", f"only a definition's parameters and result declare "
                                 f"named axes: write {p[0]} alone here (a model's weights name "
                                 "theirs, as `weight w : Tensor[E, R]`)", p[1].spans[0]
                                 if p[1].spans else span)
        return tuple(p for p in params or () if isinstance(p, str))
