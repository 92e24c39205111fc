"""The debugging switch: HILBERT_DUMP=parse,inline,fuse,plan prints a stage's result."""

from __future__ import annotations

from .settings import names


def dump(stage: str, value) -> None:
    """Print `value` (IR, a plan or a syntax tree) if HILBERT_DUMP names `stage`."""
    if stage not in names("HILBERT_DUMP"):
        return
    from . import ir
    from .ir.printer import print_ir

    text = print_ir(value) if isinstance(value, ir._Node) else value  # type: ignore[arg-type]
    print(f"== {stage} ==\n{text}")
