"""Executors: turn a specialised entry into a callable. `reference` is the oracle."""

from __future__ import annotations


def get_executor(name: str):
    """The executor module called `name` ('reference' or 'numba')."""
    from hilbert.grammar.errors import ArgumentError
    from hilbert.grammar.source import nowhere

    if name == "reference":
        from . import reference
        return reference
    if name == "numba":
        from . import numba_exec
        return numba_exec
    raise ArgumentError("E600", f"unknown executor {name!r} (choose 'numba' or 'reference')",
                        nowhere("executor"))
