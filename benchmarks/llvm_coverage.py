"""How much of the golden guard's compiled code the LLVM back end lowers (issue 48):

    python benchmarks/llvm_coverage.py            # counts, and the reasons left, most first
    python benchmarks/llvm_coverage.py --list R   # the functions whose reason contains R

Each golden program (tests/golden/programs.json) is prepared under the guard's pinned settings
and each of its compiled functions lowered to LLVM IR (nothing is compiled or run); a function
that is not lowered is counted under what stopped it."""

from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "golden"))
import record  # noqa: E402


def lowerings() -> list[tuple[str, str | None]]:
    """(program and function, why it is not lowered or None) for every compiled function."""
    from hilbert.executor.numba.executor import regions_of

    found = []
    for program in record.read_programs():
        with record.pinned_environment(program.get("threads", 1)):
            try:
                prepared = record.function_of(program)._prepare(
                    record.shapes_of(program), program.get("dtype", "float64"))
                regions = regions_of(prepared.runner)
            except Exception:  # noqa: BLE001 (a program recorded as refused)
                continue
            for number, region in enumerate(regions, 1):
                if not region.generated.compiled:
                    continue
                name = f"{program['name']} #{number}"
                made = region._lowered()  # (None, and `backend` says why, where not lowered)
                found.append((name, None if made is not None else region.backend))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", metavar="REASON", help="the functions not lowered for REASON")
    args = parser.parse_args(argv)
    with record.in_root():
        found = lowerings()
    if args.list:
        for name, why in found:
            if why and args.list in why:
                print(f"{name}: {why}")
        return 0
    left = collections.Counter(why for _, why in found if why)
    print(f"{sum(why is None for _, why in found)} of {len(found)} compiled functions lower")
    for why, count in left.most_common():
        print(f"{count:5d}  {why}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
