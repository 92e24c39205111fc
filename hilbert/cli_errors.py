"""The `hilbert` command's exit codes, the errors its commands raise, and writing to stderr and
stdout when they may be closed or full."""

from __future__ import annotations

import os
import sys

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


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
