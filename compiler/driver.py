"""The compiler driver: the table of contents of the compiler, one line per pass."""

from __future__ import annotations

from dataclasses import dataclass, field

from hilbert.grammar.errors import HilbertError
from hilbert.grammar.source import Span

from .debug import dump
from .entry import Entry, build_entry
from .inline import Inliner
from .models import CompiledModel, compile_models
from .modules import Loader, SourceModule
from .plan import Plan, make_plan
from .recursion import check_recursion
from .resolve import Resolved, resolve
from .shapes import Shape, ShapeTable, infer_shapes


@dataclass
class CompiledModule:
    """What compile_module produces: the module's entries by name and what resolve saw."""

    key: str
    entries: dict[str, Entry]
    exported: tuple[str, ...]
    resolved: Resolved = field(repr=False)
    models: dict[str, CompiledModel] = field(default_factory=dict)


def compile_module(loader: Loader, root: SourceModule, export_all: bool = False) -> CompiledModule:
    """Compile `root` and the modules it opens into inlined entries, or raise HilbertError."""
    dump("parse", root.syntax)
    resolved = resolve(loader, root)                          # names, arity, einsum specs
    loops = check_recursion(resolved.definitions)             # tail self-calls only
    inliner = Inliner(resolved.definitions, loops)            # definitions -> one DAG each
    for key in sorted(loops):
        inliner.form(key)                                     # every loop checked, used or not
    entries = {}
    for name, key in resolved.scopes[root.key].own.items():
        entries[name] = build_entry(resolved.definitions[key], inliner)  # inline, share, fuse, masks
    exported = tuple(n for n, e in entries.items() if export_all or e.definition.kind == "fn")
    models = compile_models(resolved, root)                   # model declarations -> entries
    return CompiledModule(root.key, entries, exported, resolved, models)


def specialise(entry: Entry, shapes: tuple[Shape, ...], fused: bool = False) -> ShapeTable:
    """Infer every shape of `entry` for these argument shapes (shape rules enforced here)."""
    return infer_shapes(entry.fused if fused else entry.body, shapes)


def plan_entry(entry: Entry, shapes: tuple[Shape, ...], optimize: str = "auto",
               executor: str = "numba", values: tuple | None = None) -> tuple[ShapeTable, Plan]:
    """Specialise the fused entry to `shapes` and plan it (paths, loops, memory guard)."""
    specialise(entry, shapes)                                 # rules checked on the source's IR
    table = specialise(entry, shapes, fused=True)             # shapes of what will run
    plan = make_plan(entry.name, entry.params, entry.fused, table, shapes, optimize, executor,
                     values)                                  # paths, costs, memory guard
    dump("plan", plan)
    return table, plan


def annotate(err: HilbertError, resolved: Resolved) -> HilbertError:
    """Add the definition an error was raised inside, and its `Instead:` hint, as notes."""
    for d in resolved.syntax.values():
        if _contains(d.span, err.span):
            err = err.with_note(f"in {d.name}, defined at {d.span}")
            for line in d.doc.splitlines():
                if line.startswith("Instead:"):
                    err = err.with_note(line)
            break
    return err


def _contains(outer: Span, inner: Span) -> bool:
    return (outer.source.name == inner.source.name
            and (outer.line, outer.column) <= (inner.line, inner.column)
            and (inner.end_line, inner.end_column) <= (outer.end_line, outer.end_column))
