"""The syntax tree: frozen dataclasses, one per construct, each with its source span.

Grammar of the tree (what the parser builds):

    Module     ::= decls: (Open | Definition | Model | Frame | Law | LawModel)*
    Law        ::= name, lhs: Expr, rhs: Expr, solved: (Expr, Expr)?, conditions: Condition*
                   (`law n = lhs = rhs`; an equation law `law n = l = r ⇔ l' = r'` has lhs l,
                   rhs r and solved (l', r'))
    Condition  ::= NotIn (`x ∉ u`) | Compare (`x > 0`: where the law holds)
    LawModel   ::= name, laws: Law*                     (`model OneLaw { law … }`)
    Open       ::= path: name+
    Definition ::= kind: 'def' | 'fn' | 'method', name, params: name*, body: Expr, doc,
                   axes: Declared?   (`def f(x : B×E) : B ≔ …`: each parameter's Axes, the result's)
    Model      ::= name, params, base, weights: Weight*, trains: Train*, methods: Definition*,
                   groups: Group*, states: StateLike*
    Frame      ::= name, params, path: name, columns: Column*, fills: Fill*,
                   derived: Definition*  (`model House(path) : Frame(path) { … }`)
    Column     ::= name, type_name: 'Scalar' | 'Text', header   (`q : Scalar from "Qual"`)
    Fill       ::= column, how: 'median' | 'mean' | 'value', value  (`fill q with median`)
    Weight     ::= name, type_name, dims: (name | number)*, init: Expr, kind: 'weight' | 'state'
    Group      ::= name, members: name+                 (`group g ≔ w1, w2`)
    StateLike  ::= names: name+, group: name, init: Expr  (`state m, v like g from e`)
    Train      ::= name, params, assigns: Assign*
    Assign     ::= name, value: Expr, index, count   (`(a, b) ≔ e`: one per name)
    Expr       ::= Number | String | Name | Call | Binary | Negate | Compare | If
                 | Let | Tuple | Index | Slice | Derivative | Rename | Contract
    Let        ::= bindings: Binding+, body: Expr        (each binding sees those before it)
    Binding    ::= names: name+, pattern: bool, value: Expr, axes: Axes?
                   (pattern: `(a, b) ≔ e`; axes: `y : B×R ≔ e`)
    Derivative ::= of: Expr, wrt: name+, many: bool     (`∂ e / ∂ x`, `∂ e / ∂ (x, y)`)
    Rename     ::= operand: Expr, pairs: (old, new)+    (`rename(x, D → R)`: x, its axis renamed)
    Contract   ::= operands: Expr+, over: name+   (`contract(q, k, over F)`: summed over F)

Operators are stored in their ASCII spelling, so Unicode and ASCII sources give equal trees.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .source import Span


@dataclass(frozen=True, slots=True)
class Number:
    value: float
    span: Span = field(compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class String:
    text: str
    span: Span = field(compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Name:
    name: str
    module: str | None
    span: Span = field(compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Call:
    name: str
    module: str | None
    args: tuple[Expr, ...]
    span: Span = field(compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Binary:
    op: str  # one of + - * / ^
    left: Expr
    right: Expr
    span: Span = field(compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Negate:
    operand: Expr
    span: Span = field(compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Compare:
    op: str  # one of = != < > <= >=
    left: Expr
    right: Expr
    span: Span = field(compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class If:
    cond: Expr
    then: Expr
    orelse: Expr
    span: Span = field(compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Binding:
    names: tuple[str, ...]
    pattern: bool  # True for `(a, b) ≔ e`, which takes a tuple apart
    value: Expr
    span: Span = field(compare=False, repr=False)
    axes: Axes | None = None  # `y : B×R ≔ e`: its named axes, where declared


@dataclass(frozen=True, slots=True)
class Let:
    bindings: tuple[Binding, ...]
    body: Expr
    span: Span = field(compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Tuple:
    items: tuple[Expr, ...]
    span: Span = field(compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Index:
    target: Expr
    index: Expr
    span: Span = field(compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Slice:
    target: Expr
    start: Expr
    stop: Expr
    span: Span = field(compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Derivative:
    of: Expr
    wrt: tuple[str, ...]
    many: bool  # True for `∂ e / ∂ (x, y)`, which answers a tuple
    span: Span = field(compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Axes:
    """A shape declared in named axes (`B×E`; `Scalar` has none): each axis names a coordinate
    set, and `spans` says where each name is written."""

    names: tuple[str, ...]
    spans: tuple[Span, ...] = field(compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Declared:
    """A definition's named axes: each parameter's (None where undeclared), and its result's;
    a tuple result's, `: (B×R, B×R)`, are `results`, one per component (`result` None)."""

    params: tuple[Axes | None, ...]
    result: Axes | None
    results: tuple[Axes, ...] = ()


@dataclass(frozen=True, slots=True)
class Rename:
    """`rename(x, D → R)`: x itself, its axis D named R from here on (each pair old, new)."""

    operand: Expr
    pairs: tuple[tuple[str, str], ...]
    span: Span = field(compare=False, repr=False)
    spans: tuple[Span, ...] = field(default=(), compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Contract:
    """`contract(q, k, over F)`: the operands multiplied entrywise along the named axes they
    share, summed over the axes after `over` (each span where that axis is written), every
    other axis kept; which axes those are is known from the operands' named axes."""

    operands: tuple[Expr, ...]
    over: tuple[str, ...]
    span: Span = field(compare=False, repr=False)
    spans: tuple[Span, ...] = field(default=(), compare=False, repr=False)


Expr = (Number | String | Name | Call | Binary | Negate | Compare | If | Let | Tuple | Index
        | Slice | Derivative | Rename | Contract)


@dataclass(frozen=True, slots=True)
class Open:
    path: tuple[str, ...]
    span: Span = field(compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Definition:
    kind: str  # 'def', 'fn' or 'method'
    name: str
    params: tuple[str, ...]
    body: Expr
    span: Span = field(compare=False, repr=False)
    doc: str = field(default="", compare=False, repr=False)
    axes: Declared | None = None  # named axes (`def f(x : B×E) : B ≔ …`), where declared


@dataclass(frozen=True, slots=True)
class Weight:
    name: str
    type_name: str
    dims: tuple[str | float, ...]
    init: Expr
    span: Span = field(compare=False, repr=False)
    kind: str = "weight"  # "weight", or "state": held and assigned, but not in `weights`


@dataclass(frozen=True, slots=True)
class Group:
    """`group g ≔ w1, w2, …`: weights one assignment can update together."""

    name: str
    members: tuple[str, ...]
    span: Span = field(compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class StateLike:
    """`state m, v like g from e`: for every member w of group g, one state tensor shaped like
    w (named `m.w`), each starting from `e` at that shape."""

    names: tuple[str, ...]
    group: str
    init: Expr
    span: Span = field(compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Assign:
    """`name ≔ value`; `(a, b) ≔ value` is one Assign per name, each taking component `index`
    of the `count` the value answers (count 1: the whole value)."""

    name: str
    value: Expr
    span: Span = field(compare=False, repr=False)
    index: int = 0
    count: int = 1


def statements(assigns: tuple[Assign, ...]) -> list[list[Assign]]:
    """The assignments as written: a tuple assignment's names together, in order."""
    grouped: list[list[Assign]] = []
    for a in assigns:
        if a.index > 0:
            grouped[-1].append(a)
        else:
            grouped.append([a])
    return grouped


@dataclass(frozen=True, slots=True)
class Train:
    name: str
    params: tuple[str, ...]
    assigns: tuple[Assign, ...]
    span: Span = field(compare=False, repr=False)
    doc: str = field(default="", compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Model:
    name: str
    params: tuple[str, ...]
    base: str
    weights: tuple[Weight, ...]
    trains: tuple[Train, ...]
    methods: tuple[Definition, ...]
    span: Span = field(compare=False, repr=False)
    doc: str = field(default="", compare=False, repr=False)
    groups: tuple[Group, ...] = ()
    states: tuple[StateLike, ...] = ()


@dataclass(frozen=True, slots=True)
class Column:
    """`name : Scalar from "Header"`: a Frame's column, read from the CSV column `header`."""

    name: str
    type_name: str
    header: str
    span: Span = field(compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Fill:
    """`fill col with median` (or `mean`, or `value 3`): what a column's missing cells hold."""

    column: str
    how: str
    value: float | None
    span: Span = field(compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Frame:
    """`model Name(params) : Frame(path) { columns, fills, derived columns }`: a CSV schema."""

    name: str
    params: tuple[str, ...]
    path: str
    columns: tuple[Column, ...]
    fills: tuple[Fill, ...]
    derived: tuple[Definition, ...]
    span: Span = field(compare=False, repr=False)
    doc: str = field(default="", compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class NotIn:
    """`x ∉ u`: the term x stands for does not occur in the term u stands for."""

    name: str
    term: Expr
    span: Span = field(compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Law:
    """`law name = lhs = rhs`, used from lhs to rhs where that shrinks a term; an equation
    law `law name = lhs = rhs ⇔ l' = r'` rewrites an equation lhs = rhs to `solved`. The
    conditions say where it applies: `x ∉ u` guards, comparisons the domain it holds on."""

    name: str
    lhs: Expr
    rhs: Expr
    solved: tuple[Expr, Expr] | None
    conditions: tuple[NotIn | Compare, ...]
    span: Span = field(compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class LawModel:
    """`model Name { law … }`: a model with no parameters and no base, a bag of laws."""

    name: str
    laws: tuple[Law, ...]
    span: Span = field(compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Module:
    decls: tuple[Open | Definition | Model | Frame | Law | LawModel, ...]
    span: Span = field(compare=False, repr=False)
