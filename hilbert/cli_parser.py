"""The `hilbert` command's arguments: one parser, a subcommand each for check, run, plan,
export, bench and demo."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from hilbert.compiler.plan import OPTIMISERS

from .bench import DEFAULT_OPTIMISERS, PLOT_FORMATS

#: What `run` reads as a number although it starts with "-" (argparse would take it for an
#: option): -2, -.5, -1e3, -inf, -Infinity, -nan.
_NEGATIVE_VALUE = re.compile(r"^-(\d|\.\d|inf|nan)", re.IGNORECASE)


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
    _executor_option(run, every=True)
    plan = sub.add_parser("plan", help="print the plan of a function for given shapes",
                          description="Print how a function will compute for given argument "
                          "shapes: contraction paths, FLOPs, loops, memory.")
    plan.add_argument("file", type=Path, metavar="FILE", help="the .hb file")
    plan.add_argument("function", metavar="FN", help="a function or definition of FILE, or a "
                      "model's member as Model.member (Model.train, Model.loss)")
    _shape_option(plan, "a parameter's shape (omit for a scalar)")
    plan.add_argument("--value", action="append", default=[], metavar="NAME=V",
                      help="Model.member: a constructor argument of the model, or a member's "
                      "argument by value (read as `hilbert run` reads arguments); a member's "
                      "argument given by --shape is zeros of that shape")
    plan.add_argument("--steps", type=int, default=1, metavar="N",
                      help="Model.member of a train block: the steps of its loop (default 1)")
    plan.add_argument("--optimize", default=None, metavar="NAME",
                      help=f"the opt_einsum path optimiser (one of: {', '.join(OPTIMISERS)}; "
                      "default auto)")
    plan.add_argument("--json", action="store_true", help="print the plan as JSON")
    plan.add_argument("--build", action="store_true",
                      help="also compile the program for these shapes now, so that a failure "
                      "shows here rather than at the first call (numba)")
    _executor_option(plan, every=True, text="the executor whose plan to show (dask: blocks and "
                     "task graph)")
    plan.add_argument("--chunks", action="append", default=[], metavar="[NAME=]ROWS",
                      help="dask: rows per block of the first array argument, or of NAME")
    _export_parser(sub)
    _bench_parser(sub)
    sub.add_parser("demo", help="run the seed's examples beside their verified outputs",
                   description="Run every example of the Networks seed beside its verified "
                   "output.")
    for command in sub.choices.values():
        command.add_argument("--color", default="auto", choices=["auto", "always", "never"],
                             help="colour plans and errors: auto (when writing to a terminal "
                             "and NO_COLOR is not set), always, or never")
    return parser


def _executor_option(parser: argparse.ArgumentParser, every: bool = False,
                     text: str = "what runs the code: numba (compiled, the default), reference "
                     "(the NumPy interpreter), dask (blocks, on a cluster: the dask extra), jax "
                     "(XLA, on JAX's device: the jax extra) or onnx (onnxruntime: the onnx "
                     "extra)") -> None:
    choices = ["numba", "reference", "dask", "jax", "onnx"] if every else ["numba", "reference"]
    if not every:
        text = text.replace(", dask (blocks, on a cluster: the dask extra), jax (XLA, on "
                            "JAX's device: the jax extra) or onnx (onnxruntime: the onnx extra)",
                            "").replace(
            "the default), reference", "the default) or reference")
    parser.add_argument("--executor", default="numba", choices=choices, help=text)


def _shape_option(parser: argparse.ArgumentParser, text: str) -> None:
    parser.add_argument("--shape", action="append", default=[], metavar="NAME=4x2", help=text)


def _export_parser(sub) -> None:
    from hilbert.compiler.dtypes import NAMES

    from .export import FORMATS

    export = sub.add_parser(
        "export", help="write a function's program for given shapes as StableHLO or ONNX",
        description="Write the program a function runs for given argument shapes, through JAX "
                    "(the jax extra), as StableHLO text: to OUT, or to stdout; or as an ONNX "
                    "model (the onnx extra) to OUT.")
    export.add_argument("file", type=Path, metavar="FILE", help="the .hb file")
    export.add_argument("function", metavar="FN", help="a function or definition of FILE")
    _shape_option(export, "a parameter's shape (omit for a scalar)")
    export.add_argument("--to", default="stablehlo", choices=list(FORMATS),
                        help="the format: stablehlo (an MLIR module, text; the default) or "
                             "onnx (an ONNX model, binary: needs -o)")
    export.add_argument("--dtype", default="float64", choices=list(NAMES),
                        help="what the program computes in (default float64)")
    export.add_argument("--dynamic", action="append", default=[], metavar="NAME:AXIS=SIZE",
                        help="ONNX: write axis AXIS (from 0) of parameter NAME as the size "
                             "SIZE (x:0=batch), where the graph does not depend on it; "
                             "repeatable")
    export.add_argument("-o", "--output", type=Path, metavar="OUT",
                        help="write the text to OUT instead of stdout")


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
