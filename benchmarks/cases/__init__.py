"""Every benchmark case, in report order, and selection by name, group or glob pattern."""

from __future__ import annotations

from fnmatch import fnmatchcase

from benchmarks.cases import (
    bridges,
    design,
    entrywise,
    gradients,
    jax_executor,
    models,
    multi,
    networks,
    onnx_executor,
    sequences,
    startup,
    steps,
    threads,
    workloads,
)
from benchmarks.cases.base import Case, Config, Setup, Skip, Target

ALL: tuple[Case, ...] = (*design.CASES, *workloads.CASES, *entrywise.CASES, *gradients.CASES,
                         *sequences.CASES, *multi.CASES, *networks.CASES, *steps.CASES,
                         *models.CASES,
                         *threads.CASES, *startup.CASES, *jax_executor.CASES,
                         *onnx_executor.CASES, *bridges.CASES)
BY_NAME = {case.name: case for case in ALL}
GROUPS = tuple(dict.fromkeys(case.group for case in ALL))


def select(patterns: list[str]) -> list[Case]:
    """The cases named (a name, a group, or a glob such as 'ao-mo-*'); all for none. Raises
    KeyError naming a pattern that matches nothing."""
    if not patterns:
        return list(ALL)
    chosen: dict[str, Case] = {}
    for pattern in patterns:
        found = [c for c in ALL if fnmatchcase(c.name, pattern) or c.group == pattern]
        if not found:
            raise KeyError(pattern)
        chosen.update((c.name, c) for c in found)
    return [c for c in ALL if c.name in chosen]


__all__ = ["ALL", "BY_NAME", "GROUPS", "Case", "Config", "Setup", "Skip", "Target", "select"]
