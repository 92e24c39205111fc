"""The `hilbert` command: check, run, plan, bench and demo."""

from __future__ import annotations

import argparse
import errno
import json
import math
import os
import re
import sys
from pathlib import Path

import numpy as np

from hilbert.bench import DEFAULT_OPTIMISERS, PLOT_FORMATS, output_path_problem
from hilbert.compiler.plan import OPTIMISERS
from hilbert.grammar.errors import HilbertError
from hilbert.lexer import colour

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130

#: What `run` reads as a number although it starts with "-" (argparse would take it for an
#: option): -2, -.5, -1e3, -inf, -Infinity, -nan.
_NEGATIVE_VALUE = re.compile(r"^-(\d|\.\d|inf|nan)", re.IGNORECASE)
#: A number as a bare argument: decimal (1, -2.5, .5, 1e3) or infinity and NaN spelled as
#: JSON does (Infinity, -Infinity, NaN) or as Python and NumPy do (inf, -inf, nan).
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?|[+-]?(inf|infinity|nan)", re.IGNORECASE)
#: A size in --shape: ASCII digits only (int() would also take "+3", " 3", "3_0" and "٣").
_SIZE = re.compile(r"[0-9]+")
#: No NumPy array has this many elements or more (sizes are signed 64-bit).
_MOST_ELEMENTS = 2**63


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hilbert", description="Compile and run .hb tensor "
                                     "mathematics.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    check = sub.add_parser("check", help="compile files and report every diagnostic",
                           description="Compile each file (and what it opens) and report every "
                           "diagnostic.")
    check.add_argument("files", nargs="+", type=Path, metavar="FILE", help="a .hb file")
    run = sub.add_parser("run", help="call a function of a file with arguments",
                         description="Call a function (or any definition) of a file and print "
                         "its result: a number, or an array as a JSON list; a tuple prints one "
                         "component a line, each after its position ([0]: …, [1]: …).")
    # argparse reads "-inf" or "-1e3" as an unknown option unless its negative-number pattern
    # matches; `run` has no option that looks like a number, so widen the pattern.
    run._negative_number_matcher = _NEGATIVE_VALUE
    run.add_argument("file", type=Path, metavar="FILE", help="the .hb file")
    run.add_argument("function", metavar="FN", help="a function or definition of FILE")
    run.add_argument("args", nargs="*", metavar="ARG",
                     help="numbers, JSON lists, or .npy/.csv paths, one per parameter")
    run.add_argument("--json", action="store_true",
                     help="print the result as one JSON value (a tuple as a JSON list of its "
                     "components)")
    _executor_option(run, dask=True)
    plan = sub.add_parser("plan", help="print the plan of a function for given shapes",
                          description="Print how a function will compute for given argument "
                          "shapes: contraction paths, FLOPs, loops, memory.")
    plan.add_argument("file", type=Path, metavar="FILE", help="the .hb file")
    plan.add_argument("function", metavar="FN", help="a function or definition of FILE")
    _shape_option(plan, "a parameter's shape (omit for a scalar)")
    plan.add_argument("--optimize", default=None, metavar="NAME",
                      help=f"the opt_einsum path optimiser (one of: {', '.join(OPTIMISERS)}; "
                      "default auto)")
    plan.add_argument("--json", action="store_true", help="print the plan as JSON")
    plan.add_argument("--build", action="store_true",
                      help="also compile the program for these shapes now, so that a failure "
                      "shows here rather than at the first call (numba)")
    _executor_option(plan, dask=True, text="the executor whose plan to show (dask: blocks and "
                     "task graph)")
    plan.add_argument("--chunks", action="append", default=[], metavar="[NAME=]ROWS",
                      help="dask: rows per block of the first array argument, or of NAME")
    _bench_parser(sub)
    sub.add_parser("demo", help="run the seed's examples beside their verified outputs",
                   description="Run every example of the Networks seed beside its verified "
                   "output.")
    for command in sub.choices.values():
        command.add_argument("--color", default="auto", choices=["auto", "always", "never"],
                             help="colour plans and errors: auto (when writing to a terminal "
                             "and NO_COLOR is not set), always, or never")
    return parser


def _executor_option(parser: argparse.ArgumentParser, dask: bool = False,
                     text: str = "what runs the code: numba (compiled, the default), reference "
                     "(the NumPy interpreter) or dask (blocks, on a cluster: the dask extra)") -> None:
    choices = ["numba", "reference", "dask"] if dask else ["numba", "reference"]
    if not dask:
        text = text.replace(" or dask (blocks, on a cluster: the dask extra)", "").replace(
            "the default), reference", "the default) or reference")
    parser.add_argument("--executor", default="numba", choices=choices, help=text)


def _shape_option(parser: argparse.ArgumentParser, text: str) -> None:
    parser.add_argument("--shape", action="append", default=[], metavar="NAME=4x2", help=text)


def _bench_parser(sub) -> None:
    bench = sub.add_parser(
        "bench", help="time a function of yours for each path optimiser, or run the suite",
        usage="hilbert bench FILE FN [--shape NAME=4x2]… [--value NAME=V]… [--optimize LIST] "
              "[--repeat N] [--json OUT] [--plot OUT.png]\n"
              "       hilbert bench --suite [CASE…] [--quick] | hilbert bench --list",
        description="Time FN of FILE, for each path optimiser, beside numpy.einsum(optimize="
                    "True) and opt_einsum.contract_expression on the same einsums: planning, "
                    "first call and warm call, with FLOPs, the largest intermediate and ratios. "
                    "With --suite, run the built-in benchmark suite (a source checkout) instead.")
    bench.add_argument("targets", nargs="*", metavar="FILE FN | CASE",
                       help="a .hb file and one of its functions; with --suite, case names, "
                       "group names or globs (every case if none)")
    _shape_option(bench, "a parameter's shape; its values are drawn from a standard normal "
                  "(seed 0). A parameter given neither --shape nor --value is a random scalar")
    bench.add_argument("--value", action="append", default=[], metavar="NAME=V",
                       help="a parameter's value, read as `hilbert run` reads arguments: "
                       "for step counts and other values that matter")
    bench.add_argument("--optimize", metavar="LIST",
                       help="path optimisers to compare, separated by commas (default "
                       f"{','.join(DEFAULT_OPTIMISERS)}; any of: {', '.join(OPTIMISERS)})")
    bench.add_argument("--repeat", type=int, metavar="N",
                       help="timed repeats of the warm call per contestant, each looping "
                       "calls for at least 50 ms (default 5)")
    bench.add_argument("--json", metavar="OUT",
                       help="also write the results as JSON to OUT (- prints JSON instead of "
                       "the table)")
    bench.add_argument("--plot", metavar="OUT.png",
                       help="also draw the times as a bar chart (needs matplotlib), in the "
                       f"format OUT's extension names: {', '.join('.' + f for f in PLOT_FORMATS)}")
    bench.add_argument("--suite", action="store_true",
                       help="run the built-in benchmark suite instead (needs a source checkout; "
                       "writes benchmarks/results/)")
    bench.add_argument("--list", action="store_true", help="list the suite's cases and stop")
    bench.add_argument("--quick", action="store_true",
                       help="with --suite: fewer repeats and smaller sizes (under 3 minutes "
                       "on 2 cores)")
    _executor_option(bench)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as stop:  # --help, or a usage error argparse has reported
        _flush()
        return stop.code if isinstance(stop.code, int) else EXIT_USAGE
    except KeyboardInterrupt:
        _complain("hilbert: interrupted")
        return EXIT_INTERRUPTED
    return _run_command(args)


def _run_command(args) -> int:
    """Run the command; every failure becomes a message on stderr and an exit code."""
    try:
        code = _COMMANDS[args.command](args)
        sys.stdout.flush()  # so a failing write is reported here, not as Python exits
        return code
    except HilbertError as err:
        _complain(colour(str(err), sys.stderr, args.color))
        return EXIT_ERROR
    except UsageError as err:
        _complain(f"hilbert: {err}")
        return EXIT_USAGE
    except OutputError as err:
        _complain(f"hilbert: {err}")
        return EXIT_ERROR
    except OSError as err:  # writing the output failed: files read are reported earlier
        _silence_stdout()
        if err.errno == errno.EPIPE:  # output piped into `head` and closed early: not an error
            return EXIT_OK
        _complain(f"hilbert: cannot write the output: {err.strerror or err}")
        return EXIT_ERROR
    except MemoryError:
        _complain("hilbert: out of memory (a lower HILBERT_MEMORY_LIMIT refuses such work "
                  "before it starts)")
        return EXIT_ERROR
    except KeyboardInterrupt:
        _complain("hilbert: interrupted")
        return EXIT_INTERRUPTED


def _flush() -> None:
    """Flush stdout (what --help printed); a closed or full stdout is not an error here."""
    try:
        sys.stdout.flush()
    except OSError:
        _silence_stdout()


class UsageError(Exception):
    """A command-line mistake, or a file it names that cannot be read (exit 2)."""


class OutputError(Exception):
    """A file the command was asked to write that could not be written: a full disk, no
    permission (exit 1, as output that cannot be written)."""


def _complain(text: str) -> None:
    """`text` on stderr, unless stderr itself cannot be written."""
    try:
        print(text, file=sys.stderr)
        sys.stderr.flush()
    except OSError:
        pass


def _silence_stdout() -> None:
    """Point the process's stdout at /dev/null, so the text still buffered for a closed or full
    stdout does not fail again, with a traceback, as Python exits."""
    stdout = sys.stdout
    if stdout is not sys.__stdout__ or stdout is None:  # a caller's stream (tests): not ours
        return
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), stdout.fileno())
    except (OSError, ValueError):
        pass


def _check(args) -> int:
    import hilbert

    failed = 0
    for path in args.files:
        missing = _not_a_file(path)
        if missing:
            _complain(f"hilbert: {missing}")
            failed += 1
            continue
        try:
            module = hilbert.load(path)
            module.check()  # entries are built on first use: build them all
        except HilbertError as err:
            _complain(colour(str(err), sys.stderr, args.color))
            failed += 1
        else:
            functions = len(module.names) - len(module.models)
            print(f"{path}: ok ({len(module.definitions)} definition(s), {functions} fn(s), "
                  f"{len(module.models)} model(s))")
    return EXIT_ERROR if failed else EXIT_OK


def _not_a_file(path: Path) -> str | None:
    """Why `path` is not a file to read, or None."""
    if path.is_dir():
        return f"{path}: is a directory, not a file"
    return None if path.is_file() else f"{path}: no such file"


def parse_value(text: str):
    """A command-line argument: a number (also inf, -inf, nan, Infinity, NaN), a JSON list,
    or a .npy / .csv path. UsageError says what is wrong with anything else."""
    if text.endswith((".npy", ".csv")):
        path = Path(text)
        missing = _not_a_file(path)
        if missing:
            raise UsageError(f"cannot read argument {missing}")
        return _read_npy(path) if text.endswith(".npy") else _read_csv(path)
    if _NUMBER.fullmatch(text):
        return _number(text)
    try:
        return json.loads(text, parse_int=_number, parse_float=_number)
    except json.JSONDecodeError:
        raise UsageError(f"cannot read argument {text!r:.80}: give a number, a JSON list, or a "
                         ".npy/.csv path") from None
    except RecursionError:
        raise UsageError(f"cannot read argument {text:.20}…: its lists are nested too deeply "
                         "(an array has at most 64 axes)") from None


def _number(text: str) -> float:
    """A number written in decimal, as float64; refused if it is too large for float64 (float()
    would make it infinity silently, and int() of thousands of digits would fail)."""
    number = float(text)
    if math.isinf(number) and "inf" not in text.lower():
        raise UsageError(f"the number {text:.20}{'…' if len(text) > 20 else ''} is too large for "
                         "float64 (the largest is about 1.8e308); write Infinity for ∞")
    return number


def _read_npy(path: Path) -> np.ndarray:
    """A .npy file as numpy.save writes it: its header is checked against the memory limit
    before its data is read, and it may hold no pickled objects."""
    from hilbert.compiler.plan import memory_limit
    from hilbert.compiler.plan_text import human_bytes
    from hilbert.models import npy_header

    try:
        with path.open("rb") as stream:
            shape, dtype = npy_header(stream)
            size = math.prod(shape) * max(dtype.itemsize, 8)
            if size > memory_limit():
                raise UsageError(f"cannot read argument {path}: it holds a "
                                 f"{'×'.join(map(str, shape))} array ({human_bytes(size)} as "
                                 f"float64), over the memory limit of "
                                 f"{human_bytes(memory_limit())} (set HILBERT_MEMORY_LIMIT)")
            stream.seek(0)
            return np.lib.format.read_array(stream, allow_pickle=False)
    except (OSError, ValueError, EOFError) as err:
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        raise UsageError(f"cannot read argument {path}: {reason} (give a .npy file as "
                         "numpy.save writes it, of numbers)") from None


def _read_csv(path: Path) -> np.ndarray:
    """A .csv file of numbers, UTF-8 (with or without a byte-order mark), comma-separated;
    blank lines and lines starting with # are skipped. At least one number."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as err:
        raise UsageError(f"cannot read argument {path}: it is not UTF-8 text (byte "
                         f"{err.start} is {err.object[err.start]:#04x})") from None
    except OSError as err:
        raise UsageError(f"cannot read argument {path}: {err.strerror or err}") from None
    rows = [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    if not rows:
        raise UsageError(f"cannot read argument {path}: it holds no numbers")
    try:
        return np.loadtxt(rows, delimiter=",", ndmin=2)
    except ValueError as err:
        raise UsageError(f"cannot read argument {path}: {err}") from None


def _function(path: Path, name: str, executor: str = "numba"):
    import hilbert

    missing = _not_a_file(path)
    if missing:
        raise UsageError(missing)
    module = hilbert.load(path, executor=executor, export_all=True)
    try:
        return module.function(name)
    except AttributeError:
        raise UsageError(f"{path} has no definition {name!r} (it has: "
                         f"{', '.join(module.names)})") from None


def _run(args) -> int:
    function = _function(args.file, args.function, args.executor)
    values = [parse_value(a) for a in args.args]
    result = function(*values)
    print(json.dumps(_plain(result)) if args.json else _result_text(result))
    return EXIT_OK


def _plain(result):
    """A result as plain data for JSON: a number, nested lists for an array, and a list of its
    components (each converted alike) for a tuple."""
    if isinstance(result, tuple):
        return [_plain(part) for part in result]
    return np.asarray(result, dtype=np.float64).tolist()


def _result_text(result, position: str = "") -> str:
    """A result as `run` prints it: a number as Python writes it (3.5, inf, nan), an array as a
    JSON list; a tuple one component a line, each after its position as Python indexes the
    tuple (`[0]: …`; `[0][1]: …` inside a nested tuple)."""
    if isinstance(result, tuple):
        if not result:
            return f"{position}: ()" if position else "()"
        return "\n".join(_result_text(part, f"{position}[{i}]") for i, part in enumerate(result))
    array = np.asarray(result, dtype=np.float64)
    text = repr(float(array)) if array.ndim == 0 else json.dumps(array.tolist())
    return f"{position}: {text}" if position else text


def parse_shape(text: str) -> tuple[str, tuple[int, ...]]:
    """NAME=4x2 (or NAME=scalar) as a name and a shape: sizes are whole numbers ≥ 0 in ASCII
    digits, and together no more elements than a NumPy array can have."""
    name, equals, dims = text.partition("=")
    if not name or not equals:
        raise UsageError(f"--shape {text!r}: write NAME=4x2")
    if dims in ("", "scalar"):
        return name, ()
    parts = dims.replace("×", "x").split("x")
    if not all(_SIZE.fullmatch(part) for part in parts):
        raise UsageError(f"--shape {text!r}: sizes must be whole numbers ≥ 0 in the digits 0-9, "
                         "as 4x2")
    # a size of 20 digits or more is past the limit; int() of thousands of digits would fail
    if any(len(part.lstrip("0")) >= 20 for part in parts) or \
            math.prod(int(part) for part in parts) >= _MOST_ELEMENTS:
        raise UsageError(f"--shape {text!r:.80}: no array has that many elements (at most "
                         "2**63 − 1)")
    return name, tuple(int(part) for part in parts)


def _plan(args) -> int:
    function = _function(args.file, args.function, args.executor)
    named = [parse_shape(s) for s in args.shape]
    given = dict(named)
    if len(given) < len(named):
        names = [name for name, _ in named]
        twice = sorted({name for name in names if names.count(name) > 1})
        raise UsageError(f"--shape given twice for {', '.join(twice)}")
    unknown = set(given) - set(function.entry.params)
    if unknown:
        raise UsageError(f"{args.function} has no parameter(s) {', '.join(sorted(unknown))}")
    shapes = [given.get(p, ()) for p in function.entry.params]
    if args.optimize:
        function = function.using(optimize=args.optimize)
    if args.chunks:
        function = function.using(chunks=_chunks(args.chunks, args.executor))
    plan = function.build(*shapes) if args.build else function.plan(*shapes)
    print(json.dumps(plan.to_dict(), indent=2) if args.json else
          colour(str(plan), sys.stdout, args.color))
    return EXIT_OK


def _chunks(given: list[str], executor: str):
    """--chunks ROWS (the first array argument) or --chunks NAME=ROWS, each repeatable."""
    if executor != "dask":
        raise UsageError("--chunks is for --executor dask")
    named: dict[str, int] = {}
    for text in given:
        name, _, rows = text.rpartition("=")
        if not _SIZE.fullmatch(rows) or int(rows) < 1 or len(rows) > 18:
            raise UsageError(f"--chunks {text!r:.40}: write ROWS or NAME=ROWS, rows a whole "
                             "number ≥ 1")
        named[name] = int(rows)
    if "" in named:
        if len(named) > 1:
            raise UsageError("--chunks: give ROWS alone, or NAME=ROWS for each array to cut")
        return named[""]
    return named


def _bench(args) -> int:
    if args.suite or args.list:
        return _bench_suite(args)
    if args.quick:
        raise UsageError("--quick is for the suite: hilbert bench --suite --quick")
    if len(args.targets) != 2:
        raise UsageError("hilbert bench needs a file and a function (hilbert bench FILE FN "
                         "--shape NAME=4x2 …), or --suite for the benchmark suite")
    optimisers = _optimiser_list(args.optimize or ",".join(DEFAULT_OPTIMISERS))
    repeat = 5 if args.repeat is None else args.repeat
    if repeat < 1:
        raise UsageError(f"--repeat {repeat}: give a whole number ≥ 1")
    _check_output_paths(args.json, args.plot)
    function = _function(Path(args.targets[0]), args.targets[1], args.executor)
    arguments = _bench_arguments(function, args.shape, args.value)
    result = function.benchmark(*arguments, optimize=optimisers, repeat=repeat)
    _bench_outputs(result, args.json, args.plot)
    return EXIT_ERROR if result.mismatched else EXIT_OK


def _optimiser_list(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in OPTIMISERS]
    if not names or unknown:
        raise UsageError(f"--optimize {text!r}: name path optimisers separated by commas, "
                         f"from: {', '.join(OPTIMISERS)}")
    return names


def _bench_arguments(function, shapes: list[str], values: list[str]) -> list:
    """One argument per parameter: a shape (a tuple, drawn at random) or a value."""
    given: dict[str, object] = {}
    for name, value in [parse_shape(s) for s in shapes] + [_named_value(v) for v in values]:
        if name in given:
            raise UsageError(f"{name} is given twice (by --shape or --value)")
        given[name] = value
    unknown = set(given) - set(function.entry.params)
    if unknown:
        raise UsageError(f"{function.entry.name} has no parameter(s) "
                         f"{', '.join(sorted(unknown))}")
    return [given.get(p, ()) for p in function.entry.params]


def _named_value(text: str) -> tuple[str, object]:
    name, equals, value = text.partition("=")
    if not name or not equals or not value:
        raise UsageError(f"--value {text!r}: write NAME=VALUE, as NAME=100 or NAME=[1, 2]")
    return name, parse_value(value)


def _check_output_paths(json_path: str | None, plot_path: str | None) -> None:
    """Usage errors, before any timing, for --json and --plot paths that cannot name the file
    to write: a directory, a folder that does not exist; for --plot, an extension other than
    those of PLOT_FORMATS (none is not taken to mean .png: the file written is the one named)."""
    if json_path not in (None, "-"):
        problem = output_path_problem(json_path)
        if problem:
            raise UsageError(f"--json {json_path}: {problem}")
    if plot_path is not None:
        problem = output_path_problem(plot_path, PLOT_FORMATS)
        if problem:
            raise UsageError(f"--plot {plot_path}: {problem}")


def _bench_outputs(result, json_path: str | None, plot_path: str | None) -> None:
    """The table (or JSON on stdout), then the files asked for; a file that cannot be written
    is an OutputError (exit 1)."""
    data = json.dumps(result.to_dict(), indent=1)
    print(data if json_path == "-" else str(result))
    if json_path not in (None, "-"):
        _write_text(Path(json_path), data + "\n")
        _complain(f"wrote {json_path}")
    if plot_path is not None:
        try:
            result.plot(plot_path)
        except ImportError as err:
            kept = " (the file already there was left as it was)" if Path(plot_path).exists() else ""
            _complain(f"hilbert bench: plot skipped: {err}; {plot_path} was not written{kept}")
        except OSError as err:
            raise OutputError(f"cannot write {plot_path}: {err.strerror or err}") from None
        else:
            _complain(f"wrote {plot_path}")


def _write_text(path: Path, text: str) -> None:
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as err:
        raise OutputError(f"cannot write {path}: {err.strerror or err}") from None


def _bench_suite(args) -> int:
    given = [flag for flag, value in (("--shape", args.shape), ("--value", args.value),
                                      ("--json", args.json), ("--plot", args.plot),
                                      ("--repeat", args.repeat), ("--optimize", args.optimize))
             if value is not None and value != []]
    if given:
        raise UsageError(f"{', '.join(given)} {'is' if len(given) == 1 else 'are'} for timing a "
                         "function of yours (hilbert bench FILE FN …), not for the suite")
    root = Path(__file__).resolve().parent.parent
    if not (root / "benchmarks" / "runner.py").is_file():
        raise UsageError("hilbert bench --suite needs a source checkout (benchmarks/ was not "
                         "found)")
    sys.path.insert(0, str(root))
    from benchmarks.runner import main as bench_main

    return bench_main(args.targets, quick=args.quick, executor=args.executor, listing=args.list)


def _demo(args) -> int:
    from hilbert.demo import run_demo

    return EXIT_OK if run_demo() else EXIT_ERROR


_COMMANDS = {"check": _check, "run": _run, "plan": _plan, "bench": _bench, "demo": _demo}


if __name__ == "__main__":
    sys.exit(main())
