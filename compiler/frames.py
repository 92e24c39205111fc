"""Checks a module's Frame models and computes their derived columns, row by row, in NumPy.

A Frame model (`model House(path) : Frame(path) { … }`) is a CSV schema: typed columns read
from named headers, fills for missing cells, and derived columns. A derived column is a
nullary `def` whose body is computed for every row at once (elementwise over whole columns):
arithmetic and comparisons through the op table's NumPy meanings, the table's entrywise
functions (`exp`, `ln`, `max`, …), and `if`/`match` as an elementwise choice (each row takes
the branch its own condition picks). A Text column is held as category codes, so
`match zone { when "RL" ↦ 1  other ↦ 0 }` compares codes. Nothing here reads files
(hilbert/frames.py does) and nothing runs Python from the source.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..grammar import syntax as s
from ..grammar.errors import ModelError, NameResolutionError
from ..grammar.source import Span
from . import ir
from .modules import SourceModule
from .ops.primitives import OPERATORS, PRIMITIVES
from .passes.resolve import Resolved, _suggest

#: The types a Frame's column may have: numbers (float64, missing cells NaN until filled) and
#: texts (category codes; a missing text cell is the empty text "").
SCALAR, TEXT = "Scalar", "Text"
#: Attribute names the Python class of a Frame already uses.
RESERVED = frozenset({"rows", "path", "columns", "categories", "codes"})
#: Functions a derived column may call: the op table's entrywise rows (real ones: a
#: frame's columns are float64).
FUNCTIONS = {name: row for name, row in PRIMITIVES.items()
             if "entrywise" in row.traits and name not in ("conj", "re", "im")}


class FrameDeclarationError(ModelError):
    """E804: a Frame model's declaration is wrong (raised when the module is loaded)."""


@dataclass(frozen=True, slots=True)
class Texts:
    """A Text column as category codes: `categories[codes[i]]` is row i's text."""

    categories: tuple[str, ...]
    codes: np.ndarray


@dataclass(frozen=True)
class FrameModel:
    """A checked Frame declaration: its columns, fills by column, and derived columns in an
    order where each reads only columns and derived columns before it."""

    name: str
    params: tuple[str, ...]
    path: str
    columns: tuple[s.Column, ...]
    fills: dict[str, s.Fill]
    derived: tuple[s.Definition, ...]
    span: Span = field(compare=False)
    doc: str = field(default="", compare=False)

    def kind(self, name: str) -> str:
        """SCALAR or TEXT for a column, SCALAR for a derived column."""
        return next((c.type_name for c in self.columns if c.name == name), SCALAR)


def compile_frames(resolved: Resolved, root: SourceModule,
                   models: set[str]) -> dict[str, FrameModel]:
    """Check every Frame declaration of `root`: names unique and unlike the module's, column
    types Scalar or Text, fills of Scalar columns, derived columns that read only the frame's
    columns with what is computed row by row, no derived column reading itself. Raises
    E804 (E205 for a name the module, or one of its `models`, already has)."""
    own = set(resolved.scopes[root.key].own) | models
    frames: dict[str, FrameModel] = {}
    for decl in root.syntax.decls:
        if not isinstance(decl, s.Frame):
            continue
        if decl.name in own or decl.name in frames:
            raise NameResolutionError("E205", f"{decl.name} is defined twice in this module",
                                      decl.span)
        frames[decl.name] = _check(decl)
    return frames


def _check(decl: s.Frame) -> FrameModel:
    if decl.path not in decl.params:
        raise FrameDeclarationError("E804", f"{decl.name} reads the file Frame({decl.path}), "
                                    f"but {decl.path} is not one of its parameters "
                                    f"({', '.join(decl.params) or 'it has none'})", decl.span)
    if len(decl.params) != 1:
        raise FrameDeclarationError("E804", f"a Frame model has one parameter, its file's path: "
                                    f"write model {decl.name}({decl.path}) : Frame({decl.path})",
                                    decl.span)
    seen: dict[str, Span] = {}
    for name, span in ([(c.name, c.span) for c in decl.columns]
                       + [(d.name, d.span) for d in decl.derived]):
        if name in seen or name in RESERVED or name == decl.path or name.startswith("_"):
            why = ("is declared twice" if name in seen else "is taken by the frame's Python "
                   "class or its parameter")
            raise FrameDeclarationError("E804", f"the column name {name} {why}; rename it", span)
        seen[name] = span
    for c in decl.columns:
        if c.type_name not in (SCALAR, TEXT):
            raise FrameDeclarationError("E804", f"column {c.name} is declared a {c.type_name}; "
                                        f"a Frame's column is a {SCALAR} or a {TEXT}", c.span)
    fills = _fills(decl)
    frame = FrameModel(decl.name, decl.params, decl.path, decl.columns, fills, (), decl.span,
                       decl.doc)
    for d in decl.derived:
        if d.params:
            raise FrameDeclarationError("E804", f"the derived column {d.name} takes no "
                                        f"parameters: it is computed for every row from the "
                                        f"frame's columns (write def {d.name} ≔ …)", d.span)
    order = _ordered(decl.derived, frame)
    return FrameModel(decl.name, decl.params, decl.path, decl.columns, fills, order, decl.span,
                      decl.doc)


def _fills(decl: s.Frame) -> dict[str, s.Fill]:
    kinds = {c.name: c.type_name for c in decl.columns}
    fills: dict[str, s.Fill] = {}
    for f in decl.fills:
        if kinds.get(f.column) != SCALAR:
            what = ("a Text column (a missing text is the empty text \"\")"
                    if f.column in kinds else "not a column of the frame"
                    + _suggest(f.column, kinds))
            raise FrameDeclarationError("E804", f"fill {f.column}: {f.column} is {what}; only a "
                                        f"{SCALAR} column is filled", f.span)
        if f.column in fills:
            raise FrameDeclarationError("E804", f"{f.column} is filled twice; keep one fill",
                                        f.span)
        fills[f.column] = f
    return fills


def _ordered(derived: tuple[s.Definition, ...], frame: FrameModel) -> tuple[s.Definition, ...]:
    """The derived columns, each after those it reads (E804 for one that reads itself)."""
    by_name = {d.name: d for d in derived}
    reads = {d.name: sorted(_check_expr(d.body, frame, set(by_name), d.name)) for d in derived}
    order: list[s.Definition] = []
    done: set[str] = set()
    for start in by_name:
        path = [start]  # a depth-first walk of what `start` reads, without recursion
        while path:
            name = path[-1]
            waiting = [r for r in reads[name] if r not in done]
            if not waiting:
                path.pop()
                if name not in done:
                    done.add(name)
                    order.append(by_name[name])
            elif waiting[0] in path:
                raise FrameDeclarationError("E804", f"the derived column {waiting[0]} reads "
                                            f"itself (through {' → '.join(path)}); a column "
                                            "cannot be computed from its own value",
                                            by_name[waiting[0]].span)
            else:
                path.append(waiting[0])
    return tuple(order)


def _check_expr(e: s.Expr, frame: FrameModel, derived: set[str], owner: str) -> set[str]:
    """The derived columns `e` reads; E804 for anything not computed row by row."""
    columns = {c.name for c in frame.columns}
    reads: set[str] = set()
    pending = [e]
    while pending:
        node = pending.pop()
        match node:
            case s.Number():
                pass
            case s.Name(name=n, module=None) if n in columns or n in derived:
                if frame.kind(n) == TEXT:
                    raise _text_misused(n, node.span)
                reads |= {n} & derived
            case s.Name(name=n):
                raise FrameDeclarationError("E804", f"{owner} reads {n}, which is not a column "
                                            f"of {frame.name}{_suggest(n, columns | derived)}",
                                            node.span)
            case s.Compare(op=op, left=s.Name(name=n), right=right) if frame.kind(n) == TEXT \
                    and n in columns:
                if op not in ("=", "!=") or not isinstance(right, s.String):
                    raise _text_misused(n, node.span)
            case s.String(text=text):
                raise FrameDeclarationError("E804", f'the text "{text}" can only be compared '
                                            "with (or matched against) a Text column",
                                            node.span)
            case s.Binary(left=a, right=b) | s.Compare(left=a, right=b):
                pending += [a, b]
            case s.Negate(operand=a):
                pending.append(a)
            case s.If(cond=c, then=t, orelse=o):
                pending += [c, t, o]
            case s.Call(name=n, module=None, args=args) if n in FUNCTIONS \
                    and len(args) == FUNCTIONS[n].arity:
                pending += list(args)
            case _:
                raise FrameDeclarationError(
                    "E804", f"{owner} is computed row by row, from the frame's columns with "
                    "numbers, + − · / ^ mod div, comparisons, if and match, and the functions "
                    f"{', '.join(sorted(FUNCTIONS))}; this is not one of them", node.span)
    return reads


def _text_misused(name: str, span: Span) -> FrameDeclarationError:
    return FrameDeclarationError("E804", f'{name} is a Text column: compare it with a text '
                                 f'({name} = "RL"), or match it (match {name} {{ when "RL" ↦ 1 '
                                 "other ↦ 0 }); its values are not numbers", span)


def derive(frame: FrameModel, values: dict[str, np.ndarray | Texts],
           rows: int) -> dict[str, np.ndarray]:
    """Every derived column of `frame` (float64, one entry per row) from its `rows` rows of
    read and filled columns `values` (a Texts for each Text column), in checked order."""
    known = dict(values)
    made: dict[str, np.ndarray] = {}
    with np.errstate(all="ignore"):  # (each row's IEEE result, as a scalar call gives it)
        for d in frame.derived:
            value = np.broadcast_to(_value(d.body, known), (rows,))
            known[d.name] = made[d.name] = np.array(value, dtype=np.float64)
    return made


def _value(body: s.Expr, known: dict[str, np.ndarray | Texts]) -> np.ndarray:
    """The value of a checked derived column's expression, every row at once (walked without
    recursion: a chain of operators may be thousands long)."""
    done: list[np.ndarray] = []
    pending: list[tuple[s.Expr, bool]] = [(body, False)]
    while pending:
        e, ready = pending.pop()
        parts = _parts(e)
        if not ready and parts:
            pending.append((e, True))
            pending += [(p, False) for p in reversed(parts)]
            continue
        args = done[len(done) - len(parts):] if parts else []
        del done[len(done) - len(parts):]
        done.append(_one(e, args, known))
    return done[0]


def _parts(e: s.Expr) -> list[s.Expr]:
    """The subexpressions `_one` needs the values of, in order."""
    match e:
        case s.Compare(left=s.Name(), right=s.String()):
            return []
        case s.Binary(left=a, right=b) | s.Compare(left=a, right=b):
            return [a, b]
        case s.Negate(operand=a):
            return [a]
        case s.If(cond=c, then=t, orelse=o):
            return [c, t, o]
        case s.Call(args=args):
            return list(args)
    return []


def _one(e: s.Expr, args: list[np.ndarray], known: dict[str, np.ndarray | Texts]) -> np.ndarray:
    """One node's value from its parts' values (`args`)."""
    match e:
        case s.Number(value=v):
            return np.asarray(v, np.float64)
        case s.Name(name=n):
            value = known[n]
            assert isinstance(value, np.ndarray)
            return value
        case s.Compare(op=op, left=s.Name(name=n), right=s.String(text=text)):
            texts = known[n]
            assert isinstance(texts, Texts)
            code = texts.categories.index(text) if text in texts.categories else -1
            return (texts.codes == code if op == "=" else texts.codes != code).astype(np.float64)
        case s.Binary(op=op) | s.Compare(op=op):
            return _apply(OPERATORS[op], args, e.span)
        case s.Negate():
            return _apply(OPERATORS["neg"], args, e.span)
        case s.If():
            return np.where(args[0] != 0, args[1], args[2])
        case s.Call(name=n):
            return _apply(FUNCTIONS[n], args, e.span)
    raise AssertionError(f"unchecked derived column expression {e!r}")


def _apply(row, args: list, span: Span) -> np.ndarray:
    """An op of the table on whole columns, through its NumPy meaning."""
    return row.meaning(ir.Prim(row.name, (), (), span), [np.asarray(a, np.float64) for a in args])
