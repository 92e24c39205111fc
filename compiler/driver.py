"""The compiler driver: the table of contents of the compiler, one line per pass."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..grammar.errors import HilbertError
from ..grammar.signature import named_shapes
from ..grammar.source import Span
from . import dtypes, ir, passes, settings
from .debug import dump
from .entry import Entry, build_entry, build_product
from .frames import FrameModel, compile_frames
from .ir import verify
from .kept import kept_entry, kept_plan
from .models import CompiledModel, compile_models
from .modules import Loader, SourceModule
from .passes.axes import check_axes, check_let_sizes, check_sizes
from .passes.inline import Inliner
from .passes.monomorphise import monomorphise
from .passes.realness import check_complex
from .passes.recursion import check_recursion
from .passes.resolve import Definition, Resolved, resolve
from .passes.shapes import Shape, ShapeTable, infer_shapes
from .plan import (
    Hyper,
    Plan,
    contraction,
    guard,
    is_path,
    make_plan,
    memory_limit,
    searches,
)
from .plan.hyper import search as hyper_search


class Entries(Mapping[str, Entry]):
    """A module's entries by name, each built (inlined and optimised) the first time it is
    asked for: a module of many definitions costs nothing for the ones never called."""

    def __init__(self, definitions: dict[str, Definition], inliner: Inliner, resolved: Resolved):
        self._definitions = definitions
        self._inliner = inliner
        self._resolved = resolved
        self._built: dict[str, Entry] = {}
        self._products: dict[tuple[str, str], Entry] = {}

    def __getitem__(self, name: str) -> Entry:
        if name not in self._built:
            d = self._definitions[name]
            self._built[name] = kept_entry(self._resolved, d.key,
                                           lambda: build_entry(d, self._inliner))
        return self._built[name]

    def product(self, name: str, kind: str) -> Entry:
        """The entry of the vjp or jvp (`kind`, compiler/products.py) of definition `name`."""
        which = (name, kind)
        if which not in self._products:
            d = self._definitions[name]
            self._products[which] = kept_entry(
                self._resolved, f"{d.key}\0{kind}",
                lambda: build_product(d, self._inliner, kind))
        return self._products[which]

    def __iter__(self) -> Iterator[str]:
        return iter(self._definitions)

    def __len__(self) -> int:
        return len(self._definitions)


@dataclass
class CompiledModule:
    """What compile_module produces: the module's entries by name and what resolve saw.
    `key` is how messages name the module (its path as given, or its text's name)."""

    key: str
    entries: Entries
    exported: tuple[str, ...]
    resolved: Resolved = field(repr=False)
    models: dict[str, CompiledModel] = field(default_factory=dict)
    frames: dict[str, FrameModel] = field(default_factory=dict)


def compile_module(loader: Loader, root: SourceModule, export_all: bool = False) -> CompiledModule:
    """Compile `root` and the modules it opens into inlined entries, or raise HilbertError."""
    dump("parse", root.syntax)
    resolved = resolve(loader, root)                          # names, arity, einsum specs
    check_axes(resolved, root)                                # named axes agree (E330)
    loops = check_recursion(resolved.definitions)             # tail self-calls only
    inliner = Inliner(resolved.definitions, loops)            # definitions -> one DAG each
    for key in sorted(loops):
        inliner.form(key)                                     # every loop checked, used or not
    own = {name: resolved.definitions[key] for name, key in resolved.scopes[root.key].own.items()}
    entries = Entries(own, inliner, resolved)  # inline, share, fuse, masks: on use (or kept)
    exported = tuple(n for n, d in own.items() if export_all or d.kind == "fn")
    models = compile_models(resolved, root)                   # model declarations -> entries
    frames = compile_frames(resolved, root, set(models))      # Frame models: CSV schemas
    return CompiledModule(str(root), entries, exported, resolved, models, frames)


def specialise(entry: Entry, shapes: tuple[Shape, ...]) -> ShapeTable:
    """Infer every shape of `entry` as written for these argument shapes (the shape rules are
    enforced here, so an error names what the user wrote)."""
    sizes = check_sizes(entry.definition, shapes)            # each named axis one size (E331)
    table = infer_shapes(entry.body, shapes)
    check_let_sizes(entry.definition, sizes, table, entry.declared)  # lets', inlined calls'
    return table


@dataclass
class Prepared:
    """What an executor works out from a Specialised alone, kept with it so that a plan given
    again (plan_entry keeps plans) is prepared again at no cost: the IR generated code runs
    and its shapes (the numba executor's `generated_ir`), and the numba executor's tiers by
    path optimiser, names forced onto the host and fast maths (`tiers_of`; an executor type,
    which this layer does not name)."""

    generated: tuple[ir.Node, ShapeTable] | None = None
    tiers: dict[tuple[str, frozenset[str], bool], Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Specialised:
    """An entry made ready for one signature: the IR an executor runs, its shapes, its plan,
    and what executors prepare from them (`prepared`)."""

    body: ir.Node
    table: ShapeTable
    plan: Plan
    prepared: Prepared = field(default_factory=Prepared, compare=False, repr=False)


#: How many plans `plan_entry` keeps (per entry, signature and settings), least recently used
#: dropped first: a new function for an entry (`using`, a program dropped and made again, a
#: model's methods) plans nothing it planned before.
PLANS_KEPT = 512
_plans: OrderedDict[tuple, tuple[Entry, Specialised]] = OrderedDict()
_plans_lock = threading.Lock()


def plan_entry(entry: Entry, shapes: tuple[Shape, ...], optimize: str = "auto",
               executor: str = "numba", values: tuple | None = None,
               keeps_all: bool | None = None, limit: int | None = None,
               as_written: bool = False, dtype: str = dtypes.DEFAULT) -> Specialised:
    """Specialise `entry` to `shapes` (the call computing in `dtype`: a complex one is checked
    for what needs real numbers, E325) and plan what an executor runs (paths, loops, memory
    guard at `limit` bytes, HILBERT_MEMORY_LIMIT's by default; `executor` names it in the
    plan): `as_written`, the IR with its masks read and nothing else optimised, every value
    of a scope kept (the reference executor's way); else the optimised IR, each value freed
    after its last reader (`keeps_all` says otherwise: a call with work on the host keeps
    what the host computes). Plans made without values are kept (PLANS_KEPT) and
    given again, the memory guard applied anew, when the same entry is planned alike under the
    same settings of generated code (settings.CODE_SETTINGS: what is derived from a plan, its
    code, depends on them)."""
    keeps = as_written if keeps_all is None else keeps_all
    limit = memory_limit() if limit is None else limit
    key = (id(entry), shapes, optimize, executor, keeps, as_written, settings.current(), dtype,
           searches(optimize))
    if values is None:
        with _plans_lock:
            found = _plans.get(key)
            if found is not None and found[0] is entry:  # (an id is reused only once freed)
                _plans.move_to_end(key)
                ready = found[1]
                guard(ready.plan, ready.body, ready.table, limit)
                dump("plan", ready.plan)
                return ready
    def made() -> tuple:
        table = specialise(entry, shapes)                     # rules checked on the source's IR
        if dtypes.is_complex(dtype):
            check_complex(entry.body)                         # nothing complex needs a real
        body = entry.masked if as_written else entry.fused    # what the executor runs
        if body is not entry.body:
            table = infer_shapes(body, shapes)
        lowered = monomorphise(body, table)                   # derivatives' ops as einsums
        if lowered is not body:
            body = lowered if as_written else passes.run(passes.AGAIN, lowered)
            table = infer_shapes(body, shapes)
        if verify.enabled():
            verify.verify(body, "specialised", shapes, table)
        return body, table, make_plan(entry.name, entry.params, body, table, shapes, optimize,
                                      executor, values, limit, keeps_all=keeps, dtype=dtype,
                                      laws=entry.definition.laws)

    def guarded(found: tuple) -> None:
        guard(found[2], found[0], found[1], limit)               # (found: body, table, plan)

    # (plans from values hold trip counts, and one over the limit raises: neither is kept)
    # (a path optimiser object has no lasting name to keep its plans by on disk)
    lasting = isinstance(optimize, (str, Hyper)) or is_path(optimize)
    body, table, plan = made() if values is not None or not lasting else \
        kept_plan(entry, key[1:], made, guarded)
    dump("plan", plan)
    ready = Specialised(body, table, _named(plan, entry))
    if values is None:
        with _plans_lock:
            _plans[key] = (entry, ready)
            while len(_plans) > PLANS_KEPT:
                _plans.popitem(last=False)
    return ready


def _named(plan: Plan, entry: Entry) -> Plan:
    """`plan`, showing each parameter's declared named axes (kept plans are shared by name)."""
    return replace(plan, axes=named_shapes(entry.definition.axes, len(plan.params)))


def forget_plans() -> None:
    """Drop every kept plan and path, so the next planning searches afresh (for timing it)."""
    with _plans_lock:
        _plans.clear()
    contraction.cache_clear()
    hyper_search.cache_clear()


def annotate(err: HilbertError, resolved: Resolved) -> HilbertError:
    """Add the definition an error was raised inside, and its `Instead:` hint, as notes; then
    the calls that led there, from that definition out to what the user called."""
    for d in resolved.syntax.values():
        if _contains(d.span, err.span):
            err = err.with_note(f"in {d.name}, defined at {d.span}")
            for line in d.doc.splitlines():
                if line.startswith("Instead:"):
                    err = err.with_note(line)
            break
    for site in err.span.via.chain() if err.span.via is not None else ():
        err = err.with_note(f"called from {site.caller} at {site.span}")
    return err


def _contains(outer: Span, inner: Span) -> bool:
    return (outer.source.name == inner.source.name
            and (outer.line, outer.column) <= (inner.line, inner.column)
            and (inner.end_line, inner.end_column) <= (outer.end_line, outer.end_column))
