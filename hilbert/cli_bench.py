"""The body of `hilbert bench`: a function of yours timed (its arguments, output files and
table), or the benchmark suite of a source checkout."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from hilbert.compiler.plan import OPTIMISERS

from .bench import DEFAULT_OPTIMISERS, PLOT_FORMATS, output_path_problem
from .cli_commands import _function
from .cli_errors import EXIT_ERROR, EXIT_OK, OutputError, UsageError, _complain
from .cli_values import _named_value, _write_text, parse_shape


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

    # (lift: a pinned OpenBLAS kernel is lifted by running the suite in a process started
    # without the pin, benchmarks/runner.py `launch`)
    return bench_main(args.targets, quick=args.quick, executor=args.executor, listing=args.list,
                      lift=True)
