"""Progress bars on stderr (tqdm): the benchmark suite, `hilbert bench`, long training runs, and
builds of compiled code a call waits for.

A bar is drawn when stderr is a terminal or a Jupyter kernel's output (there through
`tqdm.auto`: a widget where ipywidgets is installed, text otherwise); `HILBERT_PROGRESS=0`
never draws one and `HILBERT_PROGRESS=1` draws one into any stream (a log file).

>>> progress = Progress(3, unit="case")            # doctest: +SKIP
>>> progress.item(0, "attention"); progress.step("timing numpy (1/5)")   # doctest: +SKIP
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from contextlib import contextmanager
from typing import TextIO

from tqdm import tqdm

from hilbert.compiler import settings, terminal
from hilbert.compiler.terminal import ENVIRONMENT, wanted

__all__ = ["ENVIRONMENT", "Progress", "bar", "compiling", "drawn", "in_notebook", "run_in_chunks",
           "wanted"]

#: A training run shows its bar only once it has lasted this long (short runs stay silent).
TRAIN_BAR_DELAY_S = 1.0
#: After the first chunk, each chunk of training steps is sized to last about this long: the
#: bar moves several times a second while the calls between chunks cost nothing measurable.
CHUNK_S = 0.2
#: A chunk is at most this many times the one before (a fast first chunk can mislead).
MOST_GROWTH = 16


def drawn(stream: TextIO) -> bool:
    """Whether to draw a bar on `stream`: as HILBERT_PROGRESS says, else on a terminal or in
    a notebook (a Jupyter kernel's output stream)."""
    return wanted(stream) or (in_notebook(stream) and settings.text(ENVIRONMENT) != "0")


def in_notebook(stream: TextIO) -> bool:
    """Whether `stream` is a Jupyter kernel's output (ipykernel's stream; the kernel is
    imported already if so, so asking imports nothing)."""
    return type(stream).__module__.startswith("ipykernel.")


def bar(stream: TextIO, **options) -> tqdm:
    """A tqdm bar on `stream`: in a notebook tqdm.auto's (a widget where ipywidgets is
    installed, else text: no warning that it is missing), elsewhere the terminal's."""
    if not in_notebook(stream):
        return tqdm(file=stream, dynamic_ncols=True, **options)
    import warnings

    with warnings.catch_warnings():  # (tqdm warns once when ipywidgets is missing)
        warnings.simplefilter("ignore")
        from tqdm.auto import tqdm as auto
    return auto(file=stream, **options)


class Progress:
    """Work counted in items (benchmark cases, stages): a tqdm bar naming the item and its
    current step on a terminal; otherwise one plain line per item and a closing line with the
    time taken, or nothing at all when `quiet`."""

    def __init__(self, total: int, stream: TextIO | None = None, enabled: bool | None = None,
                 unit: str = "case", quiet: bool = False):
        self.stream = stream or sys.stderr
        self.total, self.unit, self.quiet = total, unit, quiet
        self.name = ""
        self.begun = time.perf_counter()
        draw = drawn(self.stream) if enabled is None else enabled
        self.bar = bar(self.stream, total=total, unit=unit, leave=False) if draw else None

    def item(self, index: int, name: str) -> None:
        """Item `index` (from 0), called `name`, begins."""
        self.name = name
        if self.bar is None:
            if not self.quiet:
                print(f"[{index + 1}/{self.total}] {name}", file=self.stream, flush=True)
            return
        self.bar.update(index - self.bar.n)
        self.bar.set_description_str(name, refresh=False)
        self.bar.set_postfix_str("")

    def step(self, label: str) -> None:
        """What the current item is doing now (shown on the bar only)."""
        if self.bar is not None:
            self.bar.set_postfix_str(label)

    def close(self) -> None:
        """Remove the bar and say how long the whole run took."""
        if self.bar is not None:
            self.bar.close()
        if not self.quiet:
            elapsed = time.perf_counter() - self.begun
            print(f"{self.total} {self.unit}(s) in {elapsed:.0f} s", file=self.stream,
                  flush=True)


@contextmanager
def compiling(label: str, total: int, stream: TextIO | None = None):
    """Around a build the caller waits for: yields `advance()`, to call as each of its `total`
    functions is compiled. On a terminal (as HILBERT_PROGRESS says) a line `compiling LABEL`
    with the functions done shows once the build has lasted terminal.BUILD_LINE_DELAY_S;
    otherwise nothing is written. The numba executor is given it as its `progress`.

    >>> with compiling("f for 4×3", 2) as advance: advance(); advance()   # doctest: +SKIP
    """
    stream = stream or sys.stderr
    if total < 1 or not drawn(stream):
        yield lambda: None
        return
    with bar(stream, total=total, unit="function", desc=f"compiling {label}",
             delay=terminal.BUILD_LINE_DELAY_S, leave=False) as shown:
        yield lambda: shown.update(1)


def run_in_chunks(total: int, run: Callable[[int], None], label: str,
                  stream: TextIO | None = None) -> None:
    """Call `run(k)` with chunk sizes k adding up to `total` steps, and show the steps done on a
    bar once the run has lasted TRAIN_BAR_DELAY_S. Without a bar, one call `run(total)`: the
    steps then run as one compiled loop, exactly as if progress did not exist.

    >>> run_in_chunks(500, lambda k: None, "Perceptron.train")    # doctest: +SKIP
    """
    stream = stream or sys.stderr
    if total <= 1 or not drawn(stream):
        run(total)
        return
    with bar(stream, total=total, unit="step", desc=label, delay=TRAIN_BAR_DELAY_S) as shown:
        done, size = 0, 1  # a first chunk of one step: it may include compilation
        while done < total:
            chunk = min(size, total - done)
            begun = time.perf_counter()
            run(chunk)
            spent = time.perf_counter() - begun
            done += chunk
            shown.update(chunk)
            size = max(1, min(chunk * MOST_GROWTH, int(chunk * CHUNK_S / max(spent, 1e-9))))
