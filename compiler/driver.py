"""The compiler driver: the table of contents of the compiler, one line per pass."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from hilbert.grammar.errors import HilbertError
from hilbert.grammar.source import Span

from . import ir
from .fuse import fuse
from .inline import Inliner
from .masks import eliminate_masks
from .models import CompiledModel, compile_models
from .modules import Loader, SourceModule
from .plan import Plan, make_plan
from .recursion import check_recursion
from .resolve import Definition, Resolved, resolve
from .shapes import Shape, ShapeTable, infer_shapes
from .share import share


@dataclass(frozen=True, slots=True)
class Entry:
    """A callable definition, inlined: `body` is IR over Param(0…n−1) (what the reference
    executor runs) and `fused` the same after fusion (what planned executors run)."""

    name: str
    params: tuple[str, ...]
    body: ir.Node
    fused: ir.Node
    definition: Definition = field(compare=False)


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
    _debug("parse", root.syntax)
    resolved = resolve(loader, root)                          # names, arity, einsum specs
    loops = check_recursion(resolved.definitions)             # tail self-calls only
    inliner = Inliner(resolved.definitions, loops)            # definitions -> one DAG each
    for key in sorted(loops):
        inliner.form(key)                                     # every loop checked, used or not
    entries = {}
    for name, key in resolved.scopes[root.key].own.items():
        entries[name] = _entry(resolved.definitions[key], inliner)  # inline, then fuse
    exported = tuple(n for n, e in entries.items() if export_all or e.definition.kind == "fn")
    models = compile_models(resolved, root)                   # model declarations -> entries
    return CompiledModule(root.key, entries, exported, resolved, models)


def _entry(d: Definition, inliner: Inliner) -> Entry:
    params = {ir.Local(i, p, d.span): ir.Param(i, p, d.span) for i, p in enumerate(d.params)}
    body = ir.substitute(inliner.body(d.key), params)
    _debug("inline", body)
    body = share(body)                                        # equal work done once
    fused = fuse(body)                                        # einsum chains -> one einsum
    fused = eliminate_masks(fused)                            # [s = t + j] masks -> shifts
    _debug("fuse", fused)
    return Entry(d.name, d.params, body, fused, d)


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
    _debug("plan", plan)
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


def _debug(stage: str, value) -> None:
    """HILBERT_DUMP=inline,plan prints the IR after the named passes (a debugging switch)."""
    wanted = os.environ.get("HILBERT_DUMP", "")
    if stage in wanted.split(","):
        from .printer import print_ir
        print(f"== {stage} ==\n{value if isinstance(value, Plan) else print_ir(value)}")


def load_path(path: str | Path, search_path: list[Path] | None = None) -> tuple[Loader, SourceModule]:
    loader = Loader(search_path)
    return loader, loader.from_file(Path(path))
