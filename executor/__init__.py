"""Executors: turn a specialised entry into a callable. `reference` is the oracle."""

from __future__ import annotations

#: Every executor by name (`dask` needs the optional extra: pip install 'hilbert[dask]').
NAMES = ("numba", "reference", "dask")


def get_executor(name: str):
    """The executor module called `name` ('reference', 'numba' or 'dask')."""
    from hilbert.grammar.errors import ArgumentError
    from hilbert.grammar.source import nowhere

    if name == "reference":
        from . import reference
        return reference
    if name == "numba":
        from . import numba_exec
        return numba_exec
    if name == "dask":
        try:
            from . import dask_exec
        except ImportError as err:
            if not (err.name or "").startswith("dask"):
                raise
            raise ArgumentError("E600", "the dask executor needs dask, which is not installed "
                                "(pip install 'hilbert[dask]')", nowhere("executor")) from None
        return dask_exec
    raise ArgumentError("E600", f"unknown executor {name!r} (choose 'numba', 'reference' or "
                        "'dask')", nowhere("executor"))


def check_options(name: str, options: dict, span) -> None:
    """An ArgumentError unless executor `name` takes every one of `options` as given."""
    from hilbert.grammar.errors import ArgumentError

    executor = get_executor(name)
    known = getattr(executor, "OPTIONS", ())
    unknown = sorted(set(options) - set(known))
    if unknown:
        takes = f"its options: {', '.join(known)}" if known else "it takes none"
        raise ArgumentError("E600", f"the {name} executor has no option(s) {', '.join(unknown)} "
                            f"({takes})", span)
    if options:
        executor.check_options(options, span)
