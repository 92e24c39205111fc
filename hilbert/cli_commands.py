"""The bodies of `hilbert check`, `run`, `plan`, `export` and `demo` (`bench` is in
cli_bench)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from hilbert.grammar.errors import HilbertError

from .cli_errors import EXIT_ERROR, EXIT_OK, UsageError, _complain
from .cli_values import (
    _SIZE,
    _named_value,
    _not_a_file,
    _write_text,
    parse_shape,
    parse_value,
)
from .lexer import colour


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


def _member(args):
    """For FN = Model.member: the member bound to a model made from the --value arguments,
    and the member's own arguments (zeros of a --shape's shape, or a --value's value); None
    when FN is not of that form."""
    import hilbert

    from .members import BoundMember

    model, dot, name = args.function.partition(".")
    missing = _not_a_file(args.file)
    if not dot or missing:
        return None
    module = hilbert.load(args.file, executor=args.executor, export_all=True)
    if model not in module.models:
        return None
    cls = module.model(model)
    if not hasattr(cls, "_model"):
        raise UsageError(f"{model} is a Frame model: it reads a file, and has no member that runs")
    given = dict(parse_shape(s) for s in args.shape)
    values = dict(_named_value(v) for v in args.value)
    constructor = {p: values.pop(p) for p in cls._model.params if p in values}
    net = cls(**constructor)
    bound = getattr(net, name)
    if not isinstance(bound, BoundMember):
        raise UsageError(f"{model}.{name} is a weight, not a member that runs")
    member = bound._member
    unknown = (set(given) | set(values)) - set(member.params)
    if unknown:
        raise UsageError(f"{model}.{name} has no parameter(s) {', '.join(sorted(unknown))} "
                         f"(its own: {', '.join(member.params) or 'none'}; the model's: "
                         f"{', '.join(cls._model.params) or 'none'})")
    return bound, [values[p] if p in values else np.zeros(given.get(p, ()))
                   for p in member.params]


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


def _plan(args) -> int:
    member = _member(args)
    if member is not None:
        bound, values = member
        steps = {"steps": args.steps} if bound._member.kind == "train" else {}
        plan = (bound.build if args.build else bound.plan)(*values, **steps)
    else:
        plan = _function_plan(args)
    print(json.dumps(plan.to_dict(), indent=2) if args.json else
          colour(str(plan), sys.stdout, args.color))
    return EXIT_OK


def _function_plan(args):
    """The plan of a function of the file for the --shape shapes (built first with --build)."""
    if args.value:
        raise UsageError("--value is for a model's member (Model.member); give a function's "
                         "parameters by --shape")
    function = _function(args.file, args.function, args.executor)
    shapes = _shapes(args.shape, function, args.function)
    if args.optimize:
        function = function.using(optimize=args.optimize)
    if args.chunks:
        function = function.using(chunks=_chunks(args.chunks, args.executor))
    return function.build(*shapes) if args.build else function.plan(*shapes)


def _shapes(given: list[str], function, name: str) -> list[tuple[int, ...]]:
    """The --shape NAME=4x2 options as one shape per parameter of `function` (a scalar for a
    parameter not named); a name given twice or not a parameter is a UsageError."""
    named = [parse_shape(s) for s in given]
    shapes = dict(named)
    if len(shapes) < len(named):
        names = [n for n, _ in named]
        twice = sorted({n for n in names if names.count(n) > 1})
        raise UsageError(f"--shape given twice for {', '.join(twice)}")
    unknown = set(shapes) - set(function.entry.params)
    if unknown:
        raise UsageError(f"{name} has no parameter(s) {', '.join(sorted(unknown))}")
    return [shapes.get(p, ()) for p in function.entry.params]


def _export(args) -> int:
    """`hilbert export FILE FN --shape … [--to stablehlo|onnx] [--dtype D] [-o OUT]`: the
    program FN runs for those shapes as text (hilbert/export.py), on stdout or in OUT; an
    ONNX model's bytes in OUT (not on a terminal's stdout)."""
    from .export import export

    function = _function(args.file, args.function, args.to.replace("stablehlo", "jax"))
    text = export(function, *_shapes(args.shape, function, args.function), to=args.to,
                  dtype=args.dtype, dynamic=_dynamic(args.dynamic))
    if isinstance(text, bytes):
        if args.output is None:
            raise UsageError("--to onnx writes a binary model: give -o OUT")
        _write_text(args.output, text)
        return EXIT_OK
    text = text if text.endswith("\n") else text + "\n"
    if args.output is None:
        sys.stdout.write(text)
    else:
        _write_text(args.output, text)
    return EXIT_OK


def _dynamic(given: list[str]) -> dict | None:
    """--dynamic NAME:AXIS=SIZE, repeatable, as export's {NAME: {AXIS: SIZE}}."""
    named: dict[str, dict[int, str]] = {}
    for text in given:
        where, _, size = text.partition("=")
        name, _, axis = where.rpartition(":")
        if not (name and size and axis.isdigit() and len(axis) < 4):
            raise UsageError(f"--dynamic {text!r:.40}: write NAME:AXIS=SIZE, such as x:0=batch")
        named.setdefault(name, {})[int(axis)] = size
    return named or None


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


def _demo(args) -> int:
    from .demo import run_demo

    return EXIT_OK if run_demo() else EXIT_ERROR
