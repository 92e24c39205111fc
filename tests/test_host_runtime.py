"""One host runtime: the dask executor walks the IR and runs its loops through the host core
(compiler/evaluate.py's `Host`, loops in compiler/loops.py), defining no walk or loop runner
of its own; executor/reference.py is the reference executor only, which no module of the
package imports but the executor registry (tests use it as the oracle)."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
from conftest import RTOL, assert_agree, needs
from hilbert.compiler import evaluate, ir

import hilbert

ROOT = Path(__file__).resolve().parent.parent
#: The package's folders and the module names they are installed as (pyproject's package-dir).
PACKAGES = {"grammar": "hilbert.grammar", "compiler": "hilbert.compiler",
            "executor": "hilbert.executor", "hilbert": "hilbert", "benchmarks": "benchmarks"}
REFERENCE = "hilbert.executor.reference"
#: The core's walk and loop runners (compiler/evaluate.py, compiler/loops.py), by name.
RUNNERS = {"evaluate", "eval", "needs", "run_loop", "_run_loop", "run_loop_grad", "_loop_grad",
           "_step", "_advance", "step_count", "tape_guard"}


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    names = [PACKAGES[parts[0]], *parts[1:]]
    return ".".join(names[:-1] if names[-1] == "__init__" else names)


def _imports(path: Path) -> set[str]:
    """Every module the module at `path` imports (`_imported`)."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    return _imported(path.read_text(encoding="utf-8"), package)


def _imported(source: str, package: str) -> set[str]:
    """Every module `source`, a module of `package`, imports (relative imports resolved;
    `from a import b` counts as both `a` and `a.b`), and every string naming a module of
    hilbert (an import by name, importlib's)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[:len(package.split(".")) - node.level + 1] \
                if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                node.value.startswith("hilbert."):
            found.add(node.value)
    return found


def _sources() -> list[Path]:
    return sorted(p for folder in PACKAGES for p in (ROOT / folder).rglob("*.py"))


def test_the_import_scan_resolves_relative_and_absolute_imports():
    """The scan below sees an import however it is written (a check of the test itself)."""
    written = ("from . import reference\nfrom ..compiler.loops import run_loop\n"
               "import hilbert.grammar.errors\nfrom hilbert.executor.reference import x\n"
               "load('hilbert.executor.jax.executor')\n")
    found = _imported(written, "hilbert.executor")
    assert {REFERENCE, "hilbert.compiler.loops.run_loop", "hilbert.grammar.errors",
            "hilbert.executor.jax.executor"} <= found
    found = _imports(ROOT / "executor" / "dask" / "graph.py")
    assert "hilbert.compiler.evaluate" in found and "hilbert.compiler.evaluate.Host" in found
    assert _module_name(ROOT / "executor" / "__init__.py") == "hilbert.executor"
    assert _module_name(ROOT / "executor" / "dask" / "graph.py") == "hilbert.executor.dask.graph"


def test_only_the_executor_registry_imports_the_reference_executor():
    """executor/reference.py is the reference executor, not a runtime library: the host core
    and the loops are the other runtimes' (compiler/evaluate.py, compiler/loops.py), and
    the only module of the package that imports it is the registry (`get_executor`)."""
    importers = [str(p.relative_to(ROOT)) for p in _sources() if REFERENCE in _imports(p)]
    assert importers == ["executor/__init__.py"]


def test_the_dask_executor_defines_no_walk_or_loop_runner_of_its_own():
    """The dask package holds no `while` loop (a walk of the IR and a loop's steps each need
    one) and no function of the core's runners' names; its graph is the host core with hooks,
    leaving `eval`, `loop`'s steps and `loop_grad`'s tape to the core."""
    for path in sorted((ROOT / "executor" / "dask").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        whiles = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.While)]
        assert whiles == [], f"{path.name} lines {whiles}"
        defined = {node.name for node in ast.walk(tree)
                   if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
        assert defined & RUNNERS == set(), path.name


LOOPED = """
def run(t, w, x) ≔ if t = 0 then w else run(t − 1, tanh(einsum("ij,jk->ik", w, x)), x)
fn iterate(t, w, x) ↦ run(t, w, x)
fn pick(s, x) ↦ if s > 0 then x · 2 else einsum("ij->ji", x)
"""


def test_a_looped_program_and_a_branch_run_on_dask_through_the_shared_host(monkeypatch, rng):
    """A self-recursive program (a counted loop) and an `if` on dask: equal to NumPy written
    here, the loop run by the core's runner (compiler/loops.run_loop, called by `Host.loop`),
    the branch chosen by the core's `needs`."""
    da = needs("dask.array")
    from hilbert.executor.dask.graph import DaskGraph

    assert issubclass(DaskGraph, evaluate.Host)
    loops: list[str] = []
    branches: list[ir.Cond] = []
    run_loop, choose = evaluate.run_loop, evaluate.needs
    monkeypatch.setattr(evaluate, "run_loop",
                        lambda loop, *a, **k: loops.append(loop.name) or run_loop(loop, *a, **k))
    monkeypatch.setattr(evaluate, "needs", lambda node, memo: (
        branches.append(node) if isinstance(node, ir.Cond) else None) or choose(node, memo))
    module = hilbert.compile_source(LOOPED)
    w, x = rng.normal(size=(6, 4)) * 0.5, rng.normal(size=(4, 4)) * 0.5
    want = w
    for _ in range(5):
        want = np.tanh(want @ x)
    iterate = module.iterate.using("dask", chunks=2)
    assert_agree(iterate(5, da.from_array(w, chunks=2), x).compute(), want, RTOL)
    assert loops and iterate.program(((), (6, 4), (4, 4))).loop_steps == 5
    pick = module.pick.using("dask", chunks=2)
    np.testing.assert_array_equal(pick(1.0, x), x * 2)
    np.testing.assert_array_equal(pick(-1.0, x), x.T)
    assert branches
