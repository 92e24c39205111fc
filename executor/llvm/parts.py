"""A large module in parts, compiled side by side: its outlined pieces (outline.py) moved into
modules of their own, each compiled on a thread of its own beside the function that calls them
(compile.compile_parts), and called by their symbol.

Why: LLVM compiles one module on one core, and llvmlite's lock would keep two modules on one
core too, but for the two long calls compile.py makes without it (unlocked.py). The
transformer block's training step is one module of 1.2 MiB of IR, its function 604 KiB and its
52 pieces 629 KiB; the pieces are functions of their own (never inlined), so they compile the
same apart as together, and on a 2-core machine the step's LLVM time is then about the longer
part's, not the sum (see docs/architecture.md for the figures).

The parts are made from the lowered module (llvmlite.ir objects, never by rewriting its text
as a whole): part 0 is the function and every internal helper it calls; each further part is
a group of pieces of about part 0's size at least (largest first, into the smallest part:
deterministic, from the IR alone) with the helpers they call (helpers are copied into each
part that calls them: they are small, internal, and inlined where called). A piece moved out
of part 0 gets external linkage and a name of its own in the process, its name with the
module's digest (`hb_nest7.3f0c…`): two programs' pieces never share a symbol, and the same
program makes the same parts, names and cache keys in every process. A module with global
variables or metadata stays whole (none of ours has either today: nothing is shared that a
copy could split)."""

from __future__ import annotations

import hashlib
import re

from llvmlite import ir

#: The IR (bytes of text) of a module's pieces below which it is compiled whole: a thread and a
#: second engine cost more than a small part saves.
SMALL = 96 * 1024
#: LLVM's time for a byte of a piece's IR against a byte of the function's: pieces are loops,
#: which the vectoriser and the unroller work on; the function around them is mostly calls and
#: straight-line code. Measured on the transformer block's step (2-core machine): its function
#: 622 KiB in 0.87 s, its 52 pieces 630 KiB in 3.7 s. Groups of pieces are dealt by this cost.
PIECE_COST = 4

_NAMED = re.compile(r'@"([^"]+)"')


def written(module: ir.Module) -> tuple[str, dict[str, str]]:
    """`module`'s text (str(module)) and each function's, each function printed once: str of
    a module prints each of its values in turn, under its header (a module of the same name
    and nothing in it), which is the slow part for a large one (the block's 0.4 s)."""
    if module.get_identified_types() or module.metadata or module.namedmetadata or any(
            not isinstance(v, ir.Function) for v in module.globals.values()):
        return str(module), {}
    functions = {name: str(v) for name, v in module.globals.items()}
    empty = ir.Module(name=module.name)
    empty.triple, empty.data_layout = module.triple, module.data_layout
    return "\n".join([str(empty), *functions.values()]), functions


def split(main: str, pieces: list[str], text: str, functions: dict[str, str],
          declared: dict[str, ir.FunctionType]) -> list[tuple[str, tuple[str, ...]]]:
    """A module (its text `text` and each function's, `functions`: `written`'s answer; the
    types of its functions, `declared`) as its parts, each its text and the pieces it defines
    under their process-wide names: part 0 defines `main`, each further one some of `pieces`
    (the module's doc); `[(text, ())]` where it stays whole."""
    whole = [(text, ())]
    moved = set(pieces)
    if not functions or sum(len(functions[n]) for n in moved) < SMALL:
        return whole
    defined = {n for n, t in functions.items() if not t.startswith("declare ")}
    costs = {n: len(functions[n]) * (PIECE_COST if n in moved else 1)
             for n in _called([main], functions, defined)}
    chosen = _half(sorted(moved, key=lambda n: (-costs[n], n)), costs)
    if not chosen:
        return whole
    moved = set(chosen)
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    renamed = {n: f"{n}.{digest}" for n in chosen}
    header = text.split("\n\n", 1)[0]
    return [(_part(roots, header, functions, defined, moved, renamed, declared),
             tuple(renamed[n] for n in roots if n in moved)) for roots in ([main], chosen)]


def _half(pieces: list[str], costs: dict[str, int]) -> list[str]:
    """The pieces (costliest first) to move to part 1: each whose move makes the costlier of
    the two parts cheaper (`PIECE_COST`), the rest staying in part 0 with the function."""
    whole, taken, moved = sum(costs.values()), 0, []
    for name in pieces:
        if max(taken + costs[name], whole - taken - costs[name]) < max(taken, whole - taken):
            moved.append(name)
            taken += costs[name]
    return moved


def _called(roots: list[str], functions: dict[str, str], defined: set[str]) -> list[str]:
    """`roots` and every function they call, at any depth, each once."""
    seen: dict[str, None] = {}
    _closure(roots, functions, defined, set(), seen)
    return list(seen)


def _closure(roots: list[str], written: dict[str, str], defined: set[str], moved: set[str],
             seen: dict[str, None]) -> str:
    """The text of `roots` and of every internal function they call (not the moved pieces),
    each once, in the order met."""
    for name in roots:
        if name in seen:
            continue
        seen[name] = None
        called = [n for n in _NAMED.findall(written[name])
                  if n in defined and n not in moved and n != name]
        _closure(called, written, defined, moved, seen)
    return "\n\n".join(written[n] for n in seen)


def _part(roots: list[str], header: str, written: dict[str, str], defined: set[str],
          moved: set[str], renamed: dict[str, str], kinds: dict) -> str:
    """One part's module text: `roots` defined (a moved piece with external linkage), the
    helpers they call, a declaration of everything else they call, and every moved piece
    under its process-wide name (its exact `@"name"` token replaced)."""
    seen: dict[str, None] = {}
    body = _closure(roots, written, defined, moved, seen)
    named = set(_NAMED.findall(body))
    declared = [written[n] for n in sorted(named - set(seen)) if n not in defined]
    own = ir.Module()
    declared += [str(ir.Function(own, kinds[n], n)) for n in sorted((named & moved) - set(roots))]
    for name in roots:
        if name in moved:  # (defined here, called from part 0)
            body = body.replace(f'define internal i64 @"{name}"', f'define i64 @"{name}"', 1)
    text = "\n\n".join([header, *declared, body]) + "\n"
    for name in sorted(named & moved):
        text = text.replace(f'@"{name}"', f'@"{renamed[name]}"')
    return text
