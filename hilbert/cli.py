"""The `hilbert` command: check, run, plan, bench, export and demo.

This module runs a command and turns its failures into messages and exit codes; the arguments
are parsed in cli_parser and read in cli_values, the commands' bodies are in cli_commands and
cli_bench, and the exit codes and errors in cli_errors."""

from __future__ import annotations

import errno
import sys

from hilbert.grammar.errors import HilbertError

from .cli_bench import _bench
from .cli_commands import _check, _demo, _export, _plan, _run
from .cli_errors import (
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    OutputError,
    UsageError,
    _complain,
    _silence_stdout,
)
from .cli_parser import _parser
from .cli_values import parse_shape, parse_value
from .lexer import colour

__all__ = ["EXIT_ERROR", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_USAGE", "OutputError",
           "UsageError", "main", "parse_shape", "parse_value"]


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


_COMMANDS = {"check": _check, "run": _run, "plan": _plan, "bench": _bench, "demo": _demo,
             "export": _export}


if __name__ == "__main__":
    sys.exit(main())
