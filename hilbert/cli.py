"""The `hilbert` command: check, run, plan, bench and demo."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from hilbert.grammar.errors import HilbertError

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hilbert", description="Compile and run .hb tensor "
                                     "mathematics.")
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check", help="compile files and report every diagnostic")
    check.add_argument("files", nargs="+", type=Path)
    run = sub.add_parser("run", help="call a function of a file with arguments")
    run.add_argument("file", type=Path)
    run.add_argument("function")
    run.add_argument("args", nargs="*", help="numbers, JSON lists, or .npy/.csv paths")
    run.add_argument("--executor", default="numba", choices=["numba", "reference"])
    plan = sub.add_parser("plan", help="print the plan of a function for given shapes")
    plan.add_argument("file", type=Path)
    plan.add_argument("function")
    plan.add_argument("--shape", action="append", default=[], metavar="NAME=4x2",
                      help="a parameter's shape (omit for a scalar)")
    plan.add_argument("--optimize", default=None, help="opt_einsum path optimiser")
    plan.add_argument("--json", action="store_true", help="print the plan as JSON")
    bench = sub.add_parser("bench", help="run the benchmark suite (needs a source checkout)")
    bench.add_argument("cases", nargs="*")
    bench.add_argument("--quick", action="store_true")
    bench.add_argument("--executor", default="numba", choices=["numba", "reference"])
    sub.add_parser("demo", help="run the seed's examples beside their verified outputs")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as stop:
        return int(stop.code or 0)
    try:
        return _COMMANDS[args.command](args)
    except HilbertError as err:
        print(err, file=sys.stderr)
        return EXIT_ERROR
    except UsageError as err:
        print(f"hilbert: {err}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # output piped into `head` and closed early: not an error
        sys.stderr.close()
        return EXIT_OK


class UsageError(Exception):
    """A command-line mistake (exit 2)."""


def _check(args) -> int:
    import hilbert

    failed = 0
    for path in args.files:
        if not path.is_file():
            print(f"hilbert: {path}: no such file", file=sys.stderr)
            failed += 1
            continue
        try:
            module = hilbert.load(path)
            for name in module.definitions:  # entries are built on first use: build them all
                module.function(name)
        except HilbertError as err:
            print(err, file=sys.stderr)
            failed += 1
        else:
            functions = len(module.names) - len(module.models)
            print(f"{path}: ok ({len(module.definitions)} definition(s), {functions} fn(s), "
                  f"{len(module.models)} model(s))")
    return EXIT_ERROR if failed else EXIT_OK


def parse_value(text: str):
    """A command-line argument: a number, a JSON list, or a .npy / .csv path."""
    if text.endswith(".npy"):
        return np.load(text, allow_pickle=False)
    if text.endswith(".csv"):
        return np.loadtxt(text, delimiter=",", ndmin=2)
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise UsageError(f"cannot read argument {text!r}: give a number, a JSON list, or a "
                         ".npy/.csv path") from None


def _function(path: Path, name: str, executor: str = "numba"):
    import hilbert

    if not path.is_file():
        raise UsageError(f"{path}: no such file")
    module = hilbert.load(path, executor=executor, export_all=True)
    try:
        return module.function(name)
    except AttributeError:
        raise UsageError(f"{path} has no definition {name!r} (it has: "
                         f"{', '.join(module.names)})") from None


def _run(args) -> int:
    function = _function(args.file, args.function, args.executor)
    try:
        values = [parse_value(a) for a in args.args]
    except (OSError, ValueError) as err:
        raise UsageError(str(err)) from None
    result = function(*values)
    print(json.dumps(np.asarray(result).tolist()) if not isinstance(result, float) else repr(result))
    return EXIT_OK


def parse_shape(text: str) -> tuple[str, tuple[int, ...]]:
    """NAME=4x2 (or NAME=scalar) as a name and a shape."""
    name, _, dims = text.partition("=")
    if not name or not _:
        raise UsageError(f"--shape {text!r}: write NAME=4x2")
    if dims in ("", "scalar"):
        return name, ()
    try:
        return name, tuple(int(d) for d in dims.replace("×", "x").split("x"))
    except ValueError:
        raise UsageError(f"--shape {text!r}: sizes must be whole numbers, as 4x2") from None


def _plan(args) -> int:
    function = _function(args.file, args.function)
    given = dict(parse_shape(s) for s in args.shape)
    unknown = set(given) - set(function.entry.params)
    if unknown:
        raise UsageError(f"{args.function} has no parameter(s) {', '.join(sorted(unknown))}")
    shapes = [given.get(p, ()) for p in function.entry.params]
    if args.optimize:
        function = function.using(optimize=args.optimize)
    plan = function.plan(*shapes)
    print(json.dumps(plan.to_dict(), indent=2) if args.json else plan)
    return EXIT_OK


def _bench(args) -> int:
    root = Path(__file__).resolve().parent.parent
    if not (root / "benchmarks" / "runner.py").is_file():
        raise UsageError("hilbert bench needs a source checkout (benchmarks/ was not found)")
    sys.path.insert(0, str(root))
    from benchmarks.runner import main as bench_main

    return bench_main(args.cases, quick=args.quick, executor=args.executor)


def _demo(args) -> int:
    from hilbert.demo import run_demo

    return EXIT_OK if run_demo() else EXIT_ERROR


_COMMANDS = {"check": _check, "run": _run, "plan": _plan, "bench": _bench, "demo": _demo}


if __name__ == "__main__":
    sys.exit(main())
