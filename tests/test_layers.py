"""Import directions and sizes: layers point one way, no import circles, no oversized code.

The import graph is read from the sources with `ast`, imports inside functions included; both
absolute (`hilbert.compiler.ir`) and relative (`from ..ir import x`) imports are resolved, so
the test reads the same graph whichever form the packages use. Imports under `if
TYPE_CHECKING:` (annotations only) count for the layers, where they are arrows all the same,
but not for circles, since nothing runs them: a module may name in its annotations the type of
the object that calls it (hilbert.autodiff annotates with hilbert.api.Function).
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Folder → the dotted name it is installed as (pyproject.toml's package-dir).
PACKAGES = {
    "grammar": "hilbert.grammar",
    "compiler": "hilbert.compiler",
    "executor": "hilbert.executor",
    "hilbert": "hilbert",
    "benchmarks": "benchmarks",
}

# The layers, lowest first: a module may import its own layer and the ones before it. The
# `hilbert` command (hilbert/cli*.py) is the top: `hilbert bench --suite` runs benchmarks/.
LAYERS = (
    "hilbert.grammar",
    "hilbert.compiler",
    "hilbert.executor",
    "hilbert",
    "benchmarks",
    "hilbert.cli",
)

# Within executor/, the code generator sits below the numba runtime: what codegen/ may not
# import (the other executor modules may import both).
BELOW = {"hilbert.executor.codegen": ("hilbert.executor.numba",)}

MAX_MODULE_LINES = 500
MAX_CLASS_LINES = 250
MAX_FUNCTION_LINES = 60

# Known exceptions, each in code another piece of work (issue 49) was rewriting when this test
# was written, so left to it: remove an entry when its code is split or its imports turned.
# Sizes are keyed by "path:qualified name" (or the path alone), imports by "module imports
# module", circles by their modules.
SIZE_EXCEPTIONS: dict[str, str] = {}
IMPORT_EXCEPTIONS: set[str] = set()
CIRCLE_EXCEPTIONS: list[list[str]] = []


@dataclass(frozen=True)
class Source:
    """One module of the packages: its dotted name, file, and whether it is a package."""

    name: str
    path: Path
    package: bool


def sources() -> dict[str, Source]:
    """Every module of the packages by its dotted name."""
    found: dict[str, Source] = {}
    for folder, dotted in PACKAGES.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            package = parts[-1] == "__init__"
            if package:
                parts = parts[:-1]
            name = ".".join([dotted, *parts])
            found[name] = Source(name, path, package)
    return found


def _base(source: Source, node: ast.ImportFrom) -> str:
    """The absolute module an `from … import` names, resolving a relative one."""
    if not node.level:
        return node.module or ""
    parts = source.name.split(".")
    if not source.package:
        parts = parts[:-1]
    if node.level > 1:
        parts = parts[: len(parts) - (node.level - 1)]
    return ".".join([*parts, *([node.module] if node.module else [])])


def _known(name: str, known: dict[str, Source]) -> str | None:
    """The longest prefix of a dotted name that is one of the packages' modules."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        prefix = ".".join(parts[:end])
        if prefix in known:
            return prefix
    return None


def _typing_only(tree: ast.AST) -> set[int]:
    """The ids of the import statements under `if TYPE_CHECKING:`."""
    inside = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            inside.update(id(n) for statement in node.body for n in ast.walk(statement))
    return inside


def imports(source: Source, known: dict[str, Source], typing: bool = True) -> set[str]:
    """The packages' modules one module imports, anywhere in its body (with `typing` False,
    leaving out those imported only for annotations)."""
    tree = _parsed(source.path)
    skipped = set() if typing else _typing_only(tree)
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _base(source, node)
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                     for alias in node.names]
        else:
            continue
        found.update(m for m in (_known(n, known) for n in names) if m and m != source.name)
    return found


def graph(typing: bool = True) -> dict[str, set[str]]:
    """Module → the packages' modules it imports (with `typing` False, at run time)."""
    known = sources()
    return {name: imports(source, known, typing) for name, source in known.items()}


def layer(name: str) -> int:
    """A module's layer: the index of the longest entry of LAYERS it falls under (the command
    is hilbert.cli and every hilbert.cli_* module)."""
    if name == "hilbert.cli" or name.startswith("hilbert.cli_"):
        return LAYERS.index("hilbert.cli")
    best = -1
    for index, prefix in enumerate(LAYERS):
        if (name == prefix or name.startswith(prefix + ".")) and (
                best < 0 or len(prefix) > len(LAYERS[best])):
            best = index
    return best


def reversed_imports(edges: dict[str, set[str]]) -> list[str]:
    """Each import of a higher layer from a lower one, or of a module its layer sits below."""
    wrong = []
    for name, targets in sorted(edges.items()):
        for target in sorted(targets):
            if layer(target) > layer(name):
                wrong.append(f"{name} imports {target}")
            for below, above in BELOW.items():
                if name.startswith(below + ".") and target.startswith(above):
                    wrong.append(f"{name} imports {target}")
    return wrong


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, targets = work[-1]
            target = next(targets, None)
            if target is not None:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(edges.get(target, ())))))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def oversized(skip: Mapping[str, str] = SIZE_EXCEPTIONS) -> list[str]:
    """Each module, class or function (outside tests) longer than its limit, but those in
    `skip`."""
    found = []
    for source in sources().values():
        text = source.path.read_text()
        where = str(source.path.relative_to(ROOT))
        lines = len(text.splitlines())
        if lines > MAX_MODULE_LINES and where not in skip:
            found.append(f"{where}: {lines} lines (module)")
        found.extend(_oversized_in(_parsed(source.path), where, "", skip))
    return found


@functools.cache
def _parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), str(path))


def _oversized_in(node: ast.AST, where: str, outer: str, skip: Mapping[str, str]) -> list[str]:
    found = []
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            name = f"{outer}{child.name}"
            lines = (child.end_lineno or child.lineno) - child.lineno + 1
            kind, limit = (("class", MAX_CLASS_LINES) if isinstance(child, ast.ClassDef)
                           else ("function", MAX_FUNCTION_LINES))
            if lines > limit and f"{where}:{name}" not in skip:
                found.append(f"{where}:{name}: {lines} lines ({kind})")
            found.extend(_oversized_in(child, where, name + ".", skip))
        else:
            found.extend(_oversized_in(child, where, outer, skip))
    return found


def test_the_graph_sees_absolute_and_relative_imports(tmp_path):
    known = {name: Source(name, tmp_path / f"{name}.py", False)
             for name in ("hilbert.compiler.ir", "hilbert.compiler.ir.verify",
                          "hilbert.compiler.plan", "hilbert.compiler.plan.text")}
    package = Source("hilbert.compiler.plan", tmp_path / "plan.py", True)
    package.path.write_text(
        "from . import text\nfrom ..ir import verify\n"
        "def late():\n    import hilbert.compiler.ir\n")
    assert imports(package, known) == {"hilbert.compiler.plan.text", "hilbert.compiler.ir.verify",
                                       "hilbert.compiler.ir"}
    module = Source("hilbert.compiler.plan.text", tmp_path / "text.py", False)
    module.path.write_text("from typing import TYPE_CHECKING\nfrom .. import ir\n"
                           "if TYPE_CHECKING:\n    from hilbert.compiler.plan import Plan\n")
    assert imports(module, known) == {"hilbert.compiler.ir", "hilbert.compiler.plan"}
    assert imports(module, known, typing=False) == {"hilbert.compiler.ir"}


def test_circles_are_found():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(edges) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_layers_are_ordered():
    assert [layer(n) for n in ("hilbert.grammar.errors", "hilbert.compiler.ir",
                               "hilbert.executor.codegen.loops", "hilbert.api", "benchmarks.runner",
                               "hilbert.cli_bench")] == [0, 1, 2, 3, 4, 5]
    assert reversed_imports({"hilbert.executor.codegen.sums": {"hilbert.executor.numba.pairwise"},
                             "hilbert.executor.numba.pairwise": {"hilbert.executor.codegen.sums"},
                             "hilbert.compiler.plan.hyper": {"hilbert.progress"},
                             "hilbert.progress": {"hilbert.compiler.settings"}}) == [
        "hilbert.compiler.plan.hyper imports hilbert.progress",
        "hilbert.executor.codegen.sums imports hilbert.executor.numba.pairwise"]


def test_lower_layers_never_import_higher_ones():
    wrong = reversed_imports(graph())
    assert [w for w in wrong if w not in IMPORT_EXCEPTIONS] == []
    assert IMPORT_EXCEPTIONS <= set(wrong), "an exception is fixed: remove it from the list"


def test_no_import_circles():
    found = circles(graph(typing=False))
    assert [c for c in found if c not in CIRCLE_EXCEPTIONS] == []
    assert all(c in found for c in CIRCLE_EXCEPTIONS), "a circle is broken: remove it from the list"


def test_no_module_class_or_function_over_its_size():
    assert oversized() == []
    every = oversized(skip={})
    assert all(any(line.startswith(key + ":") for line in every) for key in SIZE_EXCEPTIONS), \
        "an exception is split: remove it from the list"


def absolute_imports_with_a_relative_form() -> list[str]:
    """`from hilbert.… import` statements of the packages whose relative form also leads to the
    file on disk (grammar/, compiler/ and executor/ are folders side by side at the top, so
    `..compiler` from executor/ is the folder compiler/; hilbert/'s own modules are `.x`), so
    that a tool following files sees the real structure. What stays absolute: hilbert/'s
    imports of the three (no folder hilbert/compiler exists) and the listed upward imports."""
    known = sources()
    below = ("grammar", "compiler", "executor")
    found = []
    for source in known.values():
        if source.name.startswith("benchmarks"):
            continue
        home = source.path.relative_to(ROOT).parts[0]
        for node in ast.walk(_parsed(source.path)):
            if not isinstance(node, ast.ImportFrom) or node.level or not node.module:
                continue
            target = _known(node.module, known)
            if target is None or not target.startswith("hilbert"):
                continue
            there = known[target].path.relative_to(ROOT).parts[0]
            same_tree = (home in below and there in below) or (home == there == "hilbert")
            if same_tree and f"{source.name} imports {target}" not in IMPORT_EXCEPTIONS:
                found.append(f"{source.path.relative_to(ROOT)}:{node.lineno} from {node.module}")
    return found


def test_imports_inside_the_packages_are_relative():
    assert absolute_imports_with_a_relative_form() == []
