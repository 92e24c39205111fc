"""Shared fixtures: the executors every differential test runs on, and .hb files in tmp_path;
the example scripts imported as modules."""

import importlib.util
import os
import signal
import sys
import threading
from functools import cache
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

# The suite checks compiled code: each loop-free call builds its code at its first call, before
# it runs (docs/testing.md). test_tiered.py checks the tiers themselves, under each setting.
os.environ.setdefault("HILBERT_COMPILE", "eager")
# Every pass's result is checked against the IR layer it gives (compiler/ir/verify.py).
os.environ.setdefault("HILBERT_VERIFY", "1")

#: Optional packages the test run needs (`make test` installs them): missing, their tests
#: fail rather than skip, unless HILBERT_TEST_WITHOUT names them (a subset chosen by hand,
#: e.g. HILBERT_TEST_WITHOUT=dask,matplotlib). torch and jax are the benchmarks' extra: their
#: comparisons skip without them.
REQUIRED = ("dask", "distributed", "matplotlib", "cloudpickle")


def needs(module: str):
    """`module` imported; a skip only where it is not required (above), else an ImportError
    that fails the test."""
    import importlib

    without = set(filter(None, os.environ.get("HILBERT_TEST_WITHOUT", "").split(",")))
    if module.split(".")[0] in REQUIRED and module.split(".")[0] not in without:
        return importlib.import_module(module)
    return pytest.importorskip(module)


#: Every executor a compiled function can run on; differential tests cover each.
EXECUTORS = ("reference", "numba")

ROOT = Path(__file__).resolve().parent.parent


#: The differential tests' tolerance: relative, and absolute relative to the expected scale.
RTOL = 1e-12


def assert_agree(got, want, rtol: float = RTOL) -> None:
    """Equal to `rtol` relative to the scale of `want` (its largest finite magnitude)."""
    got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    assert got.shape == want.shape
    finite = np.abs(want[np.isfinite(want)])
    scale = float(finite.max()) if finite.size else 1.0
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * scale, equal_nan=True)


@cache
def script(path: Path, name: str) -> ModuleType:
    """The Python file at `path` imported as module `name` (once: later calls get the same)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = sys.modules[spec.name] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def example_script(name: str) -> ModuleType:
    """examples/<name>.py imported as a module (its main() is not run)."""
    return script(ROOT / "examples" / f"{name}.py", f"example_{name}")


def golden_recorder() -> ModuleType:
    """tests/golden/record.py imported as a module (its programs and their rendering)."""
    return script(ROOT / "tests" / "golden" / "record.py", "golden_record")


@pytest.fixture(scope="session", autouse=True)
def python_handles_ctrl_c():
    """Python's own SIGINT handler for the run when the suite was started with SIGINT ignored
    (from a background job: `cmd &` in a non-interactive shell ignores it, and every process
    started from there inherits that). hilbert's handling of Ctrl-C acts under Python's
    handler only (executor/numba/interrupt.py), so the tests of it need it: in this process,
    and in the children they start (a handler, unlike an ignored signal, is not inherited)."""
    ignored = signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    if not ignored or threading.current_thread() is not threading.main_thread():
        yield
        return
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.fixture(scope="module")
def on_the_host():
    """HILBERT_COMPILE=never for a module's tests: calls stay on the host tier, for tests of
    what is computed (not of generated code) on programs whose compiling takes minutes."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HILBERT_COMPILE", "never")
        yield


@pytest.fixture(params=EXECUTORS)
def executor(request) -> str:
    """Each executor in turn."""
    return request.param


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20241129)


@pytest.fixture
def write_hb(tmp_path):
    """write_hb("Name.hb", text) writes a .hb file under tmp_path and returns its path."""

    def write(relative: str, text: str) -> Path:
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    return write


@pytest.fixture
def lowered_afresh(monkeypatch):
    """Functions lowered afresh in this test, not taken from those lowered before in this
    process or from their records on disk (executor/llvm/records.py): for a test that changes
    how the LLVM back end lowers (a constant, a refusal), which no record's key can see."""
    from hilbert.executor import llvm
    from hilbert.executor.llvm import records

    monkeypatch.setattr(llvm, "_MADE", {})
    monkeypatch.setattr(records, "read", lambda description, level: None)
