"""The process of its own that builds programs in the background (executor/numba/build_process.py
starts it): it reads its jobs, a sealed pickle in the cache directory's folder `builds/`, and
builds each one (code generated, compiled by Numba into the disk cache, a program with loops
marked as built), then ends; its exit status says whether every one was built."""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

from ...compiler.directory import private_folder, read_kept
from .build_process import FOLDER
from .tiers import TieredProgram, Tiers


def main(given: str) -> int:
    """The child: build each job of the kept pickle `given` (generated, compiled, kept in the
    disk cache; a program with loops marked as built: executor/numba/built.py). Exit status 0
    when every job was built, 1 otherwise."""
    path = Path(given)
    folder = private_folder(FOLDER)
    if folder is None or path.parent != folder:  # (jobs are read from the cache's folder only)
        return 1
    data = read_kept(path)
    path.unlink(missing_ok=True)
    if data is None:
        return 1
    jobs = pickle.loads(data)  # noqa: S301 (checked and sealed: hilbert wrote it, for this user)
    failed = 0
    for job in jobs:
        try:
            tiers = Tiers(job.ready, job.optimize, job.forced, job.fast,
                          lambda job=job: job.ready.plan)
            TieredProgram(tiers, len(job.ready.plan.signature), when=0).build()
        except Exception:  # noqa: BLE001 (the parent builds it itself, and reports what fails)
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
