"""Hyper-optimised contraction paths (issue 24, item 3): cotengra's HyperOptimizer, run with a
budget, its paths kept so that a search is paid once.

cotengra (`pip install 'hilbert[networks]'`) samples many contraction trees (greedy with
random costs, graph partitions by KaHyPar where it is installed, each refined by subtree
reconfiguration) and keeps the cheapest. A search depends on the clock (`max_time`) and on
random draws, so two searches may find different trees. hilbert therefore keeps what a search
found, keyed by the einsum, its shapes and the budget: in memory for the process, and as a small
JSON file in its cache directory (compiler/directory.py) for every later process. The same
program then has the same path, the same plan and the same generated code in every process
that finds the search kept; `PathInfo.save` and `hilbert.load_path` carry a path to another
machine. A JSON file is data: reading one runs no code, and a kept path is checked against
its einsum (opt_einsum's own check) before it is used; one that does not fit is searched again.

`optimize="auto"` uses a search only where it pays: an einsum of more operands than opt_einsum's
exhaustive choices cover (AUTO_OPERANDS) whose greedy path costs more than AUTO_FLOPS, when
cotengra is installed. Everything smaller is planned as opt_einsum's "auto" plans it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import threading
import time
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache

import opt_einsum

#: Past this many operands opt_einsum's "auto" is greedy (up to 14 it searches exhaustively).
AUTO_OPERANDS = 15
#: A greedy path costing more FLOPs than this (about a second of contraction) is worth a search.
AUTO_FLOPS = 10**9
#: The folder of the cache directory that keeps hyper-optimised paths.
FOLDER = "paths"
#: The version of the kept files' layout (part of each file's key): 2, sealed as every kept file is.
LAYOUT = 2
#: What a search may score trees by (cotengra's names).
MINIMIZE = ("flops", "size", "write", "combo")


#: `Hyper()`'s time budget (max_time="auto"): BASE_SECONDS and PER_OPERAND_SECONDS more per
#: operand, at most MOST_SECONDS (201 tensors: 11 s). Without one, cotengra's search of 64
#: trees took 245 s on a 201-tensor circuit with nothing on the screen.
BASE_SECONDS = 1.0
PER_OPERAND_SECONDS = 0.05
MOST_SECONDS = 30.0


@dataclass(frozen=True)
class Hyper:
    """A hyper-optimised path search and its budget: `optimize=Hyper(max_time=10)`.

    max_time: seconds the search may take ("auto", the default: 1 s and 0.05 s more per
    operand, at most 30 s; None: no limit), checked between trees; max_repeats: trees it may
    try; minimize: what a tree is scored by ("flops", "size", "write" or "combo", cotengra's
    names). `optimize="hyper"` is `Hyper()`."""

    max_time: float | str | None = "auto"
    max_repeats: int = 64
    minimize: str = "flops"

    def __post_init__(self) -> None:
        from ...grammar.errors import ArgumentError
        from ...grammar.source import nowhere

        def wrong(what: str) -> ArgumentError:
            return ArgumentError("E600", f"Hyper({what}", nowhere("hilbert.Hyper"))

        if self.max_time not in (None, "auto") and (isinstance(self.max_time, bool) or not
                                                    isinstance(self.max_time, (int, float)) or
                                                    not 0 < self.max_time < math.inf):
            raise wrong(f"max_time={self.max_time!r:.40}): the search's budget is a positive "
                        "number of seconds, \"auto\" (scaled by the network's size) or None "
                        "for no limit")
        if isinstance(self.max_repeats, bool) or not isinstance(self.max_repeats, int) or \
                self.max_repeats < 1:
            raise wrong(f"max_repeats={self.max_repeats!r:.40}): the number of trees to try "
                        "is a whole number ≥ 1")
        if self.minimize not in MINIMIZE:
            raise wrong(f"minimize={self.minimize!r:.40}): a tree is scored by one of "
                        f"{', '.join(MINIMIZE)}")

    def seconds(self, operands: int) -> float | None:
        """The search's time budget on an einsum of `operands` operands (None: no limit)."""
        if self.max_time != "auto":
            return self.max_time  # type: ignore[return-value]
        return min(MOST_SECONDS, BASE_SECONDS + PER_OPERAND_SECONDS * operands)

    def describe(self) -> str:
        limit = ("" if self.max_time == "auto" else "no time limit, " if self.max_time is None
                 else f"{self.max_time:g} s, ")
        return f"hyper ({limit}{self.max_repeats} trees, by {self.minimize})"


#: The budget `optimize="auto"` gives a search it decides to run.
AUTO_BUDGET = Hyper(max_time=5.0, max_repeats=64)


@dataclass(frozen=True)
class Search:
    """What a search found: its path (opt_einsum's form), the trees it tried, the seconds it
    took, and the tree's cost as cotengra counts it (one per multiply-add, where the plan's
    FLOPs, opt_einsum's count, are two) and width (log₂ of its largest intermediate's
    entries)."""

    path: tuple[tuple[int, ...], ...]
    trees: int
    seconds: float
    flops: int
    width: float

    def describe(self) -> str:
        """The plan's note: what the search found and what it cost (the same text in every
        process that finds the search kept)."""
        return (f"path hyper-optimised by cotengra: {self.trees} trees in {self.seconds:.3g} s; "
                f"the tree costs {self.flops:,} multiply-adds, width {self.width:.3g} (log₂ of "
                "its largest intermediate)")


@lru_cache(maxsize=1)
def installed() -> bool:
    """Whether cotengra can be imported (looked up once per process)."""
    import importlib.util

    return importlib.util.find_spec("cotengra") is not None


@lru_cache(maxsize=256)
def search(spec: str, shapes: tuple, budget: Hyper) -> Search:
    """The path a search within `budget` finds for `spec` on `shapes`: kept from an earlier
    search (this process, or the cache directory) when there is one, else searched now and
    kept."""
    key = _key(spec, shapes, budget)
    kept = _read(key, spec, shapes)
    if kept is not None:
        return kept
    found = _search(spec, shapes, budget)
    _write(key, found)
    return found


def may_search(operands: int) -> bool:
    """Whether `optimize="auto"` may search for an einsum of this many operands: past
    AUTO_OPERANDS, with cotengra installed (it then searches when greedy's path costs more
    than AUTO_FLOPS, within AUTO_BUDGET)."""
    return operands >= AUTO_OPERANDS and installed()


def _search(spec: str, shapes: tuple, budget: Hyper) -> Search:
    import cotengra

    inputs, output = spec.split("->")
    size = {ch: int(n) for term, s in zip(inputs.split(","), shapes, strict=True)
            for ch, n in zip(term, s, strict=True)}
    seconds = budget.seconds(len(shapes))
    with warnings.catch_warnings():  # (cotengra warns when KaHyPar is not installed)
        warnings.simplefilter("ignore")
        optimizer = cotengra.HyperOptimizer(max_time=seconds, max_repeats=budget.max_repeats,
                                            minimize=budget.minimize, parallel=False,
                                            progbar=False)
        start = time.perf_counter()
        with _progress(optimizer, len(shapes), seconds, budget.max_repeats):
            tree = optimizer.search(inputs.split(","), output, size)
        took = time.perf_counter() - start
    path = tuple(tuple(int(i) for i in step) for step in tree.get_path())
    return Search(path, len(optimizer.scores), round(took, 3),
                  int(tree.contraction_cost()), float(tree.contraction_width()))


#: How often the search's line is redrawn, in seconds.
TICK_S = 0.25


@contextmanager
def _progress(optimizer, operands: int, seconds: float | None, repeats: int):
    """Around a search: on a terminal (compiler/terminal.py: as HILBERT_PROGRESS says), a
    line `searching a path for N tensors` with the trees tried and the seconds spent of the
    budget, once the search has lasted BUILD_LINE_DELAY_S, redrawn by a thread that reads the
    optimiser's count of trees; elsewhere (a pipe, a log, the tests) nothing."""
    import sys

    from .. import terminal

    if not terminal.wanted(sys.stderr):
        yield
        return
    from tqdm import tqdm

    of = f" of {seconds:g} s" if seconds is not None else ""
    done = threading.Event()
    with tqdm(total=repeats, file=sys.stderr, delay=terminal.BUILD_LINE_DELAY_S, leave=False,
              desc=f"searching a path for {operands} tensors", dynamic_ncols=True,
              bar_format="{desc}: {n_fmt}/{total_fmt} trees{postfix}") as bar:
        begun = time.perf_counter()

        def tick() -> None:
            while not done.wait(TICK_S):
                bar.set_postfix_str(f"{time.perf_counter() - begun:.0f} s{of}", refresh=False)
                bar.update(len(optimizer.scores) - bar.n)

        ticker = threading.Thread(target=tick, name="hilbert-search-progress", daemon=True)
        ticker.start()
        try:
            yield
        finally:
            done.set()
            ticker.join()


def _key(spec: str, shapes: tuple, budget: Hyper) -> str:
    text = json.dumps([LAYOUT, spec, [list(s) for s in shapes], budget.max_time,
                       budget.max_repeats, budget.minimize], ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _read(key: str, spec: str, shapes: tuple) -> Search | None:
    """The search kept under `key`, if its file is trusted (directory.read_kept), reads, and
    its path fits the einsum."""
    from ..directory import private_folder, read_kept

    folder = private_folder(FOLDER)
    text = None if folder is None else read_kept(folder / f"{key}.json")
    if text is None:
        return None
    try:
        data = json.loads(text.decode("utf-8"))
        found = Search(tuple(tuple(int(i) for i in step) for step in data["path"]),
                       int(data["trees"]), float(data["seconds"]), int(data["flops"]),
                       float(data["width"]))
        opt_einsum.contract_path(spec, *shapes, shapes=True, optimize=list(found.path))
    except (ValueError, KeyError, TypeError, IndexError):
        return None
    return found


def _write(key: str, found: Search) -> None:
    """Keep `found` under `key`, as every file of the cache directory is kept
    (directory.write_kept: whole, private, sealed)."""
    from ..directory import private_folder, write_kept

    folder = private_folder(FOLDER)
    if folder is None:
        return
    data = {"path": [list(step) for step in found.path], "trees": found.trees,
            "seconds": found.seconds, "flops": found.flops, "width": found.width}
    with contextlib.suppress(OSError):
        write_kept(folder / f"{key}.json", json.dumps(data).encode("utf-8"))
