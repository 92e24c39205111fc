"""The golden guard (docs/testing.md): the plan text and every generated source of a fixed list
of programs, recorded once so that a refactor of the code generator shows each change it makes.

    python tests/golden/record.py              # the diff against the records; exit 1 if any
    python tests/golden/record.py --update     # rewrite the records, printing the diff applied
    python tests/golden/record.py --collect    # rebuild programs.json (then run --update)

A program is a function of a module at argument shapes (programs.json). Rendering it loads the
module with the numba executor, prepares the program for those shapes and writes its plan (as
prepared, before any call: with the schedule of its generated code, which the plan holds
before anything is built) and each function generated for its second tier. Nothing is
compiled or run. The environment
settings that change what is generated are pinned (PINNED), so records do not depend on the
machine or on the caller's settings.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import functools
import hashlib
import json
import os
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hilbert.api import Function

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
PROGRAMS = HERE / "programs.json"
RECORDED = HERE / "recorded"

#: The settings a render runs under: nothing compiles (HILBERT_COMPILE), nests are serial
#: whatever the cores (HILBERT_THREADS), no op is forced to the host, and the memory guard's
#: limit does not follow the machine's memory (half of RAM by default).
PINNED = {"HILBERT_COMPILE": "never", "HILBERT_THREADS": "1", "HILBERT_NUMBA_HOST": "",
          "HILBERT_MEMORY_LIMIT": "64G"}

#: The Prelude's tests, run once by --collect to find the Prelude's programs.
PRELUDE_TESTS = "tests/test_prelude_*.py"
#: The most Prelude programs kept at every shapes its tests prepare (454 at b22678d, rendered
#: in about 12 s on one core); past it, each function is kept at its first shapes only.
PRELUDE_CAP = 1000

#: Benchmark groups and cases --collect leaves out: the `startup` group's cases run everything
#: in fresh processes and have no `ours`; `compile` starts second processes while it is built
#: and its `ours` compiles a module without calling any function. Cases whose `ours` is None
#: (path-search, first-call: they time planning and fresh processes themselves) are left out
#: after they are built.
SKIPPED_GROUPS = ("startup",)
SKIPPED_CASES = ("compile",)

Program = dict[str, Any]


# ------------------------------------------------------------------------------ rendering


#: The thread count the threaded variants of the benchmark programs are generated for (a
#: program with "threads" in programs.json): the code a machine with that many cores and a
#: thread-safe threading layer gets under HILBERT_THREADS=auto, whatever this machine has.
THREADS = 4


@contextlib.contextmanager
def pinned_environment(count: int = 1) -> Iterator[None]:
    """PINNED set in os.environ (and the thread count read again) while inside; with `count`
    above 1, nests are generated for that many threads (threads.count says so, and
    HILBERT_THREADS is set to it, so plans are kept apart)."""
    from hilbert.executor import threads

    saved = {name: os.environ.get(name) for name in PINNED}
    os.environ.update(PINNED, HILBERT_THREADS=str(count))
    threads.forget()
    counting = threads.count
    if count > 1:
        threads.count = lambda: count  # type: ignore[assignment]
    try:
        yield
    finally:
        threads.count = counting  # type: ignore[assignment]
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        threads.forget()


@contextlib.contextmanager
def in_root() -> Iterator[None]:
    """The repository root as the working directory while inside (files load by a path
    relative to it, which their spans, and so the plans, show)."""
    before = os.getcwd()
    os.chdir(ROOT)
    try:
        yield
    finally:
        os.chdir(before)


@functools.cache
def _module(spec_text: str):
    """The module a program's `module` entry (as JSON text) names, loaded once per process."""
    import hilbert

    spec = json.loads(spec_text)
    if "open" in spec:
        return hilbert.open(spec["open"])
    if "load" in spec:
        with in_root():
            return hilbert.load(spec["load"])
    return hilbert.compile_source(spec["source"], name=spec["name"])


def function_of(program: Program) -> Function:
    """The Function a program calls: a definition, or `Model.member` of a model."""
    module = _module(json.dumps(program["module"], sort_keys=True))
    name = program["function"]
    if "." in name:
        model, member = name.split(".", 1)
        return module.model(model)._functions[member]
    return module.function(name)


def shapes_of(program: Program) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(int(n) for n in shape) for shape in program["shapes"])


def error_text(err: BaseException) -> str:
    """An error as a record shows it: its type and message, with no memory address."""
    text = f"error: {type(err).__name__}: {err}"
    return re.sub(r"0x[0-9a-fA-F]+", "0x…", text)


def render(program: Program) -> str:
    """The record of one program: what it is, its plan as prepared, then its generated code."""
    head = [f"program: {program['function']} of {json.dumps(program['module'], ensure_ascii=False)}",
            f"shapes: {json.dumps(program['shapes'])}", ""]
    if program.get("threads", 1) > 1:
        head.insert(2, f"threads: {program['threads']}")
    if "dtype" in program:
        head.insert(2, f"dtype: {program['dtype']}")
    with pinned_environment(program.get("threads", 1)):
        try:
            # prepared afresh (a Function keeps programs by shapes alone, whatever the threads)
            prepared = function_of(program)._prepare(shapes_of(program),
                                                     program.get("dtype", "float64"))
            body = ["== plan", str(prepared.plan), ""]
        except Exception as err:  # noqa: BLE001 (a program that cannot be prepared is recorded so)
            return "\n".join([*head, error_text(err)]) + "\n"
        body += generated_code(prepared)
    return "\n".join([*head, *body]).rstrip("\n") + "\n"


def generated_code(prepared: Any) -> list[str]:
    """The second tier of a numba program as lines: every generated function (compiled, or
    plain NumPy calls), whose schedule the plan above says. Generated here; nothing is
    compiled."""
    from hilbert.executor.numba.executor import regions_of as _regions

    try:
        lines = ["== second tier"]
        regions = _regions(prepared.runner)
        for number, region in enumerate(regions, 1):
            how = "compiled" if region.generated.compiled else "plain NumPy, not compiled"
            lines += [f"== generated {number} of {len(regions)} ({how})", region.source]
    except Exception as err:  # noqa: BLE001 (code that cannot be generated is recorded so)
        return ["== second tier", error_text(err)]
    return lines


# ------------------------------------------------------------------------------ records


def read_programs() -> list[Program]:
    return json.loads(PROGRAMS.read_text(encoding="utf-8"))


def write_programs(programs: list[Program]) -> None:
    """programs.json: a list, one program a line."""
    lines = [json.dumps(p, ensure_ascii=False) for p in programs]
    PROGRAMS.write_text("[\n" + ",\n".join(lines) + "\n]\n", encoding="utf-8")


def record_path(program: Program) -> Path:
    return RECORDED / f"{program['name']}.txt"


def recorded_names() -> set[str]:
    """The names of the records on disk."""
    return {path.stem for path in RECORDED.glob("*.txt")}


def diff(name: str, recorded: str, rendered: str) -> list[str]:
    """The unified diff from a record to what is rendered now (empty when equal)."""
    return list(difflib.unified_diff(recorded.splitlines(), rendered.splitlines(),
                                     f"recorded/{name}.txt", f"rendered/{name}.txt", lineterm=""))


def read_record(name: str) -> str:
    path = RECORDED / f"{name}.txt"
    return path.read_text(encoding="utf-8") if path.exists() else ""


def check(update: bool) -> int:
    """Render every program and print the diff against its record (and of records no program
    has); with `update`, write the renders and delete those records. 1 if anything differed."""
    programs = read_programs()
    changed = False
    for program in programs:
        rendered = render(program)
        lines = diff(program["name"], read_record(program["name"]), rendered)
        if lines:
            changed = True
            print("\n".join(lines))
            if update:
                RECORDED.mkdir(exist_ok=True)
                record_path(program).write_text(rendered, encoding="utf-8")
    for name in sorted(recorded_names() - {p["name"] for p in programs}):
        changed = True
        print("\n".join(diff(name, read_record(name), "")))
        if update:
            (RECORDED / f"{name}.txt").unlink()
    if changed:
        print("records updated" if update else "the generated code differs from the records: "
              "run `make golden` to see and accept the change", file=sys.stderr)
    return int(changed and not update)


# ------------------------------------------------------------------------------ collecting


class _Stop(BaseException):
    """Raised by a patched call to stop it before anything is planned or run."""


def module_spec(compiled: Any) -> dict | None:
    """How to load a compiled module again: {"open": dotted name}, {"load": path relative to
    the repository root}, or {"source": text, "name": its name}; None for a file elsewhere."""
    root = next(iter(compiled.resolved.scopes.values())).module
    if compiled.key != str(root):  # hilbert.open keys a module by the name asked for
        return {"open": compiled.key}
    if root.directory is not None:  # hilbert.load: read from a file
        path = Path(root.key)
        if not path.is_relative_to(ROOT):
            return None
        return {"load": path.relative_to(ROOT).as_posix()}
    return {"source": root.syntax.span.source.text, "name": str(root)}


def program_of(function: Function, shapes: tuple, dtype: str | None = None) -> Program | None:
    """A program as programs.json keeps it, for a Function called at `shapes` in `dtype` (kept
    only when it is not float64)."""
    module = module_spec(function.module)
    if module is None:
        return None
    found = {"module": module, "function": function.entry.name,
             "shapes": [list(shape) for shape in shapes]}
    return found | ({"dtype": dtype} if dtype not in (None, "float64") else {})


@contextlib.contextmanager
def patched(cls: type, **methods: Callable) -> Iterator[None]:
    """`cls`'s methods replaced by these while inside."""
    saved = {name: cls.__dict__[name] for name in methods}
    for name, method in methods.items():
        setattr(cls, name, method)
    try:
        yield
    finally:
        for name, method in saved.items():
            setattr(cls, name, method)


def preparing(found: list[Program], keep: Callable[[Program], bool]) -> dict[str, Callable]:
    """Function._prepare that notes each program it prepares (kept if `keep` says so), then
    prepares it."""
    from hilbert.api import Function

    prepare = Function._prepare

    def noted(self, shapes, dtype, values=None):
        program = program_of(self, shapes, dtype)
        if program is not None and keep(program):
            found.append(program)
        return prepare(self, shapes, dtype, values)

    return {"_prepare": noted}


def stopping(found: list[Program]) -> dict[str, Callable]:
    """Function.__call__ and Function.program that note the program they were asked for, then
    stop (_Stop) before it is planned or run."""
    from hilbert.compiler.arguments import bind_arguments

    def call(self, *args, **kwargs):
        values = bind_arguments(self.entry, args, kwargs, self.dtype)
        dtype = self.dtype or (values[0].dtype.name if values else None)
        return program(self, tuple(v.shape for v in values), dtype)

    def program(self, shapes, dtype=None):
        noted = program_of(self, shapes, dtype or self.dtype)
        if noted is not None:
            found.append(noted)
        raise _Stop

    return {"__call__": call, "program": program}


def bench_programs() -> list[Program]:
    """The program each benchmark case's `ours` calls (and those its setup prepares), in report
    order, at the quick sizes; a case's setup is built, but nothing of ours runs."""
    from benchmarks.cases import ALL, Config
    from hilbert.api import Function

    config = Config(quick=True, optional=False)
    programs: list[Program] = []
    for case in ALL:
        if case.group in SKIPPED_GROUPS or case.name in SKIPPED_CASES:
            continue
        found: list[Program] = []
        try:
            with patched(Function, **preparing(found, lambda _: True)):
                setup = case.build(config)
        except ImportError as err:  # (first-call needs einsum_benchmark; it has no ours)
            print(f"left out {case.name}: {err}", file=sys.stderr)
            continue
        if setup.ours is None:
            continue
        with patched(Function, **stopping(found)), contextlib.suppress(_Stop):
            setup.ours()
        programs += [{"group": "bench", "case": case.name, **p} for p in unique(found)]
    return programs


def prelude_programs() -> list[Program]:
    """Every program of a Prelude module the Prelude's tests prepare: each function at every
    shapes they prepare it for, or past PRELUDE_CAP programs at its first shapes only (so the
    check stays quick)."""
    import pytest

    from hilbert.api import Function

    found: list[Program] = []
    tests = sorted(str(p.relative_to(ROOT)) for p in ROOT.glob(PRELUDE_TESTS))
    with in_root(), patched(Function, **preparing(found, from_prelude)):
        code = pytest.main(["-q", "-p", "no:cacheprovider", *tests])
    if code != 0:
        print(f"the Prelude's tests exited with {code}; the programs they prepared are kept",
              file=sys.stderr)
    programs = unique(found)
    if len(programs) > PRELUDE_CAP:
        programs = unique(found, shapes=False)
    return [{"group": "prelude", **p} for p in sorted(programs, key=_key)]


def from_prelude(program: Program) -> bool:
    return program["module"].get("open", "").startswith("Prelude")


def _key(program: Program, shapes: bool = True) -> str:
    """A program's identity as text: its module, function and (unless not) shapes."""
    parts = [program["module"], program["function"]] + ([program["shapes"]] if shapes else [])
    parts += [program["dtype"]] if "dtype" in program else []
    return json.dumps(parts, sort_keys=True, ensure_ascii=False)


def unique(programs: list[Program], shapes: bool = True) -> list[Program]:
    """Each program (or, unless `shapes`, each function) once, where it came first."""
    first: dict[str, Program] = {}
    for program in programs:
        first.setdefault(_key(program, shapes), program)
    return list(first.values())


def named(programs: list[Program]) -> list[Program]:
    """Programs with a file name each: bench__CASE__FUNCTION (and the shapes when a case has
    several) or prelude__MODULE__FUNCTION__SHAPES, in ASCII."""
    cases = [p["case"] for p in programs if p["group"] == "bench"]
    for p in programs:
        if p["group"] == "bench":
            parts = ["bench", p["case"], p["function"]]
            if cases.count(p["case"]) > 1:
                parts.append(shapes_label(p["shapes"]))
        else:
            parts = ["prelude", p["module"]["open"].removeprefix("Prelude."), p["function"],
                     shapes_label(p["shapes"])]
        if "dtype" in p:
            parts.append(p["dtype"])
        p["name"] = "__".join(ascii_name(part) for part in parts)
    names = [p["name"].lower() for p in programs]  # (one file each, whatever the file system)
    assert len(set(names)) == len(names), "two programs would share a record"
    return programs


def shapes_label(shapes: list[list[int]]) -> str:
    """Shapes as `4x2_scalar`; past 60 characters, cut and ended with a hash of them."""
    text = "_".join("x".join(map(str, s)) or "scalar" for s in shapes) or "none"
    if len(text) > 60:
        text = text[:48] + "-" + hashlib.sha256(text.encode()).hexdigest()[:8]
    return text


def ascii_name(text: str) -> str:
    """`text` with every character but ASCII letters, digits, `.`, `_` and `-` written uNNNN."""
    return "".join(c if re.fullmatch(r"[A-Za-z0-9._-]", c) else f"u{ord(c):04x}" for c in text)


def collect() -> list[Program]:
    """programs.json made again: the benchmark cases' programs, then the Prelude's, then the
    benchmark programs again generated for THREADS threads (parallel nests)."""
    with pinned_environment():
        programs = named(unique(bench_programs() + prelude_programs()))
    return programs + threaded(programs)


def threaded(programs: list[Program]) -> list[Program]:
    """The benchmark programs, each generated for THREADS threads, named …__threadsN."""
    return [{**p, "group": "bench-threads", "threads": THREADS,
             "name": f"{p['name']}__threads{THREADS}"} for p in programs if p["group"] == "bench"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--update", action="store_true",
                        help="rewrite the records, printing the diff applied")
    action.add_argument("--collect", action="store_true",
                        help="make programs.json again from the benchmarks and Prelude tests")
    options = parser.parse_args(argv)
    if options.collect:
        programs = collect()
        write_programs(programs)
        groups = [p["group"] for p in programs]
        print(f"{PROGRAMS.relative_to(ROOT)}: {groups.count('bench')} bench, "
              f"{groups.count('prelude')} prelude programs; now run --update")
        return 0
    return check(update=options.update)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))  # (benchmarks, and hilbert without an install)
    sys.exit(main())
