"""The disk cache of Numba-compiled code (executor/numba/disk.py: the shared kernels), beside the
LLVM back end's machine code (here a dask executor's blockwise kernel's): every file under
HILBERT_CACHE_DIR, a second process warm, a bad entry replaced (W902), an unusable directory a
warning (W901); and compiled code given only arrays of the one layout it was compiled for.
(Its security checks: test_security.py; the LLVM back end's own: test_llvm_disk_cache.py.)

A cache is about what the *next* process loads, so most tests run fresh Python processes,
each with its own cache directory, and count Numba's compilations through its event API
(never by timing).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT
from hilbert.executor.numba import disk, kernels
from hilbert.grammar.errors import WARNING_CODES, HilbertWarning

import hilbert

#: An entrywise region around a product: the dask executor's blockwise kernel, compiled by the
#: LLVM back end.
SOURCE = 'fn f(a, b) ↦ tanh(einsum("ij,jk->ik", a, b)) · 0.5 + 1'

#: One process: compile SOURCE for the dask executor and call it, call a shared kernel
#: directly, report as JSON.
SCRIPT = """
import json, warnings
import numpy as np
from numba.core import event
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import hilbert
    from hilbert.executor.numba import kernels
    with event.install_recorder("numba:compile") as recorder:
        a, b = np.arange(12.0).reshape(3, 4) / 10, np.ones((4, 4)) / 4
        value = hilbert.compile_source(SOURCE, executor="dask").f(a, b)
        product = kernels.product(a, b)
print(json.dumps({"value": value.tolist(), "product": product.tolist(),
                  "compiles": sum(1 for _, e in recorder.buffer if e.is_start),
                  "warnings": [getattr(w.message, "code", str(w.message)) for w in caught]}))
"""


def expected() -> dict:
    """SCRIPT's values, computed by NumPy."""
    a, b = np.arange(12.0).reshape(3, 4) / 10, np.ones((4, 4)) / 4
    return {"value": np.tanh(a @ b) * 0.5 + 1, "product": a @ b}


def run_cached(directory: Path, **environment: str) -> dict:
    """Run SCRIPT in a fresh process with HILBERT_CACHE_DIR=directory; its report."""
    env = dict(os.environ, HILBERT_CACHE_DIR=str(directory), **environment)
    env.pop("NUMBA_DISABLE_JIT", None)
    done = subprocess.run([sys.executable, "-c", SCRIPT.replace("SOURCE", repr(SOURCE))],
                          capture_output=True, text=True, env=env, timeout=300,
                          cwd=next(p for p in directory.parents if p.is_dir()))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    for name, want in expected().items():
        np.testing.assert_allclose(report[name], want, rtol=1e-13, atol=0)
    return report


@pytest.fixture(scope="module")
def primed(tmp_path_factory) -> Path:
    """A cache directory after one cold process (copy it to use it)."""
    directory = tmp_path_factory.mktemp("primed") / "cache"
    report = run_cached(directory)
    assert report["compiles"] > 0 and report["warnings"] == []
    return directory


def copy_of(primed: Path, tmp_path: Path) -> Path:
    """A private copy of the primed cache (modes and times kept)."""
    return Path(shutil.copytree(primed, tmp_path / "cache"))


def files(directory: Path) -> dict[str, tuple[int, bytes]]:
    """Every file under `directory`: its mode and contents, by relative path."""
    return {str(p.relative_to(directory)): (p.stat().st_mode, p.read_bytes())
            for p in sorted(directory.rglob("*")) if p.is_file()}


# ---------------------------------------------------------------- where the files go


def test_a_second_process_compiles_nothing(primed, tmp_path):
    report = run_cached(copy_of(primed, tmp_path))
    assert report["compiles"] == 0 and report["warnings"] == []


def test_every_cache_file_goes_under_the_cache_dir(tmp_path):
    package = ROOT / "executor"
    before = {p: p.stat().st_mtime_ns for p in package.rglob("*.nb[ic]")}
    elsewhere = tmp_path / "numba-cache-dir"
    directory = tmp_path / "fresh" / "cache"
    run_cached(directory, NUMBA_CACHE_DIR=str(elsewhere))  # (Numba's own setting is not used)
    assert {p: p.stat().st_mtime_ns for p in package.rglob("*.nb[ic]")} == before
    assert not elsewhere.exists()
    made = files(directory)
    assert any(re.fullmatch(r"numba/kernels\.product-\d+\.py\d+\.nbi", n) for n in made)
    assert any(re.fullmatch(r"llvm/[0-9a-f]+\.o", n) for n in made)
    assert all(re.fullmatch(r"llvm/[0-9a-f]+\.(o|record)|numba/[\w.-]+\.(nbi|nbc)"
                            r"|(parsed|parser|entries|plans)/[0-9a-f]{32}\.pickle|key", n)
               for n in made)
    assert all(stat.S_IMODE(mode) == 0o600 for mode, _ in made.values())
    for level in (directory.parent, directory, directory / "numba", directory / "llvm"):
        assert stat.S_IMODE(level.stat().st_mode) == 0o700


# ---------------------------------------------------------------- repairs and fallbacks


def test_a_corrupt_cache_entry_is_replaced_and_the_next_process_starts_warm(primed, tmp_path):
    directory = copy_of(primed, tmp_path)
    damaged = sorted((directory / "numba").glob("*.nbc"))
    assert any(p.name.startswith("kernels.") for p in damaged)
    for path in damaged:
        path.write_bytes(b"garbage")
    repairing = run_cached(directory)
    assert repairing["compiles"] > 0 and set(repairing["warnings"]) == {"W902"}
    healed = run_cached(directory)
    assert healed["compiles"] == 0 and healed["warnings"] == []


def test_a_corrupt_index_is_replaced_and_the_next_process_starts_warm(primed, tmp_path):
    """An index Numba cannot read is reset: a W902, the values still right."""
    directory = copy_of(primed, tmp_path)
    indexes = list((directory / "numba").glob("*.nbi"))
    assert indexes
    for path in indexes:
        path.write_bytes(b"\x80\x04 garbage")
    repairing = run_cached(directory)
    assert repairing["compiles"] > 0 and set(repairing["warnings"]) == {"W902"}
    healed = run_cached(directory)
    assert healed["compiles"] == 0 and healed["warnings"] == []


def test_an_unusable_cache_directory_warns_and_compiles_in_memory(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    report = run_cached(blocker / "cache")
    assert report["compiles"] > 0 and set(report["warnings"]) == {"W901"}


def twice(x):
    """A function to compile in this process (disk.keep caches any Numba function)."""
    return 2.0 * x


def test_a_corrupt_index_is_replaced_in_process(tmp_path, monkeypatch):
    monkeypatch.setenv(disk.ENVIRONMENT, str(tmp_path / "cache"))
    first = disk.keep(kernels.jit(twice), "stamp")
    assert first(1.5) == 3.0
    (index,) = (tmp_path / "cache" / "numba").glob("test_cache.twice-*.nbi")
    index.write_bytes(b"garbage")
    with pytest.warns(HilbertWarning) as caught:
        assert disk.keep(kernels.jit(twice), "stamp")(1.5) == 3.0
    assert [w.message.code for w in caught] == ["W902"]
    third = disk.keep(kernels.jit(twice), "stamp")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert third(1.5) == 3.0
    assert sum(third.stats.cache_hits.values()) == 1


# ---------------------------------------------------------------- the boundary of compiled code

LAYERED = """
fn f(w, x) ↦ tanh(einsum("ijk,jk->i", w, x))
fn g(t, w, x) ↦ h(t, w, x)
def h(t, w, x) ≔ if t = 0 then w else h(t − 1, w − 0.1 · einsum("i,jk->ijk", f(w, x), x), x)
"""


def layouts() -> dict[str, np.ndarray]:
    """One 4×3×2 array in every layout a caller can hand a program."""
    w = np.arange(24.0).reshape(4, 3, 2) / 50 - 0.2
    readonly = w.copy()
    readonly.flags.writeable = False
    return {"C": w, "Fortran": np.asfortranarray(w),
            "transposed": np.ascontiguousarray(w.transpose(2, 1, 0)).transpose(2, 1, 0),
            "strided": np.repeat(w, 2, axis=1)[:, ::2], "read-only": readonly,
            "float32": w.astype(np.float32), "int64": (w * 50).astype(np.int64)}


def expected_layered(w, x, steps):
    f = np.tanh(np.einsum("ijk,jk->i", w, x))
    w = w.astype(np.float64)
    for _ in range(steps):
        w = w - 0.1 * np.einsum("i,jk->ijk", np.tanh(np.einsum("ijk,jk->i", w, x)), x)
    return f, w


@pytest.mark.parametrize("host", ["", "tanh"])
@pytest.mark.parametrize("layout", list(layouts()))
def test_programs_take_arrays_of_any_layout(executor, layout, host, monkeypatch):
    monkeypatch.setenv("HILBERT_NUMBA_HOST", host)  # "tanh": host work between compiled regions
    w, x = layouts()[layout], np.linspace(-1.0, 1.0, 6).reshape(2, 3).T.copy()
    mod = hilbert.compile_source(LAYERED, executor=executor)
    want_f, want_g = expected_layered(w, x, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no cache warning, no recompilation
        got_f = mod.f.program((w.shape, x.shape))((w, x))
        got_g = mod.g.program(((), w.shape, x.shape))((np.array(2.0), w, x))
    np.testing.assert_allclose(got_f, want_f, rtol=1e-12)
    np.testing.assert_allclose(got_g, want_g, rtol=1e-12)
    np.testing.assert_array_equal(w, layouts()[layout])  # the argument itself is untouched


def test_errors_from_compiled_code_propagate_and_are_not_taken_for_a_bad_cache():
    mod = hilbert.compile_source(LAYERED)
    program = mod.f.program(((4, 3, 2), (3, 2)))
    region = program.region

    def broken(*args):
        raise ZeroDivisionError("a bug in compiled code")

    broken.compile = lambda: None  # type: ignore[attr-defined] (as compiled code's: built)
    region.function = broken
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ZeroDivisionError):
            program((layouts()["C"], np.ones((3, 2))))
    assert region.function is broken  # not swapped for a recompilation


# ---------------------------------------------------------------- the warnings' pages

DOCS = ROOT / "docs" / "errors"


def actual_message(code: str, tmp_path: Path, monkeypatch) -> str:
    """The message of warning `code`, made to happen here."""
    if code == "W900":
        monkeypatch.setenv(disk.ENVIRONMENT, str(tmp_path / "shared-cache"))
        (tmp_path / "shared-cache").mkdir(mode=0o777)
        os.chmod(tmp_path / "shared-cache", 0o777)
        trigger = disk.private_dir
    elif code == "W901":
        (tmp_path / "not-a-directory").write_text("")
        monkeypatch.setenv(disk.ENVIRONMENT, str(tmp_path / "not-a-directory" / "cache"))
        trigger = disk.private_dir
    else:
        monkeypatch.setenv(disk.ENVIRONMENT, str(tmp_path / "cache"))
        disk.keep(kernels.jit(twice), "stamp")(1.0)
        for path in (tmp_path / "cache" / "numba").glob("*.nbc"):
            path.write_bytes(b"garbage")  # as the page's `printf garbage > "$f"`

        def trigger():
            disk.keep(kernels.jit(twice), "stamp")(1.0)
    with pytest.warns(HilbertWarning) as caught:
        trigger()
    assert [w.message.code for w in caught] == [code]
    return str(caught[0].message)


#: The disk cache's warnings (W903, a failed background build, is test_defects.py's).
CACHE_WARNINGS = ("W900", "W901", "W902")


def test_the_cache_warnings_are_every_w90x_of_the_cache():
    assert {c for c in WARNING_CODES if c.startswith("W90")} == {*CACHE_WARNINGS, "W903"}


@pytest.mark.parametrize("code", CACHE_WARNINGS)
def test_warning_page_shows_the_message(code, tmp_path, monkeypatch):
    page = (DOCS / f"{code}.md").read_text(encoding="utf-8")
    for heading in ("## What it means", "## Example", "## The message", "## How to fix it"):
        assert heading in page
    shown = re.search(r"^```text\n(.*?)\n", page, re.M).group(1)

    def paths_left_out(text: str) -> str:  # the page's paths are examples
        return re.sub(r"/[^\s'(),;]+", "PATH", text)

    assert paths_left_out(actual_message(code, tmp_path, monkeypatch)) == paths_left_out(shown)

